# HBase 2.6.x standalone + a Thrift v1 server for happybase (sourced by docker/services.sh; defines hbase_start/_stop/_status).
#
# Notes (measured on the 2-core / 24 GB / OpenJDK 17 test box):
# - Jars: docker/services/hbase-pom.xml (hbase-server 2.6.4-hadoop3, log4j2 2.24.3 behind slf4j 1.7, libthrift 0.17.0;
#   ~183 jars / 120 MB, ~20-45 s to resolve with a cold ~/.m2). 2.6.4-hadoop3 is the only 2.6.x-hadoop3 that resolves
#   here (2.6.3-hadoop3 and 2.6.5-hadoop3 do not). HBASE_VERSION overrides.
# - GOTCHA: org.apache.hbase:hbase-thrift is NOT served by this machine's Maven registry (no version resolves: jar, pom,
#   sources all refused). So the Thrift v1 server is our own small gateway, docker/services/hbase-thrift-gateway.java:
#   Java stubs generated from happybase's own Hbase.thrift by Debian's thrift-compiler 0.17 (apt-get install
#   thrift-compiler, done here when missing), served by libthrift 0.17.0 (TThreadPoolServer, buffered transport,
#   binary protocol = happybase's defaults, like HBase's own ThriftServer) over the HBase 2.6 client API. It implements
#   the calls happybase makes with the semantics of HBase's ThriftHBaseServiceHandler. Compiled once into
#   $NUTCH2_SERVICES_DIR/hbase/gateway (thrift + javac ~19 s, once; rebuilt when the .java, the IDL or lib/ change).
#   Checked with happybase 1.2: create/delete/enable/disable/families/regions, put/row/rows/cells/scan (prefix,
#   start/stop, columns, filter string, sorted_columns, reverse, timestamps), batch, delete, counters, 5 MB values,
#   AlreadyExists and IOError (TableNotFoundException) errors.
# - HMaster start with hbase.cluster.distributed=false = master + region server + ZooKeeper (2181) in one JVM.
#   hbase.unsafe.stream.capability.enforce=false is required on the local FS (else WAL hsync check fails).
# - Times (2 cores, with Cassandra, Solr and other engineers' tests running): jar resolution 17-38 s (once);
#   start with empty data 34 s; restart 30-40 s (the master always runs a ServerCrashProcedure for the previous
#   region server, even after a clean shutdown: ~10 s); master JVM to "completed initialization" ~13-17 s; the rest
#   is ZooKeeper start + meta assignment + the probe. Stop: thrift at once, then `HMaster stop --shutDownCluster`
#   (clean flush/close, ~20 s), SIGTERM/KILL only as a fallback and only for pids in our pidfiles.
# - First failures: (1) no hbase-thrift jar (above); (2) `HMaster stop` alone only prints usage: it needs
#   --shutDownCluster; (3) pid of a `cmd && nohup java &` list is the subshell's, not java's: start java directly.
# - Memory: master RSS ~370 MB at start (-Xmx1536m: hundreds of test tables; MSLAB off), gateway ~180 MB (-Xmx256m). Ports: 2181, 16000, 16020, 9090.
# - Readiness: happybase.Connection(...).tables() plus create+drop of a throw-away table (the Thrift port opens
#   before the master has finished initialising).
# - Logs: $NUTCH2_SERVICES_DIR/hbase/logs/{master,thrift}.log (log4j2, INFO) and {master,thrift}.out (JVM stdout/err).
# - Env: HBASE_THRIFT_PORT (9090), HBASE_ZK_PORT (2181), HBASE_MASTER_HEAP (1536m), HBASE_THRIFT_HEAP (256m),
#   HBASE_START_TIMEOUT (240 s).

hbase_dir() { mkdir -p "$NUTCH2_SERVICES_DIR/hbase" && (cd "$NUTCH2_SERVICES_DIR/hbase" && pwd); }
_hbase_here() { cd "$(dirname "${BASH_SOURCE[0]}")" && pwd; }

_hbase_probe() {  # port [create-drop]
  python3 - "$@" <<'PY'
import sys, happybase
port = int(sys.argv[1])
c = happybase.Connection("127.0.0.1", port, timeout=20000)
try:
    c.tables()
    if len(sys.argv) > 2:
        name = b"nutch2_probe"
        if name in c.tables():
            c.delete_table(name, disable=True)
        c.create_table(name, {"f": dict()})
        c.delete_table(name, disable=True)
finally:
    c.close()
PY
}

