#!/usr/bin/env bash
# Start the HBase master (with region server and ZooKeeper) and HBase's Thrift server; stop both on SIGTERM.
set -euo pipefail
opens="-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true --add-modules jdk.unsupported
  --add-opens java.base/java.io=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED --add-opens java.base/java.util.concurrent=ALL-UNNAMED
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --add-exports java.security.jgss/sun.security.krb5=ALL-UNNAMED
  --add-exports java.base/sun.net.dns=ALL-UNNAMED --add-exports java.base/sun.net.util=ALL-UNNAMED"
cp="/opt/hbase/conf:/opt/hbase/lib/*"
mkdir -p /data
# shellcheck disable=SC2086
java -Xmx${HBASE_HEAP:-1g} $opens -cp "$cp" org.apache.hadoop.hbase.master.HMaster start &
master=$!
sleep 10
# the Thrift server reads conf-thrift/hbase-site.xml first: its own HBase client's timeouts are bounded (see there)
# shellcheck disable=SC2086
java -Xmx${THRIFT_HEAP:-512m} $opens -cp "/opt/hbase/conf-thrift:$cp" org.apache.hadoop.hbase.thrift.ThriftServer -p 9090 start &
thrift=$!
trap 'kill $thrift; java $opens -cp "$cp" org.apache.hadoop.hbase.master.HMaster stop --shutDownCluster; wait' TERM INT
wait -n $master $thrift
