// HBase Thrift v1 gateway for local tests (happybase's protocol), used by docker/services/hbase.sh.
//
// Why it exists: org.apache.hbase:hbase-thrift (HBase's own ThriftServer) is not served by the Maven registry this
// project's machines can reach, while hbase-server/hbase-client 2.6.4-hadoop3 are. hbase.sh generates the Thrift stubs
// (package org.apache.hadoop.hbase.thrift.generated) from happybase's bundled Hbase.thrift with thrift-compiler 0.17,
// compiles this file (copied to nutch2/services/HBaseThriftGateway.java) against lib/, and runs it like HBase's
// ThriftServer: `-b 127.0.0.1 -p 9090 start`, thread-pool server, plain (buffered) socket transport, binary protocol.
//
// Semantics follow HBase's ThriftHBaseServiceHandler (v1): "family:qualifier" column names (a bare "family" selects the
// whole family), deletes before puts in mutateRow(Ts), puts before deletes in mutateRows(Ts), empty results are
// skipped in row lists, scanners are integer ids (idle ones are closed after hbase.thrift.scanner.timeout ms),
// IOException -> IOError, IllegalArgumentException -> IllegalArgument.
package nutch2.services;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.OperationWithAttributes;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.filter.ParseFilter;
import org.apache.hadoop.hbase.filter.PrefixFilter;
import org.apache.hadoop.hbase.filter.WhileMatchFilter;
import org.apache.hadoop.hbase.io.compress.Compression;
import org.apache.hadoop.hbase.regionserver.BloomType;
import org.apache.hadoop.hbase.thrift.generated.AlreadyExists;
import org.apache.hadoop.hbase.thrift.generated.BatchMutation;
import org.apache.hadoop.hbase.thrift.generated.ColumnDescriptor;
import org.apache.hadoop.hbase.thrift.generated.Hbase;
import org.apache.hadoop.hbase.thrift.generated.IOError;
import org.apache.hadoop.hbase.thrift.generated.IllegalArgument;
import org.apache.hadoop.hbase.thrift.generated.Mutation;
import org.apache.hadoop.hbase.thrift.generated.TAppend;
import org.apache.hadoop.hbase.thrift.generated.TCell;
import org.apache.hadoop.hbase.thrift.generated.TColumn;
import org.apache.hadoop.hbase.thrift.generated.TIncrement;
import org.apache.hadoop.hbase.thrift.generated.TRegionInfo;
import org.apache.hadoop.hbase.thrift.generated.TRowResult;
import org.apache.hadoop.hbase.thrift.generated.TScan;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TServer;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransportException;
import org.apache.thrift.transport.TTransportFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class HBaseThriftGateway implements Hbase.Iface {
  private static final Logger LOG = LoggerFactory.getLogger(HBaseThriftGateway.class);

  private final Connection conn;
  private final Map<Integer, ScannerEntry> scanners = new ConcurrentHashMap<>();
  private final AtomicInteger nextScannerId = new AtomicInteger();

  private static final class ScannerEntry {
    final Table table;
    final ResultScanner scanner;
    final boolean sortColumns;
    volatile long lastAccess = System.currentTimeMillis();

    ScannerEntry(Table table, ResultScanner scanner, boolean sortColumns) {
      this.table = table;
      this.scanner = scanner;
      this.sortColumns = sortColumns;
    }

    void close() {
      try { scanner.close(); } catch (RuntimeException e) { LOG.debug("scanner close", e); }
      try { table.close(); } catch (IOException | RuntimeException e) { LOG.debug("table close", e); }
    }
  }

  HBaseThriftGateway(Connection conn, long scannerTimeoutMs) {
    this.conn = conn;
    ScheduledExecutorService sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "scanner-sweeper");
      t.setDaemon(true);
      return t;
    });
    sweeper.scheduleWithFixedDelay(() -> {
      long cutoff = System.currentTimeMillis() - scannerTimeoutMs;
      scanners.entrySet().removeIf(e -> {
        if (e.getValue().lastAccess < cutoff) {
          LOG.info("closing scanner {} idle for more than {} ms", e.getKey(), scannerTimeoutMs);
          e.getValue().close();
          return true;
        }
        return false;
      });
    }, 30, 30, TimeUnit.SECONDS);
  }

  // ---------------------------------------------------------------- helpers

  private static byte[] b(ByteBuffer buf) {
    if (buf == null) {
      return null;
    }
    return Bytes.getBytes(buf.duplicate());
  }

  private static ByteBuffer bb(byte[] a) {
    return ByteBuffer.wrap(a);
  }

  private static IOError ioError(Throwable t) {
    LOG.warn("request failed", t);
    String msg = t.getMessage() != null ? t.getClass().getName() + ": " + t.getMessage() : t.toString();
    return new IOError(msg);
  }

  private static IllegalArgument illegalArgument(Throwable t) {
    LOG.warn("illegal argument", t);
    return new IllegalArgument(String.valueOf(t.getMessage()));
  }

  private Table table(ByteBuffer name) throws IOException {
    return conn.getTable(TableName.valueOf(b(name)));
  }

  private static void addAttributes(OperationWithAttributes op, Map<ByteBuffer, ByteBuffer> attributes) {
    if (attributes == null) {
      return;
    }
    for (Map.Entry<ByteBuffer, ByteBuffer> e : attributes.entrySet()) {
      op.setAttribute(Bytes.toStringBinary(b(e.getKey())), b(e.getValue()));
    }
  }

  private static void addColumns(Get get, List<ByteBuffer> columns) {
    if (columns == null) {
      return;
    }
    for (ByteBuffer column : columns) {
      byte[][] fq = CellUtil.parseColumn(b(column));
      if (fq.length == 1) {
        get.addFamily(fq[0]);
      } else {
        get.addColumn(fq[0], fq[1]);
      }
    }
  }

  private static void addColumns(Scan scan, List<ByteBuffer> columns) {
    if (columns == null) {
      return;
    }
    for (ByteBuffer column : columns) {
      byte[][] fq = CellUtil.parseColumn(b(column));
      if (fq.length == 1) {
        scan.addFamily(fq[0]);
      } else {
        scan.addColumn(fq[0], fq[1]);
      }
    }
  }

  private static List<TCell> cells(Cell[] cells) {
    if (cells == null) {
      return new ArrayList<>();
    }
    List<TCell> out = new ArrayList<>(cells.length);
    for (Cell c : cells) {
      out.add(new TCell(bb(CellUtil.cloneValue(c)), c.getTimestamp()));
    }
    return out;
  }

  private static byte[] columnName(Cell c) {
    return Bytes.add(CellUtil.cloneFamily(c), new byte[] { ':' }, CellUtil.cloneQualifier(c));
  }

  private static List<TRowResult> rows(Result[] results, boolean sortColumns) {
    List<TRowResult> out = new ArrayList<>();
    if (results == null) {
      return out;
    }
    for (Result r : results) {
      if (r == null || r.isEmpty()) {
        continue;
      }
      TRowResult row = new TRowResult();
      row.setRow(r.getRow());
      if (sortColumns) {
        List<TColumn> cols = new ArrayList<>();
        for (Cell c : r.rawCells()) {
          cols.add(new TColumn(bb(columnName(c)), new TCell(bb(CellUtil.cloneValue(c)), c.getTimestamp())));
        }
        row.setSortedColumns(cols);
      } else {
        Map<ByteBuffer, TCell> cols = new TreeMap<>();
        for (Cell c : r.rawCells()) {
          ByteBuffer key = bb(columnName(c));
          // rawCells() lists the newest version of a column first: keep that one
          cols.putIfAbsent(key, new TCell(bb(CellUtil.cloneValue(c)), c.getTimestamp()));
        }
        row.setColumns(cols);
      }
      out.add(row);
    }
    return out;
  }

  private static List<TRowResult> rows(Result result) {
    return rows(new Result[] { result }, false);
  }

  // ---------------------------------------------------------------- admin

  @Override
  public void enableTable(ByteBuffer tableName) throws IOError {
    try (Admin admin = conn.getAdmin()) {
      admin.enableTable(TableName.valueOf(b(tableName)));
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public void disableTable(ByteBuffer tableName) throws IOError {
    try (Admin admin = conn.getAdmin()) {
      admin.disableTable(TableName.valueOf(b(tableName)));
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public boolean isTableEnabled(ByteBuffer tableName) throws IOError {
    try (Admin admin = conn.getAdmin()) {
      return admin.isTableEnabled(TableName.valueOf(b(tableName)));
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  private void compact(ByteBuffer tableNameOrRegionName, boolean major) throws IOError {
    byte[] name = b(tableNameOrRegionName);
    try (Admin admin = conn.getAdmin()) {
      TableName tn = null;
      try {
        tn = TableName.valueOf(name);
      } catch (IllegalArgumentException notATable) {
        // a region name
      }
      if (tn != null && admin.tableExists(tn)) {
        if (major) {
          admin.majorCompact(tn);
        } else {
          admin.compact(tn);
        }
      } else if (major) {
        admin.majorCompactRegion(name);
      } else {
        admin.compactRegion(name);
      }
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public void compact(ByteBuffer tableNameOrRegionName) throws IOError {
    compact(tableNameOrRegionName, false);
  }

  @Override
  public void majorCompact(ByteBuffer tableNameOrRegionName) throws IOError {
    compact(tableNameOrRegionName, true);
  }

  @Override
  public List<ByteBuffer> getTableNames() throws IOError {
    try (Admin admin = conn.getAdmin()) {
      List<ByteBuffer> out = new ArrayList<>();
      for (TableName tn : admin.listTableNames()) {
        out.add(bb(tn.getName()));
      }
      return out;
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public Map<ByteBuffer, ColumnDescriptor> getColumnDescriptors(ByteBuffer tableName) throws IOError {
    try (Table t = table(tableName)) {
      Map<ByteBuffer, ColumnDescriptor> out = new TreeMap<>();
      for (ColumnFamilyDescriptor f : t.getDescriptor().getColumnFamilies()) {
        ColumnDescriptor cd = new ColumnDescriptor();
        cd.setName(Bytes.add(f.getName(), new byte[] { ':' }));
        cd.setMaxVersions(f.getMaxVersions());
        cd.setCompression(f.getCompressionType().toString());
        cd.setInMemory(f.isInMemory());
        cd.setBloomFilterType(f.getBloomFilterType().toString());
        cd.setBlockCacheEnabled(f.isBlockCacheEnabled());
        cd.setTimeToLive(f.getTimeToLive());
        out.put(bb(cd.getName()), cd);
      }
      return out;
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public List<TRegionInfo> getTableRegions(ByteBuffer tableName) throws IOError {
    try (RegionLocator locator = conn.getRegionLocator(TableName.valueOf(b(tableName)))) {
      List<TRegionInfo> out = new ArrayList<>();
      for (HRegionLocation loc : locator.getAllRegionLocations()) {
        RegionInfo ri = loc.getRegion();
        TRegionInfo t = new TRegionInfo();
        t.setStartKey(ri.getStartKey());
        t.setEndKey(ri.getEndKey());
        t.setId(ri.getRegionId());
        t.setName(ri.getRegionName());
        t.setVersion((byte) 1);
        if (loc.getServerName() != null) {
          t.setServerName(Bytes.toBytes(loc.getServerName().getHostname()));
          t.setPort(loc.getServerName().getPort());
        }
        out.add(t);
      }
      return out;
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public void createTable(ByteBuffer tableName, List<ColumnDescriptor> columnFamilies)
      throws IOError, IllegalArgument, AlreadyExists {
    TableName tn;
    try {
      tn = TableName.valueOf(b(tableName));
    } catch (IllegalArgumentException e) {
      throw illegalArgument(e);
    }
    try (Admin admin = conn.getAdmin()) {
      if (admin.tableExists(tn)) {
        throw new AlreadyExists("table name already in use");
      }
      TableDescriptorBuilder td = TableDescriptorBuilder.newBuilder(tn);
      for (ColumnDescriptor in : columnFamilies) {
        byte[] family = CellUtil.parseColumn(b(in.name))[0];
        ColumnFamilyDescriptorBuilder cf = ColumnFamilyDescriptorBuilder.newBuilder(family)
            .setMaxVersions(in.maxVersions)
            .setCompressionType(Compression.getCompressionAlgorithmByName(in.compression.toLowerCase()))
            .setInMemory(in.inMemory)
            .setBlockCacheEnabled(in.blockCacheEnabled)
            .setTimeToLive(in.timeToLive > 0 ? in.timeToLive : Integer.MAX_VALUE)
            .setBloomFilterType(BloomType.valueOf(in.bloomFilterType));
        td.setColumnFamily(cf.build());
      }
      admin.createTable(td.build());
    } catch (IllegalArgumentException e) {
      throw illegalArgument(e);
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public void deleteTable(ByteBuffer tableName) throws IOError {
    try (Admin admin = conn.getAdmin()) {
      TableName tn = TableName.valueOf(b(tableName));
      if (!admin.tableExists(tn)) {
        throw new IOError("table does not exist");
      }
      admin.deleteTable(tn);
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  // ---------------------------------------------------------------- reads

  @Override
  public List<TCell> get(ByteBuffer tableName, ByteBuffer row, ByteBuffer column, Map<ByteBuffer, ByteBuffer> attributes)
      throws IOError {
    return getVerTs(tableName, row, column, HConstants.LATEST_TIMESTAMP, 1, attributes);
  }

  @Override
  public List<TCell> getVer(ByteBuffer tableName, ByteBuffer row, ByteBuffer column, int numVersions,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    return getVerTs(tableName, row, column, HConstants.LATEST_TIMESTAMP, numVersions, attributes);
  }

  @Override
  public List<TCell> getVerTs(ByteBuffer tableName, ByteBuffer row, ByteBuffer column, long timestamp, int numVersions,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    try (Table t = table(tableName)) {
      Get get = new Get(b(row));
      addAttributes(get, attributes);
      addColumns(get, Collections.singletonList(column));
      if (timestamp != HConstants.LATEST_TIMESTAMP) {
        get.setTimeRange(0, timestamp);
      }
      get.readVersions(numVersions);
      return cells(t.get(get).rawCells());
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public List<TRowResult> getRow(ByteBuffer tableName, ByteBuffer row, Map<ByteBuffer, ByteBuffer> attributes)
      throws IOError {
    return getRowWithColumnsTs(tableName, row, null, HConstants.LATEST_TIMESTAMP, attributes);
  }

  @Override
  public List<TRowResult> getRowWithColumns(ByteBuffer tableName, ByteBuffer row, List<ByteBuffer> columns,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    return getRowWithColumnsTs(tableName, row, columns, HConstants.LATEST_TIMESTAMP, attributes);
  }

  @Override
  public List<TRowResult> getRowTs(ByteBuffer tableName, ByteBuffer row, long timestamp,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    return getRowWithColumnsTs(tableName, row, null, timestamp, attributes);
  }

  @Override
  public List<TRowResult> getRowWithColumnsTs(ByteBuffer tableName, ByteBuffer row, List<ByteBuffer> columns,
      long timestamp, Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    return getRowsWithColumnsTs(tableName, Collections.singletonList(row), columns, timestamp, attributes);
  }

  @Override
  public List<TRowResult> getRows(ByteBuffer tableName, List<ByteBuffer> rows, Map<ByteBuffer, ByteBuffer> attributes)
      throws IOError {
    return getRowsWithColumnsTs(tableName, rows, null, HConstants.LATEST_TIMESTAMP, attributes);
  }

  @Override
  public List<TRowResult> getRowsWithColumns(ByteBuffer tableName, List<ByteBuffer> rows, List<ByteBuffer> columns,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    return getRowsWithColumnsTs(tableName, rows, columns, HConstants.LATEST_TIMESTAMP, attributes);
  }

  @Override
  public List<TRowResult> getRowsTs(ByteBuffer tableName, List<ByteBuffer> rows, long timestamp,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    return getRowsWithColumnsTs(tableName, rows, null, timestamp, attributes);
  }

  @Override
  public List<TRowResult> getRowsWithColumnsTs(ByteBuffer tableName, List<ByteBuffer> rows, List<ByteBuffer> columns,
      long timestamp, Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    try (Table t = table(tableName)) {
      List<Get> gets = new ArrayList<>(rows.size());
      for (ByteBuffer row : rows) {
        Get get = new Get(b(row));
        addAttributes(get, attributes);
        addColumns(get, columns);
        if (timestamp != HConstants.LATEST_TIMESTAMP) {
          get.setTimeRange(0, timestamp);
        }
        gets.add(get);
      }
      return rows(t.get(gets), false);
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public List<TCell> getRowOrBefore(ByteBuffer tableName, ByteBuffer row, ByteBuffer family) throws IOError {
    try (Table t = table(tableName)) {
      Scan scan = new Scan().withStartRow(b(row)).setReversed(true).addFamily(b(family)).setOneRowLimit();
      try (ResultScanner rs = t.getScanner(scan)) {
        Result r = rs.next();
        return r == null ? new ArrayList<>() : cells(r.rawCells());
      }
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public TRegionInfo getRegionInfo(ByteBuffer row) throws IOError {
    throw new IOError("getRegionInfo is not supported by this test gateway");
  }

  // ---------------------------------------------------------------- writes

  private static void addMutations(Put put, Delete delete, List<Mutation> mutations, long timestamp) {
    for (Mutation m : mutations) {
      byte[][] fq = CellUtil.parseColumn(b(m.column));
      if (m.isDelete) {
        if (fq.length == 1) {
          delete.addFamily(fq[0], timestamp);
        } else {
          delete.addColumns(fq[0], fq[1], timestamp);
        }
        delete.setDurability(m.writeToWAL ? Durability.SYNC_WAL : Durability.SKIP_WAL);
      } else {
        if (fq.length == 1) {
          LOG.warn("No column qualifier specified. Delete is the only mutation supported over the whole column family.");
        } else {
          put.addColumn(fq[0], fq[1], timestamp, m.value != null ? b(m.value) : HConstants.EMPTY_BYTE_ARRAY);
        }
        put.setDurability(m.writeToWAL ? Durability.SYNC_WAL : Durability.SKIP_WAL);
      }
    }
  }

  @Override
  public void mutateRow(ByteBuffer tableName, ByteBuffer row, List<Mutation> mutations,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError, IllegalArgument {
    mutateRowTs(tableName, row, mutations, HConstants.LATEST_TIMESTAMP, attributes);
  }

  @Override
  public void mutateRowTs(ByteBuffer tableName, ByteBuffer row, List<Mutation> mutations, long timestamp,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError, IllegalArgument {
    try (Table t = table(tableName)) {
      Put put = new Put(b(row), timestamp);
      addAttributes(put, attributes);
      Delete delete = new Delete(b(row));
      addAttributes(delete, attributes);
      addMutations(put, delete, mutations, timestamp);
      if (!delete.isEmpty()) {
        t.delete(delete);
      }
      if (!put.isEmpty()) {
        t.put(put);
      }
    } catch (IllegalArgumentException e) {
      throw illegalArgument(e);
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public void mutateRows(ByteBuffer tableName, List<BatchMutation> rowBatches, Map<ByteBuffer, ByteBuffer> attributes)
      throws IOError, IllegalArgument {
    mutateRowsTs(tableName, rowBatches, HConstants.LATEST_TIMESTAMP, attributes);
  }

  @Override
  public void mutateRowsTs(ByteBuffer tableName, List<BatchMutation> rowBatches, long timestamp,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError, IllegalArgument {
    try (Table t = table(tableName)) {
      List<Put> puts = new ArrayList<>();
      List<Delete> deletes = new ArrayList<>();
      for (BatchMutation batch : rowBatches) {
        Put put = new Put(b(batch.row), timestamp);
        addAttributes(put, attributes);
        Delete delete = new Delete(b(batch.row));
        addAttributes(delete, attributes);
        addMutations(put, delete, batch.mutations, timestamp);
        if (!put.isEmpty()) {
          puts.add(put);
        }
        if (!delete.isEmpty()) {
          deletes.add(delete);
        }
      }
      if (!puts.isEmpty()) {
        t.put(puts);
      }
      if (!deletes.isEmpty()) {
        t.delete(deletes);
      }
    } catch (IllegalArgumentException e) {
      throw illegalArgument(e);
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public long atomicIncrement(ByteBuffer tableName, ByteBuffer row, ByteBuffer column, long value)
      throws IOError, IllegalArgument {
    byte[][] fq = CellUtil.parseColumn(b(column));
    byte[] qualifier = fq.length == 1 ? HConstants.EMPTY_BYTE_ARRAY : fq[1];
    try (Table t = table(tableName)) {
      return t.incrementColumnValue(b(row), fq[0], qualifier, value);
    } catch (IllegalArgumentException e) {
      throw illegalArgument(e);
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public void deleteAll(ByteBuffer tableName, ByteBuffer row, ByteBuffer column, Map<ByteBuffer, ByteBuffer> attributes)
      throws IOError {
    deleteAllTs(tableName, row, column, HConstants.LATEST_TIMESTAMP, attributes);
  }

  @Override
  public void deleteAllTs(ByteBuffer tableName, ByteBuffer row, ByteBuffer column, long timestamp,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    try (Table t = table(tableName)) {
      Delete delete = new Delete(b(row));
      addAttributes(delete, attributes);
      byte[][] fq = CellUtil.parseColumn(b(column));
      if (fq.length == 1) {
        delete.addFamily(fq[0], timestamp);
      } else {
        delete.addColumns(fq[0], fq[1], timestamp);
      }
      t.delete(delete);
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public void deleteAllRow(ByteBuffer tableName, ByteBuffer row, Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    deleteAllRowTs(tableName, row, HConstants.LATEST_TIMESTAMP, attributes);
  }

  @Override
  public void deleteAllRowTs(ByteBuffer tableName, ByteBuffer row, long timestamp,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    try (Table t = table(tableName)) {
      Delete delete = new Delete(b(row), timestamp);
      addAttributes(delete, attributes);
      t.delete(delete);
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public void increment(TIncrement inc) throws IOError {
    incrementRows(Collections.singletonList(inc));
  }

  @Override
  public void incrementRows(List<TIncrement> increments) throws IOError {
    try {
      for (TIncrement inc : increments) {
        try (Table t = table(inc.table)) {
          byte[][] fq = CellUtil.parseColumn(b(inc.column));
          byte[] qualifier = fq.length == 1 ? HConstants.EMPTY_BYTE_ARRAY : fq[1];
          t.increment(new Increment(b(inc.row)).addColumn(fq[0], qualifier, inc.ammount));
        }
      }
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public List<TCell> append(TAppend append) throws IOError {
    try (Table t = table(append.table)) {
      Append a = new Append(b(append.row));
      for (int i = 0; i < append.columns.size(); i++) {
        byte[][] fq = CellUtil.parseColumn(b(append.columns.get(i)));
        byte[] qualifier = fq.length == 1 ? HConstants.EMPTY_BYTE_ARRAY : fq[1];
        a.addColumn(fq[0], qualifier, b(append.values.get(i)));
      }
      return cells(t.append(a).rawCells());
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  @Override
  public boolean checkAndPut(ByteBuffer tableName, ByteBuffer row, ByteBuffer column, ByteBuffer value, Mutation mput,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError, IllegalArgument {
    try (Table t = table(tableName)) {
      Put put = new Put(b(row));
      addAttributes(put, attributes);
      byte[][] pfq = CellUtil.parseColumn(b(mput.column));
      if (pfq.length == 1) {
        throw new IllegalArgumentException("checkAndPut needs a family:qualifier column to put");
      }
      put.addColumn(pfq[0], pfq[1], mput.value != null ? b(mput.value) : HConstants.EMPTY_BYTE_ARRAY);
      put.setDurability(mput.writeToWAL ? Durability.SYNC_WAL : Durability.SKIP_WAL);
      byte[][] fq = CellUtil.parseColumn(b(column));
      Table.CheckAndMutateBuilder check = t.checkAndMutate(b(row), fq[0])
          .qualifier(fq.length == 1 ? HConstants.EMPTY_BYTE_ARRAY : fq[1]);
      return value == null ? check.ifNotExists().thenPut(put) : check.ifEquals(b(value)).thenPut(put);
    } catch (IllegalArgumentException e) {
      throw illegalArgument(e);
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
  }

  // ---------------------------------------------------------------- scanners

  private int openScanner(ByteBuffer tableName, Scan scan, boolean sortColumns, Map<ByteBuffer, ByteBuffer> attributes)
      throws IOError {
    addAttributes(scan, attributes);
    Table t = null;
    try {
      t = table(tableName);
      ResultScanner rs = t.getScanner(scan);
      int id = nextScannerId.incrementAndGet();
      scanners.put(id, new ScannerEntry(t, rs, sortColumns));
      return id;
    } catch (IOException | RuntimeException e) {
      if (t != null) {
        try { t.close(); } catch (IOException ignored) { /* nothing */ }
      }
      throw ioError(e);
    }
  }

  @Override
  public int scannerOpenWithScan(ByteBuffer tableName, TScan tScan, Map<ByteBuffer, ByteBuffer> attributes)
      throws IOError {
    Scan scan = new Scan();
    try {
      if (tScan.isSetReversed()) {
        scan.setReversed(tScan.isReversed());
      }
      if (tScan.isSetStartRow()) {
        scan.withStartRow(tScan.getStartRow());
      }
      if (tScan.isSetStopRow()) {
        scan.withStopRow(tScan.getStopRow());
      }
      if (tScan.isSetTimestamp()) {
        scan.setTimeRange(0, tScan.getTimestamp());
      }
      if (tScan.isSetCaching()) {
        scan.setCaching(tScan.getCaching());
      }
      if (tScan.isSetBatchSize()) {
        scan.setBatch(tScan.getBatchSize());
      }
      if (tScan.isSetColumns() && !tScan.getColumns().isEmpty()) {
        addColumns(scan, tScan.getColumns());
      }
      if (tScan.isSetFilterString()) {
        scan.setFilter(new ParseFilter().parseFilterString(tScan.getFilterString()));
      }
    } catch (IOException | RuntimeException e) {
      throw ioError(e);
    }
    return openScanner(tableName, scan, tScan.isSetSortColumns() && tScan.isSortColumns(), attributes);
  }

  @Override
  public int scannerOpen(ByteBuffer tableName, ByteBuffer startRow, List<ByteBuffer> columns,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    Scan scan = new Scan().withStartRow(b(startRow));
    addColumns(scan, columns);
    return openScanner(tableName, scan, false, attributes);
  }

  @Override
  public int scannerOpenWithStop(ByteBuffer tableName, ByteBuffer startRow, ByteBuffer stopRow,
      List<ByteBuffer> columns, Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    Scan scan = new Scan().withStartRow(b(startRow)).withStopRow(b(stopRow));
    addColumns(scan, columns);
    return openScanner(tableName, scan, false, attributes);
  }

  @Override
  public int scannerOpenWithPrefix(ByteBuffer tableName, ByteBuffer startAndPrefix, List<ByteBuffer> columns,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    byte[] prefix = b(startAndPrefix);
    Scan scan = new Scan().withStartRow(prefix);
    addColumns(scan, columns);
    scan.setFilter(new WhileMatchFilter(new PrefixFilter(prefix)));
    return openScanner(tableName, scan, false, attributes);
  }

  @Override
  public int scannerOpenTs(ByteBuffer tableName, ByteBuffer startRow, List<ByteBuffer> columns, long timestamp,
      Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    Scan scan = new Scan().withStartRow(b(startRow));
    try {
      scan.setTimeRange(0, timestamp);
    } catch (IOException e) {
      throw ioError(e);
    }
    addColumns(scan, columns);
    return openScanner(tableName, scan, false, attributes);
  }

  @Override
  public int scannerOpenWithStopTs(ByteBuffer tableName, ByteBuffer startRow, ByteBuffer stopRow,
      List<ByteBuffer> columns, long timestamp, Map<ByteBuffer, ByteBuffer> attributes) throws IOError {
    Scan scan = new Scan().withStartRow(b(startRow)).withStopRow(b(stopRow));
    try {
      scan.setTimeRange(0, timestamp);
    } catch (IOException e) {
      throw ioError(e);
    }
    addColumns(scan, columns);
    return openScanner(tableName, scan, false, attributes);
  }

  @Override
  public List<TRowResult> scannerGetList(int id, int nbRows) throws IOError, IllegalArgument {
    ScannerEntry e = scanners.get(id);
    if (e == null) {
      throw new IllegalArgument("scanner ID is invalid");
    }
    e.lastAccess = System.currentTimeMillis();
    try {
      return rows(e.scanner.next(nbRows), e.sortColumns);
    } catch (IOException | RuntimeException ex) {
      throw ioError(ex);
    }
  }

  @Override
  public List<TRowResult> scannerGet(int id) throws IOError, IllegalArgument {
    return scannerGetList(id, 1);
  }

  @Override
  public void scannerClose(int id) throws IOError, IllegalArgument {
    ScannerEntry e = scanners.remove(id);
    if (e == null) {
      throw new IllegalArgument("scanner ID is invalid");
    }
    e.close();
  }

  // ---------------------------------------------------------------- main

  private static void usage() {
    System.err.println("usage: HBaseThriftGateway [-b bindAddress] [-p port] [--minWorkers N] [--workers N] start");
    System.exit(2);
  }

  public static void main(String[] args) throws Exception {
    String bind = "0.0.0.0";
    int port = 9090;
    int minWorkers = 16;
    int maxWorkers = 1000;
    boolean start = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "-b": case "--bind": bind = args[++i]; break;
        case "-p": case "--port": port = Integer.parseInt(args[++i]); break;
        case "--minWorkers": minWorkers = Integer.parseInt(args[++i]); break;
        case "-w": case "--workers": maxWorkers = Integer.parseInt(args[++i]); break;
        case "start": start = true; break;
        default: usage();
      }
    }
    if (!start) {
      usage();
    }
    Configuration conf = HBaseConfiguration.create();
    int readTimeout = conf.getInt("hbase.thrift.server.socket.read.timeout", 60000);
    long scannerTimeout = conf.getLong("hbase.thrift.scanner.timeout", 600000L);
    Connection conn = ConnectionFactory.createConnection(conf);
    HBaseThriftGateway handler = new HBaseThriftGateway(conn, scannerTimeout);

    TServerSocket socket;
    try {
      socket = new TServerSocket(new TServerSocket.ServerSocketTransportArgs()
          .bindAddr(new InetSocketAddress(bind, port)).clientTimeout(readTimeout).backlog(128));
    } catch (TTransportException e) {
      throw new IOException("could not bind " + bind + ":" + port, e);
    }
    TThreadPoolServer.Args targs = new TThreadPoolServer.Args(socket)
        .processor(new Hbase.Processor<>(handler))
        .protocolFactory(new TBinaryProtocol.Factory())
        .transportFactory(new TTransportFactory())
        .minWorkerThreads(minWorkers)
        .maxWorkerThreads(maxWorkers);
    TServer server = new TThreadPoolServer(targs);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.stop();
      try { conn.close(); } catch (IOException ignored) { /* exiting */ }
    }, "shutdown"));
    LOG.info("HBase Thrift v1 gateway listening on {}:{} (thread pool {}-{}, binary protocol, buffered transport, "
        + "socket read timeout {} ms) {}", bind, port, minWorkers, maxWorkers, readTimeout, Arrays.toString(args));
    server.serve();
  }
}