_hbase_jars() {
  ls "$1"/lib/hbase-server-*.jar >/dev/null 2>&1 || { echo "hbase: no hbase-server jar in $1/lib" >&2; return 1; }
}

_hbase_resolve() {  # hbase-server (+ log4j2, libthrift) of HBASE_VERSION
  resolve_pom hbase "$1" "$(_hbase_here)/hbase-pom.xml" _hbase_jars -Dhbase.version="${HBASE_VERSION:-2.6.4-hadoop3}"
}

# Build the Thrift v1 gateway: stubs from happybase's Hbase.thrift + our handler, compiled against lib/.
_hbase_build_gateway() {
  local d="$1" here src idl key
  here="$(_hbase_here)"; src="$here/hbase-thrift-gateway.java"
  idl="$(python3 -c 'import happybase, os; print(os.path.join(os.path.dirname(happybase.__file__), "Hbase.thrift"))')"
  key="$(cat "$src" "$idl" | cksum | cut -d' ' -f1) $(cat "$d/lib/.complete")"
  if [ -f "$d/gateway/.complete" ] && [ "$(cat "$d/gateway/.complete")" = "$key" ]; then return 0; fi
  if ! command -v thrift >/dev/null 2>&1; then
    echo "hbase: installing thrift-compiler (apt) to generate the Thrift v1 stubs ..." >&2
    if [ "$(id -u)" = 0 ]; then
      { apt-get install -y -qq thrift-compiler || { apt-get update -qq && apt-get install -y -qq thrift-compiler; }; } >&2
    else
      { sudo apt-get install -y -qq thrift-compiler || { sudo apt-get update -qq && sudo apt-get install -y -qq thrift-compiler; }; } >&2
    fi
    command -v thrift >/dev/null 2>&1 || { echo "hbase: thrift-compiler could not be installed" >&2; return 1; }
  fi
  rm -rf "$d/gateway"; mkdir -p "$d/gateway/src" "$d/gateway/classes"
  thrift --gen java:generated_annotations=suppress -out "$d/gateway/src" "$idl" >"$d/gateway/thrift.log" 2>&1 \
    || { cat "$d/gateway/thrift.log" >&2; return 1; }
  mkdir -p "$d/gateway/src/nutch2/services"
  cp "$src" "$d/gateway/src/nutch2/services/HBaseThriftGateway.java"
  echo "hbase: compiling the Thrift v1 gateway ..." >&2
  local javac; javac="$(dirname "$(readlink -f "$(java17)")")/javac"
  find "$d/gateway/src" -name '*.java' >"$d/gateway/sources.txt"
  "$javac" -nowarn -encoding UTF-8 -d "$d/gateway/classes" -cp "$d/lib/*" @"$d/gateway/sources.txt" >&2 2>"$d/gateway/javac.log" \
    || { cat "$d/gateway/javac.log" >&2; return 1; }
  echo "$key" >"$d/gateway/.complete"
}

