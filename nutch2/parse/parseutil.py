"""ParseUtil: parse one fetched row in place — text, title, outlinks, signature, robots meta flags.

Shared by the parse job and the fetcher's inline parse (fetcher.parse), so neither job imports the other."""

from __future__ import annotations

from collections.abc import Mapping

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.mapred import measures, timebox
from nutch2.mapred.job import TaskContext
from nutch2.marks import Mark
from nutch2.parse.parsers import GENERIC_TYPES, ParserFactory
from nutch2.parse.result import ParseResult
from nutch2.parse.signature import md5_signature, signature_class, simhash_signature, text_profile_signature
from nutch2.plugin import Plugins
from nutch2.plugin.extension import fix_hint
from nutch2.rowkeys import NOINDEX_KEY, TRUNCATED_KEY
from nutch2.status import ParseMajor, ParseMinor
from nutch2.urls.checker import UrlChecker
from nutch2.urls.domains import site_of
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import ParseStatus, WebPage

META_PREFIX = "meta_"  # metadata keys of meta tags kept by parse-metatags (read by index-metadata, the searcher)

PARSE_FIELDS = ("status", "content", "content_type", "headers", "markers", "signature", "metadata", "base_url")


CACHING_FORBIDDEN_KEY = "caching.forbidden"  # row metadata set by the parse job (Nutch's Nutch.CACHING_FORBIDDEN_KEY)


CACHING_POLICIES = ("none", "content", "all")


def caching_forbidden(metadata: Mapping[str, bytes]) -> str:
    """What a cached-page view may show of a row: "none" forbidden (show all), "content" (no cached copy, snippets
    only) or "all" (neither), from the page's robots noarchive/nocache as the parse job recorded it."""
    value = metadata.get(CACHING_FORBIDDEN_KEY)
    policy = value.decode("ascii", "replace") if value else "none"
    return policy if policy in CACHING_POLICIES else "content"


# why a fetch cut the content (the row's TRUNCATED_KEY, WARC-Truncated's words), as the parse status says it
_CUT = {b"length": "content truncated by http.content.limit (by http.content.inflate.limit if compressed)",
        b"time": "content cut by the fetch's time limit (http.time.limit, 3 x http.timeout unless set)",
        b"disconnect": "content cut: the connection, or the body's decoding, ended before the body did",
        b"": "content truncated (by http.content.limit, the fetch's time limit or a connection that ended)"}

