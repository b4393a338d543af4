"""Typed tool arguments: one dataclass per tool, from which the CLI flags and the job API's JSON schema are made.

A field is declared with `opt(flag, help, ...)`; its type (bool, int, float, str, Path, list[str]) comes from the
annotation. Every value, from a command line or from JSON, goes through `coerce` (types, bounds, finite numbers,
batch ids) and then the class's `check` (rules across fields), so both doors refuse the same things with the
same message.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from nutch2.errors import NutchError
from nutch2.marks import valid_batch_id

MAX_TASKS = 1024  # -numTasks: more tasks than this is a typo, not a plan (the runners bound it further)
# what the job API may take for a field: "yes", "no" (CLI only: a URL or path of the server's own choosing),
# "file_in" / "file_out" (a name inside the server's files folder, server.files.dir)
API_KINDS = ("yes", "no", "file_in", "file_out")


class ArgError(NutchError):
    """A bad argument value or combination; the CLI exits 2, the job API answers 400."""


@dataclass(frozen=True)
class Opt:
    """How one argument is spelled and bounded."""

    flag: str | None  # "-threads"; None: positional
    help: str
    metavar: str | None = None
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    batch_id: bool = False  # a str that must be a batch id
    required: bool = False
    api: str = "yes"
    name: str | None = None  # JSON name when not the flag's (positional: the field name)
    cli: bool = True  # False: a job API field only (e.g. inject's seedUrls)


def opt(flag: str | None, help: str, default: Any = None, **kw: Any) -> Any:
    """Declare an argument field (see Opt)."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"opt": Opt(flag, help, **kw)})
    return field(default=default, metadata={"opt": Opt(flag, help, **kw)})


def tasks_opt() -> Any:
    """-numTasks, as every job has it."""
    return opt("-numTasks", "parallel tasks (mapreduce.job.tasks)", metavar="N", min=1, max=MAX_TASKS)


def metrics_port_opt() -> Any:
    """-metricsPort: a command's Prometheus metrics on loopback while it runs (not for the job API: the server
    has /metrics)."""
    return opt("-metricsPort", "serve this command's metrics (Prometheus) at http://127.0.0.1:PORT/metrics while "
               "it runs", metavar="PORT", min=1, max=65535, api="no")


def metrics_file_opt() -> Any:
    return opt("-metricsFile", "write this command's metrics to FILE for node_exporter's textfile collector "
               "(every metrics.textfile.interval seconds and at the end)", metavar="FILE", api="no")


def threads_opt() -> Any:
    return opt("-threads", "fetcher threads per task (fetcher.threads.fetch)", metavar="N", min=1, max=1000)


@dataclass
class ToolArgs:
    """Base of every tool's arguments."""

    groups: ClassVar[tuple[tuple[str, ...], ...]] = ()  # fields of which at most one may be given

    def check(self) -> None:
        """Rules across fields; raise ArgError."""
        for group in self.groups:
            given = [name for name in group if _given(getattr(self, name))]
            if len(given) > 1:
                raise ArgError(f"{' and '.join(flag_of(type(self), n) for n in given)} cannot be used together")

    def to_json(self) -> dict[str, Any]:
        """The arguments as the job API names them (only those given)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if _given(value):
                out[json_name(f)] = [str(v) for v in value] if isinstance(value, list) else (
                    str(value) if isinstance(value, Path) else value)
        return out


def _given(value: Any) -> bool:
    return value not in (None, False, [], "")


def check_batch_choice(args: ToolArgs, selectors: tuple[str, ...] = ()) -> None:
    """Exactly one of <batchId>, -all and the tool's own `selectors` (e.g. parse's -reparse)."""
    chosen = [n for n in ("batch", "all", *selectors) if _given(getattr(args, n))]
    if len(chosen) != 1:
        names = ["<batchId>", *(flag_of(type(args), n) for n in selectors)]
        raise ArgError(f"give exactly one of {', '.join(names)} or -all")


@dataclass
class BatchArgs(ToolArgs):
    """A batch id or -all (or one of the tool's own `selectors`, e.g. parse's -reparse)."""

    selectors: ClassVar[tuple[str, ...]] = ()  # other flags that choose the rows instead of a batch

    batch: str | None = opt(None, "the batch id printed by generate", metavar="<batchId>", batch_id=True)
    all: bool = opt("-all", "every batch", default=False)

    def check(self) -> None:
        super().check()
        check_batch_choice(self, self.selectors)

    @property
    def batch_id(self) -> str | None:
        """The batch, or None for every batch."""
        return self.batch


# ---------------------------------------------------------------- introspection
def opts(cls: type[ToolArgs]) -> list[tuple[dataclasses.Field, Opt, type, bool]]:
    """(field, its Opt, its base type, is a list) for every argument of `cls`."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        o = f.metadata.get("opt")
        if o is None:
            continue
        base, is_list = _base_type(hints[f.name])
        out.append((f, o, base, is_list))
    return out


