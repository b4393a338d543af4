#!/usr/bin/env bash
# Install everything, start the real services the tests use, run the whole test suite, stop the services.
#   bash tests/run.sh [pytest args...]          the whole suite (what CI runs: .ci/run)
#   bash tests/run.sh --fast [pytest args...]   the fast tier: unit and contract tests on memory and sqlite, no
#                                               services, no root, no browser (a few minutes on two cores)
# NUTCH2_TEST_WORKERS: pytest-xdist worker processes (default 3 for the whole suite, 2 for the fast tier; 0 runs
# the tests in one process). Each phase says what it cost at the end.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fast=0
if [ "${1:-}" = "--fast" ]; then fast=1; shift; fi
costs=()
phase_start=$SECONDS
phase() {  # phase NAME: record how long the phase that just ended took
  costs+=("$1 $((SECONDS - phase_start)) s")
  phase_start=$SECONDS
}
report() { [ ${#costs[@]} -eq 0 ] || echo "tests/run.sh: $(IFS=,; echo "${costs[*]}" | sed 's/,/, /g'); total ${SECONDS} s"; }

python3 -m pip install -q -e '.[all]' || { echo "tests/run.sh: pip install failed" >&2; exit 1; }
phase install
# the tests start thousands of nutch2 processes (the CLI, kill tests, workers); where PYTHONDONTWRITEBYTECODE is set
# (as on these machines) each would compile the project's sources again: compile them once
python3 -m compileall -q -j 0 nutch2 stores jobs bench tests >/dev/null || true
phase bytecode

if [ $fast -eq 1 ]; then
  python3 -m ruff check . || { echo "tests/run.sh: ruff check failed" >&2; exit 1; }
  phase ruff
  workers="${NUTCH2_TEST_WORKERS:-2}"
  xdist=()
  [ "$workers" = 0 ] || xdist=(-n "$workers")
  NUTCH2_TEST_STORES="" python3 -m pytest -q -p no:cacheprovider "${xdist[@]}" \
      -m "not slow and not integration" "$@"
  rc=$?
  phase "pytest (fast tier)"
  report
  if [ $rc -eq 5 ]; then echo "tests/run.sh: pytest collected no tests" >&2; exit 1; fi
  exit $rc
fi

# the Searcher's browser tests drive Debian's chromium through its chromedriver (never a downloaded browser), and
# protocol-chromium renders pages in it; a CJK font makes their screenshots of Chinese pages readable. In CI (CI set)
# a browser that cannot be installed fails the run (the tests themselves fail rather than skip there too).
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
fc-list :lang=zh 2>/dev/null | grep -q . || need+=(fonts-wqy-zenhei)
as_root=()
[ "$(id -u)" = 0 ] || as_root=(sudo -n)  # a CI runner that is not root usually has password-less sudo
# the postgres store's tests run Debian's PostgreSQL server (docker/services/postgres.sh)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && { [ ${#as_root[@]} -eq 0 ] || sudo -n true 2>/dev/null; }; then
    echo "tests/run.sh: installing ${need[*]}"
    { "${as_root[@]}" apt-get update -qq &&
      "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; } >/dev/null ||
      { echo "tests/run.sh: apt-get install ${need[*]} failed" >&2; exit 1; }
  elif [ -n "${CI:-}" ]; then  # CI runs every browser test: a missing browser fails the run, it never skips them
    echo "tests/run.sh: ${need[*]} missing and apt-get not usable here (neither root nor sudo, or no apt-get); CI needs them" >&2
    exit 1
  else
    echo "tests/run.sh: warning: ${need[*]} missing and apt-get not usable here; the browser tests cannot run" >&2
  fi
fi
phase "debian packages"

services=()
for s in ${NUTCH2_SERVICES:-solr cassandra hbase postgres spark tika opensearch}; do
  if [ -f "docker/services/$s.sh" ]; then services+=("$s"); fi
done
cleanup() { for s in "${services[@]}"; do bash docker/services.sh stop "$s" >/dev/null 2>&1 || true; done; report; }
trap cleanup EXIT
# started side by side (each waits for its own port); a failed start shows its log and stops the run. The test
# servers are throwaway: Cassandra skips fsync of its schema (its many schema changes go faster)
export CASSANDRA_UNSAFE_SYSTEM=1
stores=()
logs="$(mktemp -d)"
pids=()
for s in "${services[@]}"; do
  ( start=$SECONDS; bash docker/services.sh start "$s" && echo "$s: ready after $((SECONDS - start)) s" ) \
      >"$logs/$s.log" 2>&1 &
  pids+=($!)
  case "$s" in cassandra|hbase|postgres) stores+=("$s") ;; esac
done
failed=0
for i in "${!services[@]}"; do
  if wait "${pids[$i]}"; then grep -v '^\s*$' "$logs/${services[$i]}.log" | tail -n 2; else
    cat "$logs/${services[$i]}.log" >&2; echo "tests/run.sh: could not start ${services[$i]}" >&2; failed=1
  fi
done
rm -rf "$logs"
phase "services (${services[*]})"
[ $failed -eq 0 ] || exit 1
# the store contract suite and the end-to-end crawls also run on every store whose server is up
NUTCH2_TEST_STORES="$(IFS=,; echo "${stores[*]:-}")"
export NUTCH2_TEST_STORES

python3 -m ruff check . || { echo "tests/run.sh: ruff check failed" >&2; exit 1; }
phase ruff
workers="${NUTCH2_TEST_WORKERS:-3}"
xdist=()
# each test module runs in one worker (its fixtures: one test web, one server; its crawl ids in the shared Solr)
[ "$workers" = 0 ] || xdist=(-n "$workers" --dist loadscope)
python3 -m pytest -q -p no:cacheprovider --durations=30 "${xdist[@]}" "$@"  # the slowest 30: what to look at
rc=$?
phase pytest
if [ $rc -eq 5 ]; then echo "tests/run.sh: pytest collected no tests" >&2; exit 1; fi
exit $rc
