"""Plugins: Nutch's extension points, filled by plugins that Python entry points name.

A plugin is a package (the built-in ones are the folders beside this file) holding a ``PLUGIN`` descriptor and
named by an entry point of the group ``nutch2.plugins`` whose name is the plugin id::

    [project.entry-points."nutch2.plugins"]
    urlfilter-regex = "nutch2.plugins.urlfilter_regex:PLUGIN"

``plugin.includes`` (a regular expression over plugin ids, as Nutch's) chooses the active plugins and
``plugin.excludes`` removes some. An extension point's ``*.order`` property orders its extensions: empty, every
active one in plugin id order; set, only those it names, in its order (Nutch's rule; names are plugin ids, class
names or Nutch's Java class names), except for URL normalizers, where the others follow those it names (Nutch's
URLNormalizers; urlnormalizer.scope.<scope> and urlnormalizer.order.<scope> choose them per scope). Extensions
are built from the configuration (``cls(conf)``) once per task, so they ship with a job to worker processes and
Spark executors, where the same entry points are found.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib.metadata import entry_points
from typing import Any

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.logs import config_warning

GROUP = "nutch2.plugins"

# extension point -> the property ordering its extensions ("" where the choice is made otherwise: parsers by content
# type, index writers by index-writers.xml, protocols by URL scheme, the fetch schedule by db.fetch.schedule.class)
POINTS: dict[str, str] = {
    "protocol": "",
    "parser": "",
    "parse-filter": "htmlparsefilter.order",
    "url-filter": "urlfilter.order",
    "url-normalizer": "urlnormalizer.order",
    "scoring-filter": "scoring.filter.order",
    "indexing-filter": "indexingfilter.order",
    "index-writer": "",
    "fetch-schedule": "",
}
# points whose *.order names the extensions that run first, the others following (Nutch's URLNormalizers); at the
# other points only the extensions it names run (Nutch's URLFilters, IndexingFilters, ...)
UNNAMED_FOLLOW = frozenset({"url-normalizer"})


class PluginError(ConfigError):
    """A plugin that cannot be loaded or built (one line naming it; the job stops before it touches a row)."""


@dataclass(frozen=True)
class Plugin:
    """What a plugin provides: for each extension point it fills, the class (``"module:Class"``, imported when the
    plugin is used). ``properties`` are the defaults of a plugin's own properties (a plugin from another package;
    the built-in ones document theirs in conf/nutch-default.toml)."""

    id: str
    extensions: Mapping[str, str]
    description: str = ""
    properties: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.extensions) - set(POINTS))
        if unknown:
            raise PluginError(f"plugin {self.id}: unknown extension point {', '.join(unknown)}; the points are "
                              + ", ".join(POINTS))


@lru_cache(maxsize=1)
def installed() -> dict[str, Any]:
    """Entry points of the installed plugins, by plugin id (nothing is imported yet)."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


@cache
def descriptor(plugin_id: str) -> Plugin:
    """The loaded descriptor of an installed plugin; PluginError naming it when it cannot be loaded."""
    ep = installed().get(plugin_id)
    if ep is None:
        raise PluginError(f"plugin {plugin_id} is not installed (pip install the package that provides it)")
    try:
        plugin = ep.load()
    except Exception as e:  # noqa: BLE001 - any failure of a plugin's import is that plugin's
        raise PluginError(f"plugin {plugin_id} ({ep.value}) failed to load: {type(e).__name__}: {e}; fix or "
                          "uninstall it, or take it out of plugin.includes") from None
    if not isinstance(plugin, Plugin) or plugin.id != plugin_id:
        raise PluginError(f"plugin {plugin_id}: entry point {ep.value} is not a nutch2.plugins.Plugin with id "
                          f"{plugin_id!r}")
    return plugin


@cache
def extension_class(plugin_id: str, point: str) -> type:
    """The class a plugin provides for a point, imported; PluginError naming the plugin when the import fails."""
    path = descriptor(plugin_id).extensions[point]
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except Exception as e:  # noqa: BLE001 - a missing optional dependency, a syntax error: the plugin's
        hint = (f"; install it (pip install {e.name})" if isinstance(e, ModuleNotFoundError) and e.name else "")
        raise PluginError(f"plugin {plugin_id}: cannot load {path} ({type(e).__name__}: {e}){hint}, or take "
                          f"{plugin_id} out of plugin.includes") from None


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a regular expression (``a|b(c|d)`` -> ``a``, ``b(c|d)``)."""
    parts, depth, start, escaped = [], 0, 0, False
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    parts.append(pattern[start:])
    return [p for p in parts if p]


def _expand(alternative: str) -> list[str]:
    """Plugin ids an alternative names when it is Nutch's usual shape ``prefix-(a|b)suffix``; [] otherwise."""
    m = re.fullmatch(r"([\w.-]*)\(([\w.|-]+)\)([\w.-]*)", alternative)
    if m:
        return [m.group(1) + x + m.group(3) for x in m.group(2).split("|")]
    return [alternative] if re.fullmatch(r"[\w.-]+", alternative) else []


