# PostgreSQL for tests and development (sourced by docker/services.sh; defines postgres_start/_stop/_status).
#   start: initdb a cluster under $NUTCH2_SERVICES_DIR/postgres/data (once), listening on 127.0.0.1 only, with a
#   `nutch2` role (trust on loopback) and database; wait until it answers. stop: pg_ctl stop (fast).
# Uses Debian's server binaries (/usr/lib/postgresql/<version>/bin; tests/run.sh installs `postgresql` when they
# are missing). Run as root, the server runs as the `postgres` user (PostgreSQL refuses to run as root).
# Env: POSTGRES_PORT (5433: 5432 is left to a system PostgreSQL), POSTGRES_BIN (the bin folder), NUTCH2_SERVICES_DIR.
# The store's default URL (storage.postgres.url) is postgresql://nutch2@127.0.0.1:5433/nutch2.
# Production: the official postgres image (docker/compose.yml).

_postgres_vars() {
  pg_dir="$NUTCH2_SERVICES_DIR/postgres"
  pg_data="$pg_dir/data"
  pg_log="$pg_dir/postgres.log"
  pg_port="${POSTGRES_PORT:-5433}"
  pg_bin="${POSTGRES_BIN:-}"
  if [ -z "$pg_bin" ]; then
    pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  fi
}

# _pg_as_owner CMD... — run a server binary as the data folder's owner (postgres when we are root)
_pg_as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

_pg_ready() { "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port"; }

postgres_start() {
  _postgres_vars
  if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
    echo "postgres: no server binaries (/usr/lib/postgresql/*/bin); install them: apt-get install postgresql" >&2
    return 1
  fi
  if [ -f "$pg_data/postmaster.pid" ] && _pg_ready; then
    echo "postgres: listening on 127.0.0.1:$pg_port (already running, pid $(head -n 1 "$pg_data/postmaster.pid"))"
    return 0
  fi
  if _pg_ready; then
    echo "postgres: port $pg_port already serves PostgreSQL, but not a cluster started here; leaving it alone" >&2
    return 1
  fi
  mkdir -p "$pg_dir" || return 1
  pg_dir="$(cd "$pg_dir" && pwd)"; pg_data="$pg_dir/data"; pg_log="$pg_dir/postgres.log"
  if [ ! -f "$pg_data/PG_VERSION" ]; then
    echo "postgres: initdb $pg_data ..."
    rm -rf "$pg_data"; mkdir -p "$pg_data" || return 1
    [ "$(id -u)" = 0 ] && chown -R postgres: "$pg_dir"
    _pg_as_owner "$pg_bin/initdb" -D "$pg_data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$pg_log" 2>&1 ||
      { echo "postgres: initdb failed; see $pg_log" >&2; return 1; }
  fi
  [ "$(id -u)" = 0 ] && chown -R postgres: "$pg_dir"
  echo "postgres: starting on 127.0.0.1:$pg_port (log $pg_log) ..."
  _pg_as_owner "$pg_bin/pg_ctl" -D "$pg_data" -l "$pg_log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $pg_port -c unix_socket_directories=$pg_dir -c max_connections=200 -c fsync=on" \
      start >/dev/null || { echo "postgres: start failed; last lines of $pg_log:" >&2; tail -n 20 "$pg_log" >&2; return 1; }
  local psql=("$pg_bin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -qtAX)
  if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = 'nutch2'")" != 1 ]; then
    "${psql[@]}" -c "CREATE ROLE nutch2 LOGIN" || return 1
  fi
  if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'nutch2'")" != 1 ]; then
    "${psql[@]}" -c "CREATE DATABASE nutch2 OWNER nutch2" || return 1
  fi
  echo "postgres: listening on 127.0.0.1:$pg_port (database nutch2, user nutch2)"
}

postgres_stop() {
  _postgres_vars
  if [ ! -f "$pg_data/postmaster.pid" ]; then echo "postgres: not running"; return 0; fi
  _pg_as_owner "$pg_bin/pg_ctl" -D "$pg_data" -m fast -w stop >/dev/null && echo "postgres: stopped"
}

postgres_status() {
  _postgres_vars
  if _pg_ready; then echo "postgres: listening on 127.0.0.1:$pg_port"; else echo "postgres: not running"; return 1; fi
}
