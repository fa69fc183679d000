#!/usr/bin/env bash
# Two Elasticsearch nodes in one cluster (gm-cluster) for the fault suite, from the jars and
# launcher elasticsearch.sh prepares: HTTP on 127.0.0.1:29200/29201, transport 29300/29301.
# The adapters' indices set auto_expand_replicas 0-1, so on two nodes each gets one replica.
# Both nodes are master-eligible; with two, Elasticsearch keeps one of them in the voting
# configuration, so losing the elected master leaves the other serving reads (and writes to
# the shards it holds) without a master until the node returns.
#   infra/local/cluster-elasticsearch.sh start|stop|status|start-node|stop-node|kill-node|freeze-node|thaw-node|pid [es-N]
# (usually through infra/local/cluster.sh). Node homes in infra/local/.run/cluster/es-N.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=elasticsearch.sh
source "$HERE/elasticsearch.sh"
say() { echo "[cluster elasticsearch] $*"; }
NODES=(es-1 es-2)
STOP_WAIT_S=30

http_port() { echo $((29199 + ${1#es-})); }
transport_port() { echo $((29299 + ${1#es-})); }

owns_process() {
  local cmdline
  cmdline="$({ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null || true)"
  [[ "$cmdline" == *"$MAIN"* && "$cmdline" == *"path.home=$(node_dir "$2")/home "* ]]
}

# The variables elasticsearch.sh's prepare and launch read, set for one node.
select_node() {
  RUN="$(node_dir "$1")"
  HOME_DIR="$RUN/home"
  PIDFILE="$(node_pidfile "$1")"
  LOGFILE="$(node_log "$1")"
  HTTP_PORT="$(http_port "$1")"
  TRANSPORT_PORT="$(transport_port "$1")"
  NODE_SETTINGS=(cluster.name=gm-cluster node.name="$1"
    discovery.seed_hosts=127.0.0.1:29300,127.0.0.1:29301 cluster.initial_master_nodes=es-1,es-2)
}

node_launch() {
  select_node "$1"
  prepare
  flock -u 9
  launch >/dev/null
}

health() { curl -sf -m 5 "http://127.0.0.1:$(http_port "$1")/_cluster/health?$2" 2>/dev/null; }

# Joined: the node answers and sees both nodes of gm-cluster.
node_ready() {
  local body
  body="$(health "$1" 'wait_for_nodes=2&timeout=1s')" || return 1
  [[ "$body" == *'"cluster_name":"gm-cluster"'* && "$body" == *'"number_of_nodes":2,'* ]]
}

# SIGTERM runs the launcher's shutdown hook, which closes the node cleanly.
node_stop_request() { kill -TERM "$2" 2>/dev/null || true; }

engine_ready() {
  local body
  body="$(health es-1 'wait_for_status=green&wait_for_nodes=2&timeout=1s' || health es-2 'wait_for_status=green&wait_for_nodes=2&timeout=1s')" ||
    { echo "no node answers"; return 1; }
  [[ "$body" == *'"status":"green"'* && "$body" == *'"number_of_nodes":2,'* ]] ||
    { echo "$(sed -n 's/.*"status":"\([a-z]*\)".*"number_of_nodes":\([0-9]*\).*/health \1, \2 node(s)/p' <<<"$body")"; return 1; }
}

engine_report() {
  local master
  master="$(curl -sf -m 5 "http://127.0.0.1:29200/_cat/master?h=node" 2>/dev/null || curl -sf -m 5 "http://127.0.0.1:29201/_cat/master?h=node" 2>/dev/null || true)"
  say "HTTP http://127.0.0.1:29200,http://127.0.0.1:29201; elected master: ${master:-none}"
}

cluster_main "$@"
