"""protocol-chromium (Nutch: protocol-selenium): pages whose URL matches chromium.url.pattern, or of the hosts in
chromium.hosts, are fetched politely by protocol-http and then rendered in headless Debian chromium over the DevTools
protocol; the rendered DOM is what gets parsed. Every request the page makes is answered by the crawler (robots.txt,
the host queues' politeness, resource types and a block rule), within chromium.page.timeout."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("protocol-chromium", {"protocol": "nutch2.plugins.protocol_chromium.plugin:Chromium"},
                "pages rendered in headless chromium")
