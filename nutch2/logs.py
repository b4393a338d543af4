"""Logging as operators expect: levels, a rotated log file (Nutch's hadoop.log), progress lines that suit where
they go (a live line on a terminal, a periodic log line elsewhere), and silence on a closed pipe.

Every line goes through the `nutch2` logger: to stderr at the chosen level (`-v`, `-q`, `log.level`) and to
`<hadoop.log.dir>/<hadoop.log.file>` with a time stamp. Worker processes append to the same file (reopened
when the driver rotates it) and write to the stderr they inherited.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
import threading
import time
from collections import deque
from pathlib import Path

LOGGER = logging.getLogger("nutch2")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_FILE_FORMAT = "%(asctime)s %(levelname)-5s %(process)d %(message)s"
_state: dict[str, object] = {}
_lock = threading.Lock()


class _StderrHandler(logging.StreamHandler):
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


class _LazyFolder:
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
            LOGGER.warning(f"warning: cannot write the log file {self.baseFilename} ({e.strerror}); "
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
    """Before setup(): INFO lines to stderr, as a library would print them."""
    if not LOGGER.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        LOGGER.addHandler(handler)
        LOGGER.setLevel(logging.INFO)
        LOGGER.propagate = False
    logging.raiseExceptions = False  # a closed stderr must not print tracebacks about logging


_install_default()


def setup(level: str = "INFO", log_file: Path | None = None, max_mb: float = 10.0, backups: int = 5,
          worker: bool = False, after: Path | None = None) -> None:
    """Configure the `nutch2` logger: stderr at `level`; a log file (rotated by the driver) at INFO or lower,
    written once the folder `after` exists (if given: the data dir that holds the log folder)."""
    with _lock:
        stderr_level = getattr(logging, level.upper())
        for h in list(LOGGER.handlers):
            LOGGER.removeHandler(h)
            if isinstance(h, logging.FileHandler):
                h.close()
        err = _StderrHandler()
        err.setLevel(stderr_level)
        err.setFormatter(logging.Formatter("%(message)s"))
        LOGGER.addHandler(err)
        file_level = min(stderr_level, logging.INFO)
        if log_file is not None:
            fh: logging.FileHandler
            if worker:
                fh = _WatchedFile(log_file, encoding="utf-8", delay=True)
            else:
                fh = _RotatingFile(log_file, maxBytes=int(max_mb * 1024 * 1024), backupCount=max(0, backups),
                                   encoding="utf-8", delay=True)
            fh.setLevel(file_level)
            fh.setFormatter(logging.Formatter(_FILE_FORMAT))
            fh.after = after  # type: ignore[attr-defined]
            LOGGER.addHandler(fh)
        LOGGER.setLevel(min(stderr_level, file_level))
        _state["file"] = log_file
        _state["level"] = level.upper()
        _state["worker"] = worker


def settings() -> tuple[str, Path | None]:
    """(stderr level, log file) as set up here: what worker processes set up again (setup(..., worker=True))."""
    return str(_state.get("level", "INFO")), log_file()


def log_file() -> Path | None:
    """The log file in use, if any."""
    return _state.get("file")  # type: ignore[return-value]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 row`, `2 rows` (`plural` for nouns that do not take an s)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def log(msg: str, level: int = logging.INFO) -> None:
    """A progress or summary line (stderr and the log file)."""
    LOGGER.log(level, msg)


def debug(msg: str) -> None:
    LOGGER.debug(msg)


def warning(msg: str) -> None:
    LOGGER.warning(msg)


def config_warning(msg: str) -> None:
    """A warning about the configuration (an unknown plugin id...): the command's driver says it; a worker
    process, which reads the same configuration, keeps it to DEBUG rather than saying it once more."""
    LOGGER.log(logging.DEBUG if _state.get("worker") else logging.WARNING, msg)


def error(msg: str) -> None:
    """An error line: why a command failed (stderr, even with -q, and the log file)."""
    LOGGER.error(msg)


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
    place, elsewhere it becomes a log line every `interval` seconds; `last()` is the newest line."""

    def __init__(self, job: str, interval: float = 30.0, tty: bool | None = None) -> None:
        self.job = job
        self.interval = max(0.0, interval)
        self.tty = _stderr_is_tty() if tty is None else tty
        self._logged = time.monotonic()

    def update(self, line: str) -> None:
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
            log(line)

    def done(self) -> None:
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
