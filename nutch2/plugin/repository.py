"""The active plugins of a configuration and the extensions they provide, built (Nutch's PluginRepository and
ExtensionPoint.getExtensions): what a task calls to get its filters, parsers, writers."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from nutch2.errors import ConfigError
from nutch2.logs import config_warning
from nutch2.plugin.descriptor import POINTS, UNNAMED_FOLLOW, PluginError, active_ids, descriptor, extension_class
from nutch2.plugin.extension import Settings

log = logging.getLogger(__name__)


# properties that only optional plugins read (prefixes): set while none of them is active, they change nothing
PLUGIN_PROPERTIES: dict[str, tuple[str, ...]] = {
    "index.static": ("index-static",),
    "parse.xpath.": ("parse-xpath", "index-xpath"),
    "boilerplate.": ("parse-boilerplate",),
    "lang.": ("language-identifier",),
    "urlfilter.domain.": ("urlfilter-domain",),
    "urlfilter.domaindenylist.": ("urlfilter-domaindenylist",),
}


class Plugins:
    """The active plugins of a configuration and the extensions they provide."""

    def __init__(self, conf: Settings) -> None:
        self.conf = conf
        classes = tuple(dict.fromkeys(c for c in conf.get_str("plugin.classes").replace(",", " ").split()))
        for spec in classes:
            if spec.count(":") != 1 or not all(spec.partition(":")[::2]):
                raise PluginError(f"plugin.classes: {spec!r} is not module:Class (e.g. myfilters:SpamFilter)")
        includes, excludes = conf.get_str("plugin.includes").strip(), conf.get_str("plugin.excludes").strip()
        self.ids = active_ids(includes, excludes) + classes

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
        only = set(self._names_in(only_prop))
        found = [(i, c) for i, c in active if only & _names(i, c)] if only else active
        order = self._names_in(order_prop or POINTS[point])
        ordered = []
        for name in order:
            ordered += [(i, c) for i, c in found if name in _names(i, c) and (i, c) not in ordered]
        if order and found and not ordered and point not in UNNAMED_FOLLOW:  # a typo would turn the point off
            raise PluginError(f"{order_prop or POINTS[point]} names none of the active {point} plugins "
                              f"({', '.join(i for i, _ in found)}), so none would run; fix its names, or leave it "
                              "empty to run every active one")
        for prop in (only_prop, order_prop or POINTS[point]):
            for name in self._names_in(prop):
                if not any(name in _names(i, c) for i, c in active):
                    config_warning(log, f"warning: {prop} names {name!r}, which no active plugin provides; ignored")
        if not order:
            return found
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
        self._warn_idle_properties()
        for point in points:
            for ext in self.build(point) if POINTS[point] else [
                    self.build_one(point, i) for i in self.providing(point)]:
                ext.close()


    def _warn_idle_properties(self) -> None:
        """One warning per property set for a plugin that is not active (index.static without index-static)."""
        changed = getattr(self.conf, "changed", None)  # a Configuration's; other Settings do not say
        if changed is None:
            return
        for prefix, owners in PLUGIN_PROPERTIES.items():
            if any(o in self.ids for o in owners):
                continue
            for key in changed(prefix):
                config_warning(log, f"warning: {key} is set, but plugin {' or '.join(owners)} is not active, so it "
                               "does nothing; add the plugin to plugin.includes (`nutch2 plugins` lists them)")


def _names(plugin_id: str, cls: type) -> set[str]:
    return {plugin_id, cls.__name__, f"{cls.__module__}.{cls.__name__}", getattr(cls, "nutch_class", "") or ""} - {""}


def _build(plugin_id: str, cls: type, conf: Settings) -> Any:
    try:
        ext = cls(conf)
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - a plugin's own failure to start is named with the plugin
        raise PluginError(f"plugin {plugin_id}: {cls.__name__} could not be built from the configuration "
                          f"({type(e).__name__}: {e})") from None
    ext.plugin_id = plugin_id
    return ext
