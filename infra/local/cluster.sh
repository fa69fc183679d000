#!/usr/bin/env bash
# The replicated local engines the fault suite runs against (docs/reliability.md, "Local
# cluster"), beside the development engines and on other ports: three Kafka nodes
# (cluster-kafka.sh), two Elasticsearch nodes (cluster-elasticsearch.sh), a Redis primary,
# replica and three Sentinels (cluster-redis.sh).
#   infra/local/cluster.sh start|stop|status                      every engine (engines.sh --cluster)
#   infra/local/cluster.sh reset       stops every engine and deletes the cluster's data: the
#     next start is a new, empty cluster (the fault suite starts from one)
#   infra/local/cluster.sh kill-node|start-node|stop-node|freeze-node|thaw-node|pid NODE
# NODE: kafka-1..3, es-1, es-2, redis-primary, redis-replica, sentinel-1..3. kill-node sends
# SIGKILL, freeze-node SIGSTOP, thaw-node SIGCONT; start-node returns once the node serves.
#   infra/local/cluster.sh selfcheck   kills a Kafka leader, the Redis primary and an
#     Elasticsearch node in turn and shows a produce, a state-store write and a search still
#     succeed through the adapters (test/cluster/selfcheck.ts); each node is restarted after.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ENGINES=(redis kafka elasticsearch)

engine_of() {
  case "$1" in
    kafka-*) echo kafka ;; es-*) echo elasticsearch ;; redis-*|sentinel-*) echo redis ;;
    *) echo "unknown node '$1': kafka-1..3, es-1, es-2, redis-primary, redis-replica, sentinel-1..3" >&2; exit 2 ;;
  esac
}

# What the running cluster costs: the resident memory of every node process.
report_rss() {
  local engine pid total=0 mb line=''
  for engine in "${ENGINES[@]}"; do
    local sum=0
    while read -r pid; do
      [ -n "$pid" ] || continue
      mb="$(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status" 2>/dev/null || echo 0)"
      sum=$((sum + mb))
    done < <("$HERE/cluster-$engine.sh" pids)
    total=$((total + sum))
    line+="$engine $sum MB, "
  done
  echo "[cluster] RSS: ${line}total $total MB"
}

action="${1:-}"
case "$action" in
  start)
    began=$SECONDS
    # One engine after another: three JVMs starting at once on 2 cores only slow each other.
    for engine in "${ENGINES[@]}"; do "$HERE/cluster-$engine.sh" start; done
    echo "[cluster] ready in $((SECONDS - began)) s"
    report_rss ;;
  stop)
    status=0
    for engine in "${ENGINES[@]}"; do "$HERE/cluster-$engine.sh" stop || status=$?; done
    exit $status ;;
  reset)
    bash "$HERE/cluster.sh" stop
    # The state of every node (data, configs Sentinel rewrote, the Kafka cluster id) lives here.
    rm -rf "$HERE/.run/cluster"
    echo "[cluster] data deleted: the next start is an empty cluster" ;;
  status)
    status=0
    for engine in "${ENGINES[@]}"; do "$HERE/cluster-$engine.sh" status || status=$?; done
    report_rss
    exit $status ;;
  selfcheck)
    cd "$HERE/../.." && exec node --import tsx test/cluster/selfcheck.ts ;;
  kill-node|start-node|stop-node|freeze-node|thaw-node|pid)
    [ $# -eq 2 ] || { echo "usage: $0 $action NODE" >&2; exit 2; }
    engine="$(engine_of "$2")" || exit 2
    exec "$HERE/cluster-$engine.sh" "$action" "$2" ;;
  *) echo "usage: $0 start|stop|reset|status|selfcheck | kill-node|start-node|stop-node|freeze-node|thaw-node|pid NODE" >&2; exit 2 ;;
esac
