#!/usr/bin/env bash
# Install everything, start the real services the tests use, run the whole test suite, stop the services.
# Usage: bash tests/run.sh [pytest args...]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

python3 -m pip install -q -e '.[all]' || { echo "tests/run.sh: pip install failed" >&2; exit 1; }

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

services=()
for s in ${NUTCH2_SERVICES:-solr cassandra hbase postgres spark tika}; do
  if [ -f "docker/services/$s.sh" ]; then services+=("$s"); fi
done
cleanup() { for s in "${services[@]}"; do bash docker/services.sh stop "$s" || true; done; }
trap cleanup EXIT
# started side by side (each waits for its own port); a failed start shows its log and stops the run
stores=()
logs="$(mktemp -d)"
pids=()
for s in "${services[@]}"; do
  bash docker/services.sh start "$s" >"$logs/$s.log" 2>&1 &
  pids+=($!)
  case "$s" in cassandra|hbase|postgres) stores+=("$s") ;; esac
done
failed=0
for i in "${!services[@]}"; do
  if wait "${pids[$i]}"; then cat "$logs/${services[$i]}.log"; else
    cat "$logs/${services[$i]}.log" >&2; echo "tests/run.sh: could not start ${services[$i]}" >&2; failed=1
  fi
done
rm -rf "$logs"
[ $failed -eq 0 ] || exit 1
# the store contract suite and the end-to-end crawls also run on every store whose server is up
NUTCH2_TEST_STORES="$(IFS=,; echo "${stores[*]:-}")"
export NUTCH2_TEST_STORES

python3 -m ruff check . || { echo "tests/run.sh: ruff check failed" >&2; exit 1; }
python3 -m pytest -q -p no:cacheprovider --durations=30 "$@"  # the slowest 30: what to look at when CI grows
rc=$?
if [ $rc -eq 5 ]; then echo "tests/run.sh: pytest collected no tests" >&2; exit 1; fi
exit $rc
