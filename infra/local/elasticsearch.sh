#!/usr/bin/env bash
# Local Elasticsearch for the distributed runtime's tests (design §11): one embedded node from
# the Maven Central jars of org.elasticsearch:elasticsearch and
# org.elasticsearch.plugin:transport-netty4 (same pinned version), started by
# infra/local/elasticsearch/Launcher.java on 127.0.0.1:19200 (HTTP) and 19300 (transport).
#   infra/local/elasticsearch.sh start|stop|status
# start downloads the jars once (mvn, into infra/local/.cache, git-ignored), compiles the
# launcher, starts the node in the background and waits for a yellow cluster; it is
# idempotent. status exits 0 when the node answers and 3 when it does not.
# Node home, data, logs and pid file live in infra/local/.run/elasticsearch (git-ignored).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
source "$HERE/lib.sh"
# Pinned: the server and netty4 must be the same version, and the client's major must match
# (packages/search-index depends on @elastic/elasticsearch 9.x).
ES_VERSION=9.5.3
# ES 9.x needs Java 21+; this machine's default is 17, so use the Temurin 25 beside it.
JAVA_HOME_ES="${ES_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
CACHE="$HERE/.cache/elasticsearch-$ES_VERSION"
SOURCE="$HERE/elasticsearch/Launcher.java"
RUN="$HERE/.run/elasticsearch"
HOME_DIR="$RUN/home"
PIDFILE="$RUN/elasticsearch.pid"
LOGFILE="$RUN/elasticsearch.log"
HTTP_PORT=19200
TRANSPORT_PORT=19300
BASE="http://127.0.0.1:$HTTP_PORT"
MAIN=gm.local.elasticsearch.Launcher
# The node's name and discovery: cluster-elasticsearch.sh sets its own for each of its nodes.
NODE_SETTINGS=(cluster.name=gm-local node.name=gm-local-1 discovery.type=single-node)
START_WAIT_S=120
STOP_WAIT_S=30

say() { echo "[elasticsearch] $*"; }

