#!/usr/bin/env bash
# Local Kafka for the distributed runtime's tests (design §11): one KRaft node
# (broker + controller) from Maven Central jars, PLAINTEXT on 127.0.0.1:19092, controller on
# 127.0.0.1:19093, data and logs in infra/local/.run/kafka (git-ignored).
#   infra/local/kafka.sh start|stop|status
# start downloads the broker and its runtime dependencies once into
# infra/local/.cache/kafka-<version> (git-ignored), formats the log dir once, and is
# idempotent; status exits 0 when the broker answers and 3 when it does not.
#
# Version: 4.3.1, the newest patch release of the 4.x line. kafkajs 2.2.4 negotiates API
# versions that KIP-896 kept in 4.0 (Produce v3+, Fetch v4+, TxnOffsetCommit v0+, …); its
# transactional produce and sendOffsets are exercised by packages/bus/src/kafka's suite.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
source "$HERE/lib.sh"
ROOT="$(cd "$HERE/../.." && pwd)"
KAFKA_VERSION=4.3.1
# Kafka 4.x logs through slf4j 1.7 to log4j2; this is the log4j2 release Kafka 4.3 builds with.
LOG4J_VERSION=2.25.4
CACHE="$HERE/.cache/kafka-$KAFKA_VERSION"
RUN="$HERE/.run/kafka"
DATA="$RUN/data"
PIDFILE="$RUN/kafka.pid"
LOGFILE="$RUN/kafka.log"
CONFIG="$RUN/server.properties"
PORT=19092
CONTROLLER_PORT=19093
START_WAIT_S=90
STOP_WAIT_S=30

say() { echo "[kafka] $*"; }

# The broker answers a metadata request through kafkajs, the client the adapters use, so
# "ready" means ready for them (a listening socket alone is not: KRaft opens it early).
answering() {
  (cd "$ROOT/packages/bus" && timeout 10 node --input-type=module -e "
    import { Kafka, logLevel } from 'kafkajs';
    const admin = new Kafka({ clientId: 'gm-launcher-probe', brokers: ['127.0.0.1:$PORT'], logLevel: logLevel.NOTHING,
      connectionTimeout: 1000, retry: { retries: 0 } }).admin();
    try { await admin.connect(); const c = await admin.describeCluster(); process.exit(c.brokers.length > 0 ? 0 : 1); }
    catch { process.exit(1); }
  " >/dev/null 2>&1)
}

# The pid from our pidfile, printed only while that process is a JVM running our config, so
# a recycled pid is never signalled.
our_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF "kafka.Kafka $CONFIG" || return 1
  echo "$pid"
}

# The errors first (a failed start often logs its cause long before the last line), then the end.
log_tail() {
  [ -f "$LOGFILE" ] || return 0
  if grep -qE '^\[[^]]*\] (ERROR|FATAL) ' "$LOGFILE"; then
    echo "---- errors in $LOGFILE ----" >&2
    grep -E -A3 '^\[[^]]*\] (ERROR|FATAL) ' "$LOGFILE" | tail -n 30 >&2
  fi
  echo "---- last lines of $LOGFILE ----" >&2
  tail -n 20 "$LOGFILE" >&2
}

listening() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# A generated pom whose dependencies are the broker and the log binding; Maven resolves the
# runtime closure. A private local repository keeps concurrent Maven runs of other launchers
# from racing on ~/.m2.
download() {
  [ -f "$CACHE/.complete" ] && return 0
  command -v mvn >/dev/null 2>&1 || { say "mvn is missing: install Maven (apt-get install maven) to fetch the Kafka jars" >&2; return 1; }
  command -v java >/dev/null 2>&1 || { say "java is missing: Kafka $KAFKA_VERSION needs a JDK 17+" >&2; return 1; }
  local began=$SECONDS work
  work="$(mktemp -d)"
  cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>gm.local</groupId><artifactId>kafka-runtime</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
EOF
  say "downloading kafka_2.13 $KAFKA_VERSION and its runtime dependencies from Maven Central into $CACHE"
  rm -rf "$CACHE.partial"
  if ! mvn -q -B -Dstyle.color=never -f "$work/pom.xml" -Dmaven.repo.local="$HERE/.cache/m2" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$CACHE.partial" >"$work/mvn.log" 2>&1; then
    say "the download failed (is repo1.maven.org reachable?); Maven said:" >&2
    tail -n 30 "$work/mvn.log" >&2
    rm -rf "$work" "$CACHE.partial"
    return 1
  fi
  rm -rf "$work" "$CACHE"
  local count size
  count="$(find "$CACHE.partial" -name '*.jar' | wc -l)"
  size="$(du -sm "$CACHE.partial" | cut -f1)"
  # Renamed only once complete, so an interrupted download is never mistaken for a cache.
  echo "$count jars" >"$CACHE.partial/.complete"
  mv "$CACHE.partial" "$CACHE"
  say "downloaded $count jars ($size MB) in $((SECONDS - began)) s"
}

write_config() {
  mkdir -p "$DATA"
  {
    cat <<EOF
# Generated by infra/local/kafka.sh: one KRaft node for tests, on 127.0.0.1 only.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
log.dirs=$DATA
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
EOF
    small_box_settings
  } >"$CONFIG"
  write_log4j
}

