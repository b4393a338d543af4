// Starts a single-node OpenSearch 2.19 for tests/development, from Maven Central jars (no distribution, no Docker):
//   java -cp 'lib/*' OpenSearchLauncher.java <home> <http-port> <transport-port>
// Run in Java's source mode by docker/services/opensearch.sh. <home> holds config/ (empty: every setting is given
// here), data/ and logs/. Binds 127.0.0.1 only; plain HTTP (no security plugin); blocks until killed (SIGTERM closes
// the node cleanly).
// What the official distribution does and this does not: no plugins/ or modules/ folders — the modules nutch2 needs are
// classpath plugins (transport-netty4: HTTP + transport, analysis-common: cjk_width/cjk_bigram and the other common
// analyzers, lang-painless: scripts); no Bootstrap, hence no security manager, no JNA mlockall/seccomp and no
// bootstrap checks (a plain Node skips them; they are not enforced for a single-node loopback node anyway).
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.LogManager;
import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.transport.Netty4Plugin;

public class OpenSearchLauncher {
  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: OpenSearchLauncher <home> <http-port> <transport-port>");
      System.exit(2);
    }
    Path home = Path.of(args[0]).toAbsolutePath();
    int httpPort = Integer.parseInt(args[1]);
    int transportPort = Integer.parseInt(args[2]);
    Path config = home.resolve("config");
    Files.createDirectories(config);
    Settings settings = Settings.builder()
        .put("cluster.name", "nutch2")
        .put("node.name", "nutch2")
        .put("path.home", home.toString())
        .put("path.data", home.resolve("data").toString())
        .put("path.logs", home.resolve("logs").toString())
        .put("network.host", "127.0.0.1")
        .put("http.port", httpPort) // one port, not a range: a busy port fails the start instead of moving on
        .put("transport.port", transportPort)
        .put("discovery.type", "single-node")
        // a test node on a shared disk: do not stop allocating shards (or make indices read-only) at 85/90/95 % use
        .put("cluster.routing.allocation.disk.threshold_enabled", false)
        .build();
    Environment env = InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), config, () -> "nutch2");
    // the constructor taking classpath plugins is protected: an anonymous subclass reaches it
    Node node = new Node(env, List.of(Netty4Plugin.class, CommonAnalysisPlugin.class, PainlessPlugin.class), true) {};
    try {
      node.start(); // returns once HTTP listens; the cluster turns yellow/green shortly after
    } catch (Throwable e) {
      e.printStackTrace();
      // the start script shows the log's last lines: end with the reason (e.g. "Failed to bind to 127.0.0.1:9300")
      for (Throwable c = e; c != null; c = c.getCause()) System.err.println("OpenSearchLauncher: start failed: " + c);
      System.exit(1); // node threads would otherwise keep a broken JVM alive
    }
    System.out.println("OpenSearchLauncher: listening on http://127.0.0.1:" + httpPort + " (home " + home + ")");
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        node.close();
        if (!node.awaitClose(20, TimeUnit.SECONDS)) System.err.println("OpenSearchLauncher: node not closed after 20 s");
      } catch (Exception e) {
        e.printStackTrace();
      } finally {
        LogManager.shutdown(); // -Dlog4j.shutdownHookEnabled=false keeps log4j up while the node closes
      }
    }, "opensearch-shutdown"));
    Thread.currentThread().join();
  }
}
