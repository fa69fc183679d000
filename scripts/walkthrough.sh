#!/usr/bin/env bash
# The README walkthrough as a script: run it against a started service (pnpm start).
# Usage: scripts/walkthrough.sh [base-url] [data-dir]
# Each run uses fresh record and subject ids (a suffix of its own, WALKTHROUGH_RUN to choose it),
# so it can be run again on the same memory: a forgotten id is retired for good (design §5.10).
# Every step checks its answer: the first that differs from the story stops the script, exit 1,
# naming the step, what it expected and what it got.
set -euo pipefail
B=${1:-http://127.0.0.1:8080}
DATA=${2:-.data}
RUN=${WALKTHROUGH_RUN:-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')}
CRED=$(cat "$DATA/issuer-credential")
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s);const f=new Function("v","return "+process.argv[1]);console.log(f(v))})' "$1"; }
# Stops the walkthrough where the story and the service part ways.
expect() {
  local step=$1 wanted=$2 got=$3
  if [ "$got" != "$wanted" ]; then
    echo "walkthrough: step $step expected \"$wanted\", got \"$got\"" >&2
    exit 1
  fi
  echo "$got"
}
# A request that answers "<status> <body>", for a step to check both.
BODY=$(mktemp)
trap 'rm -f "$BODY"' EXIT
call() { curl -s -o "$BODY" -w '%{http_code}' "$@"; echo " $(cat "$BODY")"; }
statusOf() { echo "${1%% *}"; }
bodyOf() { echo "${1#* }"; }
cap() {
  local answer
  answer=$(call -X POST "$B/v1/capabilities" -H "authorization: Bearer $CRED" -H 'content-type: application/json' -d "$1")
  [ "$(statusOf "$answer")" = 201 ] || { echo "walkthrough: issuing a capability answered $answer" >&2; exit 1; }
  bodyOf "$answer" | json v.token
}
PREF1="pref-1-$RUN" PREF2="pref-2-$RUN" TOOL1="tool-1-$RUN" SUBJECT="cust-42-$RUN"
echo "# this run's ids end in -$RUN"

