#!/usr/bin/env bash
# The README walkthrough as a script: run it against a started service (pnpm start).
# Usage: scripts/walkthrough.sh [base-url] [data-dir]
set -euo pipefail
B=${1:-http://127.0.0.1:8080}
DATA=${2:-.data}
CRED=$(cat "$DATA/issuer-credential")
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s);const f=new Function("v","return "+process.argv[1]);console.log(f(v))})' "$1"; }
cap() { curl -sf -X POST "$B/v1/capabilities" -H "authorization: Bearer $CRED" -H 'content-type: application/json' -d "$1" | json v.token; }

echo '# 0. root becomes the administrator of project maple (its first admin grant, on the issuer word), then grants alice membership and bob the reviewer role'
ADMIN=$(cap '{"tenant":"acme","agentId":"admin-console","principal":{"id":"root","kind":"person"},"scopes":[{"kind":"project","id":"maple"}],"purpose":"support","actions":["admin"]}')
grant() { curl -sf -X POST "$B/v1/grants" -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' -d "$1" | json '"grant " + v.grantId + " at policy revision " + v.policyRevision'; }
grant '{"grantId":"root-maple","principal":{"id":"root","kind":"person"},"resource":{"kind":"project","id":"maple"},"role":"admin","purposes":["support"]}'
grant '{"grantId":"alice-maple","principal":{"id":"alice","kind":"person"},"resource":{"kind":"project","id":"maple"},"role":"member","purposes":["support"]}'
grant '{"grantId":"bob-maple","principal":{"id":"bob","kind":"person"},"resource":{"kind":"project","id":"maple"},"role":"reviewer","purposes":["support"]}'

echo '# 1. issue a capability for a support agent acting for alice, and one for a reviewer'
AGENT=$(cap '{"tenant":"acme","agentId":"support-bot","principal":{"id":"alice","kind":"person"},"scopes":[{"kind":"project","id":"maple"}],"purpose":"support","actions":["search","read","cite","write","request_delete"]}')
REVIEWER=$(cap '{"tenant":"acme","agentId":"review-desk","principal":{"id":"bob","kind":"person"},"scopes":[{"kind":"project","id":"maple"}],"purpose":"support","actions":["review","promote"]}')
H=(-H "authorization: Bearer $AGENT" -H 'content-type: application/json')

echo '# 2. write a trusted fact'
curl -s -X POST "$B/v1/memories" "${H[@]}" -H 'Idempotency-Key: walkthrough-1' -d '{"id":"pref-1","subjectId":"cust-42","resource":{"kind":"project","id":"maple"},"kind":"preference","trust":"trusted","content":"Customer 42 prefers email over phone calls","provenance":[{"source":"user","observedAt":"2026-11-30T07:00:00Z"}]}'; echo

echo '# 3. write an untrusted one (a tool result): quarantined'
curl -s -X POST "$B/v1/memories" "${H[@]}" -d '{"id":"tool-1","subjectId":"cust-42","resource":{"kind":"project","id":"maple"},"kind":"fact","trust":"untrusted","content":"Customer 42 email address is c42@example.com","provenance":[{"source":"tool","uri":"crm://lookup/42","observedAt":"2026-11-30T07:00:00Z"}]}'; echo

echo '# 4. search: 1 item (the quarantined one is not retrievable)'
curl -s -X POST "$B/v1/search" "${H[@]}" -d '{"query":"customer 42 email"}' | json 'v.items.length + " item(s): " + v.items.map(i => i.recordId).join(", ")'

echo '# 5. a reviewer (not the writer) promotes it: 2 items'
curl -s "$B/v1/review/quarantine" -H "authorization: Bearer $REVIEWER" | json 'v.items.map(i => i.id + " v" + i.version).join(", ")'
curl -s -X POST "$B/v1/memories/tool-1/promote" -H "authorization: Bearer $REVIEWER" -H 'content-type: application/json' -d '{"expectedVersion":1}'; echo
curl -s -X POST "$B/v1/search" "${H[@]}" -d '{"query":"customer 42 email"}' | json 'v.items.length + " item(s): " + v.items.map(i => i.recordId).join(", ")'

echo '# 6. correct the preference: the correction supersedes it, only the correction is returned'
curl -s -X POST "$B/v1/memories" "${H[@]}" -d '{"id":"pref-2","supersedesId":"pref-1","subjectId":"cust-42","resource":{"kind":"project","id":"maple"},"kind":"preference","trust":"trusted","content":"Customer 42 now prefers phone calls over email","provenance":[{"source":"user","observedAt":"2026-11-30T07:05:00Z"}]}'; echo
curl -s -X POST "$B/v1/search" "${H[@]}" -d '{"query":"prefers"}' | json 'v.items.length + " item(s): " + v.items.map(i => i.recordId).join(", ")'

echo '# 7. forget the subject: 0 items'
JOB=$(curl -s -X POST "$B/v1/subjects/cust-42/forget" "${H[@]}" -d '{}' | json v.jobId)
curl -s -X POST "$B/v1/search" "${H[@]}" -d '{"query":"customer 42 email prefers"}' | json 'v.items.length + " item(s)"'

echo "# 8. the deletion job $JOB"
for _ in $(seq 1 300); do
  STATUS=$(curl -s "$B/v1/deletion-jobs/$JOB" -H "authorization: Bearer $AGENT" | json v.status)
  [ "$STATUS" = verified ] || [ "$STATUS" = failed ] && break
  sleep 0.1
done
curl -s "$B/v1/deletion-jobs/$JOB" -H "authorization: Bearer $AGENT" | json '"status=" + v.status + " records=" + v.recordIds.join(",") + " evidence=" + v.evidence.map(e => e.target + ":" + e.status).join(" ")'