_hbase_write_conf() {
  local d="$1" zk="$2" tport="$3"
  mkdir -p "$d/conf" "$d/data" "$d/logs" "$d/tmp"
  cat >"$d/conf/hbase-site.xml" <<XML
<?xml version="1.0"?>
<!-- generated by docker/services/hbase.sh: standalone HBase for local tests -->
<configuration>
  <property><name>hbase.cluster.distributed</name><value>false</value></property>
  <property><name>hbase.rootdir</name><value>file://$d/data/hbase</value></property>
  <property><name>hbase.tmp.dir</name><value>$d/tmp</value></property>
  <property><name>hbase.zookeeper.property.dataDir</name><value>$d/data/zookeeper</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$zk</value></property>
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>false</value></property>
  <property><name>hbase.wal.provider</name><value>filesystem</value></property>
  <property><name>hbase.master.hostname</name><value>localhost</value></property>
  <property><name>hbase.unsafe.regionserver.hostname</name><value>localhost</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <property><name>hbase.thrift.info.port</name><value>-1</value></property>
  <!-- pages up to http.content.limit and beyond: the default 10 MB cell limit rejects a 10 MB page -->
  <property><name>hbase.client.keyvalue.maxsize</name><value>67108864</value></property>
  <property><name>hbase.server.keyvalue.maxsize</name><value>67108864</value></property>
  <property><name>hbase.thrift.server.socket.read.timeout</name><value>600000</value></property>
  <property><name>hbase.regionserver.thrift.port</name><value>$tport</value></property>
  <!-- small test box: fewer handler threads -->
  <property><name>hbase.regionserver.handler.count</name><value>10</value></property>
  <!-- tests make hundreds of small tables: MSLAB's 2 MB chunk per store would fill the heap (OutOfMemoryError) -->
  <property><name>hbase.hregion.memstore.mslab.enabled</name><value>false</value></property>
  <property><name>hbase.master.handler.count</name><value>10</value></property>
  <property><name>hbase.client.retries.number</name><value>10</value></property>
  <!-- the ZooKeeper sessions of a standalone HBase (master, region server and ZooKeeper in one JVM) last 10 s by
       default (and at most 40 s): one frozen longer (kill -STOP, a paused VM, a long GC) found its own sessions
       expired when it went on, and aborted -->
  <property><name>zookeeper.session.timeout.localHBaseCluster</name><value>90000</value></property>
  <property><name>hbase.zookeeper.property.maxSessionTimeout</name><value>90000</value></property>
</configuration>
XML
  # The Thrift gateway's own HBase client settings (its classpath has conf-thrift/ first): HBase's client defaults
  # wait up to hbase.client.operation.timeout (20 min) for a master or region server that died or froze, so every
  # Thrift call a job made hung that long. Bounded here so that a call answers an IOError within ~20 s, well inside
  # nutch2's storage.hbase.timeout (30 s): the job then fails in one line naming HBase behind the gateway. The
  # master keeps HBase's defaults for its own RPCs.
  mkdir -p "$d/conf-thrift"
  sed 's#</configuration>##' "$d/conf/hbase-site.xml" >"$d/conf-thrift/hbase-site.xml"
  cat >>"$d/conf-thrift/hbase-site.xml" <<'XML'
  <property><name>hbase.client.operation.timeout</name><value>20000</value></property>
  <property><name>hbase.client.meta.operation.timeout</name><value>20000</value></property>
  <property><name>hbase.rpc.timeout</name><value>5000</value></property>
  <property><name>hbase.client.scanner.timeout.period</name><value>20000</value></property>
  <property><name>hbase.client.retries.number</name><value>3</value></property>
  <property><name>hbase.client.pause</name><value>500</value></property>
  <property><name>zookeeper.recovery.retry</name><value>2</value></property>
  <property><name>zookeeper.session.timeout</name><value>20000</value></property>
</configuration>
XML
  cat >"$d/conf/log4j2.properties" <<'PROPS'
status = warn
dest = err
name = nutch2-hbase
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:hbase.log.dir}/${sys:hbase.log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger = INFO,FILE
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = WARN
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = WARN
logger.hbase.name = org.apache.hadoop.hbase
logger.hbase.level = INFO
logger.metrics.name = org.apache.hadoop.metrics2
logger.metrics.level = ERROR
PROPS
}

_hbase_java_opts() {  # heap logname
  local d; d="$(hbase_dir)"
  printf '%s\n' -Xms"$1" -Xmx"$1" -XX:+UseG1GC -XX:ActiveProcessorCount=2 -Djava.net.preferIPv4Stack=true \
    -Dhbase.log.dir="$d/logs" -Dhbase.log.file="$2.log" -Dhbase.home.dir="$d" -Dlog4j2.configurationFile="file://$d/conf/log4j2.properties" \
    -Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true --add-modules jdk.unsupported \
    --add-opens java.base/java.io=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED \
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/java.lang.reflect=ALL-UNNAMED \
    --add-opens java.base/java.util=ALL-UNNAMED --add-opens java.base/java.util.concurrent=ALL-UNNAMED \
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --add-exports java.security.jgss/sun.security.krb5=ALL-UNNAMED \
    --add-exports java.base/sun.net.dns=ALL-UNNAMED --add-exports java.base/sun.net.util=ALL-UNNAMED
}

_hbase_rotate() { local f; for f in "$1.log" "$1.out"; do [ -f "$f" ] && mv -f "$f" "$f.1"; done; return 0; }

_hbase_port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

