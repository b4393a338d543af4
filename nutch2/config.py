"""Configuration: conf/nutch-default.toml, overridden by nutch-site.toml, then a Nutch nutch-site.xml, then -D; a
property nutch-site.xml marks <final>true</final> is not overridden after it (Hadoop's final parameters).

The conf folder is --conf, else $NUTCH_CONF_DIR, else ./conf when it holds any file, else the shipped one; it is
an overlay on the shipped defaults: a file it lacks (nutch-default.toml, regex-urlfilter.txt, ...) is read from
the shipped conf/. A property nutch2 does not know gets one warning line: a typo in TOML or -D, or a Nutch
property nutch2 does not implement (from nutch-site.xml); spark.* properties go to Spark as they are, and
log.level.<logger> properties set the level of one logger (nutch2/logs.py checks them).
"""

from __future__ import annotations

import difflib
import getpass
import logging
import math
import os
import re
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path
from typing import Any

from nutch2.errors import ConfigError
from nutch2.logs import LEVEL_PREFIX

log = logging.getLogger(__name__)
DEFAULT_FILE = "nutch-default.toml"
SITE_FILE = "nutch-site.toml"
SITE_XML = "nutch-site.xml"
_VAR = re.compile(r"\$\{([^}$\s]+)\}")  # Hadoop's ${name}
PASS_THROUGH = ("spark.", LEVEL_PREFIX)  # property prefixes whose names are open: handed to another system (Spark)
# or to the loggers as they are
PATHS = ("storage.data.dir", "mapreduce.cluster.local.dir", "hadoop.log.dir", "server.files.dir")  # folders, made
# absolute (relative to the start folder)
# bounds of numeric properties where a value outside them is a mistake (a hung fetch, a fork bomb), checked with
# the types; NaN and infinity are refused for every number
RANGES: dict[str, tuple[float, float]] = {
    "fetcher.server.delay": (0, 86400), "fetcher.server.min.delay": (0, 86400),
    "fetcher.threads.per.queue": (1, 1000), "fetcher.timelimit.mins": (-1, 525600),
    "fetcher.progress.interval": (0.05, 86400), "log.progress.interval": (0, 86400),
    "http.timeout": (1, 3_600_000), "mapreduce.job.tasks": (0, 1024), "storage.postgres.timeout": (1, 86400),
    "mapreduce.processes.worker.max.mb": (0, 1_000_000), "solr.timeout": (0.1, 86400),
    "storage.write.batch.size": (1, 1_000_000), "fetcher.write.batch.size": (1, 1_000_000),
    "storage.write.batch.mb": (0.01, 100_000), "storage.sqlite.cache.mb": (0.1, 100_000),
    "log.file.max.size.mb": (0.001, 100_000), "log.file.backups": (0, 1000),
    "fetcher.retry.max": (0, 100), "fetcher.exceptions.per.queue.delay": (0, 86400),
    "fetcher.max.exceptions.per.queue": (-1, 1_000_000_000), "fetcher.threads.per.ip": (0, 1000),
    "fetcher.max.failures.in.row.per.queue": (-1, 1_000_000_000),
    "crawl.continuous.gather.seconds": (0, 86400), "crawl.continuous.dedup.minutes": (0, 525_600),
    "fetcher.server.delay.adaptive.target.concurrency": (0.01, 1000),
    "http.content.limit": (-1, 1e12), "http.content.inflate.limit": (1, 1e12),  # content: -1 is no limit
    "db.fetch.interval.default": (1, 3_153_600_000), "db.fetch.interval.max": (1, 3_153_600_000),  # s, 100 years
}
# Nutch properties nutch2 reads under another name (older Nutch 1 and 2 names a Nutch user's file may still hold,
# and what Nutch's bin/crawl passes), and Scrapy's settings (a user moving from Scrapy: -D DOWNLOAD_DELAY=2): what
# the warning about each says
_AS = "nutch2 reads this setting as "
RENAMED = {
    "storage.schema": _AS + "storage.schema.webpage",  # Nutch 2.0/2.1
    "fetcher.threads.per.host": _AS + "fetcher.threads.per.queue",  # Nutch 1 before 1.3
    "generate.max.per.host": _AS + "generate.max.count with generate.count.mode=host",
    "db.default.fetch.interval": _AS + "db.fetch.interval.default, in seconds (this one was in days)",
    "mapreduce.job.reduces": _AS + "mapreduce.job.tasks (tasks of every job)",
    "mapred.reduce.tasks": _AS + "mapreduce.job.tasks (tasks of every job)",
    "DOWNLOAD_DELAY": _AS + "fetcher.server.delay (seconds)",
    "CONCURRENT_REQUESTS": _AS + "fetcher.threads.fetch (per fetch task)",
    "CONCURRENT_REQUESTS_PER_DOMAIN": _AS + "fetcher.threads.per.queue",
    "CONCURRENT_REQUESTS_PER_IP": _AS + "fetcher.threads.per.ip",
    "USER_AGENT": _AS + "http.agent.name (the User-Agent is made from http.agent.*)",
    "DOWNLOAD_TIMEOUT": _AS + "http.timeout, in milliseconds (this one was in seconds)",
    "DOWNLOAD_MAXSIZE": _AS + "http.content.limit (bytes)",
    "AUTOTHROTTLE_ENABLED": _AS + "fetcher.server.delay.adaptive",
    "AUTOTHROTTLE_TARGET_CONCURRENCY": _AS + "fetcher.server.delay.adaptive.target.concurrency",
    "RETRY_TIMES": _AS + "fetcher.retry.max",
    "REDIRECT_MAX_TIMES": _AS + "http.redirect.max",
    "ROBOTSTXT_OBEY": "nutch2 always obeys robots.txt",
    "DEPTH_LIMIT": "nutch2 crawls N links deep with crawl -rounds N",
}