def _base_type(hint: Any) -> tuple[type, bool]:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _base_type(args[0])
    if origin is list:
        return args[0], True
    return hint, False


def json_name(f: dataclasses.Field) -> str:
    o: Opt = f.metadata["opt"]
    if o.name:
        return o.name
    return o.flag.lstrip("-") if o.flag else f.name


def flag_of(cls: type[ToolArgs], name: str) -> str:
    for f, o, _, _ in opts(cls):
        if f.name == name:
            return o.flag or (o.metavar or f.name)
    return name


MAX_LIST = 10_000  # items of a list argument sent as JSON (the job API's seedUrls...)


# ---------------------------------------------------------------- values
def coerce(cls: type[ToolArgs], f: dataclasses.Field, o: Opt, base: type, raw: Any, text: bool) -> Any:
    """One value, from the command line (`text`: a string) or from JSON, checked against its declaration."""
    where = o.flag or (o.metavar or f.name)
    if base is bool:
        if isinstance(raw, bool):
            return raw
        raise ArgError(f"{where} must be true or false, not {raw!r}"[:200])
    if base is int:
        value = _number(raw, int, where, text)
    elif base is float:
        value = _number(raw, float, where, text)
    elif base in (str, Path):
        if not isinstance(raw, str) or not raw.strip() or "\0" in raw:
            raise ArgError(f"{where} must be a non-empty string, not {raw!r}"[:200])
        value = raw
        if o.batch_id and not valid_batch_id(value):
            raise ArgError(f"{value!r} is not a batch id; give the id printed by `nutch2 generate` (letters, "
                           "digits, '_', '-', '.', at most 64)"[:300])
        if o.choices and value not in o.choices:
            raise ArgError(f"{where} {value!r} is not one of {', '.join(o.choices)}"[:300])
        return Path(value) if base is Path else value
    else:  # pragma: no cover - a declaration error
        raise TypeError(f"{cls.__name__}.{f.name}: unsupported argument type {base}")
    if o.min is not None and value < o.min or o.max is not None and value > o.max:
        bounds = (f"between {_num(o.min)} and {_num(o.max)}" if o.min is not None and o.max is not None
                  else f"at least {_num(o.min)}" if o.min is not None else f"at most {_num(o.max)}")
        raise ArgError(f"{where} {_num(value)} is out of range: it must be {bounds}")
    return value


def _num(x: float | None) -> str:
    return str(int(x)) if x is not None and float(x).is_integer() else f"{x:g}"


def _number(raw: Any, kind: type, where: str, text: bool) -> Any:
    what = "a whole number" if kind is int else "a number"
    if isinstance(raw, bool) or (not text and not isinstance(raw, (int, float))) or (
            kind is int and isinstance(raw, float)):
        raise ArgError(f"{where} must be {what}, not {raw!r}"[:200])
    try:
        value = kind(raw.strip()) if isinstance(raw, str) else kind(raw)
    except (ValueError, OverflowError):
        raise ArgError(f"{where} must be {what}, not {raw!r}"[:200]) from None
    if kind is float and not math.isfinite(value):
        raise ArgError(f"{where} must be a finite number, not {raw!r}")
    return value


def build(cls: type[ToolArgs], values: dict[str, Any], text: bool) -> ToolArgs:
    """An arguments object from {field name: raw value}; checked."""
    kwargs: dict[str, Any] = {}
    for f, o, base, is_list in opts(cls):
        if f.name not in values or values[f.name] is None:
            if o.required:
                raise ArgError(f"{o.flag or o.metavar or f.name} is required")
            continue
        raw = values[f.name]
        if is_list and raw == [] and not o.required:  # an optional positional list left empty
            continue
        if is_list:
            if not isinstance(raw, list) or not raw:
                raise ArgError(f"{o.flag or o.metavar or f.name} must be a non-empty list")
            if len(raw) > MAX_LIST:
                raise ArgError(f"{o.flag or o.metavar or f.name} has {len(raw)} items; at most {MAX_LIST} are taken")
            kwargs[f.name] = [coerce(cls, f, o, base, r, text) for r in raw]
        else:
            kwargs[f.name] = coerce(cls, f, o, base, raw, text)
    args = cls(**kwargs)
    args.check()
    return args


# ---------------------------------------------------------------- the two doors
class NoAbbrevParser(argparse.ArgumentParser):
    """argparse without prefix matching: `-t` is not `-threads`, `-res` is not `-resume`."""

    def _get_option_tuples(self, option_string: str):  # type: ignore[override]
        return []


