"""Logging as operators expect: levels, a rotated log file (Nutch's hadoop.log), progress lines that suit where
they go (a live line on a terminal, a periodic log line elsewhere), and silence on a closed pipe.

Every module logs through its own logger, `log = logging.getLogger(__name__)` (nutch2.fetch.fetcher,
nutch2.stores.sqlite, nutch2.plugins.parse_html.parser...), whose lines reach the handlers of the `nutch2` logger:
stderr at the chosen level (`-v`, `-q`, `log.level`) and `<hadoop.log.dir>/<hadoop.log.file>` with a time stamp.
`log.level.<logger>` sets one logger and those below it, for both (Nutch's levels per package). Worker processes
set up the same levels, append to the same file (reopened when the driver rotates it) and write to the stderr they
inherited. Third-party loggers are tuned here, in THIRD_PARTY.
"""

from __future__ import annotations

import importlib.util
import logging
import logging.handlers
import sys
import threading
import time
from collections import deque
from pathlib import Path

from nutch2.errors import ConfigError

LOGGER = logging.getLogger("nutch2")  # holds the handlers; the logger of every module of nutch2 propagates to it
log = logging.getLogger(__name__)
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LEVEL_PREFIX = "log.level."  # log.level.<logger> = <level>
# third-party loggers and the level below which their lines are dropped
THIRD_PARTY = {
    "pypdf": logging.ERROR,  # pypdf warns about every quirk of a real-world PDF
    "cassandra": logging.ERROR,  # the driver's warnings about its connections and the cluster's state
    "psycopg": logging.ERROR,  # what psycopg ignored while a lost connection's pipeline ends (the store says why)
}
_FILE_FORMAT = "%(asctime)s %(levelname)-5s %(process)d %(message)s"
_state: dict[str, object] = {}
_lock = threading.Lock()