hbase_start() {
  local d zk tport mpid tpid t0 java
  d="$(hbase_dir)"; zk="${HBASE_ZK_PORT:-2181}"; tport="${HBASE_THRIFT_PORT:-9090}"
  mpid="$d/master.pid"; tpid="$d/thrift.pid"
  python3 -c 'import happybase' 2>/dev/null || pip install -q 'happybase>=1.2' >&2 \
    || { echo "hbase: pip install happybase failed" >&2; return 1; }
  if pid_alive "$mpid" && pid_alive "$tpid" && _hbase_probe "$tport" >/dev/null 2>&1; then
    echo "hbase: already running (master pid $(cat "$mpid"), thrift pid $(cat "$tpid")), thrift listening on 127.0.0.1:$tport"
    return 0
  fi
  t0=$(date +%s)
  mkdir -p "$d"
  # (set -e is off inside functions called from services.sh's `|| rc=$?`, so every step is checked explicitly)
  _hbase_resolve "$d" || return 1
  _hbase_build_gateway "$d" || return 1
  _hbase_write_conf "$d" "$zk" "$tport" || return 1
  java="$(java17)"
  local -a mopts topts
  mapfile -t mopts < <(_hbase_java_opts "${HBASE_MASTER_HEAP:-1536m}" master)
  mapfile -t topts < <(_hbase_java_opts "${HBASE_THRIFT_HEAP:-256m}" thrift)
  if ! pid_alive "$mpid"; then
    if _hbase_port_open "$zk"; then
      echo "hbase: port $zk (ZooKeeper) is already taken by a process we did not start; refusing to start" >&2; return 1
    fi
    _hbase_rotate "$d/logs/master"
    nohup "$java" "${mopts[@]}" -cp "$d/conf:$d/lib/*" org.apache.hadoop.hbase.master.HMaster start \
      >"$d/logs/master.out" 2>&1 </dev/null &
    echo $! >"$mpid"
    echo "hbase: starting master (pid $!), logs in $d/logs" >&2
  fi
  if ! pid_alive "$tpid"; then
    if _hbase_port_open "$tport"; then
      echo "hbase: port $tport is already taken by a process we did not start; refusing to start" >&2; return 1
    fi
    _hbase_rotate "$d/logs/thrift"
    nohup "$java" "${topts[@]}" -cp "$d/conf-thrift:$d/conf:$d/gateway/classes:$d/lib/*" nutch2.services.HBaseThriftGateway \
      -b 127.0.0.1 -p "$tport" start >"$d/logs/thrift.out" 2>&1 </dev/null &
    echo $! >"$tpid"
    echo "hbase: starting thrift gateway (pid $!)" >&2
  fi
  local timeout="${HBASE_START_TIMEOUT:-240}"
  if ! wait_for "hbase master" "$timeout" "$mpid" "$d/logs/master.log" _hbase_probe "$tport" create-drop; then
    pid_alive "$tpid" || { echo "hbase: thrift gateway died; last lines of $d/logs/thrift.out:" >&2; tail -n 30 "$d/logs/thrift.out" >&2; }
    return 1
  fi
  pid_alive "$tpid" || { echo "hbase: thrift gateway died" >&2; tail -n 30 "$d/logs/thrift.out" >&2; return 1; }
  echo "hbase: up in $(( $(date +%s) - t0 )) s" >&2
  echo "hbase: thrift listening on 127.0.0.1:$tport"
}

hbase_stop() {
  local d pid i; d="$(hbase_dir)"
  stop_pid "hbase thrift" "$d/thrift.pid"
  if pid_alive "$d/master.pid"; then
    # Clean cluster shutdown (what bin/stop-hbase.sh does): regions are flushed and closed, so the next start needs
    # less WAL splitting on the next start; a SIGTERM takes as long (~25 s, HBase's shutdown hook). SIGTERM as fallback.
    pid="$(cat "$d/master.pid")"
    local -a sopts; mapfile -t sopts < <(_hbase_java_opts 256m master-stop)
    timeout 60 "$(java17)" "${sopts[@]}" -cp "$d/conf:$d/lib/*" org.apache.hadoop.hbase.master.HMaster stop --shutDownCluster \
      >"$d/logs/master-stop.out" 2>&1 </dev/null || true
    for i in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$d/master.pid"; echo "hbase master: stopped (pid $pid, clean shutdown)"; return 0
    fi
  fi
  stop_pid "hbase master" "$d/master.pid"
}

hbase_status() {
  local d tport; d="$(hbase_dir)"; tport="${HBASE_THRIFT_PORT:-9090}"
  if pid_alive "$d/master.pid" && pid_alive "$d/thrift.pid" && _hbase_probe "$tport" >/dev/null 2>&1; then
    echo "hbase: running (master pid $(cat "$d/master.pid"), thrift pid $(cat "$d/thrift.pid")) on 127.0.0.1:$tport"; return 0
  fi
  local m=down t=down
  pid_alive "$d/master.pid" && m="pid $(cat "$d/master.pid")"
  pid_alive "$d/thrift.pid" && t="pid $(cat "$d/thrift.pid")"
  echo "hbase: not running/answering (master: $m, thrift: $t)"; return 1
}
