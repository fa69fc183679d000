# Shared by the engine scripts (sourced, not run). Each script defines `say`, `answering`,
# PIDFILE and STOP_WAIT_S before it calls these.

# Under `set -e` a failing command ends a script without a word (CI saw only "exited with 1"):
# name the script, line and command on stderr before it does. errtrace carries this into
# functions; failures in conditions (if, while, &&, ||) do not fire it, as they do not exit,
# and neither does a deliberate `return N`/`exit N` (status answers 3 when an engine is down).
set -o errtrace
trap 'failed=$?; case "$BASH_COMMAND" in return*|exit*) ;;
  *) echo "[${0##*/}] failed (exit $failed) at line $LINENO: $BASH_COMMAND" >&2 ;; esac' ERR

# Waits up to STOP_WAIT_S for a pid to exit; true once it is gone.
wait_gone() {
  local pid=$1 waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt $((STOP_WAIT_S * 5)) ]; do
    sleep 0.2
    waited=$((waited + 1))
  done
  ! kill -0 "$pid" 2>/dev/null
}

# After a graceful stop request: waits, escalates to SIGKILL, then forgets the pidfile.
await_exit() {
  local pid=$1
  if ! wait_gone "$pid"; then
    say "still running after $STOP_WAIT_S s: sending SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    wait_gone "$pid" || { say "pid $pid would not exit" >&2; return 1; }
  fi
  rm -f "$PIDFILE"
  say "stopped"
}

# `status`: exit 0 with where it runs when the engine answers, else 3.
report_status() {
  local where=$1 pid=$2
  if answering; then
    say "running on $where${pid:+ (pid $pid)}"
    return 0
  fi
  say "not running"
  return 3
}

# ---- Cluster nodes (cluster-kafka.sh, cluster-elasticsearch.sh, cluster-redis.sh) ----
# Each of those scripts names its nodes in NODES and defines, for one node NAME:
#   owns_process PID NAME   true while PID is that node's process (never a recycled pid)
#   node_launch NAME        starts it in the background, its pid in "$(node_pidfile NAME)"
#   node_ready NAME         true once it serves (its own part, not the whole engine)
#   node_stop_request NAME PID   asks it to stop cleanly
#   engine_ready            true once the whole engine is ready; prints what it waits for
#   engine_report           a line per node for `status`
# and then calls `cluster_main "$@"`, which implements the commands below on them.
CLUSTER_RUN="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/.run/cluster"
CLUSTER_START_WAIT_S=${CLUSTER_START_WAIT_S:-240}
NODE_START_WAIT_S=${NODE_START_WAIT_S:-180}

node_dir() { echo "$CLUSTER_RUN/$1"; }
node_pidfile() { echo "$CLUSTER_RUN/$1/$1.pid"; }
node_log() { echo "$CLUSTER_RUN/$1/$1.log"; }

# The node's pid, printed only while that process is still the node.
node_pid() {
  local pid
  pid="$(cat "$(node_pidfile "$1")" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] && owns_process "$pid" "$1" && echo "$pid"
}

