"""The plugin system's catalogue (Nutch's org.apache.nutch.plugin: PluginDescriptor, the repository's discovery):
what plugins are installed, what each provides, which are active.

A plugin is a package holding a ``PLUGIN`` descriptor. The built-in ones are the folders of nutch2/plugins/ (found
there: the folder urlfilter_regex is the plugin urlfilter-regex); another package's are named by an entry point
of the group ``nutch2.plugins`` whose name is the plugin id::

    [project.entry-points."nutch2.plugins"]
    example-wordcount = "nutch2_example_plugin:PLUGIN"

A class of the user's own module needs no package (Scrapy's way): ``plugin.classes`` lists ``module:Class``
entries, each a plugin whose id is that name and whose points are the extension points its base classes are
(a subclass of nutch2.parse.parsers.ParseFilter is a parse filter).

``plugin.includes`` (a regular expression over plugin ids, as Nutch's) chooses the active plugins and
``plugin.excludes`` removes some. An extension point's ``*.order`` property orders its extensions: empty, every
active one in plugin id order; set, only those it names, in its order (Nutch's rule; names are plugin ids, class
names or Nutch's Java class names), except for URL normalizers, where the others follow those it names (Nutch's
URLNormalizers; urlnormalizer.scope.<scope> and urlnormalizer.order.<scope> choose them per scope). Extensions
are built from the configuration (``cls(conf)``) once per task, so they ship with a job to worker processes and
Spark executors, where the same entry points are found.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import logging
import os
import pkgutil
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from nutch2.errors import ConfigError
from nutch2.logs import config_warning

log = logging.getLogger(__name__)

GROUP = "nutch2.plugins"
BUILT_IN = "nutch2.plugins"  # the package whose folders are the built-in plugins

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
    """The installed plugins by plugin id, as entry points (nothing is imported yet): the built-in folders of
    nutch2/plugins/, then those other packages name (group nutch2.plugins)."""
    found: dict[str, Any] = {}
    spec = importlib.util.find_spec(BUILT_IN)  # located, not imported: the core imports no plugin
    for info in pkgutil.iter_modules(spec.submodule_search_locations if spec else []):
        if info.ispkg:
            found[info.name.replace("_", "-")] = EntryPoint(info.name.replace("_", "-"),
                                                            f"{BUILT_IN}.{info.name}:PLUGIN", GROUP)
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep)  # a built-in id keeps its built-in plugin
    return found


def class_plugin(spec: str) -> Plugin:
    """The plugin of one class of the user's own module (plugin.classes): id ``module:Class``, filling the
    extension points its base classes are (each interface names its point)."""
    module, _, name = spec.partition(":")
    if os.getcwd() not in sys.path:  # a module in the folder the command runs in, as Scrapy's project modules (the
        sys.path.append(os.getcwd())  # worker processes start with this path; installed modules come first)
    try:
        cls = getattr(importlib.import_module(module), name)
    except Exception as e:  # noqa: BLE001 - the user's module: any failure is named with it
        raise PluginError(f"plugin.classes: cannot load {spec} ({type(e).__name__}: {e}); give module:Class of a "
                          "module on the Python path") from None
    points = sorted({k.__dict__["point"] for k in getattr(cls, "__mro__", ()) if k.__dict__.get("point") in POINTS})
    if not points:
        raise PluginError(f"plugin.classes: {spec} is no extension: make it a subclass of an extension point's "
                          "interface (e.g. nutch2.parse.parsers.ParseFilter)")
    return Plugin(spec, {p: spec for p in points}, f"{spec} (plugin.classes)")


@cache
def descriptor(plugin_id: str) -> Plugin:
    """The loaded descriptor of an installed plugin (or of a plugin.classes entry, `module:Class`); PluginError
    naming it when it cannot be loaded."""
    if ":" in plugin_id:
        return class_plugin(plugin_id)
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
            close = difflib.get_close_matches(name, ids, n=1, cutoff=0.8)  # a typo of an installed one
            config_warning(log, f"warning: plugin.includes names {name!r}, which is no installed plugin; ignored "
                           + (f"(did you mean {close[0]}?)" if close else f"(installed: {', '.join(ids)})"))
    return tuple(i for i in ids if inc.fullmatch(i) and not (exc is not None and exc.fullmatch(i)))


def plugin_properties(includes: str, excludes: str) -> dict[str, Any]:
    """Defaults of the properties the active plugins declare themselves (plugins of other packages)."""
    props: dict[str, Any] = {}
    for i in active_ids(includes, excludes):
        props.update(descriptor(i).properties)
    return props
