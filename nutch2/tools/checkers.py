"""Nutch's debugging tools: parsechecker, indexchecker, filterchecker, normalizerchecker.

They work on URLs given on the command line (or read from stdin) and write nothing to any crawl: parsechecker
fetches one URL and shows its parse, indexchecker the document index would send, filterchecker and
normalizerchecker what the URL filters and normalizers make of each URL and which one decided.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nutch2.errors import NutchError, UsageError
from nutch2.mapred.job import Counters, TaskContext
from nutch2.tools.args import ArgError, ToolArgs, opt
from nutch2.tools.base import Run, Tool, tool
from nutch2.urls.normalizers import SCOPES

if TYPE_CHECKING:
    from nutch2.fetch.robots import RobotRules

log = logging.getLogger(__name__)


@dataclass
class CheckArgs(ToolArgs):
    url: str = opt(None, "the URL to fetch and parse", required=True)
    normalize: bool = opt("-normalize", "normalize the URL first (scope fetcher)", default=False)
    dumpText: bool = opt("-dumpText", "also print the parsed text", default=False)
    checkRobotsTxt: bool = opt("-checkRobotsTxt", "fetch only what robots.txt allows", default=False)
    forceAs: str | None = opt("-forceAs", "parse as this content type (e.g. text/html)", metavar="TYPE")


class _Checker(Tool[CheckArgs]):
    crawl = False
    job = False
    Args = CheckArgs

    def fetch_and_parse(self, run: Run):
        """(url, protocol output, the parsed page) of the checked URL."""
        from nutch2.fetch.addresses import AddressPolicy, origin_of
        from nutch2.fetch.agent import user_agent
        from nutch2.fetch.protocols import protocol_for
        from nutch2.fetch.robots import RobotsCache, robot_agents
        from nutch2.marks import Mark
        from nutch2.parse.parseutil import PageParser
        from nutch2.status import CrawlStatus, ProtocolStatusCode, protocol_to_crawl_status
        from nutch2.stores import open_store
        from nutch2.urls.checker import UrlChecker, repr_through
        from nutch2.urls.tableutil import reverse_url
        from nutch2.webpage import WebPage

        a = self.args
        url = a.url.strip()
        if a.normalize:
            url = UrlChecker(self.conf, "fetcher", filter=False).normalize(url) or url
        try:
            key = reverse_url(url)
        except ValueError:
            raise NutchError(f"{a.url!r} is not a URL nutch2 can fetch; give one like https://example.com/") from None
        protocol = protocol_for(self.conf)
        # the address guard: the URL checked is the user's choice; what it redirects to or loads is guarded
        origin = origin_of(url)
        protocol.addresses = AddressPolicy.from_conf(self.conf, [f"{origin[0]}:{origin[1]}"] if origin else [])
        protocol.open(None, Counters(self.name))
        agents = robot_agents(self.conf.get_str("http.agent.name"), self.conf.get_str("http.robots.agents"))
        robots = RobotsCache(protocol.robots_session, agents)
        session = protocol.session()
        try:
            if a.checkRobotsTxt:
                _robots_verdict(url, robots.rules_for(url), agents, user_agent(self.conf))
            run.out(f"fetching: {url}")
            out = session.fetch(url)
            if protocol.renders(url, out):  # protocol-chromium: the page's resources where robots.txt allows them

                resources = UrlChecker(self.conf, "fetcher")
                if resources.filters is not None:  # as the fetcher checks them: every filter but the file types
                    resources.filters = resources.filters.without("urlfilter-suffix")

                def resource(u: str, until: float) -> tuple[Any, str]:
                    if resources.check(u) is None:
                        return None, "filtered"
                    if protocol.addresses.check(u):
                        return None, "denied_address"
                    if not robots.rules_for(u).allowed(u, agents):
                        return None, "robots_denied"
                    return session.fetch(u, deadline=until), ""

                out = protocol.render(url, out, resource)
        finally:
            session.close()
            robots.close()
            protocol.close()
        status = protocol_to_crawl_status(out.code)
        if out.code != ProtocolStatusCode.SUCCESS:
            raise NutchError(f"fetch of {url} failed: {out.code.name} {' '.join(out.args)}".strip())
        page = WebPage(key, content=out.content, content_type=a.forceAs or out.content_type,
                       headers=dict(out.headers), base_url=out.final_url or url, status=int(status or 0),
                       fetch_time=int(time.time() * 1000))
        page.repr_url = repr_through(url, out.redirects)  # as the fetch keeps it: index sends it as the url
        Mark.FETCH.put(page, "check")
        scratch = self.conf.copy()  # the parse reads nothing from a crawl: a throwaway in-memory table
        scratch.set("storage.data.store.class", "memory")
        ctx = TaskContext(self.conf, open_store(scratch, "check"), Counters(self.name), 0)
        parsed = PageParser(self.conf).parse(page, ctx, signature_loaded=True)
        return url, out, page, parsed, status == CrawlStatus.FETCHED


@tool
class ParseChecker(_Checker):
    name = "parsechecker"
    help = "fetch one URL and show its parse: status, title, text, outlinks, metadata (writes nothing)"

    def run(self, run: Run) -> int:
        url, out, page, parsed, _ = self.fetch_and_parse(run)
        ps = page.parse_status
        run.out(f"contentType: {page.content_type}")
        run.out(f"signature: {page.signature.hex() if page.signature else ''}")
        run.out("---------\nUrl\n---------------")
        run.out(url)
        run.out("---------\nParseData\n---------")
        run.out(f"Status: {ps.name}{(' ' + ' '.join(ps.args)) if ps.args else ''}")
        run.out(f"Title: {page.title or ''}")
        run.out(f"Outlinks: {len(page.outlinks)}")
        for target, anchor in page.outlinks.items():
            run.out(f"  outlink: toUrl: {target} anchor: {anchor}")
        run.out("Content Metadata:")
        for k, v in out.headers.items():
            run.out(f"  {k}={v}")
        run.out("Parse Metadata:")
        for k, v in sorted(page.metadata.items()):
            run.out(f"  {k}={v.decode('utf-8', 'replace')}")
        if self.args.dumpText:
            run.out("---------\nParseText\n---------")
            run.out(page.text or "")
        run.values.update(title=page.title, outlinks=len(page.outlinks), status=ps.name)
        return 0 if parsed else 1


@tool
class IndexChecker(_Checker):
    name = "indexchecker"
    help = "fetch and parse one URL and show the document index would send, field by field (writes nothing)"

    def run(self, run: Run) -> int:
        from nutch2.index.filters import IndexingFilters
        from nutch2.jobs.index import indexable

        url, _, page, parsed, fetched = self.fetch_and_parse(run)
        if not parsed or not indexable(page):
            raise NutchError(f"{url} would not be indexed: parse {page.parse_status.name}"
                             + (", noindex" if parsed else ""))
        from nutch2.index.filters import FilterFailed, FilterOverrun

        filters = IndexingFilters.from_conf(self.conf)
        try:
            doc = filters.document(page, self.crawl_id)
        except (FilterFailed, FilterOverrun) as e:
            raise NutchError(f"{url} would not be indexed: {e}; fix the plugin, or take it out of "
                             "plugin.includes (plugin.classes)") from None
        finally:
            filters.close()
        if doc is None:
            raise NutchError(f"{url} would not be indexed: indexing filter {filters.dropped_by} keeps it out")
        if not self.args.dumpText:
            doc["content"] = _short(doc.get("content", ""))
        for name in sorted(doc):
            for value in doc[name] if isinstance(doc[name], list) else [doc[name]]:
                run.out(f"{name} :\t{value}")
        run.values["document"] = doc
        return 0


def _robots_verdict(url: str, rules: RobotRules, agents: tuple[str, ...], agent: str) -> None:
    """Raise why robots.txt keeps the fetcher from `url` (as the fetcher would decide it), if it does."""
    from nutch2.fetch.robots import DEFER, UNREACHABLE

    if rules.state == DEFER:
        raise NutchError(f"robots.txt of {url} gave no rules now (a 429 or 5xx answer, or the file cut off before a "
                         "group for us): the fetcher leaves the host for a later round; try again later")
    if rules.state == UNREACHABLE:
        raise NutchError(f"robots.txt of {url} got no answer ({rules.reason}): the fetcher records the host's URLs "
                         "as failed fetches; check that the host is up")
    if not rules.allowed(url, agents):
        raise NutchError(f"denied by robots.txt for {agent}: {url}")


def _short(text: str, n: int = 300) -> str:
    return text if len(text) <= n else text[:n] + f"... ({len(text)} characters; -dumpText for all)"


@dataclass
class UrlsArgs(ToolArgs):
    urls: list[str] | None = opt(None, "URLs to check (none: one per line from stdin)", metavar="URL")
    stdin: bool = opt("-stdin", "read URLs from stdin, one per line (after those given as arguments)", default=False)


def _urls(args: UrlsArgs) -> Iterator[str]:
    yield from args.urls or ()
    if args.urls and not args.stdin:
        return
    if sys.stdin is None or (sys.stdin.isatty() and not args.stdin):
        raise ArgError("give URLs as arguments, or one per line on stdin (-stdin)")
    for line in sys.stdin:
        if line.strip():
            yield line.strip()


@dataclass
class FilterCheckArgs(UrlsArgs):
    filterName: str | None = opt("-filterName", "check this URL filter alone, e.g. urlfilter-regex (-listFilters "
                                 "names those in use)", metavar="NAME")
    listFilters: bool = opt("-listFilters", "list the URL filters in use, in order, and exit", default=False)


@tool
class FilterChecker(Tool[FilterCheckArgs]):
    name = "filterchecker"
    help = "show for each URL whether the URL filters keep it (+) or drop it (-), and which rule decided"
    Args = FilterCheckArgs
    crawl = False
    job = False

    def run(self, run: Run) -> int:
        from nutch2.urls.filters import URLFilters

        a = self.args
        filters = URLFilters.from_conf(self.conf)
        if a.filterName:
            named = filters.named(a.filterName)
            if not named.filters:
                active = [getattr(f, "plugin_id", "") for f in filters.filters]
                raise UsageError(f"-filterName {a.filterName!r} is not one of {', '.join(active)} (the active URL "
                                 "filters)")
            filters = named
        if a.listFilters:
            for line in filters.describe():
                run.out(line)
            return 0
        log.info(f"filterchecker: checking the combination of these URL filters: "
                 f"{', '.join(line.split(chr(9))[0] for line in filters.describe())}")
        for url in _urls(a):
            kept, why = filters.explain(url)
            run.out(f"{'+' if kept else '-'}{url}\t{why}")
        return 0


@dataclass
class NormalizerCheckArgs(UrlsArgs):
    normalizer: str | None = opt("-normalizer", "apply this URL normalizer alone, e.g. urlnormalizer-basic",
                                 metavar="NAME")
    scope: str = opt("-scope", "the normalizer scope", default="default", metavar="SCOPE",
                     choices=tuple(sorted(SCOPES)))


@tool
class NormalizerChecker(Tool[NormalizerCheckArgs]):
    name = "normalizerchecker"
    help = "show what the URL normalizers of a scope make of each URL, step by step"
    Args = NormalizerCheckArgs
    crawl = False
    job = False

    def run(self, run: Run) -> int:
        from nutch2.urls.normalizers import URLNormalizers

        a = self.args
        normalizers = URLNormalizers.from_conf(self.conf, a.scope)
        if a.normalizer and a.normalizer not in normalizers.names():
            raise UsageError(f"-normalizer {a.normalizer!r} is not one of {', '.join(normalizers.names())} (the active "
                             f"URL normalizers of scope {a.scope})")
        names = [a.normalizer] if a.normalizer else normalizers.names()
        log.info(f"normalizerchecker: checking the combination of these URL normalizers (scope {a.scope}): "
                 f"{', '.join(names)}")
        for url in _urls(a):
            steps = normalizers.explain(url, a.scope, only=a.normalizer)
            result = steps[-1][1] if steps else url
            run.out(f"{url}\t->\t{result if result is not None else '(rejected)'}")
            for name, value, why in steps:
                run.out(f"\t{name}: {value if value is not None else 'rejected'}" + (f"\t({why})" if why else ""))
        return 0


@dataclass
class PluginArgs(ToolArgs):
    point: str | None = opt("-point", "only the plugins of this extension point", metavar="POINT",
                            choices=("protocol", "parser", "parse-filter", "url-filter", "url-normalizer",
                                     "scoring-filter", "indexing-filter", "index-writer", "fetch-schedule"))


@tool
class PluginLister(Tool[PluginArgs]):
    name = "plugins"
    help = "list the installed plugins: active or not (plugin.includes/plugin.excludes), their extension points"
    Args = PluginArgs
    crawl = False
    job = False

    def run(self, run: Run) -> int:
        from nutch2.plugin import Plugins, descriptor, extension_class, installed

        ids = Plugins(self.conf).ids
        point = self.args.point
        listed = [(pid, f"\t({ep.value})") for pid, ep in sorted(installed().items())]
        listed += [(pid, "") for pid in ids if ":" in pid]  # plugin.classes: the user's own classes, active
        for pid, source in listed:
            try:
                plugin = descriptor(pid)
            except NutchError as e:
                run.out(f"!  {pid}\t(cannot load: {e})")
                continue
            if point and point not in plugin.extensions:
                continue
            try:
                if pid in ids and ":" not in pid:  # active: its classes are imported, as a command imports them
                    for ext_point in plugin.extensions:
                        extension_class(pid, ext_point)
            except NutchError as e:
                run.out(f"!  {pid}\t(cannot load: {e})")
                continue
            mark = "+" if pid in ids else "-"
            run.out(f"{mark}  {pid}\t{', '.join(plugin.extensions)}\t{plugin.description}{source}")
        return 0
