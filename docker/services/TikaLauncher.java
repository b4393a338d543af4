// A Tika server for tests/development, run by docker/services/tika.sh in Java's source mode over Maven Central's
// tika-parsers-standard-package (the tika-server-* artifacts are not served here):
//   java -Dtika.launcher.source=TikaLauncher.java -cp 'lib/*' TikaLauncher.java <port> [task-timeout-ms]
//        [max-body-bytes] [parser-processes] [parser-heap]
// It speaks the part of Apache Tika Server's REST API nutch2 uses, with the official server's shapes, so the official
// apache/tika image can stand in for it:
//   GET  /tika                      "This is Tika Server ..." (health)        GET /version   "Apache Tika 3.3.1"
//   PUT  /tika                      the document's text (Accept: text/plain, default) or XHTML (text/html, text/xml)
//   PUT  /rmeta[/xml|/html|/text|/ignore]   JSON list: one metadata map per document, the container first, then each
//                                   embedded document; X-TIKA:content holds its XHTML (default) or text
//   PUT  /meta                      JSON metadata of the container only
//   PUT  /detect/stream             the detected media type
//   PUT  /language/stream, /language/string   the language of the text (Optimaize, as Tika's langdetect module)
// Request headers honoured: Content-Type and Content-Disposition (filename) as hints, writeLimit (characters of
// content kept per document, the rest dropped with X-TIKA:WARN:write_limit_reached), maxEmbeddedResources,
// X-Tika-Timeout-Millis (per request, capped at the task timeout). Answers as the official server does: 415 for an
// unsupported type, 422 for a document that cannot be parsed (encrypted, corrupt, a zip bomb), 503 when the task
// timeout is reached. Binds 127.0.0.1 only.
// Bounded like the official server's forked mode: a front process hands each document to one of a few parser
// processes (JVMs of their own, one document at a time each, -XX:+ExitOnOutOfMemoryError). A parse is interrupted
// at its timeout; a process that overruns it by a grace period is killed (503), one that dies in a parse (out of
// memory) makes that document's answer 422; either way a new process takes its place (see Front).
import com.optimaize.langdetect.LanguageDetector;
import com.optimaize.langdetect.LanguageDetectorBuilder;
import com.optimaize.langdetect.ngram.NgramExtractors;
import com.optimaize.langdetect.profiles.LanguageProfileReader;
import com.optimaize.langdetect.text.CommonTextObjectFactories;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.tika.Tika;
import org.apache.tika.exception.EncryptedDocumentException;
import org.apache.tika.exception.TikaException;
import org.apache.tika.exception.WriteLimitReachedException;
import org.apache.tika.exception.ZeroByteFileException;
import org.apache.tika.io.TikaInputStream;
import org.apache.tika.metadata.Metadata;
import org.apache.tika.metadata.TikaCoreProperties;
import org.apache.tika.mime.MediaType;
import org.apache.tika.parser.AutoDetectParser;
import org.apache.tika.parser.ParseContext;
import org.apache.tika.parser.Parser;
import org.apache.tika.parser.RecursiveParserWrapper;
import org.apache.tika.parser.pdf.PDFParserConfig;
import org.apache.tika.sax.BasicContentHandlerFactory;
import org.apache.tika.sax.BodyContentHandler;
import org.apache.tika.sax.RecursiveParserWrapperHandler;
import org.apache.tika.sax.ToXMLContentHandler;
import org.apache.tika.sax.WriteOutContentHandler;
import org.xml.sax.ContentHandler;
import org.xml.sax.SAXException;

public class TikaLauncher {
  static final Pattern FILENAME = Pattern.compile("filename\\*?=\"?(?:UTF-8'')?([^\";]+)", Pattern.CASE_INSENSITIVE);