def shipped_conf_dir() -> Path:
    """The conf/ folder shipped with the package."""
    return Path(str(resources.files("nutch2.conf")))


_KINDS = {bool: "boolean", int: "integer", float: "number", list: "list"}


def _typed_ok(value: Any, default: Any) -> bool:
    """Whether a TOML value already has the default's type (an integer is fine where a number is wanted)."""
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, list):
        return isinstance(value, list)
    return isinstance(value, str)


def _coerce(key: str, value: Any, default: Any, source: str, typed: bool = False) -> Any:
    """Convert `value` to the type of `default`; raise ConfigError naming the key when impossible.

    `typed`: the value comes from TOML, which has types, so a value of another type (e.g. "10" in quotes for
    an integer property) is an error rather than something to convert.
    """
    kind = _KINDS.get(type(default), "string")
    if typed and not _typed_ok(value, default):
        got = _KINDS.get(type(value), "string" if isinstance(value, str) else type(value).__name__)
        article = "an" if kind[0] in "aeiou" else "a"
        raise ConfigError(
            f"{source}: {key}={value!r} is {'an' if got[0] in 'aeiou' else 'a'} {got}, "
            f'not {article} {kind}; write it like "{key}" = {_toml_repr(default)}'
        )
    try:
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("true", "yes", "1", "on"):
                return True
            if text in ("false", "no", "0", "off"):
                return False
            raise ValueError(text)
        if isinstance(default, int):
            if isinstance(value, bool) or isinstance(value, float):
                raise ValueError(value)
            return int(str(value).strip())
        if isinstance(default, float):
            if isinstance(value, bool):
                raise ValueError(value)
            number = float(str(value).strip())
            if not math.isfinite(number):
                raise ConfigError(f"{source}: {key}={value!r} is not a finite number; give a number like {default!r}")
            return number
        if isinstance(default, list):
            if isinstance(value, list):
                return [str(v) for v in value]
            return [s.strip() for s in str(value).split(",") if s.strip()]
        if isinstance(value, (dict, list)):
            raise ValueError(value)
        return str(value)
    except ValueError:
        article = "an" if kind[0] in "aeiou" else "a"
        give = "true or false (or yes/no, on/off, 1/0)" if isinstance(default, bool) else \
            f"{article} {kind} like {default!r}"  # not Python's False
        raise ConfigError(f"{source}: {key}={value!r} is not a valid {kind}; give {give}") from None


