# Solr 9.10.1 for tests/development, from Maven Central jars (sourced by docker/services.sh after common.sh).
#   start: resolve jars, (re)build the solr home with core `nutch` from conf/solr/nutch/conf, launch, wait for ping.
# Env: SOLR_PORT (8983), SOLR_CLEAN=1 (wipe the index at start), SOLR_HEAP (512m), NUTCH2_SERVICES_DIR.
# Layout: $NUTCH2_SERVICES_DIR/solr/{lib/, home/solr.xml, home/nutch/{core.properties,conf/,data/}, solr.pid, solr.log}

SOLR_GAV="org.apache.solr:solr-test-framework:9.10.1"

_solr_vars() {
  solr_dir="$NUTCH2_SERVICES_DIR/solr"
  solr_home="$solr_dir/home"
  solr_pidfile="$solr_dir/solr.pid"
  solr_log="$solr_dir/solr.log"
  solr_port="${SOLR_PORT:-8983}"
  solr_url="http://127.0.0.1:$solr_port/solr/nutch"
}

# _solr_ping URL — true when URL/admin/ping answers status OK
_solr_ping() {
  local url="$1/admin/ping?wt=json"
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 5 "$url" 2>/dev/null | grep -q '"status":"OK"'
  else
    python3 -c 'import sys,urllib.request; sys.exit(0 if b"\"status\":\"OK\"" in urllib.request.urlopen(sys.argv[1], timeout=5).read() else 1)' "$url" 2>/dev/null
  fi
}

# _solr_wipe URL — delete every document of a running core (SOLR_CLEAN=1 when already running)
_solr_wipe() {
  local url="$1/update?commit=true" body='{"delete":{"query":"*:*"}}'
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 60 -H 'Content-Type: application/json' -d "$body" "$url" >/dev/null
  else
    python3 -c 'import sys,urllib.request as u; u.urlopen(u.Request(sys.argv[1], sys.argv[2].encode(), {"Content-Type": "application/json"}), timeout=60)' "$url" "$body"
  fi || { echo "solr: SOLR_CLEAN=1 but deleting the documents failed" >&2; return 1; }
  echo "solr: SOLR_CLEAN=1, index wiped (delete *:*)"
}

solr_start() {
  _solr_vars
  if pid_alive "$solr_pidfile" && _solr_ping "$solr_url"; then
    if [ "${SOLR_CLEAN:-0}" = 1 ]; then _solr_wipe "$solr_url" || return 1; fi
    echo "solr: listening on $solr_url (already running, pid $(cat "$solr_pidfile"))"; return 0
  fi
  if pid_alive "$solr_pidfile"; then  # ours, but not answering (still starting, or stuck)
    if wait_for solr 60 "$solr_pidfile" "$solr_log" _solr_ping "$solr_url"; then
      echo "solr: listening on $solr_url (pid $(cat "$solr_pidfile"))"; return 0
    fi
    echo "solr: pid $(cat "$solr_pidfile") is not answering; run: docker/services.sh stop solr" >&2; return 1
  fi
  if _solr_ping "$solr_url"; then
    echo "solr: port $solr_port already serves $solr_url, but not a process started here; leaving it alone (use it as it is, or stop it where it was started)" >&2; return 1
  fi
  resolve_jars "$solr_dir" "$SOLR_GAV" || return 1

  # Solr home: solr.xml + core `nutch`. conf/ is re-copied at every start so the repo configset always wins;
  # data/ (index + tlog) persists unless SOLR_CLEAN=1.
  local core="$solr_home/nutch"
  mkdir -p "$core" || return 1
  printf '<?xml version="1.0" encoding="UTF-8"?>\n<solr/>\n' >"$solr_home/solr.xml"
  printf 'name=nutch\nconfig=solrconfig.xml\nschema=schema.xml\ndataDir=data\n' >"$core/core.properties"
  rm -rf "$core/conf" && cp -r "$NUTCH2_REPO/conf/solr/nutch/conf" "$core/conf" || return 1
  if [ "${SOLR_CLEAN:-0}" = 1 ]; then rm -rf "$core/data"; echo "solr: SOLR_CLEAN=1, index wiped"; fi

  # log4j2: WARN and above with timestamps into solr.log (without a config file log4j2 prints errors only)
  cat >"$solr_dir/log4j2.xml" <<'XML'
<Configuration>
  <Appenders><Console name="out" target="SYSTEM_OUT"><PatternLayout pattern="%d{ISO8601} %-5p [%c{1.}] %m%n"/></Console></Appenders>
  <Loggers><Root level="WARN"><AppenderRef ref="out"/></Root></Loggers>
</Configuration>
XML

  local java; java="$(java17)"
  echo "solr: starting on port $solr_port (log $solr_log) ..."
  # cwd = solr dir so 'lib/*' resolves; the subshell execs nohup, which execs java: $! is the JVM pid itself
  ( cd "$solr_dir" && exec nohup "$java" -Xmx"${SOLR_HEAP:-512m}" -Dsolr.log.dir="$solr_dir" \
      -Dlog4j2.configurationFile="$solr_dir/log4j2.xml" \
      -cp 'lib/*' "$NUTCH2_REPO/docker/services/SolrLauncher.java" "$solr_home" "$solr_port" \
      >"$solr_log" 2>&1 </dev/null ) &
  echo $! >"$solr_pidfile"
  wait_for solr 120 "$solr_pidfile" "$solr_log" _solr_ping "$solr_url" || return 1
  echo "solr: listening on $solr_url (pid $(cat "$solr_pidfile"))"
}

solr_stop() {
  _solr_vars
  stop_pid solr "$solr_pidfile"
}

solr_status() {
  _solr_vars
  if pid_alive "$solr_pidfile"; then
    if _solr_ping "$solr_url"; then echo "solr: running on $solr_url (pid $(cat "$solr_pidfile"))"; return 0; fi
    echo "solr: process $(cat "$solr_pidfile") alive but $solr_url/admin/ping not answering"; return 1
  fi
  if _solr_ping "$solr_url"; then  # another checkout's docker/services.sh, or a Solr of the machine
    echo "solr: answering on $solr_url (not started from this folder)"; return 0
  fi
  echo "solr: not running"; return 1
}
