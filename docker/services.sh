#!/usr/bin/env bash
# Local real services for tests and development, assembled from Maven Central jars (no Docker engine needed).
#   docker/services.sh start|stop|status solr|cassandra|hbase|postgres|spark|tika|opensearch|all
# Each service lives in docker/services/<name>.sh, which defines <name>_start, <name>_stop and <name>_status.
# Jars, data and logs go to $NUTCH2_SERVICES_DIR (default: <repo>/.services, ignored by git).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export NUTCH2_REPO="$(cd "$here/.." && pwd)"
export NUTCH2_SERVICES_DIR="${NUTCH2_SERVICES_DIR:-$NUTCH2_REPO/.services}"
mkdir -p "$NUTCH2_SERVICES_DIR"
# shellcheck source=docker/services/common.sh
source "$here/services/common.sh"

usage() { echo "usage: $0 start|stop|status solr|cassandra|hbase|postgres|spark|tika|opensearch|all" >&2; exit 2; }
[ $# -eq 2 ] || usage
action="$1"; target="$2"
case "$action" in start|stop|status) ;; *) usage ;; esac
case "$target" in
  all) names="solr cassandra hbase postgres spark tika opensearch" ;;
  solr|cassandra|hbase|postgres|spark|tika|opensearch) names="$target" ;;
  *) usage ;;
esac
rc=0
for name in $names; do
  if [ ! -f "$here/services/$name.sh" ]; then
    echo "$name: not available in this version (no docker/services/$name.sh)" >&2; rc=1; continue
  fi
  # shellcheck disable=SC1090
  source "$here/services/$name.sh"
  "${name}_${action}" || rc=$?
done
exit $rc
