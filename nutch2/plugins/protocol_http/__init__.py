"""protocol-http: HTTP and HTTPS (urllib3; HTTP/2 with http.useHttp2, over httpcore and h2): Nutch's http.*
properties, the total deadline of every request, bounded bodies (http.content.limit; gzip, deflate, br and zstd
decoded with their bombs cut), redirects, conditional GETs, proxies (http.proxy.*), Basic and Digest
authentication from httpclient-auth.xml, cookies (http.enable.cookie.header)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("protocol-http", {"protocol": "nutch2.plugins.protocol_http.plugin:Http"}, "HTTP and HTTPS")
