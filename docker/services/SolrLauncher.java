// Starts an embedded Solr 9 (Jetty) for tests/development: java -cp 'lib/*' SolrLauncher.java <solr-home> <port>
// Run in Java's source mode by docker/services/solr.sh; binds 127.0.0.1, context /solr, blocks until killed.
import java.nio.file.Path;
import org.apache.solr.embedded.JettyConfig;
import org.apache.solr.embedded.JettySolrRunner;

public class SolrLauncher {
  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: SolrLauncher <solr-home> <port>");
      System.exit(2);
    }
    Path home = Path.of(args[0]).toAbsolutePath();
    int port = Integer.parseInt(args[1]);
    JettyConfig config = JettyConfig.builder()
        .setPort(port) // JettySolrRunner always binds 127.0.0.1
        .setContext("/solr")
        .stopAtShutdown(true)
        .withPortRetryTime(2000) // port busy: fail fast instead of retrying for a minute
        .build();
    JettySolrRunner solr = new JettySolrRunner(home.toString(), config);
    try {
      solr.start(); // returns once the cores are loaded
    } catch (Exception e) {
      e.printStackTrace();
      System.exit(1); // Jetty threads would otherwise keep a broken JVM alive
    }
    // a broken configset does not fail start(): report it and exit so the start script fails fast
    var failures = solr.getCoreContainer().getCoreInitFailures();
    if (!failures.isEmpty()) {
      failures.forEach((core, f) -> {
        System.err.println("SolrLauncher: core " + core + " failed to load:");
        f.exception.printStackTrace();
      });
      solr.stop();
      System.exit(1);
    }
    System.out.println("SolrLauncher: listening on " + solr.getBaseUrl() + " (home " + home + ")");
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        solr.stop();
      } catch (Exception e) {
        e.printStackTrace();
      }
    }));
    Thread.currentThread().join();
  }
}
