# Shared by the engine scripts (sourced, not run). Each script defines `say`, `answering`,
# PIDFILE and STOP_WAIT_S before it calls these.

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
