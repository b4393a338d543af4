# OpenSearch 2.19.6 for tests/development, from Maven Central jars (sourced by docker/services.sh after common.sh;
# defines opensearch_start/_stop/_status).
#   start: resolve the jars (docker/services/opensearch-pom.xml: the server + the transport-netty4, analysis-common and
#   lang-painless modules), launch docker/services/OpenSearchLauncher.java (a single-node org.opensearch.node.Node with
#   those modules as classpath plugins), wait until GET /_cluster/health?wait_for_status=yellow answers.
# Env: OPENSEARCH_PORT (9200), OPENSEARCH_TRANSPORT_PORT (9300), OPENSEARCH_HEAP (512m),
#   OPENSEARCH_CLEAN=1 (wipe data/ at start: indices, templates, the whole cluster state; a running node is restarted),
#   NUTCH2_SERVICES_DIR.
# Layout: $NUTCH2_SERVICES_DIR/opensearch/{lib/, config/ (empty), data/, logs/, log4j2.xml, opensearch.pid,
#   opensearch.log}. Plain HTTP on 127.0.0.1 (no security plugin), cluster.name nutch2, disk watermarks off.
#   Production: the opensearchproject/opensearch image (docker/compose.yml).
# Notes (2 cores, busy box): jars 46 MB (63 files), ~5 s to resolve; first start 18 s with the resolution, later
#   starts (JVM + compiling the launcher + node start + yellow) 8-12 s; stop ~2 s; RSS ~430-470 MB with the 512m heap.
# JVM flags: none is required on Java 17 outside the distribution (no Bootstrap: no security manager is installed,
#   so no -Djava.security.manager=allow; no JNA/mlockall). The ones below are the distribution's jvm.options that matter
#   here: UTF-8 default charset, the 2.x locale providers (date parsing as in the image), Netty's unpooled direct
#   memory settings, log4j kept alive until the node has closed (-Dlog4j.shutdownHookEnabled=false), G1, and exit on
#   OutOfMemoryError (the distribution's Bootstrap handler that does this is not installed).

_opensearch_vars() {
  opensearch_dir="$NUTCH2_SERVICES_DIR/opensearch"
  opensearch_pidfile="$opensearch_dir/opensearch.pid"
  opensearch_log="$opensearch_dir/opensearch.log"
  opensearch_port="${OPENSEARCH_PORT:-9200}"
  opensearch_tport="${OPENSEARCH_TRANSPORT_PORT:-9300}"
  opensearch_url="http://127.0.0.1:$opensearch_port"
}

_opensearch_here() { cd "$(dirname "${BASH_SOURCE[0]}")" && pwd; }

# _opensearch_ping URL — true when URL/_cluster/health reaches yellow (or green) within 2 s
_opensearch_ping() {
  local url="$1/_cluster/health?wait_for_status=yellow&timeout=2s"
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 5 "$url" 2>/dev/null | grep -Eq '"status":"(yellow|green)"'
  else
    python3 -c 'import sys,json,urllib.request; sys.exit(0 if json.load(urllib.request.urlopen(sys.argv[1], timeout=5))["status"] in ("yellow","green") else 1)' "$url" 2>/dev/null
  fi
}

_opensearch_jars() {  # org.opensearch:opensearch and the modules the node loads
  local j
  for j in opensearch transport-netty4-client analysis-common lang-painless log4j-core; do
    ls "$1/lib/$j"-[0-9]*.jar >/dev/null 2>&1 || { echo "opensearch: no $j jar in $1/lib" >&2; return 1; }
  done
}

_opensearch_resolve() {
  resolve_pom opensearch "$1" "$(_opensearch_here)/opensearch-pom.xml" _opensearch_jars
}

