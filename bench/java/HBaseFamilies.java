// Sets a data block encoding on every column family of HBase tables, as an operator does in the HBase shell:
//   alter 'T_webpage', {NAME => 'f', DATA_BLOCK_ENCODING => 'ROW_INDEX_V1'}   (and so on per family)
// The Thrift v1 API nutch2 speaks cannot set it, so `python -m bench.stores --hbase-encoding` runs this (Java's
// single-file source mode) against the HBase of docker/services.sh before it fills a table:
//   java -cp '<services dir>/hbase/lib/*' bench/java/HBaseFamilies.java ZK_PORT ENCODING TABLE...
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.io.encoding.DataBlockEncoding;

public class HBaseFamilies {
  public static void main(String[] args) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", "127.0.0.1");
    conf.set("hbase.zookeeper.property.clientPort", args[0]);
    DataBlockEncoding encoding = DataBlockEncoding.valueOf(args[1]);
    try (Connection connection = ConnectionFactory.createConnection(conf); Admin admin = connection.getAdmin()) {
      for (int i = 2; i < args.length; i++) {
        TableName table = TableName.valueOf(args[i]);
        for (ColumnFamilyDescriptor family : admin.getDescriptor(table).getColumnFamilies()) {
          admin.modifyColumnFamily(table,
              ColumnFamilyDescriptorBuilder.newBuilder(family).setDataBlockEncoding(encoding).build());
        }
        System.out.println(table + ": " + encoding + " on " + admin.getDescriptor(table).getColumnFamilyCount()
            + " families");
      }
    }
  }
}