# Our cluster answers with a yellow or green health; a node still recovering, another
# service on the port or nothing at all does not count.
answering() {
  local body
  body="$(curl -sf -m 5 "$BASE/_cluster/health?wait_for_status=yellow&timeout=1s" 2>/dev/null)" || return 1
  [[ "$body" == *'"cluster_name":"gm-local"'* ]] && [[ "$body" =~ \"status\":\"(green|yellow)\" ]]
}

# The pid from our pidfile, printed only while that process is still our launcher for this
# home, so a recycled pid is never signalled.
our_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  is_ours "$pid" && echo "$pid"
}

is_ours() {
  local cmdline
  cmdline="$({ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null || true)"
  [[ "$cmdline" == *"$MAIN"* && "$cmdline" == *"path.home=$HOME_DIR "* ]]
}

# The pid of the node answering on our port, when it is ours (pidfile lost).
answering_pid() {
  local pid
  pid="$(curl -sf -m 5 "$BASE/_nodes/_local/process?filter_path=nodes.*.process.id" 2>/dev/null \
    | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')" || return 1
  [ -n "$pid" ] && is_ours "$pid" && echo "$pid"
}

# The first failure lines (a stack trace can push them out of the tail), then the tail.
log_tail() {
  if [ -f "$LOGFILE" ]; then
    echo "---- first errors in $LOGFILE ----" >&2
    grep -m 3 -E '^Exception in thread|^[a-z.]+\.[A-Za-z]+Exception:| ERROR |OutOfMemoryError' "$LOGFILE" | cut -c1-400 >&2 || true
    echo "---- last lines of $LOGFILE ----" >&2
    tail -n 30 "$LOGFILE" >&2
  fi
}

require_java() {
  if [ ! -x "$JAVA_HOME_ES/bin/javac" ]; then
    say "no JDK at $JAVA_HOME_ES: Elasticsearch $ES_VERSION needs Java 21+ (set ES_JAVA_HOME)" >&2
    exit 1
  fi
}

# Lays out a distribution-shaped tree: lib/ (module path), modules/transport-netty4 (the
# plugin's jars plus the descriptor its jar carries) and, after compile_launcher,
# modules/gm-analysis. Built in a temporary directory and renamed, so a cache is either
# complete or absent.
download_jars() {
  command -v mvn >/dev/null 2>&1 || { say "mvn is needed to download the jars from Maven Central (apt-get install maven)" >&2; exit 1; }
  local began=$SECONDS tmp="$CACHE.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp/lib" "$tmp/modules/transport-netty4"
  say "downloading org.elasticsearch:elasticsearch:$ES_VERSION and transport-netty4:$ES_VERSION with their dependencies from Maven Central"
  cat >"$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>gm.local</groupId><artifactId>elasticsearch-jars</artifactId><version>0</version>
  <dependencies>
    <dependency><groupId>org.elasticsearch</groupId><artifactId>elasticsearch</artifactId><version>$ES_VERSION</version></dependency>
    <dependency><groupId>org.elasticsearch.plugin</groupId><artifactId>transport-netty4</artifactId><version>$ES_VERSION</version></dependency>
  </dependencies>
</project>
EOF
  if ! mvn -B -q -C -f "$tmp/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$tmp/lib" >"$tmp/mvn.log" 2>&1; then
    say "mvn could not resolve the jars:" >&2
    tail -n 30 "$tmp/mvn.log" >&2
    exit 1
  fi
  # The plugin and netty live in the plugin's own module layer, as in a distribution; a jar
  # on both the module path and in a plugin directory would fail the jar-hell check.
  mv "$tmp"/lib/transport-netty4-*.jar "$tmp"/lib/netty-*.jar "$tmp/modules/transport-netty4/"
  unzip -p "$tmp/modules/transport-netty4/transport-netty4-$ES_VERSION.jar" \
    META-INF/es-plugins/transport-netty4/plugin-descriptor.properties \
    >"$tmp/modules/transport-netty4/plugin-descriptor.properties"
  rm -f "$tmp/pom.xml" "$tmp/mvn.log"
  rm -rf "$CACHE" && mv "$tmp" "$CACHE"
  say "$(find "$CACHE" -name '*.jar' | wc -l) jars, $(du -sh "$CACHE" | cut -f1) in $((SECONDS - began)) s"
}

# Recompiled whenever Launcher.java changes (its hash is kept beside the classes).
compile_launcher() {
  local sum began=$SECONDS tmp="$CACHE/build.tmp"
  sum="$(sha256sum "$SOURCE" | cut -d' ' -f1)"
  [ "$(cat "$CACHE/launcher.sha256" 2>/dev/null || true)" = "$sum" ] && return 0
  say "compiling $SOURCE"
  rm -rf "$tmp" && mkdir -p "$tmp/classes" "$tmp/launcher/gm/local/elasticsearch" "$tmp/gm-analysis"
  "$JAVA_HOME_ES/bin/javac" --release 21 -d "$tmp/classes" \
    --module-path "$CACHE/lib" --add-modules ALL-MODULE-PATH "$SOURCE"
  # The analysis plugin must be loaded by its plugin class loader only: its class goes into
  # the module's jar, everything else onto the launcher's class path.
  mv "$tmp/classes/gm/local/elasticsearch/Launcher.class" "$tmp/launcher/gm/local/elasticsearch/"
  "$JAVA_HOME_ES/bin/jar" cf "$tmp/gm-analysis/gm-analysis.jar" -C "$tmp/classes" .
  cat >"$tmp/gm-analysis/plugin-descriptor.properties" <<EOF
description=pattern tokenizer, asciifolding and porter_stem filters (analysis-common is not on Maven Central)
version=$ES_VERSION
name=gm-analysis
classname=gm.local.elasticsearch.Launcher\$GmAnalysisPlugin
java.version=21
elasticsearch.version=$ES_VERSION
EOF
  rm -rf "$CACHE/launcher" "$CACHE/modules/gm-analysis"
  mv "$tmp/launcher" "$CACHE/launcher"
  mv "$tmp/gm-analysis" "$CACHE/modules/gm-analysis"
  rm -rf "$tmp"
  echo "$sum" >"$CACHE/launcher.sha256"
  say "compiled in $((SECONDS - began)) s"
}

# Takes the start lock (released by start once a node is launched): concurrent starts wait
# here instead of racing on the cache or launching two nodes.
prepare() {
  require_java
  mkdir -p "$HERE/.cache"
  exec 9>"$HERE/.cache/elasticsearch.lock"
  flock 9
  [ -d "$CACHE/modules/transport-netty4" ] || download_jars
  compile_launcher
  mkdir -p "$HOME_DIR/config" "$RUN/data" "$RUN/logs" "$RUN/tmp"
  # path.home must hold modules/; the jars stay in the shared cache.
  ln -sfn "$CACHE/modules" "$HOME_DIR/modules"
}

launch() {
  : >"$LOGFILE"
  say "starting Elasticsearch $ES_VERSION on 127.0.0.1:$HTTP_PORT (data in $RUN)"
  # setsid: the node outlives the shell and the test run that started it, and a Ctrl-C in
  # that terminal does not reach it; `stop` ends it by its pid. (A background job of this
  # non-interactive shell leads no process group, so setsid execs in place and $! is java.)
  # -D flags: the netty and log4j settings a distribution's launcher passes; es.path.home
  # tells the native loader where a distribution's lib/platform would be (absent here).
  setsid "$JAVA_HOME_ES/bin/java" -Xms512m -Xmx512m -Xss1m \
    -XX:-OmitStackTraceInFastThrow -XX:ErrorFile="$RUN/logs/hs_err_pid%p.log" \
    -Djava.io.tmpdir="$RUN/tmp" -Dfile.encoding=UTF-8 -Djava.awt.headless=true -Djava.locale.providers=CLDR \
    -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true -Dio.netty.recycler.maxCapacityPerThread=0 \
    -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true -Dlog4j2.formatMsgNoLookups=true \
    -Des.path.home="$HOME_DIR" \
    --enable-native-access=org.elasticsearch.nativeaccess,org.apache.lucene.core \
    --module-path "$CACHE/lib" --add-modules ALL-MODULE-PATH -cp "$CACHE/launcher" "$MAIN" \
    path.home="$HOME_DIR" path.data="$RUN/data" path.logs="$RUN/logs" \
    "${NODE_SETTINGS[@]}" \
    http.host=127.0.0.1 http.port="$HTTP_PORT" transport.host=127.0.0.1 transport.port="$TRANSPORT_PORT" \
    cluster.routing.allocation.disk.threshold_enabled=false logger.level=INFO \
    </dev/null >>"$LOGFILE" 2>&1 9>&- &
  echo $! >"$PIDFILE"
}

start() {
  if answering; then
    say "already running on 127.0.0.1:$HTTP_PORT"
    return 0
  fi
  prepare
  local began=$SECONDS
  # A node of ours that is alive but not yet yellow (recovering, or started by a concurrent
  # `start`) is waited for, not doubled.
  local pid
  pid="$(our_pid || answering_pid || true)"
  if [ -n "$pid" ]; then
    echo "$pid" >"$PIDFILE"
    say "node (pid $pid) is up but not ready yet: waiting"
  else
    if curl -s -o /dev/null -m 2 "$BASE/" 2>/dev/null; then
      say "something else answers on 127.0.0.1:$HTTP_PORT: not starting a second node" >&2
      return 1
    fi
    rm -f "$PIDFILE"
    launch
  fi
  flock -u 9
  while [ $((SECONDS - began)) -lt "$START_WAIT_S" ]; do
    if answering; then
      local rss
      pid="$(our_pid || true)"
      rss="$(awk '/^VmRSS/ {print int($2 / 1024) " MB"}' "/proc/$pid/status" 2>/dev/null || true)"
      say "ready on $BASE after $((SECONDS - began)) s${pid:+ (pid $pid${rss:+, RSS $rss})}"
      return 0
    fi
    if ! our_pid >/dev/null; then
      say "the node exited during start" >&2
      log_tail
      return 1
    fi
    sleep 0.5
  done
  say "no yellow cluster health within $START_WAIT_S s" >&2
  log_tail
  return 1
}

stop() {
  local pid
  pid="$(our_pid || answering_pid || true)"
  if [ -z "$pid" ]; then
    if curl -s -o /dev/null -m 2 "$BASE/" 2>/dev/null; then
      say "a node answers on 127.0.0.1:$HTTP_PORT but is not ours ($HOME_DIR): leaving it alone" >&2
      return 1
    fi
    rm -f "$PIDFILE"
    say "not running"
    return 0
  fi
  say "stopping Elasticsearch (pid $pid)"
  # SIGTERM runs the launcher's shutdown hook, which closes the node cleanly.
  kill -TERM "$pid" 2>/dev/null || true
  await_exit "$pid"
}

status() {
  report_status "127.0.0.1:$HTTP_PORT" "$(our_pid || answering_pid || true)"
}

# Sourced by cluster-elasticsearch.sh for the jars, the launcher and the JVM command; run, it
# manages the one development node.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
