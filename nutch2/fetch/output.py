"""What a fetch gives back (Nutch's ProtocolOutput): the protocol status, the content and the response's
headers; the protocol plugins (nutch2/plugins/protocol_*) make it, the fetch engine, robots.txt, sitemaps and WARC
read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from nutch2.status import ProtocolStatusCode

__all__ = ["ProtocolOutput"]


@dataclass
class ProtocolOutput:
    """Result of one fetch; ``fetch_ms`` is the elapsed time of the fetch in ms."""

    code: ProtocolStatusCode
    args: list[str] = field(default_factory=list)
    http_code: int | None = None
    content: bytes = b""
    content_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    final_url: str = ""
    truncated: bool = False
    last_modified: int | None = None
    fetch_ms: int = 0
    stopped: bool = False  # cut by HttpSettings.stop_at (the job's time limit): not an outcome of the URL
    redirects: list[tuple[str, bool]] = field(default_factory=list)  # hops followed inline: (target, temporary)
    cut: str = ""  # why a truncated body ended (WARC-Truncated's words): "length", "time", "disconnect"; "" unknown
