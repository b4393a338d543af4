"""The extension points (Nutch's): small interfaces that plugins fill.

Every extension is built from the configuration (``cls(conf)``), once per task, and closed at the task's end.
``fields`` names the WebPage fields it reads (Nutch 2's ``getFields``), so a job loads them; ``nutch_class`` is
Nutch's Java class name, which *.order properties may give. The point names are nutch2.plugins.POINTS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from nutch2.config import Configuration
from nutch2.webpage import WebPage

if TYPE_CHECKING:
    from nutch2.parse.html import ParseResult
    from nutch2.parse.parsers import Document


class Extension:
    """What every extension has: the configuration it was built from, the fields it reads, a close()."""

    fields: ClassVar[tuple[str, ...]] = ()
    nutch_class: ClassVar[str] = ""
    plugin_id: str = ""  # set when built (the plugin that provided it)

    def __init__(self, conf: Configuration) -> None:
        self.conf = conf

    def close(self) -> None:
        """Release clients and files (a task's cleanup)."""


# ---------------------------------------------------------------- URLs
class URLFilter(Extension):
    """urlfilter-*: keep a URL (return it) or drop it (None)."""

    def filter(self, url: str) -> str | None:
        raise NotImplementedError

    def explain(self, url: str) -> str | None:
        """What decided about ``url`` (a rule, a list entry) for filterchecker; None when nothing specific."""
        return None


class URLNormalizer(Extension):
    """urlnormalizer-*: the URL in its normal form for a scope (inject, fetcher, outlink, ...), or None to drop it."""

    def normalize(self, url: str, scope: str) -> str | None:
        raise NotImplementedError

    def explain(self, url: str, scope: str) -> str | None:
        """What decided about ``url`` in ``scope`` (the rules that applied) for normalizerchecker; None when
        nothing specific."""
        return None


# ---------------------------------------------------------------- parsing
class Parser(Extension):
    """parse-*: parses the documents whose content type parse-plugins.xml (parse.plugin) maps to it. parse() never
    raises: a failure is a ParseResult (retryable when the parser's server, not the document, failed)."""

    def available(self) -> bool:
        """Whether it can parse here (a parser needing a server it was not given cannot)."""
        return True

    def parse(self, doc: Document) -> ParseResult:
        raise NotImplementedError


class ParseFilter(Extension):
    """HtmlParseFilter: runs after a successful parse; sees the document, the parse and (for HTML) the DOM, and
    adds to the parse (``parse.meta``, ``parse.outlinks``, ``parse.text``...). ``dom`` is the lxml root element of
    an HTML page, None for other documents. Values it puts in ``page.metadata`` are stored with the row."""

    def filter(self, doc: Document, parse: ParseResult, page: WebPage, dom: Any | None) -> None:
        raise NotImplementedError


# ---------------------------------------------------------------- scoring
@dataclass
class ScoreDatum:
    """One link between two rows as the scoring filters see it (Nutch 2's ScoreDatum)."""

    url: str
    anchor: str = ""
    score: float = 0.0
    distance: int = 0


class ScoringFilter(Extension):
    """scoring-*: scores at inject, for new rows, for generate's sort, passed along links, and for the index."""

    def injected_score(self, url: str, page: WebPage) -> None:
        """A row made by inject (page.score holds the seed's score)."""

    def initial_score(self, url: str, page: WebPage) -> None:
        """A row made for a newly found link."""

    def generator_sort_value(self, url: str, page: WebPage, value: float) -> float:
        return value

    def distribute_score_to_outlinks(self, url: str, page: WebPage, outlinks: list[ScoreDatum],
                                     all_count: int) -> None:
        """Set the score each outlink passes on (outlinks[i].score)."""

    def update_score(self, url: str, page: WebPage, inlinks: list[ScoreDatum]) -> None:
        """Take in what the row's inlinks passed on in this update."""

    def indexer_score(self, url: str, doc: dict[str, Any], page: WebPage, score: float) -> float:
        return score


# ---------------------------------------------------------------- indexing
class IndexingFilter(Extension):
    """index-*: add, change or remove fields of the document; return None to keep the page out of the index."""

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        raise NotImplementedError


@dataclass
class WriterSpec:
    """One <writer> of index-writers.xml: its id, its parameters and its field mapping."""

    id: str
    params: dict[str, str] = field(default_factory=dict)
    copy: dict[str, list[str]] = field(default_factory=dict)  # source field -> fields it is copied to
    rename: dict[str, str] = field(default_factory=dict)
    remove: list[str] = field(default_factory=list)


class IndexWriter(Extension):
    """indexer-*: where documents go (Nutch's IndexWriter). The driver opens the writers and calls begin(); a task
    opens its writers, writes and deletes, and flushes when it ended well; the job's final step (on the driver)
    opens them again and commits, which makes the run's documents visible; a job that failed before its commit
    leaves nothing visible, and its rerun writes the same documents again. nutch2.index.files is the base of
    writers that write files."""

    def open(self, spec: WriterSpec, task: int | None, run: str) -> None:
        """Start writing: ``task`` is the task's number (None on the driver, for commit), ``run`` names the job run
        (the same for a rerun of the same command, so a rerun replaces what an interrupted run wrote)."""
        self.spec = spec

    def write(self, doc: dict[str, Any]) -> None:
        raise NotImplementedError

    def delete(self, doc_id: str) -> None:
        raise NotImplementedError

    def check(self) -> None:
        """Raise (one line) when the writer cannot work now, e.g. its server is down: checked before a job."""

    def begin(self) -> None:
        """On the driver (opened with task None), before the run's tasks start: forget what an interrupted attempt
        of the same run wrote and did not commit (a writer that stages output, e.g. files)."""

    def flush(self) -> None:
        """Send what is buffered (a task's end)."""

    def commit(self) -> None:
        """Make what the run wrote visible (the job's final step, on the driver)."""

    def describe(self) -> str:
        """One line for logs: which writer, where to (no credentials)."""
        return self.plugin_id

    def destination(self) -> str:
        """Where the documents go (a core's URL, a folder), once opened: rows keep a mark per destination, so a
        writer with another destination gets every document."""
        return self.spec.id


# ---------------------------------------------------------------- fetching
# a resource a rendered page asks for: (url, until: time.monotonic() deadline) -> (ProtocolOutput | None, refusal)
ResourceFetch = Callable[[str, float], Any]


class ProtocolSession:
    """One fetcher thread's connection state (its HTTP session, for instance); not shared between threads."""

    def fetch(self, url: str, *, modified_since_ms: int | None = None, etag: str | None = None,
              may_follow: Callable[[str], bool] | None = None, deadline: float | None = None) -> Any:
        """The URL's ProtocolOutput (nutch2/fetch/output.py); never raises: every outcome is a protocol status.
        ``may_follow(target)``: whether a redirect may be followed inline; ``deadline``: a time.monotonic() the
        request ends at, whatever its own limits."""
        raise NotImplementedError

    def close(self) -> None:
        """Release its connections."""


class Protocol(Extension):
    """protocol-*: fetches the URLs of its schemes (Nutch's Protocol). A fetch task opens it once (open), each
    fetcher thread takes a session; robots.txt is fetched through robots_session(). Of the active protocol plugins
    for a scheme, the one with the highest ``priority`` is used. A protocol may also render the pages it fetched
    (protocol-chromium): renders() says which, render() gives the rendered page, asking the fetch engine for the
    page's resources (through its host queues and robots.txt)."""

    schemes: ClassVar[tuple[str, ...]] = ()
    priority: ClassVar[int] = 0
    addresses: Any = None  # the address guard (nutch2.fetch.addresses.AddressPolicy) its connections pass, set
    # by the fetcher before open(); a protocol that cannot pass it on is still kept from refused hosts by the
    # fetcher's own check of every URL

    def open(self, stop_at: float | None, counters: Any) -> None:
        """Start for one task: ``stop_at`` (time.monotonic()) ends every request, ``counters`` are the task's."""

    def session(self) -> ProtocolSession:
        raise NotImplementedError

    def robots_session(self) -> ProtocolSession:
        """A session for robots.txt requests (redirects reported, not followed; content capped)."""
        raise NotImplementedError

    def renders(self, url: str, out: Any) -> bool:
        return False

    def render(self, url: str, out: Any, resources: ResourceFetch) -> Any:
        raise NotImplementedError


class FetchSchedule(Extension):
    """When a row is fetched next (Nutch's FetchSchedule); times in ms, intervals in s. The core's
    DefaultFetchSchedule and AdaptiveFetchSchedule are in nutch2/crawldb/schedule.py."""

    def initialize(self, page: WebPage, now_ms: int) -> None:
        raise NotImplementedError

    def should_fetch(self, page: WebPage, cur_ms: int) -> bool:
        raise NotImplementedError

    def set_fetch_schedule(self, page: WebPage, prev_fetch_ms: int, prev_modified_ms: int, fetch_ms: int,
                           modified_ms: int, state: int) -> None:
        raise NotImplementedError

    def set_page_gone_schedule(self, page: WebPage, fetch_ms: int) -> None:
        raise NotImplementedError

    def set_page_retry_schedule(self, page: WebPage, fetch_ms: int) -> None:
        raise NotImplementedError


__all__ = ["Extension", "URLFilter", "URLNormalizer", "Parser", "ParseFilter", "ScoreDatum", "ScoringFilter",
           "IndexingFilter", "WriterSpec", "IndexWriter", "Protocol", "ProtocolSession", "ResourceFetch",
           "FetchSchedule"]
