"""The peer: a Scrapy CrawlSpider over the synthetic web. Run as a child process by bench.crawl:

    python -m bench.scrapy_spider --seeds FILE --port PORT --threads T --out stats.json

Robots obeyed, no delay, CONCURRENT_REQUESTS = T and one request at a time per host (CONCURRENT_REQUESTS_PER_DOMAIN
= 1, as nutch2's fetcher.threads.per.queue=1), links followed only to the web's hosts (127.77.x.y:PORT). Each
page is parsed like nutch2 parses it: title, text and outlinks.

The settings are the fastest found (`python -m bench scrapypeer`, bench/RESULTS.md); the peer is CPU bound:
- CONCURRENT_ITEMS=4: with the asyncio reactor Scrapy runs each callback's output through CONCURRENT_ITEMS worker
  tasks — at its default of 100 that is ~100 asyncio tasks per page (a 20-link page yields 21 results);
- the Depth, Referer and UrlLength spider middlewares are off: they run on every request a page yields, for work
  nutch2 does not do either (no depth limit, no Referer header, no URL length limit).
`--set NAME=JSON` overrides a setting (the benchmark's variants).
"""

from __future__ import annotations

import argparse
import json


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=JSON", help="override a setting")
    args = ap.parse_args()
    overrides = {}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep or not name:
            ap.error(f"--set {item}: give NAME=JSON, e.g. --set CONCURRENT_ITEMS=4")
        try:
            overrides[name] = json.loads(value)
        except json.JSONDecodeError as e:
            ap.error(f"--set {item}: the value is not JSON ({e.msg}); e.g. --set CONCURRENT_ITEMS=4")

    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.linkextractors import LinkExtractor
    from scrapy.spiders import CrawlSpider, Rule

    seeds = [line.strip() for line in open(args.seeds) if line.strip()]
    allow = rf"^http://127\.77\.\d+\.\d+:{args.port}/"

    class WebSpider(CrawlSpider):
        name = "bench"
        start_urls = seeds
        rules = (Rule(LinkExtractor(allow=allow), callback="parse_item", follow=True),)

        # start URLs go through the duplicate filter too (Scrapy's default start requests bypass it, so "/"
        # would be fetched again when a page links to it)
        async def start(self):
            for url in seeds:
                yield scrapy.Request(url)

        def start_requests(self):  # Scrapy < 2.13
            for url in seeds:
                yield scrapy.Request(url)

        def parse_start_url(self, response):
            return self.parse_item(response)

        def parse_item(self, response):
            text = " ".join(response.xpath("//body//text()").getall())
            yield {"url": response.url, "title": response.xpath("//title/text()").get(), "chars": len(text)}

    settings = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": args.threads,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,  # equal politeness: one request per host
        "CONCURRENT_ITEMS": 4,  # the fastest (bench scrapypeer); Scrapy's default 100 costs ~25 % of pages/s
        "USER_AGENT": "bench",
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        "ITEM_PIPELINES": {},
        "SPIDER_MIDDLEWARES": {  # work nutch2 does not do either, on every request (bench scrapypeer: +24 %)
            "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
            "scrapy.spidermiddlewares.referer.RefererMiddleware": None,
            "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
        },
    }
    settings.update(overrides)
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(WebSpider)
    process.crawl(crawler)
    process.start()
    stats = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in crawler.stats.get_stats().items()}
    with open(args.out, "w") as f:
        json.dump(stats, f, indent=1, default=str)


if __name__ == "__main__":
    main()