# control characters a log line shows as escapes: a URL, header or reason a server sent (a Location with an ESC
# sequence, a BEL) must not drive the terminal that shows stderr or the log file; tabs and line breaks stay
_CONTROLS = {c: repr(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\t\n"}


class _Printable(logging.Handler):
    """Lines with their control characters as escapes (\\x1b), whatever a message quotes."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).translate(_CONTROLS)


class _StderrHandler(_Printable, logging.StreamHandler):
    """Writes to the current sys.stderr (tests swap it); a progress line on a terminal is cleared first."""

    def __init__(self) -> None:
        super().__init__()

    @property  # type: ignore[override]
    def stream(self):  # noqa: D401 - the stream logging writes to
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler.__init__ assigns it
        pass

    def emit(self, record: logging.LogRecord) -> None:
        _clear_live_line()
        super().emit(record)


class _LazyFolder(_Printable):
    """A file handler that creates its folder when the first line is written (a command that logs nothing
    creates nothing), and stops writing with one warning when it cannot. With `after` (the data dir that holds
    the log folder), lines wait (the last 1000) until that folder exists: a command that fails before it made
    the data dir (a bad name, a store that does not answer) leaves no folder behind for its log."""

    baseFilename: str
    after: Path | None = None
    _waiting: deque[logging.LogRecord] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.after is not None:
            if not self.after.is_dir():
                if self._waiting is None:
                    self._waiting = deque(maxlen=1000)
                self._waiting.append(record)
                return
            self.after = None
            for waiting in self._waiting or ():
                super().emit(waiting)  # type: ignore[misc]
            self._waiting = None
        super().emit(record)  # type: ignore[misc]

    def _open(self):  # type: ignore[no-untyped-def]
        try:
            Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
            return super()._open()  # type: ignore[misc]
        except OSError as e:
            LOGGER.removeHandler(self)  # type: ignore[arg-type]
            _state["file"] = None
            log.warning(f"warning: cannot write the log file {self.baseFilename} ({e.strerror}); "
                        "logging to stderr only (set hadoop.log.dir)")
            raise


    def start_writing(self) -> None:
        """The command got past its checks: make the folder (a service store makes no data dir of its own) and
        write what waited."""
        if self.after is not None:
            try:
                self.after.mkdir(parents=True, exist_ok=True)
            except OSError:
                return  # _open says so when the first line is written
            for waiting in self._waiting or ():
                self.emit(waiting)
            self._waiting = None


def command_started() -> None:
    """Called once a command passed its checks and took its locks: its log lines go to the log file from now on,
    even when its store keeps nothing in the data dir."""
    for handler in LOGGER.handlers:
        if isinstance(handler, _LazyFolder):
            handler.start_writing()


class _RotatingFile(_LazyFolder, logging.handlers.RotatingFileHandler):
    pass


class _WatchedFile(_LazyFolder, logging.handlers.WatchedFileHandler):
    pass


def _install_default() -> None:
    """Before setup(): INFO lines to stderr, as a library would print them; the third-party loggers tuned."""
    if not LOGGER.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        LOGGER.addHandler(handler)
        LOGGER.setLevel(logging.INFO)
        LOGGER.propagate = False
    for name, level in THIRD_PARTY.items():
        logging.getLogger(name).setLevel(level)
    logging.raiseExceptions = False  # a closed stderr must not print tracebacks about logging


_install_default()


class _Levels(logging.Filter):
    """A handler's threshold for each line: the level of the nearest logger given its own (log.level.<logger>:
    that logger and those below it), else the handler's `level`."""

    def __init__(self, level: int, levels: dict[str, int]) -> None:
        super().__init__()
        self.level = level
        self.levels = levels

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        while name not in self.levels:
            if "." not in name:
                return record.levelno >= self.level
            name = name.rsplit(".", 1)[0]
        return record.levelno >= self.levels[name]


def check_level(key: str, value: object) -> str:
    """The level a property gives (DEBUG, INFO, WARNING, ERROR, in any case); ConfigError for anything else."""
    level = str(value).strip().upper()
    if level not in logging.getLevelNamesMapping():
        raise ConfigError(f"{key}={value!r} is not a log level; give {', '.join(LEVELS[:-1])} or {LEVELS[-1]}")
    return level


def check_levels(props: dict[str, str]) -> dict[str, str]:
    """The loggers and levels of the `log.level.<logger>` properties, checked: ConfigError for a logger that is no
    module or package of nutch2 (a typo, another library's logger) or a value that is no level."""
    found: dict[str, str] = {}
    for key, value in sorted(props.items()):
        name = key.removeprefix(LEVEL_PREFIX)
        if not _is_module(name):
            raise ConfigError(f"{key}: {name or '(nothing)'} is not a logger of nutch2; give a module or package of "
                              "it (nutch2.fetch, nutch2.stores.sqlite, ...)")
        found[name] = check_level(key, value)
    return found


def _is_module(name: str) -> bool:
    """Whether `name` is nutch2 or one of its modules or packages (stores and jobs as nutch2.stores, nutch2.jobs)."""
    if name != "nutch2" and not name.startswith("nutch2."):
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is no package, an empty part (nutch2..fetch)
        return False


def setup(level: str = "INFO", log_file: Path | None = None, max_mb: float = 10.0, backups: int = 5,
          worker: bool = False, after: Path | None = None, levels: dict[str, str] | None = None) -> None:
    """Configure the `nutch2` logger: stderr at `level`; a log file (rotated by the driver) at INFO or lower,
    written once the folder `after` exists (if given: the data dir that holds the log folder). `levels` (logger ->
    level, from check_levels()) set those loggers and the ones below them, on stderr and in the log file."""
    with _lock:
        stderr_level = logging.getLevelNamesMapping()[level.upper()]
        file_level = min(stderr_level, logging.INFO)
        own = {name: logging.getLevelNamesMapping()[lvl.upper()] for name, lvl in (levels or {}).items()}
        for h in list(LOGGER.handlers):
            LOGGER.removeHandler(h)
            if isinstance(h, logging.FileHandler):
                h.close()
        err = _StderrHandler()
        err.addFilter(_Levels(stderr_level, own))
        err.setFormatter(logging.Formatter("%(message)s"))
        LOGGER.addHandler(err)
        if log_file is not None:
            fh: logging.FileHandler
            if worker:
                fh = _WatchedFile(log_file, encoding="utf-8", delay=True)
            else:
                fh = _RotatingFile(log_file, maxBytes=int(max_mb * 1024 * 1024), backupCount=max(0, backups),
                                   encoding="utf-8", delay=True)
            fh.addFilter(_Levels(file_level, own))
            fh.setFormatter(logging.Formatter(_FILE_FORMAT))
            fh.after = after  # type: ignore[attr-defined]
            LOGGER.addHandler(fh)
        for name in _state.get("levels") or {}:  # the loggers an earlier setup in this process set
            logging.getLogger(name).setLevel(logging.NOTSET)
        LOGGER.setLevel(min(stderr_level, file_level))
        for name, value in own.items():
            logging.getLogger(name).setLevel(value)
        _state["file"] = log_file
        _state["level"] = level.upper()
        _state["levels"] = dict(levels or {})
        _state["worker"] = worker


def settings() -> tuple[str, Path | None]:
    """(stderr level, log file) as set up here: what worker processes set up again (setup(..., worker=True),
    with levels())."""
    return str(_state.get("level", "INFO")), log_file()


def levels() -> dict[str, str]:
    """The levels of single loggers as set up here (log.level.<logger>)."""
    return dict(_state.get("levels") or {})  # type: ignore[call-overload]


def log_file() -> Path | None:
    """The log file in use, if any."""
    return _state.get("file")  # type: ignore[return-value]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 row`, `2 rows` (`plural` for nouns that do not take an s)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def config_warning(logger: logging.Logger, msg: str) -> None:
    """A warning about the configuration (an unknown plugin id...): the command's driver says it once (a crawl's
    steps check the same configuration every round); a worker process, which reads the same configuration, keeps
    it to DEBUG rather than saying it once more."""
    said = _state.setdefault("config_warnings", set())
    worker = _state.get("worker") or msg in said  # type: ignore[operator]
    said.add(msg)  # type: ignore[attr-defined]
    logger.log(logging.DEBUG if worker else logging.WARNING, msg)


# ---------------------------------------------------------------- progress
_live = {"shown": False}
_last: dict[str, str] = {}  # job -> its latest progress line (the job API shows it)


def _clear_live_line() -> None:
    if _live["shown"]:
        try:
            sys.stderr.write("\r\033[K")
        except (OSError, ValueError):
            pass
        _live["shown"] = False


class Progress:
    """Progress of one long job: `update(line)` as often as it likes; on a terminal the line is redrawn in
    place, elsewhere it becomes a line of `logger` every `interval` seconds; `last()` is the newest line."""

    def __init__(self, job: str, interval: float = 30.0, tty: bool | None = None,
                 logger: logging.Logger = log) -> None:
        self.job = job
        self.logger = logger
        self.interval = max(0.0, interval)
        self.tty = _stderr_is_tty() if tty is None else tty
        self._logged = time.monotonic()

    def update(self, line: str) -> None:
        _last.pop(self.job, None)  # the newest line is the last one (a crawl's fetch of round 5 after its parse)
        _last[self.job] = line
        if self.tty:
            try:
                sys.stderr.write(f"\r\033[K{line}")
                sys.stderr.flush()
                _live["shown"] = True
            except (OSError, ValueError):
                pass
            return
        now = time.monotonic()
        if now - self._logged >= self.interval:
            self._logged = now
            self.logger.info(line)

    def done(self) -> None:
        _last.pop(self.job, None)  # an ended job's line is not shown as the progress of the next one
        if self.tty:
            _clear_live_line()


class Window:
    """Rates of growing counts over the last `span` seconds and since the start (a window of a few seconds
    reads 0 between the slow pages of a polite fetch). Used by one thread."""

    def __init__(self, span: float = 30.0) -> None:
        self.span = span
        self.started = time.monotonic()
        self._marks: deque[tuple[float, tuple[float, ...]]] = deque([(self.started, ())])

    def rates(self, *counts: float) -> tuple[list[float], list[float]]:
        """(per second over the window, per second since the start) of each count, given its value now."""
        now = time.monotonic()
        self._marks.append((now, counts))
        while len(self._marks) > 2 and now - self._marks[1][0] >= self.span:
            self._marks.popleft()
        t0, before = self._marks[0]
        span, total = max(1e-6, now - t0), max(1e-6, now - self.started)
        window = [(c - (before[i] if i < len(before) else 0)) / span for i, c in enumerate(counts)]
        return window, [c / total for c in counts]


def last_progress(job: str | None = None) -> str:
    """The newest progress line (of `job`, or of any job)."""
    if job is not None:
        return _last.get(job, "")
    return next(reversed(_last.values()), "") if _last else ""


def clear_progress() -> None:
    _last.clear()


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