def _toml_repr(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def read_site_xml(path: Path, finals: set[str] | None = None) -> dict[str, str]:
    """Read a Hadoop-style configuration XML (Nutch's nutch-site.xml) into {name: value}. A property whose value
    is empty (`<value></value>`, as Nutch's own files have for http.proxy.port and others) is not set, as in
    Hadoop: the default stands. The names of properties marked `<final>true</final>` are added to `finals`; as in
    Hadoop, a final property set again further down the file keeps its first value (one warning line)."""
    finals = set() if finals is None else finals
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ConfigError(f"{path}: not valid XML ({e}); fix the file or remove it") from None
    if root.tag != "configuration":  # an HTML page saved by mistake, a Solr or log4j file: nothing would be read
        raise ConfigError(f"{path}: the top-level element is <{root.tag}>, not <configuration>; a nutch-site.xml "
                          "is <configuration> with <property><name>..</name><value>..</value></property> in it")
    props: dict[str, str] = {}
    for prop in root.iter("property"):
        name = (prop.findtext("name") or "").strip()
        value = (prop.findtext("value") or "").strip()
        if name and value:
            if name in finals:  # Hadoop's "an attempt to override final parameter ...; Ignoring."
                if props.get(name, value) != value:
                    log.warning(f"warning: {path}: {name} is final (<final>true</final>) further up the file; "
                                "the value set again below is ignored, as in Hadoop: remove it")
            else:
                if props.get(name, value) != value:  # a property added at the end, forgetting the one above
                    log.warning(f"warning: {path}: {name} is set twice, to different values (not shown: one may "
                                "be a password); the last one is used, as in Hadoop: remove the other")
                props[name] = value
        if name and (prop.findtext("final") or "").strip() == "true":  # Hadoop reads only "true" as final
            finals.add(name)
    return props


def read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}; check the file") from None
    try:  # TOML is UTF-8; a byte order mark (some editors write one) is dropped
        data = tomllib.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 (byte {raw[e.start]:#04x} at offset {e.start}); save the file as "
                          "UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML ({e}); fix the file") from None
    return _flatten(data)


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Accept both `"a.b" = 1` and `[a] b = 1` spellings."""
    flat: dict[str, Any] = {}
    for k, v in data.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            flat.update(_flatten(v, name + "."))
        else:
            flat[name] = v
    return flat


class Configuration:
    """Typed properties with Nutch's names. Reading a property not declared in nutch-default is a bug."""

    def __init__(self, conf_dir: str | Path | None = None, overrides: dict[str, str] | None = None) -> None:
        self.conf_dir = Path(conf_dir) if conf_dir else _default_conf_dir()
        if not self.conf_dir.is_dir():
            what = "is not a folder" if self.conf_dir.exists() else "does not exist"
            if not conf_dir and os.environ.get("NUTCH_CONF_DIR"):  # the user may not remember setting it
                raise ConfigError(f"conf dir {self.conf_dir} ($NUTCH_CONF_DIR) {what}; set NUTCH_CONF_DIR to an "
                                  "existing folder, or unset it")
            raise ConfigError(f"conf dir {self.conf_dir} {what}; pass --conf with an existing folder")
        defaults = self._find(DEFAULT_FILE)
        self.defaults = read_toml(defaults)
        self.values: dict[str, Any] = dict(self.defaults)
        self.unknown: dict[str, Any] = {}
        self._sources: dict[str, tuple[str, bool]] = {}  # unknown key -> (where it was set, typed)
        self._plugins_read = False
        self._variables: set[str] = set()  # names nutch-site.xml's values use as ${name}
        self.final: dict[str, str] = {}  # properties marked <final>true</final> -> the file that did: -D (and a
        # job API job's conf) cannot change them, as a later resource cannot in Hadoop
        self.sources = [f"folder {self.conf_dir.absolute()}"]  # what was read, in order (-v shows it)
        self.sources.append(f"read {defaults.absolute()} ({len(self.defaults)} properties)")
        site = self.conf_dir / SITE_FILE
        if site.is_file():
            self._apply(read_toml(site), str(site), typed=True)
        site_xml = self.conf_dir / SITE_XML
        if site_xml.is_file():
            finals: set[str] = set()
            self._apply(self._expand(read_site_xml(site_xml, finals)), str(site_xml))
            self.final = dict.fromkeys(sorted(finals), str(site_xml))
        if overrides:
            self._apply(self._not_final(overrides, "-D"), "-D")
        if any(not k.startswith(PASS_THROUGH) for k in self.unknown):
            self._read_plugin_properties()  # a property of a plugin from another package is not unknown
        self._warn_unknown()
        if not str(self.values.get("storage.data.dir") or "").strip():  # it would be the folder of the moment
            raise ConfigError("storage.data.dir is empty: give the crawl's folder, e.g. -D storage.data.dir=crawl")
        for key in PATHS:  # tasks in other processes (or executors, in their own folders) see the same place
            if self.values.get(key) and not Path(str(self.values[key])).is_absolute():
                self.values[key] = str(Path(str(self.values[key])).absolute())

    def _expand(self, props: dict[str, str]) -> dict[str, str]:
        """Hadoop's variable expansion in a nutch-site.xml value: ${name} is the value of property name (of the file,
        else as set so far) or of the Java system properties Hadoop's files use (user.name, user.home, user.dir,
        java.io.tmpdir), expanded again up to 20 times; an unknown name stays as it is, as in Hadoop."""
        def lookup(m: re.Match[str]) -> str:
            name = m.group(1)
            self._variables.add(name)  # a property set to be used as ${name} is not "ignored"
            value = props[name] if name in props else self.values.get(name, _system_property(name))
            return m.group(0) if value is None else str(value).lower() if isinstance(value, bool) else str(value)

        out = {}
        for key, value in props.items():
            for _ in range(20):  # Hadoop's MAX_SUBST
                expanded = _VAR.sub(lookup, value)
                if expanded == value:
                    break
                value = expanded
            out[key] = value
        return out

    def _not_final(self, props: dict[str, Any], source: str) -> dict[str, Any]:
        """`props` without the final properties, each one that would change a value said in one warning line."""
        kept = {}
        for key, value in props.items():
            if key not in self.final:
                kept[key] = value
            elif not self._same(key, value):
                log.warning(f"warning: {source}: {key} is final in {self.final[key]} (<final>true</final>); "
                            f"{source}'s value is ignored, as Hadoop ignores an attempt to override a final parameter")
        return kept

    def _same(self, key: str, value: Any) -> bool:
        """Whether `value` is what the property holds already (typed when declared)."""
        if key not in self.defaults:
            return str(value).strip() == str(self.unknown.get(key, "")).strip()
        try:
            return _coerce(key, value, self.defaults[key], "-D") == self.values[key]
        except ConfigError:
            return False

    def check_not_final(self, key: str, source: str) -> None:
        """Refuse to change a final property (a ConfigError naming the file that made it final)."""
        if key in self.final:
            raise ConfigError(f"{key} is final in {self.final[key]} (<final>true</final>): {source} cannot change "
                              "it; ask who runs this nutch2 to change that file")

    def _find(self, name: str) -> Path:
        """A file from the conf dir, else the shipped copy."""
        path = self.conf_dir / name
        return path if path.is_file() else shipped_conf_dir() / name

    def resource(self, name: str) -> Path:
        """Path of a conf file (e.g. regex-urlfilter.txt): the conf dir's, else the shipped one. A device or a pipe
        (/dev/zero, /dev/stdin) is refused: reading it would never end, or hold the command's memory."""
        path = self._find(name)
        if path.exists() and not path.is_file() and not path.is_dir():
            raise ConfigError(f"{path} is a device or a pipe, not a file: name a conf file (of the conf folder, or "
                              "a path)")
        return path

    def _apply(self, props: dict[str, Any], source: str, typed: bool = False) -> None:
        self.sources.append(f"read {Path(source).absolute()} ({len(props)} properties)" if source != "-D" else
                            f"-D: {', '.join(props)}")  # names only: a value may be a secret
        for key, value in props.items():
            if key in self.defaults:
                self.values[key] = _check_range(key, _coerce(key, value, self.defaults[key], source, typed), source)
            else:  # spark.* properties go to Spark as they are (the spark runner's SparkConf)
                self.unknown[key] = value
                self._sources[key] = (source, typed)

    def _read_plugin_properties(self) -> None:
        """Declare the properties the active plugins declare themselves (plugins of other packages), taking the
        values already given for them."""
        if self._plugins_read:
            return
        self._plugins_read = True
        from nutch2.plugin.descriptor import plugin_properties

        props = plugin_properties(self.get_str("plugin.includes").strip(), self.get_str("plugin.excludes").strip())
        new = {k: v for k, v in props.items() if k not in self.defaults}
        if not new:
            return
        self.defaults = {**self.defaults, **new}
        for key, default in new.items():
            self.values[key] = default
            if key in self.unknown:
                source, typed = self._sources.get(key, ("-D", False))
                self.values[key] = _check_range(key, _coerce(key, self.unknown.pop(key), default, source, typed),
                                                source)

    def _warn_unknown(self) -> None:
        for key, (source, _) in self._sources.items():
            if key not in self.unknown or key.startswith(PASS_THROUGH) or key in self._variables:
                continue
            close = difflib.get_close_matches(key, self.defaults, n=1, cutoff=0.9)  # a typo of a property
            if key in RENAMED:
                log.warning(f"warning: {source}: {key} is ignored: {RENAMED[key]}")
            elif close:
                log.warning(f"warning: {source}: {key}: not a nutch2 property, ignored; did you mean {close[0]}?")
            elif source.endswith(SITE_XML):  # a Nutch user's file: most likely a Nutch feature nutch2 lacks
                log.warning(f"warning: {source}: {key} is a property nutch2 does not implement; it is ignored "
                            "(conf/nutch-default.toml lists what nutch2 reads)")
            else:
                log.warning(f"warning: {source}: {key}: not a nutch2 property, ignored (see conf/nutch-default.toml, "
                            "or the plugin that should declare it)")

    def get(self, key: str) -> Any:
        try:
            return self.values[key]
        except KeyError:
            if not self._plugins_read:  # a plugin's own property, declared by the plugin
                self._read_plugin_properties()
                if key in self.values:
                    return self.values[key]
            raise KeyError(f"property {key!r} is not declared in nutch-default.toml") from None

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """Every property whose name starts with `prefix`, declared or not, as text (e.g. spark.* for SparkConf)."""
        props = {k: v for k, v in {**self.values, **self.unknown}.items() if k.startswith(prefix)}
        return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in props.items()}

    def changed(self, prefix: str) -> list[str]:
        """The declared properties named `prefix`... whose value is not their default (set by a site file or -D)."""
        return [k for k, v in self.values.items() if k.startswith(prefix) and self.defaults.get(k, v) != v]

    def get_int(self, key: str) -> int:
        return int(self.get(key))

    def get_float(self, key: str) -> float:
        return float(self.get(key))

    def get_bool(self, key: str) -> bool:
        return bool(self.get(key))

    def get_str(self, key: str) -> str:
        value = self.get(key)
        return "" if value is None else str(value)

    def set(self, key: str, value: Any) -> None:
        """Set a declared property (coerced to its type)."""
        if key not in self.defaults and not self._plugins_read:
            self._read_plugin_properties()
        if key not in self.defaults:
            raise KeyError(f"property {key!r} is not declared in nutch-default.toml")
        self.values[key] = _check_range(key, _coerce(key, value, self.defaults[key], "set"), "set")

    def copy(self) -> Configuration:
        new = object.__new__(Configuration)
        new.conf_dir = self.conf_dir
        new.defaults = self.defaults
        new.values = dict(self.values)
        new.unknown = dict(self.unknown)
        new._sources = dict(self._sources)
        new._plugins_read = self._plugins_read
        new._variables = set(self._variables)
        new.final = dict(self.final)
        new.sources = list(self.sources)
        return new


