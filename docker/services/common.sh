# Helpers shared by the service scripts (sourced by docker/services.sh).

# resolve_jars DIR GROUP:ARTIFACT:VERSION — copy the artifact and its runtime dependencies into DIR/lib
# (DIR may be relative; Maven would resolve a relative outputDirectory against the pom's folder, so it is made absolute.
#  Callers run under `fn || rc=$?`, where `set -e` is off: every failure returns explicitly.)
resolve_jars() {
  local dir="$1" gav="$2" g a v
  IFS=: read -r g a v <<<"$gav"
  mkdir -p "$dir" && dir="$(cd "$dir" && pwd)" || return 1
  if [ -f "$dir/lib/.complete" ] && [ "$(cat "$dir/lib/.complete")" = "$gav" ]; then return 0; fi
  rm -rf "$dir/lib"   # a partial or other-version lib/ must not leak stale jars onto the classpath
  mkdir -p "$dir/lib"
  cat >"$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>nutch2.services</groupId><artifactId>$a-deps</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies><dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency></dependencies>
</project>
POM
  echo "resolving $gav from Maven Central into $dir/lib ..." >&2
  # one resolution at a time (services may start side by side; Maven 3.8 does not lock its local repository)
  flock "$NUTCH2_SERVICES_DIR/.maven.lock" mvn -q -B -f "$dir/pom.xml" org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DoutputDirectory="$dir/lib" -DincludeScope=runtime -Dstyle.color=never >&2 || { echo "resolving $gav failed" >&2; return 1; }
  echo "$gav" >"$dir/lib/.complete"
}

# resolve_pom NAME DIR POM CHECK [MVN_ARG...] — copy the runtime dependencies of POM (a pom.xml of this folder) into
# DIR/lib, once per version of POM and MVN_ARGs: CHECK DIR must then find the jars the service needs, and lib/ is
# marked complete with the POM's checksum (a partial or older lib/ is resolved anew).
resolve_pom() {
  local name="$1" d="$2" pom="$3" check="$4" key
  shift 4
  key="$name $* $(cksum <"$pom" | cut -d' ' -f1)"
  if [ -f "$d/lib/.complete" ] && [ "$(cat "$d/lib/.complete")" = "$key" ]; then return 0; fi
  rm -rf "$d/lib"; mkdir -p "$d/lib" || return 1   # a partial or other-version lib/ must not leak stale jars
  cp "$pom" "$d/pom.xml" || return 1
  echo "$name: resolving the dependencies of $(basename "$pom") from Maven Central into $d/lib ..." >&2
  # one resolution at a time (services may start side by side; Maven 3.8 does not lock its local repository)
  flock "$NUTCH2_SERVICES_DIR/.maven.lock" mvn -q -B -f "$d/pom.xml" "$@" \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DoutputDirectory="$d/lib" -DincludeScope=runtime -Dstyle.color=never >&2 || { echo "$name: jar resolution failed" >&2; return 1; }
  "$check" "$d" || return 1
  echo "$key" >"$d/lib/.complete"
}

# java17 — the Java 17 binary (the machine default; JAVA17_HOME overrides)
java17() {
  if [ -n "${JAVA17_HOME:-}" ]; then echo "$JAVA17_HOME/bin/java"; return; fi
  local j
  for j in /usr/lib/jvm/java-17-openjdk-amd64/bin/java /usr/lib/jvm/*17*/bin/java; do
    [ -x "$j" ] && { echo "$j"; return; }
  done
  command -v java
}

# pid_alive PIDFILE — true when the pid in PIDFILE is a running process
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pid NAME PIDFILE — stop the process we started (TERM, then KILL after 30 s)
stop_pid() {
  local name="$1" pidfile="$2" pid i
  if ! pid_alive "$pidfile"; then echo "$name: not running"; rm -f "$pidfile"; return 0; fi
  pid="$(cat "$pidfile")"
  kill "$pid" 2>/dev/null || true
  for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
  echo "$name: stopped (pid $pid)"
}

# wait_for NAME SECONDS PIDFILE LOG COMMAND... — poll COMMAND until it succeeds; fail if the process dies
wait_for() {
  local name="$1" secs="$2" pidfile="$3" log="$4" i
  shift 4
  for i in $(seq 1 "$secs"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if ! pid_alive "$pidfile"; then
      echo "$name: died during start; last lines of $log:" >&2; tail -n 30 "$log" >&2; return 1
    fi
    sleep 1
  done
  echo "$name: not answering after ${secs}s; see $log" >&2
  return 1
}