  static AutoDetectParser parser;
  static String version;
  static long taskTimeoutMs;
  static long maxBody;
  static long pdfMemory = Runtime.getRuntime().maxMemory() / 4;
  static LanguageDetector languages;
  static final ExecutorService workers = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "tika-parse");
    t.setDaemon(true);
    return t;
  });

  public static void main(String[] args) throws Exception {
    if (args.length >= 2 && args[0].equals("--child")) {
      child(Integer.parseInt(args[1]), Long.parseLong(args[2]));
      return;
    }
    if (args.length < 1 || args.length > 5) {
      System.err.println("usage: TikaLauncher <port> [task-timeout-ms] [max-body-bytes] [children] [child-heap]");
      System.exit(2);
    }
    int port = Integer.parseInt(args[0]);
    taskTimeoutMs = args.length > 1 ? Long.parseLong(args[1]) : 120_000;
    maxBody = args.length > 2 ? Long.parseLong(args[2]) : 64L << 20;
    int children = args.length > 3 ? Integer.parseInt(args[3]) : 2;
    String heap = args.length > 4 ? args[4] : "512m";
    version = new Tika().toString(); // "Apache Tika 3.3.1"
    Front front = new Front(children, heap);
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 128);
    server.setExecutor(Executors.newFixedThreadPool(16));
    server.createContext("/", front::handle);
    server.start();
    System.out.println("TikaLauncher: " + version + " listening on http://127.0.0.1:" + port + "/ (" + children
        + " parser processes of " + heap + ", task timeout " + taskTimeoutMs + " ms)");
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.stop(0);
      front.close();
    }));
    Thread.currentThread().join();
  }

  /** A parser process: the REST API on a private port, one parse at a time (the front sends one request). */
  static void child(int port, long timeout) throws Exception {
    taskTimeoutMs = timeout;
    maxBody = Long.MAX_VALUE;
    parser = new AutoDetectParser();
    version = new Tika().toString();
    languages = LanguageDetectorBuilder.create(NgramExtractors.standard())
        .withProfiles(new LanguageProfileReader().readAllBuiltIn()).build();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 4);
    server.setExecutor(Executors.newFixedThreadPool(2));
    server.createContext("/", TikaLauncher::handle);
    server.start();
    // a parser process never outlives its front (kill -9 of the front included)
    ProcessHandle.current().parent().ifPresent(front -> front.onExit().thenRun(() -> Runtime.getRuntime().halt(0)));
    System.out.println("READY " + server.getAddress().getPort());
    System.out.flush();
    Thread.currentThread().join();
  }

  /**
   * The front: answers health checks itself and hands each document to an idle parser process (a JVM of its own,
   * like the official server's forked child). A process that dies during a parse (out of memory: the JVM ends on
   * -XX:+ExitOnOutOfMemoryError) makes that document's answer 422; one that overruns the timeout by GRACE_MS is
   * killed and the answer is 503. Either way a new process takes its place: one document never takes the server
   * down, and the culprit is known because a process parses one document at a time.
   */
  static final class Front {
    static final long GRACE_MS = 2_000;
    final java.util.concurrent.LinkedBlockingQueue<Child> idle = new java.util.concurrent.LinkedBlockingQueue<>();
    final java.util.Set<Child> all = java.util.concurrent.ConcurrentHashMap.newKeySet();
    final String heap;
    final java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder()
        .version(java.net.http.HttpClient.Version.HTTP_1_1).build();
    volatile boolean closed;

    Front(int n, String heap) throws Exception {
      this.heap = heap;
      for (int i = 0; i < n; i++) {
        idle.add(new Child(heap));
      }
    }

    void close() {
      closed = true;
      all.forEach(c -> c.proc.destroyForcibly());
    }

    void replace(Child dead) {
      dead.proc.destroyForcibly();
      all.remove(dead);
      workers.submit(() -> {
        while (!closed) {
          try {
            idle.add(new Child(heap));
            return;
          } catch (Exception e) {
            System.err.println("TikaLauncher: starting a parser process failed: " + e);
            try {
              Thread.sleep(2000);
            } catch (InterruptedException ie) {
              return;
            }
          }
        }
      });
    }

    final class Child {
      final Process proc;
      final int port;

      Child(String heap) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String source = System.getProperty("tika.launcher.source", "TikaLauncher.java");
        proc = new ProcessBuilder(java, "-Xmx" + heap, "-XX:+ExitOnOutOfMemoryError", "-XX:+UseSerialGC",
            "-Djava.awt.headless=true", "-cp", System.getProperty("java.class.path"), source,
            "--child", "0", String.valueOf(taskTimeoutMs)).redirectErrorStream(true).start();
        all.add(this);
        var out = new java.io.BufferedReader(new java.io.InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8));
        String line;
        int found = -1;
        while ((line = out.readLine()) != null) {
          if (line.startsWith("READY ")) {
            found = Integer.parseInt(line.substring(6).trim());
            break;
          }
          System.out.println("[parser] " + line);
        }
        if (found < 0) {
          proc.destroyForcibly();
          all.remove(this);
          throw new IOException("parser process ended before it was ready");
        }
        port = found;
        Thread pump = new Thread(() -> out.lines().forEach(l -> System.out.println("[parser " + port + "] " + l)));
        pump.setDaemon(true);
        pump.start();
      }
    }

    void handle(HttpExchange ex) throws IOException {
      try (ex) {
        String path = ex.getRequestURI().getPath().replaceAll("/+$", "");
        String method = ex.getRequestMethod();
        if (method.equals("GET") && (path.equals("/tika") || path.isEmpty())) {
          send(ex, 200, "text/plain", "This is Tika Server (" + version + "). Please PUT\n");
          return;
        }
        if (method.equals("GET") && path.equals("/version")) {
          send(ex, 200, "text/plain", version);
          return;
        }
        if (!method.equals("PUT") && !method.equals("POST")) {
          send(ex, 405, "text/plain", method + " " + path + " is not served\n");
          return;
        }
        String length = ex.getRequestHeaders().getFirst("Content-Length");
        byte[] body = length != null && length.matches("\\d{1,18}") && Long.parseLong(length) > maxBody ? null
            : readBody(ex);
        if (body == null) {
          send(ex, 413, "text/plain", "document larger than " + maxBody + " bytes\n");
          return;
        }
        long timeout = taskTimeoutMs;
        String asked = ex.getRequestHeaders().getFirst("X-Tika-Timeout-Millis");
        try {
          if (asked != null) {
            timeout = Math.min(Math.max(1, Long.parseLong(asked.trim())), taskTimeoutMs);
          }
        } catch (NumberFormatException e) {
          send(ex, 400, "text/plain", "X-Tika-Timeout-Millis is not a number: " + asked + "\n");
          return;
        }
        long until = System.currentTimeMillis() + timeout;
        Child c;
        try {
          c = idle.poll(timeout, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          c = null;
        }
        if (c == null) {
          send(ex, 503, "text/plain", "every parser process stayed busy for " + timeout + " ms\n");
          return;
        }
        forward(ex, c, path, body, Math.max(1, until - System.currentTimeMillis()));
      }
    }

    void forward(HttpExchange ex, Child c, String path, byte[] body, long timeout) throws IOException {
      var req = java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + c.port + path))
          .timeout(java.time.Duration.ofMillis(timeout + GRACE_MS))
          .PUT(java.net.http.HttpRequest.BodyPublishers.ofByteArray(body))
          .header("X-Tika-Timeout-Millis", String.valueOf(timeout));
      for (String h : new String[] {"Content-Type", "Content-Disposition", "Accept", "writeLimit",
          "maxEmbeddedResources"}) {
        String v = ex.getRequestHeaders().getFirst(h);
        if (v != null) {
          req.header(h, v);
        }
      }
      java.net.http.HttpResponse<byte[]> resp;
      try {
        resp = http.send(req.build(), java.net.http.HttpResponse.BodyHandlers.ofByteArray());
      } catch (java.net.http.HttpTimeoutException e) {
        replace(c);
        send(ex, 503, "text/plain", "parse timed out after " + timeout + " ms (parser process restarted)\n");
        return;
      } catch (IOException | InterruptedException e) {
        boolean died = !c.proc.isAlive() || waitExit(c.proc);
        replace(c);
        if (died) {
          int code = c.proc.exitValue();
          send(ex, 422, "text/plain", "the document ended its parser process (exit " + code
              + (code == 3 ? ", out of memory" : "") + ")\n");
        } else {
          send(ex, 503, "text/plain", "parser process failed: " + e + "\n");
        }
        return;
      }
      idle.add(c);
      ex.getResponseHeaders().set("Content-Type", resp.headers().firstValue("Content-Type").orElse("text/plain"));
      byte[] b = resp.body();
      ex.sendResponseHeaders(resp.statusCode(), b.length == 0 ? -1 : b.length);
      if (b.length > 0) {
        try (OutputStream out = ex.getResponseBody()) {
          out.write(b);
        }
      }
    }

    static boolean waitExit(Process p) {
      try {
        return p.waitFor(2, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        return false;
      }
    }
  }

  static void handle(HttpExchange ex) throws IOException {
    try (ex) {
      String path = ex.getRequestURI().getPath().replaceAll("/+$", "");
      String method = ex.getRequestMethod();
      if (method.equals("GET") && (path.equals("/tika") || path.isEmpty())) {
        send(ex, 200, "text/plain", "This is Tika Server (" + version + "). Please PUT\n");
        return;
      }
      if (method.equals("GET") && path.equals("/version")) {
        send(ex, 200, "text/plain", version);
        return;
      }
      if (!method.equals("PUT") && !method.equals("POST")) {
        send(ex, path.matches("/(tika|rmeta.*|meta|detect/stream|language/(stream|string))") ? 405 : 404,
            "text/plain", method + " " + path + " is not served\n");
        return;
      }
      byte[] body = readBody(ex);
      if (body == null) {
        send(ex, 413, "text/plain", "document larger than " + maxBody + " bytes\n");
        return;
      }
      switch (path) {
        case "/tika" -> timed(ex, () -> tika(ex, body));
        case "/rmeta", "/rmeta/xml", "/rmeta/html", "/rmeta/text", "/rmeta/ignore" ->
            timed(ex, () -> rmeta(ex, body, path.equals("/rmeta") ? "xml" : path.substring(7)));
        case "/meta" -> timed(ex, () -> meta(ex, body));
        case "/detect/stream" -> timed(ex, () -> detect(ex, body));
        case "/language/stream", "/language/string" -> timed(ex, () -> language(ex, body));
        default -> send(ex, 404, "text/plain", "no such resource: " + path + "\n");
      }
    } catch (IOException e) {
      // the client went away
    }
  }

  interface Work {
    Answer run() throws Exception;
  }

  record Answer(int status, String type, byte[] body) {}

  /** Runs one request's work on a worker thread, bounded by the task timeout; answers what it gave. */
  static void timed(HttpExchange ex, Work work) throws IOException {
    long timeout = taskTimeoutMs;
    String asked = ex.getRequestHeaders().getFirst("X-Tika-Timeout-Millis");
    if (asked != null) {
      try {
        timeout = Math.min(Math.max(1, Long.parseLong(asked.trim())), taskTimeoutMs);
      } catch (NumberFormatException e) {
        send(ex, 400, "text/plain", "X-Tika-Timeout-Millis is not a number: " + asked + "\n");
        return;
      }
    }
    Future<Answer> f = workers.submit(() -> {
      try {
        return work.run();
      } catch (Throwable t) {
        if (!(t instanceof UnsupportedType)) {
          logFailure(ex.getRequestURI().getPath(), ex, t);
        }
        return failure(t);
      }
    });
    Answer a;
    try {
      a = f.get(timeout, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      a = new Answer(503, "text/plain", ("parse timed out after " + timeout + " ms\n").getBytes(StandardCharsets.UTF_8));
    } catch (Exception e) {
      a = failure(e);
    }
    ex.getResponseHeaders().set("Content-Type", a.type() + "; charset=UTF-8");
    ex.sendResponseHeaders(a.status(), a.body().length == 0 ? -1 : a.body().length);
    if (a.body().length > 0) {
      try (OutputStream out = ex.getResponseBody()) {
        out.write(a.body());
      }
    }
  }

  /** A parse that failed, with its stack trace, in the server's log (the answer carries one line). */
  static void logFailure(String what, HttpExchange ex, Throwable t) {
    java.io.StringWriter trace = new java.io.StringWriter();
    t.printStackTrace(new java.io.PrintWriter(trace));
    System.err.println("TikaLauncher: " + what + " of " + ex.getRequestHeaders().getFirst("Content-Type")
        + " failed: " + trace);
  }

  static Answer failure(Throwable t) {
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root && !(root instanceof TikaException)) {
      root = root.getCause();
    }
    int status = 500;
    if (t instanceof UnsupportedType || root instanceof UnsupportedType) {
      status = 415;
    } else if (t instanceof TikaException || t instanceof SAXException || root instanceof TikaException
        || t instanceof IOException) {
      status = 422;
    }
    String text = t.getClass().getName() + ": " + t.getMessage() + "\n";
    return new Answer(status, "text/plain", text.getBytes(StandardCharsets.UTF_8));
  }

  static class UnsupportedType extends Exception {
    UnsupportedType(String type) {
      super("unsupported media type: " + type);
    }
  }

  static byte[] readBody(HttpExchange ex) throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    byte[] chunk = new byte[65536];
    try (InputStream in = ex.getRequestBody()) {
      int n;
      while ((n = in.read(chunk)) > 0) {
        if (buf.size() + n > maxBody) {
          return null;
        }
        buf.write(chunk, 0, n);
      }
    }
    return buf.toByteArray();
  }

  static Metadata hints(HttpExchange ex) {
    Metadata m = new Metadata();
    String type = ex.getRequestHeaders().getFirst("Content-Type");
    if (type != null && !type.isBlank() && !type.startsWith("application/octet-stream")) {
      m.set(Metadata.CONTENT_TYPE, type);
    }
    String disposition = ex.getRequestHeaders().getFirst("Content-Disposition");
    if (disposition != null) {
      Matcher mt = FILENAME.matcher(disposition);
      if (mt.find()) {
        m.set(TikaCoreProperties.RESOURCE_NAME_KEY, mt.group(1));
      }
    }
    return m;
  }

  static int intHeader(HttpExchange ex, String name, int dflt) {
    String v = ex.getRequestHeaders().getFirst(name);
    try {
      return v == null ? dflt : Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      return dflt;
    }
  }

  static void checkSupported(byte[] body, Metadata m) throws Exception {
    MediaType type;
    try (TikaInputStream in = TikaInputStream.get(new ByteArrayInputStream(body))) {
      type = parser.getDetector().detect(in, m);
    }
    if (!parser.getSupportedTypes(new ParseContext()).contains(type)
        && !parser.getSupportedTypes(new ParseContext()).contains(type.getBaseType())) {
      throw new UnsupportedType(type.toString());
    }
  }

  static ParseContext context() {
    ParseContext c = new ParseContext();
    c.set(Parser.class, parser);
    // PDFBox keeps decoded streams within this much memory (then fails the document) instead of filling the heap
    PDFParserConfig pdf = new PDFParserConfig();
    pdf.setMaxMainMemoryBytes(pdfMemory);
    c.set(PDFParserConfig.class, pdf);
    return c;
  }

  static Answer tika(HttpExchange ex, byte[] body) throws Exception {
    Metadata m = hints(ex);
    checkSupported(body, m);
    String accept = String.valueOf(ex.getRequestHeaders().getFirst("Accept"));
    boolean xml = accept.contains("text/html") || accept.contains("text/xml") || accept.contains("xhtml");
    int limit = intHeader(ex, "writeLimit", -1);
    ContentHandler out = xml ? new ToXMLContentHandler() : new WriteOutContentHandler(limit);
    ContentHandler handler = xml ? out : new BodyContentHandler(out);
    try (TikaInputStream in = TikaInputStream.get(new ByteArrayInputStream(body))) {
      parser.parse(in, handler, m, context());
    } catch (SAXException e) {
      if (!WriteLimitReachedException.isWriteLimitReached(e)) {
        throw e;
      }
    }
    return new Answer(200, xml ? "text/html" : "text/plain", out.toString().getBytes(StandardCharsets.UTF_8));
  }

  static Answer rmeta(HttpExchange ex, byte[] body, String kind) throws Exception {
    Metadata m = hints(ex);
    checkSupported(body, m);
    BasicContentHandlerFactory.HANDLER_TYPE type =
        BasicContentHandlerFactory.parseHandlerType(kind, BasicContentHandlerFactory.HANDLER_TYPE.XML);
    int limit = intHeader(ex, "writeLimit", -1);
    int maxEmbedded = intHeader(ex, "maxEmbeddedResources", -1);
    ParseContext ctx = context();
    BasicContentHandlerFactory factory = new BasicContentHandlerFactory(type, limit, false, ctx);
    RecursiveParserWrapperHandler handler = new RecursiveParserWrapperHandler(factory, maxEmbedded);
    try (TikaInputStream in = TikaInputStream.get(new ByteArrayInputStream(body))) {
      new RecursiveParserWrapper(parser).parse(in, handler, m, ctx);
    } catch (EncryptedDocumentException | ZeroByteFileException e) {
      throw e;
    } catch (TikaException | SAXException e) {
      // as the official /rmeta: a failure inside the document is reported in its metadata, what was read is kept
      List<Metadata> list = handler.getMetadataList();
      if (list.isEmpty()) {
        throw e;
      }
      // RecursiveParserWrapper has put its stack trace there already (a second value would be a 500)
      if (list.get(0).get(TikaCoreProperties.CONTAINER_EXCEPTION) == null) {
        list.get(0).set(TikaCoreProperties.CONTAINER_EXCEPTION, e.getClass().getName() + ": " + e.getMessage());
      }
      logFailure("rmeta", ex, e);
    }
    return new Answer(200, "application/json", json(handler.getMetadataList()).getBytes(StandardCharsets.UTF_8));
  }

  static Answer meta(HttpExchange ex, byte[] body) throws Exception {
    Metadata m = hints(ex);
    checkSupported(body, m);
    try (TikaInputStream in = TikaInputStream.get(new ByteArrayInputStream(body))) {
      parser.parse(in, new BodyContentHandler(new WriteOutContentHandler(0)), m, context());
    } catch (SAXException e) {
      if (!WriteLimitReachedException.isWriteLimitReached(e)) {
        throw e;
      }
    }
    return new Answer(200, "application/json", jsonObject(m).getBytes(StandardCharsets.UTF_8));
  }

  static Answer detect(HttpExchange ex, byte[] body) throws Exception {
    try (TikaInputStream in = TikaInputStream.get(new ByteArrayInputStream(body))) {
      return new Answer(200, "text/plain",
          parser.getDetector().detect(in, hints(ex)).toString().getBytes(StandardCharsets.UTF_8));
    }
  }

  static Answer language(HttpExchange ex, byte[] body) {
    String text = new String(body, StandardCharsets.UTF_8);
    var found = languages.detect(CommonTextObjectFactories.forDetectingOnLargeText().forText(text));
    String lang = found.isPresent() ? found.get().getLanguage() : "";
    return new Answer(200, "text/plain", lang.getBytes(StandardCharsets.UTF_8));
  }

  // ------------------------------------------------------------------ JSON, as Tika's JsonMetadata writes it

  static String json(List<Metadata> list) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < list.size(); i++) {
      if (i > 0) {
        b.append(',');
      }
      b.append(jsonObject(list.get(i)));
    }
    return b.append(']').toString();
  }

  static String jsonObject(Metadata m) {
    Map<String, String[]> fields = new LinkedHashMap<>();
    String[] names = m.names();
    java.util.Arrays.sort(names);
    for (String n : names) {
      fields.put(n, m.getValues(n));
    }
    StringBuilder b = new StringBuilder("{");
    boolean first = true;
    for (var e : fields.entrySet()) {
      if (!first) {
        b.append(',');
      }
      first = false;
      quote(b, e.getKey()).append(':');
      String[] v = e.getValue();
      if (v.length == 1) {
        quote(b, v[0]);
      } else {
        b.append('[');
        for (int i = 0; i < v.length; i++) {
          if (i > 0) {
            b.append(',');
          }
          quote(b, v[i]);
        }
        b.append(']');
      }
    }
    return b.append('}').toString();
  }

  static StringBuilder quote(StringBuilder b, String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20 || c == 0x2028 || c == 0x2029) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"');
  }

  static void send(HttpExchange ex, int status, String type, String text) throws IOException {
    byte[] b = text.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", type + "; charset=UTF-8");
    ex.sendResponseHeaders(status, b.length == 0 ? -1 : b.length);
    if (b.length > 0) {
      try (OutputStream out = ex.getResponseBody()) {
        out.write(b);
      }
    }
  }
}