echo '# 0. root becomes the administrator of project maple (its first admin grant, on the issuer word), then grants alice membership and bob the reviewer role'
ADMIN=$(cap '{"tenant":"acme","agentId":"admin-console","principal":{"id":"root","kind":"person"},"scopes":[{"kind":"project","id":"maple"}],"purpose":"support","actions":["admin"]}')
grant() {
  local answer
  answer=$(call -X POST "$B/v1/grants" -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' -d "$1")
  [ "$(statusOf "$answer")" = 201 ] || { echo "walkthrough: step 0 expected 201 for a grant, got $answer" >&2; exit 1; }
  bodyOf "$answer" | json '"grant " + v.grantId + " at policy revision " + v.policyRevision'
}
grant '{"principal":{"id":"root","kind":"person"},"resource":{"kind":"project","id":"maple"},"role":"admin","purposes":["support"]}'
grant '{"principal":{"id":"alice","kind":"person"},"resource":{"kind":"project","id":"maple"},"role":"member","purposes":["support"]}'
grant '{"principal":{"id":"bob","kind":"person"},"resource":{"kind":"project","id":"maple"},"role":"reviewer","purposes":["support"]}'

echo '# 1. issue a capability for a support agent acting for alice, and one for a reviewer'
AGENT=$(cap '{"tenant":"acme","agentId":"support-bot","principal":{"id":"alice","kind":"person"},"scopes":[{"kind":"project","id":"maple"}],"purpose":"support","actions":["search","read","cite","write","request_delete"]}')
REVIEWER=$(cap '{"tenant":"acme","agentId":"review-desk","principal":{"id":"bob","kind":"person"},"scopes":[{"kind":"project","id":"maple"}],"purpose":"support","actions":["review","promote"]}')
H=(-H "authorization: Bearer $AGENT" -H 'content-type: application/json')
items() { json 'v.items.length + " item(s)" + (v.items.length ? ": " + v.items.map(i => i.recordId).join(", ") : "")'; }

echo '# 2. write a trusted fact'
A=$(call -X POST "$B/v1/memories" "${H[@]}" -H "Idempotency-Key: walkthrough-$RUN" -d '{"id":"'"$PREF1"'","subjectId":"'"$SUBJECT"'","resource":{"kind":"project","id":"maple"},"kind":"preference","trust":"trusted","content":"Customer 42 prefers email over phone calls","provenance":[{"source":"user","observedAt":"2026-11-30T07:00:00Z"}]}')
expect 2 "201 $PREF1 v1 active" "$(statusOf "$A") $(bodyOf "$A" | json 'v.id + " v" + v.version + " " + v.status')"

echo '# 3. write an untrusted one (a tool result): quarantined'
A=$(call -X POST "$B/v1/memories" "${H[@]}" -d '{"id":"'"$TOOL1"'","subjectId":"'"$SUBJECT"'","resource":{"kind":"project","id":"maple"},"kind":"fact","trust":"untrusted","content":"Customer 42 email address is c42@example.com","provenance":[{"source":"tool","uri":"crm://lookup/42","observedAt":"2026-11-30T07:00:00Z"}]}')
expect 3 "201 $TOOL1 v1 quarantined" "$(statusOf "$A") $(bodyOf "$A" | json 'v.id + " v" + v.version + " " + v.status')"

echo '# 4. search: 1 item (the quarantined one is not retrievable)'
expect 4 "1 item(s): $PREF1" "$(curl -s -X POST "$B/v1/search" "${H[@]}" -d '{"query":"customer 42 email","subjectId":"'"$SUBJECT"'"}' | items)"

echo '# 5. a reviewer (not the writer) promotes it: 2 items'
expect 5 "$TOOL1 v1" "$(curl -s "$B/v1/review/quarantine" -H "authorization: Bearer $REVIEWER" | json 'v.items.filter(i => i.id === "'"$TOOL1"'").map(i => i.id + " v" + i.version).join(", ")')"
A=$(call -X POST "$B/v1/memories/$TOOL1/promote" -H "authorization: Bearer $REVIEWER" -H 'content-type: application/json' -d '{"expectedVersion":1}')
expect 5 "200 $TOOL1 v2 active" "$(statusOf "$A") $(bodyOf "$A" | json 'v.id + " v" + v.version + " " + v.status')"
expect 5 "2 item(s): $PREF1, $TOOL1" "$(curl -s -X POST "$B/v1/search" "${H[@]}" -d '{"query":"customer 42 email","subjectId":"'"$SUBJECT"'"}' | items)"

echo '# 6. correct the preference: the correction supersedes it, only the correction is returned'
A=$(call -X POST "$B/v1/memories" "${H[@]}" -d '{"id":"'"$PREF2"'","supersedesId":"'"$PREF1"'","subjectId":"'"$SUBJECT"'","resource":{"kind":"project","id":"maple"},"kind":"preference","trust":"trusted","content":"Customer 42 now prefers phone calls over email","provenance":[{"source":"user","observedAt":"2026-11-30T07:05:00Z"}]}')
expect 6 "201 $PREF2 v1 active" "$(statusOf "$A") $(bodyOf "$A" | json 'v.id + " v" + v.version + " " + v.status')"
expect 6 "1 item(s): $PREF2" "$(curl -s -X POST "$B/v1/search" "${H[@]}" -d '{"query":"prefers","subjectId":"'"$SUBJECT"'"}' | items)"

echo '# 7. forget the subject: 0 items'
A=$(call -X POST "$B/v1/subjects/$SUBJECT/forget" "${H[@]}" -d '{}')
expect 7 202 "$(statusOf "$A")"
JOB=$(bodyOf "$A" | json v.jobId)
expect 7 "0 item(s)" "$(curl -s -X POST "$B/v1/search" "${H[@]}" -d '{"query":"customer 42 email prefers","subjectId":"'"$SUBJECT"'"}' | items)"

echo "# 8. the deletion job $JOB"
STATUS=pending
for _ in $(seq 1 300); do
  STATUS=$(curl -s "$B/v1/deletion-jobs/$JOB" -H "authorization: Bearer $AGENT" | json v.status)
  [ "$STATUS" = verified ] || [ "$STATUS" = failed ] && break
  sleep 0.1
done
RECORDS=$(printf '%s\n' "$PREF1" "$PREF2" "$TOOL1" | LC_ALL=C sort | paste -sd, -)
expect 8 "status=verified records=$RECORDS" "$(curl -s "$B/v1/deletion-jobs/$JOB" -H "authorization: Bearer $AGENT" | json '"status=" + v.status + " records=" + v.recordIds.join(",")')"
curl -s "$B/v1/deletion-jobs/$JOB" -H "authorization: Bearer $AGENT" | json '"evidence=" + v.evidence.map(e => e.target + ":" + e.status).join(" ")'
