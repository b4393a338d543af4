# Apache Tika 3.3.1 for tests/development (sourced by docker/services.sh after common.sh; defines tika_start/_stop/_status).
#   start: resolve the parser jars (docker/services/tika-pom.xml), launch docker/services/TikaLauncher.java (Tika
#   Server's REST API over tika-parsers-standard-package: the tika-server-* artifacts are not on Maven Central here),
#   wait until GET /version answers.
# Env: TIKA_PORT (9998), TIKA_TASK_TIMEOUT_MS (60000: longest parse of one document), TIKA_MAX_BODY (67108864 bytes),
#   TIKA_PARSERS (2 parser processes, one document at a time each), TIKA_PARSER_HEAP (512m each), NUTCH2_SERVICES_DIR.
# Layout: $NUTCH2_SERVICES_DIR/tika/{lib/, tika.pid, tika.log}. Production: the apache/tika image (docker/compose.yml).
# Notes (2 cores): jars ~62 MB, ~10 s to resolve with a warm ~/.m2; start ~10-15 s (the front, then each parser
# process compiles the launcher and loads Tika's parsers); a parser process that dies or is killed is replaced in ~6 s.

_tika_vars() {
  tika_dir="$NUTCH2_SERVICES_DIR/tika"
  tika_pidfile="$tika_dir/tika.pid"
  tika_log="$tika_dir/tika.log"
  tika_port="${TIKA_PORT:-9998}"
  tika_url="http://127.0.0.1:$tika_port"
}

_tika_here() { cd "$(dirname "${BASH_SOURCE[0]}")" && pwd; }

# _tika_ping URL — true when URL/version answers "Apache Tika ..."
_tika_ping() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 5 "$1/version" 2>/dev/null | grep -q '^Apache Tika'
  else
    python3 -c 'import sys,urllib.request; sys.exit(0 if urllib.request.urlopen(sys.argv[1] + "/version", timeout=5).read().startswith(b"Apache Tika") else 1)' "$1" 2>/dev/null
  fi
}

_tika_jars() {  # the jars tika-parsers-standard-package must bring (and junrar must not)
  ls "$1"/lib/tika-core-*.jar >/dev/null 2>&1 || { echo "tika: no tika-core jar in $1/lib" >&2; return 1; }
  if ls "$1"/lib/junrar-*.jar >/dev/null 2>&1; then echo "tika: junrar came along; it must stay excluded" >&2; return 1; fi
}

_tika_resolve() {
  resolve_pom tika "$1" "$(_tika_here)/tika-pom.xml" _tika_jars
}

tika_start() {
  _tika_vars
  if pid_alive "$tika_pidfile" && _tika_ping "$tika_url"; then
    echo "tika: listening on $tika_url (already running, pid $(cat "$tika_pidfile"))"; return 0
  fi
  if pid_alive "$tika_pidfile"; then
    if wait_for tika 60 "$tika_pidfile" "$tika_log" _tika_ping "$tika_url"; then
      echo "tika: listening on $tika_url (pid $(cat "$tika_pidfile"))"; return 0
    fi
    echo "tika: pid $(cat "$tika_pidfile") is not answering; run: docker/services.sh stop tika" >&2; return 1
  fi
  if _tika_ping "$tika_url"; then
    echo "tika: port $tika_port already serves Tika, but not a process started here; leaving it alone" >&2; return 1
  fi
  mkdir -p "$tika_dir" && tika_dir="$(cd "$tika_dir" && pwd)" || return 1
  _tika_resolve "$tika_dir" || return 1
  cat >"$tika_dir/log4j2.xml" <<'XML'
<Configuration>
  <Appenders><Console name="out" target="SYSTEM_OUT"><PatternLayout pattern="%d{ISO8601} %-5p [%c{1.}] %m%n"/></Console></Appenders>
  <Loggers><Root level="WARN"><AppenderRef ref="out"/></Root></Loggers>
</Configuration>
XML
  local java src; java="$(java17)"; src="$NUTCH2_REPO/docker/services/TikaLauncher.java"
  echo "tika: starting on port $tika_port (log $tika_log) ..."
  # cwd = tika dir so 'lib/*' resolves; the subshell execs nohup, which execs java: $! is the front JVM's pid. The
  # parser processes it starts inherit the classpath and the log4j2 config and end with it (their stdin/stdout pipes).
  ( cd "$tika_dir" && exec nohup "$java" -Xmx192m -XX:+UseSerialGC -Djava.awt.headless=true \
      -Dlog4j2.configurationFile="$tika_dir/log4j2.xml" -Dtika.launcher.source="$src" \
      -cp 'lib/*' "$src" "$tika_port" "${TIKA_TASK_TIMEOUT_MS:-60000}" "${TIKA_MAX_BODY:-67108864}" \
      "${TIKA_PARSERS:-2}" "${TIKA_PARSER_HEAP:-512m}" >"$tika_log" 2>&1 </dev/null ) &
  echo $! >"$tika_pidfile"
  wait_for tika 120 "$tika_pidfile" "$tika_log" _tika_ping "$tika_url" || return 1
  echo "tika: listening on $tika_url (pid $(cat "$tika_pidfile"))"
}

tika_stop() {
  _tika_vars
  stop_pid tika "$tika_pidfile"
}

tika_status() {
  _tika_vars
  if pid_alive "$tika_pidfile"; then
    if _tika_ping "$tika_url"; then echo "tika: running on $tika_url (pid $(cat "$tika_pidfile"))"; return 0; fi
    echo "tika: process $(cat "$tika_pidfile") alive but $tika_url/version not answering"; return 1
  fi
  echo "tika: not running"; return 1
}
