"""The WebPage row: one per URL, every field of Nutch 2's WebPage, with per-field dirty tracking."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nutch2.status import CrawlStatus, ParseMajor, ParseMinor, ProtocolStatusCode


@dataclass
class ProtocolStatus:
    """Outcome of the last fetch (Nutch's ProtocolStatus record)."""

    code: int = ProtocolStatusCode.NONE
    args: list[str] = field(default_factory=list)
    last_modified: int = 0

    @property
    def name(self) -> str:
        try:
            return ProtocolStatusCode(self.code).name
        except ValueError:
            return f"UNKNOWN_{self.code}"


@dataclass
class ParseStatus:
    """Outcome of the last parse (Nutch's ParseStatus record)."""

    major_code: int = ParseMajor.NOTPARSED
    minor_code: int = ParseMinor.OK
    args: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        major = ParseMajor(self.major_code).name if self.major_code in ParseMajor._value2member_map_ else "?"
        try:
            minor = ParseMinor(self.minor_code).name
        except ValueError:
            minor = str(self.minor_code)
        return f"{major}/{minor}"

    def is_success(self) -> bool:
        return self.major_code == ParseMajor.SUCCESS


class TrackedDict(dict):
    """A dict that marks its field dirty on the owning page when mutated in place. `stored`: the map as the store
    returned it (None when it was assigned or is new), so a store can tell which entries a write adds."""

    __slots__ = ("_page", "_field", "stored")

    def __init__(self, page: WebPage, name: str, data: dict | None = None, stored: dict | None = None) -> None:
        super().__init__(data or {})
        self._page = page
        self._field = name
        self.stored = stored

    def _touch(self) -> None:
        self._page._dirty.add(self._field)

    def __setitem__(self, k: Any, v: Any) -> None:
        super().__setitem__(k, v)
        self._touch()

    def __delitem__(self, k: Any) -> None:
        super().__delitem__(k)
        self._touch()

    def pop(self, *args: Any) -> Any:
        self._touch()
        return super().pop(*args)

    def popitem(self) -> Any:
        self._touch()
        return super().popitem()

    def clear(self) -> None:
        self._touch()
        super().clear()

    def update(self, *args: Any, **kw: Any) -> None:
        self._touch()
        super().update(*args, **kw)

    def setdefault(self, k: Any, default: Any = None) -> Any:
        if k not in self:
            self._touch()
        return super().setdefault(k, default)

    def __reduce__(self) -> Any:  # pickles as a plain dict
        return (dict, (dict(self),))


# field name -> (kind, default). kind: int, float, str, bytes, map, protocol, parse
FIELDS: dict[str, tuple[str, Any]] = {
    "base_url": ("str", None),
    "status": ("int", 0),
    "fetch_time": ("int", 0),
    "prev_fetch_time": ("int", 0),
    "fetch_interval": ("int", 0),
    "retries_since_fetch": ("int", 0),
    "modified_time": ("int", 0),
    "prev_modified_time": ("int", 0),
    "protocol_status": ("protocol", None),
    "content": ("bytes", None),
    "content_type": ("str", None),
    "prev_signature": ("bytes", None),
    "signature": ("bytes", None),
    "title": ("str", None),
    "text": ("str", None),
    "parse_status": ("parse", None),
    "score": ("float", 0.0),
    "repr_url": ("str", None),
    "headers": ("map", None),  # str -> str
    "outlinks": ("map", None),  # url -> anchor
    "inlinks": ("map", None),  # source url -> anchor
    "markers": ("map", None),  # str -> str
    "metadata": ("map", None),  # str -> bytes
    "batch_id": ("str", None),
    "sitemaps": ("map", None),  # str -> str
    "stm_priority": ("float", 0.0),
}
MAP_FIELDS = frozenset(n for n, (k, _) in FIELDS.items() if k == "map")
ALL_FIELDS: tuple[str, ...] = tuple(FIELDS)


def check_fields(fields: list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """Validate a field list (None means all fields) and return it as a tuple."""
    if fields is None:
        return ALL_FIELDS
    unknown = [f for f in fields if f not in FIELDS]
    if unknown:
        raise ValueError(f"unknown WebPage field(s): {', '.join(unknown)}")
    return tuple(fields)


class WebPage:
    """One row of the webpage table. Assigning a field marks it dirty; maps track in-place edits."""

    __slots__ = ("_values", "_dirty", "key", "new_row")

    def __init__(self, key: str | None = None, **values: Any) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_dirty", set())
        object.__setattr__(self, "new_row", False)
        for name, value in values.items():
            setattr(self, name, value)

    @classmethod
    def new(cls, key: str) -> WebPage:
        """A page for a key the store held no row for when the job looked: its first write need not clear what an
        older row held (HBase then writes no family deletes, each a tombstone later reads step over)."""
        page = cls(key)
        object.__setattr__(page, "new_row", True)
        return page

    @classmethod
    def from_store(cls, key: str, values: dict[str, Any]) -> WebPage:
        """Build a clean (not dirty) page from values read by a store."""
        page = cls(key)
        mine = page._values
        for name, value in values.items():
            if value is None:  # absent in the store: the field keeps its default
                continue
            if name in MAP_FIELDS:
                value = TrackedDict(page, name, value, value if name == "markers" else None)
            elif name not in FIELDS:
                raise AttributeError(f"WebPage has no field {name!r}")
            mine[name] = value
        return page

    def _set(self, name: str, value: Any) -> None:
        if name not in FIELDS:
            raise AttributeError(f"WebPage has no field {name!r}")
        if name in MAP_FIELDS:
            value = TrackedDict(self, name, value)
        self._values[name] = value
        self._dirty.add(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "key":
            object.__setattr__(self, name, value)
            return
        self._set(name, value)

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        spec = FIELDS.get(name)
        if spec is None:
            raise AttributeError(f"WebPage has no field {name!r}")
        kind, default = spec
        if kind == "map":
            value = TrackedDict(self, name)
            values[name] = value  # an empty map is not dirty until written to
            return value
        if kind == "protocol":
            value = ProtocolStatus()
        elif kind == "parse":
            value = ParseStatus()
        else:
            return default
        values[name] = value
        return value

    def unload(self, name: str) -> None:
        """Forget a clean field's value (it reads as its default again), e.g. before the page is shuffled."""
        if name in self._dirty:
            raise ValueError(f"{name} has a value not yet written; it cannot be unloaded")
        self._values.pop(name, None)

    def loaded(self) -> set[str]:
        """Names of fields that hold a value (read from the store or set)."""
        return set(self._values)

    def is_dirty(self, name: str | None = None) -> bool:
        return bool(self._dirty) if name is None else name in self._dirty

    def dirty_fields(self) -> set[str]:
        return set(self._dirty)

    def mark_dirty(self, name: str) -> None:
        """Mark a field dirty after mutating a nested record (protocol_status, parse_status) in place."""
        if name not in FIELDS:
            raise AttributeError(f"WebPage has no field {name!r}")
        getattr(self, name)
        self._dirty.add(name)

    def clear_dirty(self) -> None:
        """The page was written: nothing is dirty, and the row exists."""
        self._dirty.clear()
        object.__setattr__(self, "new_row", False)

    def values(self) -> dict[str, Any]:
        """The fields read or set, by name (a field not here has its default): the page's own dict, to read only
        (a job that reads every row, e.g. readdb -stats, without an attribute lookup a field)."""
        return self._values

    def dirty_values(self) -> dict[str, Any]:
        """The values of dirty fields; what a store's put() must write."""
        values = self._values
        return {name: values[name] if name in values else getattr(self, name) for name in self._dirty}

    def get(self, name: str) -> Any:
        return getattr(self, name)

    @property
    def crawl_status(self) -> CrawlStatus | int:
        try:
            return CrawlStatus(self.status)
        except ValueError:
            return self.status

    def stored_markers(self) -> dict[str, str] | None:
        """The markers as the store returned them, if they were read and not assigned since."""
        markers = self._values.get("markers")
        return markers.stored if isinstance(markers, TrackedDict) else None

    def __getstate__(self) -> tuple[Any, ...]:
        """Pickled as key, plain values and dirty set (the shuffle serialises map output), and the markers as
        stored when they were read."""
        values = {n: dict(v) if isinstance(v, TrackedDict) else v for n, v in self._values.items()}
        stored = self.stored_markers()
        if stored is None:
            return self.key, values, set(self._dirty)
        return self.key, values, set(self._dirty), stored

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        key, values, dirty = state[:3]
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "_values", {n: TrackedDict(self, n, v) if n in MAP_FIELDS else v
                                             for n, v in values.items()})
        object.__setattr__(self, "_dirty", set(dirty))
        object.__setattr__(self, "new_row", False)
        if len(state) > 3 and "markers" in self._values:
            self._values["markers"].stored = state[3]

    def __repr__(self) -> str:
        return f"WebPage({self.key!r}, {sorted(self._values)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WebPage):
            return NotImplemented
        names = set(self._values) | set(other._values)
        return self.key == other.key and all(getattr(self, n) == getattr(other, n) for n in names)