rss_mb() { awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$1/status" 2>/dev/null || echo 0; }

node_log_tail() {
  local log
  log="$(node_log "$1")"
  [ -f "$log" ] || return 0
  echo "---- last lines of $log ----" >&2
  tail -n 25 "$log" >&2
}

require_node() {
  local n
  for n in "${NODES[@]}"; do [ "$n" = "$1" ] && return 0; done
  say "unknown node '$1': one of ${NODES[*]}" >&2
  exit 2
}

# Launches every node that is not running, then waits for the engine (progress on each change).
cluster_start() {
  local began=$SECONDS n pid last='' waiting
  for n in "${NODES[@]}"; do
    mkdir -p "$(node_dir "$n")"
    if pid="$(node_pid "$n")"; then
      say "$n already running (pid $pid)"
    else
      node_launch "$n"
      say "$n starting (pid $(node_pid "$n" || echo '?'))"
    fi
  done
  while [ $((SECONDS - began)) -lt "$CLUSTER_START_WAIT_S" ]; do
    if waiting="$(engine_ready 2>&1)"; then
      say "ready after $((SECONDS - began)) s"
      return 0
    fi
    [ "$waiting" != "$last" ] && say "waiting: $waiting" && last="$waiting"
    for n in "${NODES[@]}"; do
      if ! node_pid "$n" >/dev/null; then
        say "$n exited during start" >&2
        node_log_tail "$n"
        return 1
      fi
    done
    sleep 1
  done
  say "not ready within $CLUSTER_START_WAIT_S s: $last" >&2
  return 1
}

cluster_start_node() {
  local began=$SECONDS pid
  if pid="$(node_pid "$1")"; then
    say "$1 already running (pid $pid)"
  else
    mkdir -p "$(node_dir "$1")"
    node_launch "$1"
  fi
  while [ $((SECONDS - began)) -lt "$NODE_START_WAIT_S" ]; do
    if node_ready "$1"; then
      say "$1 ready after $((SECONDS - began)) s (pid $(node_pid "$1"))"
      return 0
    fi
    if ! node_pid "$1" >/dev/null; then
      say "$1 exited during start" >&2
      node_log_tail "$1"
      return 1
    fi
    sleep 0.5
  done
  say "$1 not ready within $NODE_START_WAIT_S s" >&2
  return 1
}

cluster_stop_node() {
  local pid PIDFILE
  PIDFILE="$(node_pidfile "$1")"
  if ! pid="$(node_pid "$1")"; then
    rm -f "$PIDFILE"
    say "$1 not running"
    return 0
  fi
  say "stopping $1 (pid $pid)"
  # A frozen node cannot act on a stop request.
  kill -CONT "$pid" 2>/dev/null || true
  node_stop_request "$1" "$pid"
  await_exit "$pid"
}

# Asks every node to stop at once, then waits for each: a Kafka node stopped last, alone,
# would wait out its controlled shutdown for a quorum that has already left.
cluster_stop_all() {
  local n pid status=0 PIDFILE
  local -a stopping=()
  for n in "${NODES[@]}"; do
    if pid="$(node_pid "$n")"; then
      say "stopping $n (pid $pid)"
      kill -CONT "$pid" 2>/dev/null || true
      node_stop_request "$n" "$pid"
      stopping+=("$n:$pid")
    else
      rm -f "$(node_pidfile "$n")"
    fi
  done
  for entry in "${stopping[@]}"; do
    PIDFILE="$(node_pidfile "${entry%%:*}")"
    await_exit "${entry#*:}" >/dev/null || status=1
  done
  say "stopped"
  return $status
}

# kill -9: no shutdown at all, as when a machine dies.
cluster_kill_node() {
  local pid
  pid="$(node_pid "$1")" || { say "$1 not running" >&2; return 3; }
  kill -KILL "$pid"
  STOP_WAIT_S=10 wait_gone "$pid" || { say "$1 (pid $pid) survived SIGKILL" >&2; return 1; }
  rm -f "$(node_pidfile "$1")"
  say "killed $1 (pid $pid)"
}

# SIGSTOP / SIGCONT: a node that hangs (GC pause, stalled disk) without closing its sockets.
cluster_freeze_node() {
  local pid
  pid="$(node_pid "$1")" || { say "$1 not running" >&2; return 3; }
  kill -STOP "$pid" && say "froze $1 (pid $pid)"
}

cluster_thaw_node() {
  local pid
  pid="$(node_pid "$1")" || { say "$1 not running" >&2; return 3; }
  kill -CONT "$pid" && say "thawed $1 (pid $pid)"
}

cluster_pid_node() { node_pid "$1" || return 3; }

# `status`: a line per node; exit 0 when the engine is ready, else 3.
cluster_status() {
  local n pid state waiting
  for n in "${NODES[@]}"; do
    if pid="$(node_pid "$n")"; then
      state="$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)"
      say "$n: pid $pid, RSS $(rss_mb "$pid") MB$([ "$state" = T ] && echo ', FROZEN')"
    else
      say "$n: not running"
    fi
  done
  engine_report || true
  if waiting="$(engine_ready 2>&1)"; then say "ready"; return 0; fi
  say "not ready: $waiting"
  return 3
}

# The pids of the running nodes, one a line (cluster.sh sums their RSS).
cluster_pids() {
  local n
  for n in "${NODES[@]}"; do node_pid "$n" || true; done
}

cluster_main() {
  local action=${1:-} node=${2:-}
  case "$action" in
    start) cluster_start ;;
    stop) cluster_stop_all ;;
    status) cluster_status ;;
    pids) cluster_pids ;;
    nodes) printf '%s\n' "${NODES[@]}" ;;
    start-node|stop-node|kill-node|freeze-node|thaw-node|pid)
      require_node "$node"
      case "$action" in
        pid) cluster_pid_node "$node" ;;
        *) "cluster_${action%-node}_node" "$node" ;;
      esac ;;
    *) echo "usage: $0 start|stop|status|nodes|pids|start-node|stop-node|kill-node|freeze-node|thaw-node|pid [node]" >&2; exit 2 ;;
  esac
}
