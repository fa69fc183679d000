#!/usr/bin/env bash
# Local engines without Docker (design §11): Kafka and Elasticsearch from Maven Central jars,
# Redis from Debian. Each engine has its own script beside this one; this one dispatches.
#   infra/local/engines.sh start|stop|status [kafka|redis|elasticsearch ...]   (default: all)
#   infra/local/engines.sh start|stop|status --cluster   the replicated engines (cluster.sh)
# Every engine listens on 127.0.0.1 only. Jars are cached in infra/local/.cache (git-ignored);
# data, logs and pid files live in infra/local/.run (git-ignored).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
action="${1:-}"
shift || true
if [ "${1:-}" = --cluster ]; then
  [ $# -eq 1 ] || { echo "usage: $0 start|stop|status --cluster (per-node commands: infra/local/cluster.sh)" >&2; exit 2; }
  exec "$HERE/cluster.sh" "$action"
fi
engines=("$@")
[ ${#engines[@]} -eq 0 ] && engines=(redis kafka elasticsearch)
case "$action" in
  start|stop|status) ;;
  *) echo "usage: $0 start|stop|status [kafka|redis|elasticsearch ...]" >&2; exit 2 ;;
esac
status=0
for engine in "${engines[@]}"; do
  script="$HERE/$engine.sh"
  if [ ! -x "$script" ]; then echo "unknown engine: $engine" >&2; exit 2; fi
  "$script" "$action" || status=$?
  [ $status -ne 0 ] && [ "$action" = start ] && exit $status
done
exit $status