def add_arguments(parser: argparse.ArgumentParser, cls: type[ToolArgs]) -> None:
    """The CLI flags of `cls` (values stay strings: `from_namespace` types and checks them)."""
    for f, o, base, is_list in opts(cls):
        if not o.cli:
            continue
        kw: dict[str, Any] = {"help": o.help}
        if o.metavar:
            kw["metavar"] = o.metavar
        if base is bool:
            if o.flag is None:
                raise TypeError(f"{cls.__name__}.{f.name}: a yes/no argument needs a flag")
            parser.add_argument(o.flag, dest=f.name, action="store_true", help=o.help)
            continue
        if o.flag is None:
            if is_list:
                kw["nargs"] = "+" if o.required else "*"
            elif not o.required:
                kw["nargs"] = "?"
            parser.add_argument(f.name, **kw)
        else:
            if is_list:
                kw["nargs"] = "+"
            if o.choices:
                kw["help"] = f"{o.help} ({', '.join(o.choices)})"
            parser.add_argument(o.flag, dest=f.name, required=o.required, **kw)


def from_namespace(cls: type[ToolArgs], ns: argparse.Namespace) -> ToolArgs:
    values = {f.name: getattr(ns, f.name, None) for f, o, _, _ in opts(cls) if o.cli}
    return build(cls, values, text=True)


def in_folder(args: ToolArgs, folder: Path | None) -> ToolArgs:
    """The job API's file names (file_in / file_out fields) as paths inside `folder` (server.files.dir): a name
    that is absolute or leaves the folder is refused, and so is any file name when no folder is configured."""
    changes: dict[str, Any] = {}
    for f, o, _, is_list in opts(type(args)):
        value = getattr(args, f.name)
        if o.api not in ("file_in", "file_out") or value in (None, []):
            continue
        if folder is None:
            raise ArgError(f"args.{json_name(f)} names a file, but this server has no files folder; set "
                           "server.files.dir (or send seeds as args.seedUrls)")
        root = folder.resolve()
        paths = []
        for name in value if is_list else [value]:
            path = (root / name).resolve()
            if Path(name).is_absolute() or root not in path.parents and path != root:
                raise ArgError(f"args.{json_name(f)}: {str(name)[:100]!r} is not a name inside the server's files "
                               "folder")
            if o.api == "file_in" and not path.exists():
                raise ArgError(f"args.{json_name(f)}: {str(name)[:100]!r} does not exist in the server's files folder")
            paths.append(path)
        changes[f.name] = paths if is_list else paths[0]
    return dataclasses.replace(args, **changes) if changes else args


def from_json(cls: type[ToolArgs], data: Any) -> ToolArgs:
    """Arguments from the job API's JSON `args` object (names as json_name gives them)."""
    if not isinstance(data, dict):
        raise ArgError('args must be an object, e.g. {"batch": "1700000000-1234"}')
    by_json = {json_name(f): (f, o) for f, o, _, _ in opts(cls)}
    unknown = sorted(set(data) - set(by_json))
    if unknown:
        takes = sorted(name for name, (_, o) in by_json.items() if o.api != "no")
        hint = " (properties go in the job's \"conf\", beside its args)" if "D" in unknown or "conf" in unknown else ""
        raise ArgError(f"unknown args {', '.join(unknown)[:200]}; this job takes {', '.join(takes) or 'none'}{hint}")
    values = {}
    for name, raw in data.items():
        f, o = by_json[name]
        if o.api == "no":
            raise ArgError(f"args.{name} cannot be set through the job API (the server decides it)")
        values[f.name] = raw
    return build(cls, values, text=False)


def json_schema(cls: type[ToolArgs]) -> dict[str, Any]:
    """The JSON schema of the job API's `args` for `cls` (the fields the API takes)."""
    props: dict[str, Any] = {}
    required = []
    for f, o, base, is_list in opts(cls):
        if o.api == "no":
            continue
        kind = {bool: "boolean", int: "integer", float: "number"}.get(base, "string")
        prop: dict[str, Any] = {"type": kind, "description": o.help}
        if o.min is not None:
            prop["minimum"] = o.min
        if o.max is not None:
            prop["maximum"] = o.max
        if o.choices:
            prop["enum"] = list(o.choices)
        if o.api in ("file_in", "file_out"):
            prop["description"] += " (a name inside the server's files folder, server.files.dir)"
        if is_list:
            prop = {"type": "array", "items": prop, "minItems": 1}
        props[json_name(f)] = prop
        if o.required:
            required.append(json_name(f))
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema
