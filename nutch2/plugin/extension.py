"""What every extension is (Nutch's Extension): built from the configuration (``cls(conf)``) once per task and
closed at the task's end; ``fields`` names the WebPage fields it reads (Nutch 2's ``getFields``), so a job loads
them; ``nutch_class`` is Nutch's Java class name, which *.order properties may give.

Each extension point's interface lives with its concept and names its ``point`` (nutch2.plugin.POINTS):
URLFilter (nutch2/urls/filters.py), URLNormalizer (nutch2/urls/normalizers.py), Parser and ParseFilter
(nutch2/parse/parsers.py), ScoringFilter (nutch2/crawldb/scoring.py), FetchSchedule (nutch2/crawldb/schedule.py),
IndexingFilter (nutch2/index/filters.py), IndexWriter (nutch2/index/writers.py), Protocol (nutch2/fetch/protocols.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Protocol


class Settings(Protocol):
    """What an extension reads of its configuration (nutch2.config.Configuration is one): typed properties and the
    files of the conf dir. The plugin system asks no more of it, so it sits below the configuration."""

    def get(self, key: str) -> Any: ...

    def get_str(self, key: str) -> str: ...

    def get_int(self, key: str) -> int: ...

    def get_float(self, key: str) -> float: ...

    def get_bool(self, key: str) -> bool: ...

    def resource(self, name: str) -> Path: ...


class Extension:
    """What every extension has: the configuration it was built from, the fields it reads, a close()."""

    point: ClassVar[str] = ""  # the extension point an interface is (set by each interface, not by extensions)
    fields: ClassVar[tuple[str, ...]] = ()
    nutch_class: ClassVar[str] = ""
    plugin_id: str = ""  # set when built (the plugin that provided it)

    def __init__(self, conf: Settings) -> None:
        self.conf = conf

    def close(self) -> None:
        """Release clients and files (a task's cleanup)."""


def fix_hint(plugin: str) -> str:
    """What a user does about a plugin that fails: "fix <id>, or take it out of plugin.includes" (plugin.classes
    for a `module:Class` of their own)."""
    return f"fix {plugin}, or take it out of {'plugin.classes' if ':' in plugin else 'plugin.includes'}"
