# Spark standalone for tests and development: a master and one worker on loopback, from the pip package pyspark
# (sourced by docker/services.sh after common.sh; defines spark_start/_stop/_status).
#   master  spark://127.0.0.1:$SPARK_MASTER_PORT (7077), web UI 127.0.0.1:$SPARK_MASTER_UI (8090)
#   worker  $SPARK_WORKER_CORES cores (2), $SPARK_WORKER_MEMORY (2g), web UI 127.0.0.1:$SPARK_WORKER_UI (8091)
# UI ports stay away from Solr's 8983. Executors run the Python of the nutch2 command that sends the job (or its
# spark.pyspark.python). Jobs reach it with: -D mapreduce.framework.name=spark -D spark.master=spark://127.0.0.1:7077
# Layout: $NUTCH2_SERVICES_DIR/spark/{master.pid,worker.pid,master.log,worker.log,work/}

_spark_vars() {
  spark_dir="$NUTCH2_SERVICES_DIR/spark"
  spark_port="${SPARK_MASTER_PORT:-7077}"
  spark_ui="${SPARK_MASTER_UI:-8090}"
  spark_worker_ui="${SPARK_WORKER_UI:-8091}"
  spark_master="spark://127.0.0.1:$spark_port"
}

_spark_home() {
  python3 -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null
}

# _spark_alive_workers — how many workers the master has registered (its JSON page)
_spark_alive_workers() {
  python3 - "$spark_ui" <<'PY'
import json, sys, urllib.request
state = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/json/", timeout=3))
alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
sys.exit(0 if alive else 1)
PY
}

spark_start() {
  _spark_vars
  if pid_alive "$spark_dir/master.pid" && pid_alive "$spark_dir/worker.pid" && _spark_alive_workers; then
    echo "spark: master $spark_master with a worker (already running)"; return 0
  fi
  local home
  home="$(_spark_home)"
  if [ -z "$home" ]; then
    echo "spark: pyspark is not installed; pip install 'nutch2[spark]'" >&2; return 1
  fi
  mkdir -p "$spark_dir/work" || return 1
  export SPARK_HOME="$home" SPARK_LOCAL_IP=127.0.0.1 JAVA_HOME="$(dirname "$(dirname "$(java17)")")"
  export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$(command -v python3)}"
  if ! pid_alive "$spark_dir/master.pid"; then
    nohup "$home/bin/spark-class" org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$spark_port" \
      --webui-port "$spark_ui" >"$spark_dir/master.log" 2>&1 &
    echo $! >"$spark_dir/master.pid"
    echo "spark: starting master (pid $(cat "$spark_dir/master.pid")), log $spark_dir/master.log"
  fi
  wait_for "spark master" 90 "$spark_dir/master.pid" "$spark_dir/master.log" \
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$spark_ui/json/', timeout=2)" || return 1
  if ! pid_alive "$spark_dir/worker.pid"; then
    nohup "$home/bin/spark-class" org.apache.spark.deploy.worker.Worker "$spark_master" --host 127.0.0.1 \
      --cores "${SPARK_WORKER_CORES:-2}" --memory "${SPARK_WORKER_MEMORY:-2g}" --webui-port "$spark_worker_ui" \
      --work-dir "$spark_dir/work" >"$spark_dir/worker.log" 2>&1 &
    echo $! >"$spark_dir/worker.pid"
    echo "spark: starting worker (pid $(cat "$spark_dir/worker.pid")), log $spark_dir/worker.log"
  fi
  wait_for "spark worker" 90 "$spark_dir/worker.pid" "$spark_dir/worker.log" _spark_alive_workers || return 1
  echo "spark: master $spark_master with a worker (UI http://127.0.0.1:$spark_ui)"
}

spark_stop() {
  _spark_vars
  stop_pid "spark worker" "$spark_dir/worker.pid"
  stop_pid "spark master" "$spark_dir/master.pid"
}

spark_status() {
  _spark_vars
  if pid_alive "$spark_dir/master.pid" && _spark_alive_workers; then
    echo "spark: running (master pid $(cat "$spark_dir/master.pid"), worker pid $(cat "$spark_dir/worker.pid" 2>/dev/null)) at $spark_master"
  else
    echo "spark: not running"; return 1
  fi
}
