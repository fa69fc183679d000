#!/usr/bin/env bash
# Local Redis for the distributed runtime's tests (design §11): Debian's redis-server on
# 127.0.0.1:16379, state in infra/local/.run/redis (git-ignored).
#   infra/local/redis.sh start|stop|status
# start installs redis-server with apt-get when it is missing and is idempotent; status exits
# 0 when Redis answers and 3 when it does not (the LSB "not running" code).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
source "$HERE/lib.sh"
RUN="$HERE/.run/redis"
PORT=16379
PIDFILE="$RUN/redis.pid"
LOGFILE="$RUN/redis.log"
START_WAIT_S=30
STOP_WAIT_S=20
PIDFILE_WAIT_S=5

say() { echo "[redis] $*"; }

# PONG only: a server still loading its AOF answers LOADING and is not usable yet.
answering() {
  command -v redis-cli >/dev/null 2>&1 || return 1
  [ "$(timeout 2 redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null)" = PONG ]
}

# The pid from our pidfile, printed only while that process is still a redis-server, so a
# recycled pid is never signalled.
our_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = redis-server ] || return 1
  echo "$pid"
}

install_redis() {
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      say "redis-server is missing and this user cannot install it: run 'apt-get install redis-server' as root" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    say "redis-server is missing and there is no apt-get: install Redis 7 so that redis-server and redis-cli are on PATH" >&2
    exit 1
  fi
  local began=$SECONDS
  say "redis-server not found: installing it from Debian (apt-get update, then apt-get install redis-server)"
  # The lock timeout waits for another apt run instead of failing at once.
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=300 \
    --no-install-recommends install redis-server
  say "installed redis-server $(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p') in $((SECONDS - began)) s"
}

log_tail() {
  if [ -f "$LOGFILE" ]; then
    echo "---- last lines of $LOGFILE ----" >&2
    tail -n 30 "$LOGFILE" >&2
  fi
}

start() {
  if answering; then
    say "already running on 127.0.0.1:$PORT"
    return 0
  fi
  command -v redis-server >/dev/null 2>&1 || install_redis
  mkdir -p "$RUN"
  local began=$SECONDS
  # A server of ours that is alive but not answering yet (loading its AOF, or started by a
  # concurrent `start`) is waited for, not doubled.
  if our_pid >/dev/null; then
    say "redis-server (pid $(our_pid)) is up but not answering yet: waiting"
  else
    rm -f "$PIDFILE"
    say "starting redis-server on 127.0.0.1:$PORT (data in $RUN)"
    redis-server --bind 127.0.0.1 --port "$PORT" --protected-mode yes \
      --save '' --appendonly yes --appendfsync everysec \
      --dir "$RUN" --daemonize yes --pidfile "$PIDFILE" --logfile "$LOGFILE"
  fi
  while [ $((SECONDS - began)) -lt "$START_WAIT_S" ]; do
    if answering; then
      say "ready on 127.0.0.1:$PORT after $((SECONDS - began)) s"
      return 0
    fi
    # The daemon writes its pidfile once it listens (before loading the AOF). A pidfile whose
    # process is gone, or none after PIDFILE_WAIT_S, means it exited (port taken, bad config):
    # waiting the full START_WAIT_S would only delay the same failure.
    if ! our_pid >/dev/null && { [ -f "$PIDFILE" ] || [ $((SECONDS - began)) -ge "$PIDFILE_WAIT_S" ]; }; then
      say "redis-server exited during start" >&2
      log_tail
      return 1
    fi
    sleep 0.2
  done
  say "redis-server did not answer PING within $START_WAIT_S s" >&2
  log_tail
  return 1
}

# The pid of the server answering on our port, when it serves our data directory (a server
# of ours whose pidfile was lost is still ours to stop; anyone else's is not).
answering_pid() {
  local cli=(timeout 2 redis-cli -h 127.0.0.1 -p "$PORT" --raw)
  [ "$("${cli[@]}" config get dir 2>/dev/null | sed -n 2p)" = "$RUN" ] || return 1
  "${cli[@]}" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id:\([0-9][0-9]*\)$/\1/p'
}

stop() {
  local pid
  pid="$(our_pid || true)"
  if [ -z "$pid" ] && answering; then
    pid="$(answering_pid || true)"
    if [ -z "$pid" ]; then
      say "a Redis answers on 127.0.0.1:$PORT but does not serve $RUN: leaving it alone" >&2
      return 1
    fi
  fi
  if [ -z "$pid" ]; then
    rm -f "$PIDFILE"
    say "not running"
    return 0
  fi
  say "stopping redis-server (pid $pid)"
  # NOSAVE: there are no RDB snapshots (--save ''); the AOF is still flushed on shutdown.
  timeout 5 redis-cli -h 127.0.0.1 -p "$PORT" shutdown nosave >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
  await_exit "$pid"
}

status() {
  report_status "127.0.0.1:$PORT" "$(our_pid || answering_pid || true)"
}

# Sourced by cluster-redis.sh for the installation; run, it manages the one development server.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