def _system_property(name: str) -> str | None:
    """The Java system properties Hadoop's files use, looked up only when a value names one (a process without a
    user name, as in some containers, has no user.name: the variable then stays as it is)."""
    try:
        return {"user.name": getpass.getuser, "user.home": lambda: str(Path.home()), "user.dir": os.getcwd,
                "java.io.tmpdir": tempfile.gettempdir}[name]()
    except (KeyError, OSError, RuntimeError):
        return None


def _check_range(key: str, value: Any, source: str) -> Any:
    bounds = RANGES.get(key)
    if bounds is not None and isinstance(value, (int, float)) and not bounds[0] <= value <= bounds[1]:
        raise ConfigError(f"{source}: {key}={value!r} is out of range; give a value between {bounds[0]:g} and "
                          f"{bounds[1]:g}")
    return value


def _default_conf_dir() -> Path:
    """$NUTCH_CONF_DIR, else ./conf when it holds any file (an overlay on the shipped one), else the shipped one."""
    env = os.environ.get("NUTCH_CONF_DIR")
    if env:
        return Path(env)
    local = Path("conf")
    try:
        if local.is_dir() and any(p.is_file() for p in local.iterdir()):
            return local
    except OSError:
        pass
    return shipped_conf_dir()


def parse_define(text: str) -> tuple[str, str]:
    """Split a -D argument `key=value`."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"-D {text!r}: expected key=value, e.g. -D fetcher.threads.fetch=20")
    return key.strip(), value
