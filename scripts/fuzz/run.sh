#!/usr/bin/env bash
# Fuzzes the embedded runtime's HTTP API with Schemathesis (docs/fuzzing.md): starts `pnpm start`
# on a fresh data directory, gives a capability real grants, runs every check against
# /openapi.json, then fails on any check failure, a server that is not alive afterwards, or a
# written content found in the server's log.
# Usage: scripts/fuzz/run.sh [examples-per-operation]   (FUZZ_EXAMPLES, default 60)
set -euo pipefail
cd "$(dirname "$0")/../.."
EXAMPLES=${1:-${FUZZ_EXAMPLES:-60}}
SCHEMATHESIS_VERSION=4.32.5
VENV=${FUZZ_VENV:-infra/local/.cache/schemathesis-$SCHEMATHESIS_VERSION}
PORT=${FUZZ_PORT:-18090}
B=http://127.0.0.1:$PORT
WORK=$(mktemp -d /tmp/gm-fuzz-XXXXXX)
LOG=$WORK/server.log
CANARY=fuzzcanary$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')

if [ ! -x "$VENV/bin/st" ]; then
  echo "[fuzz] installing schemathesis $SCHEMATHESIS_VERSION from PyPI into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "schemathesis==$SCHEMATHESIS_VERSION"
fi

echo "[fuzz] starting the embedded runtime on $B (data in $WORK/data, log in $LOG)"
MEMORY_PORT=$PORT MEMORY_DATA_DIR=$WORK/data MEMORY_LOG_LEVEL=info MEMORY_RATE_LIMIT_PER_MINUTE=1000000 \
  node --import tsx apps/embedded/src/main.ts >"$LOG" 2>&1 &
SERVER=$!
stop() { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq 1 600); do
  grep -q 'listening on' "$LOG" && break
  kill -0 "$SERVER" 2>/dev/null || { cat "$LOG"; echo "[fuzz] the runtime exited before it listened"; exit 1; }
  sleep 0.1
done
grep -q 'listening on' "$LOG" || { cat "$LOG"; echo "[fuzz] the runtime did not listen within 60 s"; exit 1; }

CRED=$(cat "$WORK/data/issuer-credential")
export FUZZ_ISSUER_CREDENTIAL=$CRED
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s);console.log(new Function("v","return "+process.argv[1])(v))})' "$1"; }
cap() { curl -sf -X POST "$B/v1/capabilities" -H "authorization: Bearer $CRED" -H 'content-type: application/json' -d "$1" | json v.token; }
# Scoped to maple and to the tenant itself: the tenant-wide operations (legal holds, the ops
# overview, jobs) need an admin grant on the tenant (design §6.2 rule 12).
SCOPE='"tenant":"acme","scopes":[{"kind":"project","id":"maple"},{"kind":"tenant","id":"acme"}],"purpose":"support","ttlSeconds":900'
ADMIN=$(cap "{$SCOPE,\"agentId\":\"fuzz-admin\",\"principal\":{\"id\":\"fuzz-root\",\"kind\":\"person\"},\"actions\":[\"admin\"]}")
# fuzz-root's own admin grant first: a resource's first admin grant is the bootstrap (the issuer's
# word); every grant after it is decided by Cedar on that grant.
curl -sf -X POST "$B/v1/grants" -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' \
  -d '{"principal":{"id":"fuzz-root","kind":"person"},"resource":{"kind":"project","id":"maple"},"role":"admin","purposes":["support"]}' >/dev/null
for who in fuzz-root fuzz; do
  curl -sf -X POST "$B/v1/grants" -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' \
    -d "{\"principal\":{\"id\":\"$who\",\"kind\":\"person\"},\"resource\":{\"kind\":\"tenant\",\"id\":\"acme\"},\"role\":\"admin\",\"purposes\":[\"support\"]}" >/dev/null
done
for role in member reviewer admin; do
  curl -sf -X POST "$B/v1/grants" -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' \
    -d "{\"principal\":{\"id\":\"fuzz\",\"kind\":\"person\"},\"resource\":{\"kind\":\"project\",\"id\":\"maple\"},\"role\":\"$role\",\"purposes\":[\"support\"]}" >/dev/null
done
TOKEN=$(cap "{$SCOPE,\"agentId\":\"fuzz-bot\",\"principal\":{\"id\":\"fuzz\",\"kind\":\"person\"},\"actions\":[\"search\",\"read\",\"cite\",\"write\",\"request_delete\",\"review\",\"promote\",\"admin\"]}")
# One write that surely lands, so the log check below has a content to look for.
STATUS=$(curl -s -o /dev/null -D "$WORK/planted.headers" -w '%{http_code}' -X POST "$B/v1/memories" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
  -d "{\"subjectId\":\"fuzz-subject\",\"resource\":{\"kind\":\"project\",\"id\":\"maple\"},\"kind\":\"fact\",\"trust\":\"trusted\",\"content\":\"$CANARY planted before the run\",\"provenance\":[{\"source\":\"user\",\"observedAt\":\"2026-11-30T07:00:00Z\"}]}")
[ "$STATUS" = 201 ] || { echo "[fuzz] the planted write answered $STATUS"; exit 1; }
FUZZ_CONSISTENCY_TOKEN=$(sed -n 's/^consistency-token: *//Ip' "$WORK/planted.headers" | tr -d '\r')
[ -n "$FUZZ_CONSISTENCY_TOKEN" ] || { echo "[fuzz] the planted write returned no Consistency-Token"; exit 1; }
export FUZZ_CONSISTENCY_TOKEN

# Revocation and grant removal are left out: a case revoking the run's own capability or grants
# would turn every later case into a 401/403 and hide the rest of the API from the fuzzer.
echo "[fuzz] schemathesis: every check, $EXAMPLES examples per operation"
# Its lines are prefixed: its closing line has pytest's shape ("=== 1 warning in 104.41s ==="), and
# a CI reading the closing lines of test runners would take it for a pytest run of no test, when the
# test count of this whole run is pnpm test's (.ci/run's last line). pipefail keeps st's exit code.
status=0
FUZZ_CANARY=$CANARY SCHEMATHESIS_HOOKS=hooks PYTHONPATH=scripts/fuzz "$VENV/bin/st" --config-file scripts/fuzz/schemathesis.toml run "$B/openapi.json" \
  --header "Authorization: Bearer $TOKEN" --checks all --max-examples "$EXAMPLES" \
  --exclude-path-regex 'revoke|/v1/grants/' --no-color --suppress-health-check all --generation-database none \
  --report junit --report-dir "$WORK/report" 2>&1 | sed -u 's/^/[schemathesis] /' || status=$?

curl -sf "$B/healthz" >/dev/null || { echo "[fuzz] the server is not alive after the run"; status=1; }
stop
trap - EXIT
if grep -q "$CANARY" "$LOG"; then
  echo "[fuzz] the server log holds written content ($(grep -c "$CANARY" "$LOG") lines); first:"
  grep -m1 "$CANARY" "$LOG" | cut -c1-300
  status=1
fi
echo "[fuzz] $(wc -l <"$LOG") log lines checked for content; report in $WORK/report"
[ "$status" = 0 ] && echo "[fuzz] passed" || echo "[fuzz] FAILED"
exit $status