class PageParser:
    """Parses one fetched row in place (shared by ParserJob and the fetcher's fetcher.parse mode)."""

    def __init__(self, conf: Configuration) -> None:
        self.max_outlinks = conf.get_int("db.max.outlinks.per.page")
        self.max_outlink_length = conf.get_int("db.max.outlink.length")
        self.ignore_external = conf.get_bool("db.ignore.external.links")
        self.ignore_internal = conf.get_bool("db.ignore.internal.links")
        self.site_of = site_of(conf.get_str("db.ignore.external.links.mode"))
        self.skip_truncated = conf.get_bool("parser.skip.truncated")
        self.timeout = conf.get_float("parser.timeout")
        self.checker = UrlChecker(conf, "outlink")
        self.caching_policy = conf.get_str("parser.caching.forbidden.policy").strip().lower()
        if self.caching_policy not in CACHING_POLICIES:
            raise ConfigError(f"parser.caching.forbidden.policy={self.caching_policy!r} is not known; use "
                              + ", ".join(CACHING_POLICIES))
        self.signature = signature_class(conf)
        self.parsers = ParserFactory(conf)
        self.filters = Plugins(conf).build("parse-filter")

    def close(self) -> None:
        """Close the parsers' and parse filters' clients (a Tika server's sessions); a task's cleanup."""
        self.parsers.close()
        for f in self.filters:
            f.close()

    def parse(self, page: WebPage, ctx: TaskContext, *, signature_loaded: bool = False) -> bool:
        """Parse `page` (fields of PARSE_FIELDS loaded); True when it was parsed successfully.

        signature_loaded: the page was read with its signature field (absent = none stored); otherwise the old
        signature is read from the store for prevSignature.
        """
        url = unreverse_url(page.key)
        if self.skip_truncated and page.metadata.get(TRUNCATED_KEY):
            page.parse_status = ParseStatus(ParseMajor.NOTPARSED, ParseMinor.FAILED_TRUNCATED,
                                            [_CUT.get(bytes(page.metadata[TRUNCATED_KEY]), _CUT[b""])])
            ctx.incr("skipped_truncated")
            return False
        content = page.content or b""
        result = self.parsers.parse(content, page.base_url or url, page.content_type, dict(page.headers))
        page.parse_status = ParseStatus(result.status_major, result.status_minor, list(result.status_args))
        if result.counter:
            ctx.incr(result.counter)
        if result.status_major != ParseMajor.SUCCESS:
            # a retryable failure (the parser's server is down) leaves no parse mark: the next parse run takes it
            outcome = ("retry_later" if result.retryable else
                       "failed" if result.status_major == ParseMajor.FAILED else "not_parsed")
            ctx.incr(outcome)
            measures.count(ctx, "parse_failures", result.parser or "none", outcome)
            if outcome == "failed":  # a counter alone does not say which page, or why (Nutch logs each)
                ctx.log(f"parse: {url}: failed: {'; '.join(map(str, result.status_args)) or 'no reason given'}"[:400])
            return False
        if not self._filter(url, page, result, ctx):
            return False
        if result.parser not in ("parse-html", "parse-text"):
            ctx.incr(f"parsed_by_{result.parser}")
        declared = (page.content_type or "").split(";", 1)[0].strip().lower()
        if result.content_type and (not declared or declared in GENERIC_TYPES):
            page.content_type = result.content_type  # the type the document parser found (Nutch's MimeUtil)
        self._apply(page, url, content, result, ctx, signature_loaded)
        ctx.incr("parsed")
        return True

    def _filter(self, url: str, page: WebPage, result: ParseResult, ctx: TaskContext) -> bool:
        """Run the parse filters (htmlparsefilter.order) within parser.timeout, as Nutch runs them inside the
        parse it times; a filter that raises or overruns fails the page's parse (it stays parseable: a later parse
        takes it again)."""
        running: list[str] = [""]

        def chain() -> None:
            for f in self.filters:
                running[0] = f.plugin_id
                with timebox.owner(f.plugin_id):
                    f.filter(result.document, result, page, result.dom)

        try:
            timebox.run(chain, self.timeout if self.timeout > 0 and self.filters else None, "nutch2-parse-filter")
        except timebox.Overrun as e:
            why = "stopped before it answered" if e.stopped else f"no answer within parser.timeout={self.timeout:g} s"
            page.parse_status = ParseStatus(ParseMajor.FAILED, ParseMinor.EXCEPTION, [f"parse filter {running[0]}: "
                                                                                      f"{why}"])
            ctx.incr("parse_filter_stopped" if e.stopped else "failed_parse_filter_timeout")
            if not e.stopped:
                ctx.log(f"parse: {url}: parse filter {running[0]}: {why}; the page's parse failed: "
                        f"{fix_hint(running[0])} (a later parse takes the page again)")
            return False
        except (Exception, SystemExit) as e:  # noqa: BLE001 - one plugin's failure on one page fails that page only
            page.parse_status = ParseStatus(ParseMajor.FAILED, ParseMinor.EXCEPTION,
                                            [f"parse filter {running[0]}: {type(e).__name__}: {e}"[:500]])
            ctx.incr("failed_parse_filter")
            ctx.log(f"parse: {url}: parse filter {running[0]} raised {type(e).__name__}: {e}"[:400]
                    + f"; the page's parse failed: {fix_hint(running[0])} (a later parse takes the page again)")
            return False
        finally:
            result.dom = None  # the tree is not kept past the filters
        return True

    @staticmethod
    def _old_signature(page: WebPage, ctx: TaskContext, loaded: bool) -> bytes | None:
        """The row's stored signature (read from the store when the caller did not load it, as the fetcher's
        fetcher.parse mode does: a new WebPage there would otherwise wipe prevSignature)."""
        if loaded or "signature" in page.loaded():
            return page.signature
        old = ctx.store.get(page.key, ("signature",))
        return None if old is None else old.signature

    def _apply(self, page: WebPage, url: str, content: bytes, result: ParseResult, ctx: TaskContext,
               signature_loaded: bool) -> None:
        page.title = result.title
        page.text = result.text
        if result.noindex:
            page.metadata[NOINDEX_KEY] = b"y"
        elif NOINDEX_KEY in page.metadata:
            del page.metadata[NOINDEX_KEY]
        self._meta(page, result)
        fetch_mark = Mark.FETCH.check(page)
        if fetch_mark is None or Mark.PARSE.check(page) != fetch_mark:
            # prevSignature <- the signature of the previous fetch; a second parse of the same fetch
            # (-force, a re-run) keeps it, or updatedb would see every page of the batch as unchanged
            page.prev_signature = self._old_signature(page, ctx, signature_loaded)
        page.signature = self._signature(content, result.text)
        page.outlinks = self._outlinks(url, result)

    def _signature(self, content: bytes, text: str | None) -> bytes:
        """The page's signature by db.signature.class (TextProfile and SimHash of the text, MD5 of the content)."""
        if self.signature == "textprofile":
            return text_profile_signature(text, fallback_content=content)
        if self.signature == "simhash":
            return simhash_signature(text, fallback_content=content)
        return md5_signature(content)

    def _meta(self, page: WebPage, result: ParseResult) -> None:
        """Keep the caching policy of a noarchive/nocache page (meta tags are parse-metatags' business)."""
        if result.nocache and self.caching_policy != "none":
            page.metadata[CACHING_FORBIDDEN_KEY] = self.caching_policy.encode("ascii")
        elif CACHING_FORBIDDEN_KEY in page.metadata:
            del page.metadata[CACHING_FORBIDDEN_KEY]

    def _outlinks(self, url: str, result: ParseResult) -> dict[str, str]:
        """Outlinks as Nutch's ParseOutputFormat keeps them: normalized, filtered, then counted toward
        db.max.outlinks.per.page (so links the filters drop take no slot)."""
        site = self.site_of(url)
        links: dict[str, str] = {}
        cap = max(self.max_outlinks, 1) if result.refresh_url and self.max_outlinks >= 0 else self.max_outlinks
        for target, anchor in result.outlinks:
            if 0 <= cap <= len(links):
                break
            norm = self.checker.check(target)
            if norm is None or norm == url or norm in links:
                continue
            same = self.site_of(norm) == site
            if (same and self.ignore_internal and norm != result.refresh_url) or (not same and self.ignore_external):
                continue
            links[norm] = anchor
        return links
