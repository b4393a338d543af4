"""The `nutch2` command: Nutch's command names and single-dash options, -D overrides, one-line errors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nutch2.commands import COMMANDS
from nutch2.config import Configuration, parse_define
from nutch2.errors import NutchError, UsageError


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exits 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def add_common(p: argparse.ArgumentParser, crawl_id: bool = True) -> None:
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="key=value",
                   help="override a configuration property")
    p.add_argument("--conf", dest="conf_dir", metavar="DIR", help="configuration folder (default: ./conf)")
    if crawl_id:
        p.add_argument("-crawlId", dest="crawl_id", metavar="ID", help="crawl id (table <ID>_webpage)")


def build_parser() -> Parser:
    parser = Parser(prog="nutch2", description="A storage-abstracted web crawler in the style of Apache Nutch 2.",
                    allow_abbrev=False)
    parser.add_argument("--conf", dest="global_conf_dir", metavar="DIR", help="configuration folder")
    parser.add_argument("-D", dest="global_defines", action="append", default=[], metavar="key=value",
                        help="override a configuration property")
    parser.add_argument("--version", action="version", version=f"nutch2 {__import__('nutch2').__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=Parser)
    for name, (help_text, fn) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text, allow_abbrev=False)
        getattr(fn, "arguments", lambda _p: None)(p)
        add_common(p, crawl_id=name != "search")
    return parser


def load_conf(args: argparse.Namespace) -> Configuration:
    defines = dict(parse_define(d) for d in [*args.global_defines, *getattr(args, "defines", [])])
    conf_dir = getattr(args, "conf_dir", None) or args.global_conf_dir
    return Configuration(Path(conf_dir) if conf_dir else None, defines)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # usage errors (2) and --help (0) return instead of exiting the caller
        return int(e.code or 0)
    if not args.command:
        parser.print_help()
        return 2
    try:
        conf = load_conf(args)
        return COMMANDS[args.command][1](args, conf)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 2
    except NutchError as e:
        print(f"nutch2 {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"nutch2 {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # `python -m nutch2.cli`
    sys.exit(main())