# The settings every local broker shares, single node or cluster (cluster-kafka.sh).
small_box_settings() {
  cat <<'EOF'
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
auto.create.topics.enable=false
num.partitions=1
group.initial.rebalance.delay.ms=0
# The internal topics default to 50 partitions each; creating them stalls a 2-core box for
# seconds on the first group and the first transaction, and tests need no more than a few.
offsets.topic.num.partitions=4
transaction.state.log.num.partitions=4
share.coordinator.state.topic.num.partitions=1
# Threads sized for 2 cores rather than for a production broker.
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
background.threads=4
log.cleaner.threads=1
# Small segments keep compaction of test topics observable and the data dir small.
log.segment.bytes=16777216
EOF
}

write_log4j() {
  cat >"$RUN/log4j2.properties" <<'EOF'
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
# Per-request and per-partition state chatter would drown the lines that explain a failure.
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.state.name = state.change.logger
logger.state.level = warn
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = warn
logger.log.name = org.apache.kafka.storage.internals.log
logger.log.level = warn
logger.unified.name = kafka.log.UnifiedLog
logger.unified.level = warn
# Metadata replay and config dumps: hundreds of lines per start and per topic.
logger.controller.name = org.apache.kafka.controller
logger.controller.level = warn
logger.image.name = org.apache.kafka.image
logger.image.level = warn
logger.metadata.name = kafka.server.metadata
logger.metadata.level = warn
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = warn
logger.kconfig.name = kafka.server.KafkaConfig
logger.kconfig.level = warn
EOF
}

# Heap and GC for a 2-core test box: a small fixed heap, G1 with its thread counts capped.
JVM_OPTS=(-Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:ParallelGCThreads=2 -XX:ConcGCThreads=1
  -XX:CICompilerCount=2 -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true)

java_cp() { java "${JVM_OPTS[@]}" -Dlog4j2.configurationFile="$RUN/log4j2.properties" -cp "$CACHE/*" "$@"; }

format_once() {
  [ -f "$DATA/meta.properties" ] && return 0
  local cluster_id
  cluster_id="$(java_cp kafka.tools.StorageTool random-uuid 2>>"$LOGFILE" | tail -n 1)"
  say "formatting $DATA (KRaft, standalone controller, cluster id $cluster_id)"
  if ! java_cp kafka.tools.StorageTool format --standalone -t "$cluster_id" -c "$CONFIG" >>"$LOGFILE" 2>&1; then
    say "formatting the log dir failed" >&2
    log_tail
    return 1
  fi
}

# The readiness probe runs kafkajs from packages/bus: without it every probe would fail and the
# start would time out with a healthy broker's log.
require_probe() {
  command -v node >/dev/null 2>&1 || { say "node is missing: the readiness probe needs Node and the workspace's kafkajs" >&2; return 1; }
  (cd "$ROOT/packages/bus" && node --input-type=module -e "await import('kafkajs')" >/dev/null 2>&1) ||
    { say "kafkajs is not installed in packages/bus: run 'pnpm install' (scripts/setup.sh) first" >&2; return 1; }
}

start() {
  require_probe
  if answering; then
    say "already running on 127.0.0.1:$PORT"
    return 0
  fi
  download
  mkdir -p "$RUN"
  local began=$SECONDS pid
  if pid="$(our_pid)"; then
    # Alive but not answering yet (still starting, or started by a concurrent `start`).
    say "broker (pid $pid) is up but not answering yet: waiting"
  else
    for port in "$PORT" "$CONTROLLER_PORT"; do
      if listening "$port"; then
        say "something else listens on 127.0.0.1:$port (not a broker started from $RUN): free the port first" >&2
        return 1
      fi
    done
    write_config
    : >"$LOGFILE"
    format_once
    say "starting kafka $KAFKA_VERSION on 127.0.0.1:$PORT (data in $DATA)"
    # setsid: the broker outlives the shell (and the test run) that started it.
    setsid java "${JVM_OPTS[@]}" -Dlog4j2.configurationFile="$RUN/log4j2.properties" \
      -cp "$CACHE/*" kafka.Kafka "$CONFIG" >>"$LOGFILE" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$PIDFILE"
  fi
  while [ $((SECONDS - began)) -lt "$START_WAIT_S" ]; do
    if answering; then
      say "started in $((SECONDS - began)) s on 127.0.0.1:$PORT (pid $pid)"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      say "the broker exited during start" >&2
      log_tail
      rm -f "$PIDFILE"
      return 1
    fi
    sleep 1
  done
  say "the broker did not answer within $START_WAIT_S s" >&2
  log_tail
  return 1
}

stop() {
  local pid
  if ! pid="$(our_pid)"; then
    rm -f "$PIDFILE"
    if answering; then
      say "a broker answers on 127.0.0.1:$PORT but was not started from $RUN: leaving it alone" >&2
      return 1
    fi
    say "not running"
    return 0
  fi
  say "stopping kafka (pid $pid)"
  # SIGTERM runs the broker's controlled shutdown, which closes the logs cleanly.
  kill -TERM "$pid" 2>/dev/null || true
  await_exit "$pid"
}

status() {
  report_status "127.0.0.1:$PORT" "$(our_pid || true)"
}

# Sourced by cluster-kafka.sh for the download, the JVM and the shared settings; run, it
# manages the one development node.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