opensearch_start() {
  _opensearch_vars
  if pid_alive "$opensearch_pidfile" && [ "${OPENSEARCH_CLEAN:-0}" = 1 ]; then
    # the data folder (cluster state: indices, templates, ...) belongs to the node: wipe it between a stop and a start
    echo "opensearch: OPENSEARCH_CLEAN=1 and running: restarting with empty data"
    stop_pid opensearch "$opensearch_pidfile" || return 1
  fi
  if pid_alive "$opensearch_pidfile" && _opensearch_ping "$opensearch_url"; then
    echo "opensearch: listening on $opensearch_url (already running, pid $(cat "$opensearch_pidfile"))"; return 0
  fi
  if pid_alive "$opensearch_pidfile"; then  # ours, but not answering (still starting, or stuck)
    if wait_for opensearch 60 "$opensearch_pidfile" "$opensearch_log" _opensearch_ping "$opensearch_url"; then
      echo "opensearch: listening on $opensearch_url (pid $(cat "$opensearch_pidfile"))"; return 0
    fi
    echo "opensearch: pid $(cat "$opensearch_pidfile") is not answering; run: docker/services.sh stop opensearch" >&2; return 1
  fi
  if _opensearch_ping "$opensearch_url"; then
    echo "opensearch: port $opensearch_port already serves OpenSearch, but not a process started here; leaving it alone" >&2; return 1
  fi
  local t0; t0=$(date +%s)
  # absolute paths: the JVM runs in (and its log is opened from) the opensearch dir
  mkdir -p "$opensearch_dir" && opensearch_dir="$(cd "$opensearch_dir" && pwd)" || return 1
  opensearch_pidfile="$opensearch_dir/opensearch.pid"; opensearch_log="$opensearch_dir/opensearch.log"
  _opensearch_resolve "$opensearch_dir" || return 1
  if [ "${OPENSEARCH_CLEAN:-0}" = 1 ]; then rm -rf "$opensearch_dir/data"; echo "opensearch: OPENSEARCH_CLEAN=1, data wiped"; fi
  mkdir -p "$opensearch_dir/config" "$opensearch_dir/data" "$opensearch_dir/logs" || return 1

  # log4j2: WARN and above with timestamps into opensearch.log (no OpenSearch log4j2.properties is read)
  cat >"$opensearch_dir/log4j2.xml" <<'XML'
<Configuration>
  <Appenders><Console name="out" target="SYSTEM_OUT"><PatternLayout pattern="%d{ISO8601} %-5p [%c{1.}] %m%n"/></Console></Appenders>
  <Loggers><Root level="WARN"><AppenderRef ref="out"/></Root></Loggers>
</Configuration>
XML

  local java heap="${OPENSEARCH_HEAP:-512m}"; java="$(java17)"
  echo "opensearch: starting on port $opensearch_port (transport $opensearch_tport, log $opensearch_log) ..."
  # cwd = opensearch dir so 'lib/*' resolves; the subshell execs nohup, which execs java: $! is the JVM pid itself
  ( cd "$opensearch_dir" && exec nohup "$java" -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError \
      -XX:-OmitStackTraceInFastThrow -Dfile.encoding=UTF-8 -Djava.awt.headless=true -Djava.locale.providers=SPI,COMPAT \
      -Djna.nosys=true -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true \
      -Dio.netty.recycler.maxCapacityPerThread=0 -Dio.netty.allocator.numDirectArenas=0 \
      -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true \
      -Dlog4j2.configurationFile="$opensearch_dir/log4j2.xml" \
      -cp 'lib/*' "$NUTCH2_REPO/docker/services/OpenSearchLauncher.java" "$opensearch_dir" "$opensearch_port" "$opensearch_tport" \
      >"$opensearch_log" 2>&1 </dev/null ) &
  echo $! >"$opensearch_pidfile"
  wait_for opensearch 180 "$opensearch_pidfile" "$opensearch_log" _opensearch_ping "$opensearch_url" || return 1
  echo "opensearch: up in $(( $(date +%s) - t0 )) s" >&2
  echo "opensearch: listening on $opensearch_url (pid $(cat "$opensearch_pidfile"))"
}

opensearch_stop() {
  _opensearch_vars
  stop_pid opensearch "$opensearch_pidfile"
}

opensearch_status() {
  _opensearch_vars
  if pid_alive "$opensearch_pidfile"; then
    if _opensearch_ping "$opensearch_url"; then echo "opensearch: running on $opensearch_url (pid $(cat "$opensearch_pidfile"))"; return 0; fi
    echo "opensearch: process $(cat "$opensearch_pidfile") alive but $opensearch_url/_cluster/health not yellow"; return 1
  fi
  echo "opensearch: not running"; return 1
}