@lru_cache(maxsize=16)
def active_ids(includes: str, excludes: str) -> tuple[str, ...]:
    """Ids of the installed plugins that ``includes`` takes and ``excludes`` leaves; each name in ``includes``
    that matches no installed plugin is one warning."""
    try:
        inc = re.compile(includes)
        exc = re.compile(excludes) if excludes else None
    except re.error as e:
        raise ConfigError(f"plugin.includes/plugin.excludes is not a valid regular expression ({e}); e.g. "
                          "protocol-http|parse-(html|tika)|urlfilter-regex") from None
    ids = sorted(installed())
    for alternative in _alternatives(includes):
        expanded = _expand(alternative)
        if expanded:
            missing = [n for n in expanded if n not in ids]
        else:
            try:
                missing = [] if any(re.fullmatch(alternative, i) for i in ids) else [alternative]
            except re.error:
                missing = []
        for name in missing:
            config_warning(f"warning: plugin.includes names {name!r}, which is no installed plugin; ignored "
                    f"(installed: {', '.join(ids)})")
    return tuple(i for i in ids if inc.fullmatch(i) and not (exc is not None and exc.fullmatch(i)))


class Plugins:
    """The active plugins of a configuration and the extensions they provide."""

    def __init__(self, conf: Configuration) -> None:
        self.conf = conf
        self.ids = active_ids(conf.get_str("plugin.includes").strip(), conf.get_str("plugin.excludes").strip())

    def providing(self, point: str) -> list[str]:
        """Ids of the active plugins providing `point`, in plugin id order."""
        return [i for i in self.ids if point in descriptor(i).extensions]

    def classes(self, point: str, order_prop: str | None = None,
                only_prop: str | None = None) -> list[tuple[str, type]]:
        """(plugin id, class) of the point's extensions, in the order its *.order property gives (for the points
        of UNNAMED_FOLLOW, the extensions it does not name follow in plugin id order).

        ``order_prop`` reads the order from another property (urlnormalizer.order.<scope>); ``only_prop`` names a
        property listing the extensions to choose from (urlnormalizer.scope.<scope>; all when empty). Names are
        plugin ids or class names; a name no active plugin provides is one warning."""
        active = [(i, extension_class(i, point)) for i in self.providing(point)]
        found = active
        for prop in (only_prop, order_prop or POINTS[point]):
            for name in self._names_in(prop):
                if not any(name in _names(i, c) for i, c in active):
                    config_warning(f"warning: {prop} names {name!r}, which no active plugin provides; ignored")
        only = set(self._names_in(only_prop))
        if only:
            found = [(i, c) for i, c in active if only & _names(i, c)]
        order = self._names_in(order_prop or POINTS[point])
        if not order:
            return found
        ordered = []
        for name in order:
            ordered += [(i, c) for i, c in found if name in _names(i, c) and (i, c) not in ordered]
        return ordered + [m for m in found if m not in ordered] if point in UNNAMED_FOLLOW else ordered

    def _names_in(self, prop: str | None) -> list[str]:
        """The names a property lists (space- or comma-separated); [] for no property."""
        return self.conf.get_str(prop).replace(",", " ").split() if prop else []

    def build(self, point: str, order_prop: str | None = None, only_prop: str | None = None) -> list[Any]:
        """The point's extensions, built from the configuration, in order (arguments as classes())."""
        return [_build(i, c, self.conf) for i, c in self.classes(point, order_prop, only_prop)]

    def build_one(self, point: str, plugin_id: str) -> Any:
        return _build(plugin_id, extension_class(plugin_id, point), self.conf)

    def check(self, points: Iterable[str] = ()) -> None:
        """Import every active plugin (one that cannot load stops the command) and build the extensions of
        `points` once, which checks their configuration (a bad property or file stops it too): the tools call
        this before a job starts, so neither happens after a row was touched. What is costly to start (a model, a
        browser, a server's session) starts when it is first used, not here."""
        for point in POINTS:
            for pid in self.providing(point):
                extension_class(pid, point)
        for point in points:
            for ext in self.build(point) if POINTS[point] else [
                    self.build_one(point, i) for i in self.providing(point)]:
                ext.close()


def _names(plugin_id: str, cls: type) -> set[str]:
    return {plugin_id, cls.__name__, f"{cls.__module__}.{cls.__name__}", getattr(cls, "nutch_class", "") or ""} - {""}


def _build(plugin_id: str, cls: type, conf: Configuration) -> Any:
    try:
        ext = cls(conf)
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - a plugin's own failure to start is named with the plugin
        raise PluginError(f"plugin {plugin_id}: {cls.__name__} could not be built from the configuration "
                          f"({type(e).__name__}: {e})") from None
    ext.plugin_id = plugin_id
    return ext


def plugin_properties(includes: str, excludes: str) -> dict[str, Any]:
    """Defaults of the properties the active plugins declare themselves (plugins of other packages)."""
    props: dict[str, Any] = {}
    for i in active_ids(includes, excludes):
        props.update(descriptor(i).properties)
    return props


__all__ = ["GROUP", "POINTS", "Plugin", "PluginError", "Plugins", "installed", "plugin_properties"]
