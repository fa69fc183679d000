"""
Schemathesis hooks for `scripts/fuzz/run.sh` (docs/fuzzing.md).

Guided: half of the generated bodies get the tenant, scope and purpose the fuzz capability
holds grants for, so cases get past the policy decision point and exercise the write, review
and deletion paths, not only the 403 a random scope earns. The other half stay as generated.

Canary: every valid `content` string anywhere in a body starts with FUZZ_CANARY, so the run can grep
the server's log afterwards and prove that no content it wrote was logged.
"""
import os
import re

import schemathesis
from hypothesis import strategies as st

CANARY = os.environ.get("FUZZ_CANARY", "fuzz-canary")
RESOURCE = {"kind": "project", "id": "maple"}


_CONTENT_BYTES = 32 * 1024


def _marked(v):
    # Only content that is valid and stays valid with the mark: a case made invalid on purpose
    # (empty, too long) stays as it was.
    if not isinstance(v, str) or v == "":
        return v
    marked = f"{CANARY} {v}"
    return marked if len(marked.encode("utf-8", "surrogatepass")) <= _CONTENT_BYTES else v


def _canary(value):
    if isinstance(value, dict):
        return {k: (_marked(v) if k == "content" else _canary(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_canary(v) for v in value]
    return value


# The shapes of packages/contracts/src/primitives.ts: a value is steered only when it is already
# valid, so a case the fuzzer made invalid on purpose (the negative phase) stays invalid and must
# still be refused.
_ID = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9._:@-]{1,128}$")
_PURPOSE = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_KINDS = {"project", "case", "workspace"}


def _valid_id(v):
    return isinstance(v, str) and bool(_ID.match(v))


def _valid_resource(v):
    return isinstance(v, dict) and set(v) == {"kind", "id"} and v["kind"] in _KINDS and _valid_id(v["id"])


def _valid_list(v, item, most):
    return isinstance(v, list) and 1 <= len(v) <= most and all(item(x) for x in v)


def _valid_purpose(v):
    return isinstance(v, str) and bool(_PURPOSE.match(v))


def _guided(value):
    if isinstance(value, list):
        return [_guided(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _guided(v) for k, v in value.items()}
    if _valid_resource(out.get("resource")):
        out["resource"] = dict(RESOURCE)
    if _valid_list(out.get("scopes"), _valid_resource, 64):
        out["scopes"] = [dict(RESOURCE)]
    if _valid_purpose(out.get("purpose")):
        out["purpose"] = "support"
    if _valid_list(out.get("purposes"), _valid_purpose, 32):
        out["purposes"] = ["support"]
    if _valid_id(out.get("tenant")):
        out["tenant"] = "acme"
    return out


@schemathesis.hook
def flatmap_body(ctx, body):
    return st.booleans().map(lambda guided: _canary(_guided(body) if guided else body))

