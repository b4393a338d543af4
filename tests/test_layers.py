"""The layers of docs/ARCHITECTURE.md, checked on the imports of every module: cli and the searcher -> tools ->
jobs -> core and stores; stores -> the model only; no job imports another job; no core module imports a tool, a
job or the CLI; nothing imports the CLI; no backend client outside its store module; plugins use the core only (no
job, tool, store or other plugin); no module imports a plugin (the plugin system finds them: nutch2/plugin/); and
no two product modules import each other, directly or round a longer loop. In tests/, no test module imports
another one or runs the CLI through a subprocess helper of its own: they share tests/helpers.py."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLI = {"nutch2.cli"}
BACKENDS = {f"nutch2.stores.{p.stem}" for p in (REPO / "stores").glob("*.py")} - {
    f"nutch2.stores.{m}" for m in ("__init__", "base", "query", "index", "lease", "codec", "sqlbase")}
CLIENTS = {"happybase", "cassandra", "sqlite3", "thriftpy2", "psycopg", "Hbase_thrift"}
# what the store layer may use besides itself: the model and a few leaf helpers
STORE_DEPS = {"nutch2.webpage", "nutch2.errors", "nutch2.config", "nutch2.marks", "nutch2.failpoints", "nutch2.logs"}


def modules() -> dict[str, Path]:
    """Module name -> file, with the package-dir mapping of pyproject.toml (stores/ and jobs/ are top level)."""
    found: dict[str, Path] = {}
    for folder, package in (("nutch2", "nutch2"), ("stores", "nutch2.stores"), ("jobs", "nutch2.jobs")):
        for path in (REPO / folder).rglob("*.py"):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            name = ".".join((package, *parts)).removesuffix(".__init__")
            found[name] = path
    return found


def imports(path: Path, name: str) -> set[str]:
    """Every module a file imports (relative imports resolved), wherever in the file the import is."""
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}  # `from nutch2 import jobs` names a module too
    return out


def plugin_of(name: str) -> str | None:
    """The plugin package a module belongs to (nutch2.plugins.<plugin>), None for the rest."""
    parts = name.split(".")
    return ".".join(parts[:3]) if len(parts) >= 3 and parts[:2] == ["nutch2", "plugins"] else None


def layer(name: str) -> str:
    if plugin_of(name):
        return "plugin"
    if name in CLI or name == "nutch2.__main__":
        return "cli"
    if name.startswith("nutch2.searcher"):
        return "app"
    if name.startswith("nutch2.tools"):
        return "tools"
    if name.startswith("nutch2.jobs"):
        return "jobs"
    if name.startswith("nutch2.stores"):
        return "stores"
    return "core"


def violations() -> list[str]:
    mods = modules()
    bad = []
    for name, path in sorted(mods.items()):
        used = {m for m in imports(path, name) if (m in mods and m != "nutch2") or m.split(".")[0] in CLIENTS}
        me = layer(name)
        for dep in sorted(used):
            why = None
            if dep in CLI and name != "nutch2.__main__":
                why = "imports the CLI (nothing may)"
            elif me in ("core", "stores", "jobs", "tools") and layer(dep) == "app":
                why = "imports the searcher (the CLI starts it: nutch2/searcher/command.py)"
            elif me in ("core", "stores", "jobs") and layer(dep) == "tools":
                why = "imports a tool (only the CLI and the job API run tools)"
            elif me == "core" and layer(dep) == "jobs":
                why = "core imports a job"
            elif me == "jobs" and layer(dep) == "jobs" and dep not in ("nutch2.jobs", name):
                why = "a job imports another job"
            elif me != "stores" and dep in BACKENDS:
                why = "imports a concrete store (use open_store)"
            elif dep.split(".")[0] in CLIENTS and not (me == "stores" and name in BACKENDS):
                why = "uses a store backend's client outside its store module"
            elif me == "stores" and layer(dep) != "stores" and dep not in STORE_DEPS and dep in mods:
                why = "the store layer imports above the model"
            if why is None and (plugin_of(dep) or dep == "nutch2.plugins") and plugin_of(dep) != plugin_of(name):
                why = ("imports a plugin (the plugin system finds them: nutch2.plugin.Plugins)"
                       if me != "plugin" else "a plugin imports another plugin (share code through the core)")
            if why is None and me == "plugin" and layer(dep) in ("jobs", "tools", "app", "stores", "cli"):
                why = "a plugin imports above the core (jobs, tools, stores, the searcher or the CLI)"
            if why:
                bad.append(f"{name} -> {dep}: {why}")
    return bad


def test_layers_are_kept() -> None:
    assert violations() == []


def edges(path: Path, name: str, mods: dict[str, Path]) -> set[str]:
    """The modules a file needs: `from pkg import mod` needs pkg.mod, `from pkg import name` needs pkg."""
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in mods}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in mods else base)
    return {m for m in out if m in mods}


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: {m for m in edges(path, name, mods) if m != name and m != "nutch2"} for name, path in mods.items()}


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or round a longer loop (strongly connected: Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_two_modules_import_each_other() -> None:
    assert loops(import_graph()) == []


def test_the_check_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself finds what it must (so an empty list above means something)."""
    src = "from nutch2.jobs.parse import ParserJob\nimport happybase\nfrom nutch2.cli import main\n"
    path = tmp_path / "fake.py"
    path.write_text(src)
    assert {"nutch2.jobs.parse", "happybase", "nutch2.cli"} <= imports(path, "nutch2.fake")
    assert layer("nutch2.tools.batch") == "tools" and layer("nutch2.searcher.app") == "app"
    assert layer("nutch2.fake") == "core" and layer("nutch2.jobs.parse") == "jobs"
    assert layer("nutch2.plugins.parse_tika.tika") == "plugin" and layer("nutch2.plugin.repository") == "core"
    assert plugin_of("nutch2.plugins.parse_tika.tika") == "nutch2.plugins.parse_tika"
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from nutch2.b import x\n")
    b.write_text("import nutch2.a\n")
    assert edges(a, "nutch2.a", {"nutch2.a": a, "nutch2.b": b}) == {"nutch2.b"}
    assert edges(b, "nutch2.b", {"nutch2.a": a, "nutch2.b": b}) == {"nutch2.a"}
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_reserved_row_keys_have_one_home() -> None:
    """The metadata keys and marks nutch2 keeps in a row ("_name_") are written in nutch2/rowkeys.py and
    nutch2/marks.py only; every other module names them by their constant."""
    import re

    homes = {"nutch2.rowkeys", "nutch2.marks"}
    found = [f"{name}:{node.lineno} {node.value!r}" for name, path in sorted(modules().items()) if name not in homes
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and re.fullmatch(r"_[a-z]+_", node.value)]
    assert found == []


def test_no_simple_queue_whose_timed_get_can_block_for_ever() -> None:
    """queue.SimpleQueue's get(timeout=t) can block for ever (CPython 3.11.7 here; main's _queuemodule.c reads the
    same): when its first try
    takes the free lock it works out the time left, and if the thread lost the CPU for longer than t in between,
    that is negative, which its lock wait reads as "no timeout". A CI's chromium fetch hung on one 1 ms get for
    25 minutes (2026-12-07); `q.put(1); q.get(); q.get(timeout=1e-6)` in a loop hangs within a few thousand
    rounds. queue.Queue waits on a Condition, whose lock wait checks for that: the product uses it."""
    found = [f"{name}:{node.lineno}" for name, path in sorted(modules().items())
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Attribute) and node.attr == "SimpleQueue"
             or isinstance(node, ast.alias) and node.name == "SimpleQueue"]
    assert found == []


def test_journal_writes_have_one_home() -> None:
    """Every write to the batch journal is a transition of nutch2/crawldb/lifecycle.py: no other module calls a
    writing method of a Journal (`Journal(store).record(...)`, or of a name bound to one)."""
    writes = {"record", "advance", "fetching", "forget", "start_update", "forget_all_update", "record_crawl"}
    homes = {"nutch2.crawldb.lifecycle", "nutch2.crawldb.journal"}

    def journal(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Journal"

    found = []
    for name, path in sorted(modules().items()):
        if name in homes:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and journal(n.value)
                 for t in n.targets if isinstance(t, ast.Name)}
        found += [f"{name}:{n.lineno} .{n.func.attr}()" for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and isinstance(n.func, ast.Attribute) and n.func.attr in writes
                  and (journal(n.func.value) or isinstance(n.func.value, ast.Name) and n.func.value.id in bound)]
    assert found == []


# ---------------------------------------------------------------------------------------------------- tests/
RUNS = {"run", "call", "check_call", "check_output"}  # the subprocess functions that wait for the command's end


def waits_for_a_command(node: ast.AST) -> bool:
    """A call of subprocess.run (or call, check_call, check_output)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RUNS
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "subprocess")


def cli_command(node: ast.AST) -> bool:
    """A command line `[..., "-m", "nutch2.cli", ...]` (or `-m nutch2`), as a list or tuple."""
    words = [e.value if isinstance(e, ast.Constant) else None for e in getattr(node, "elts", [])]
    return isinstance(node, ast.List | ast.Tuple) and any(
        a == "-m" and b in ("nutch2", "nutch2.cli") for a, b in zip(words, words[1:], strict=False))


def runs_the_cli(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A function that puts the CLI's command line together and waits for it in a subprocess."""
    inside = list(ast.walk(func))
    return any(map(waits_for_a_command, inside)) and any(map(cli_command, inside))


def imported_test_modules(node: ast.AST) -> list[str]:
    """The tests/test_*.py modules an import names: `import tests.test_x`, `from tests.test_x import y`,
    `from tests import test_x`, `from .test_x import y`."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level == 1:  # relative to tests/
            base = f"tests.{base}" if base else "tests"
        names = [f"{base}.{a.name}" for a in node.names] if base == "tests" else [base]
    else:
        return []
    return [n for n in names if n.startswith("tests.test_")]


def faults_of(path: Path) -> list[str]:
    """What a tests/test_*.py module must not do: import another test module (shared helpers are in
    tests/helpers.py), or define a helper of its own (a function taking *args) that runs `python -m nutch2` in a
    subprocess to its end (tests/helpers.py has the one `nutch2(...)`)."""
    me = f"tests.{path.stem}"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        found += [f"{path.name}:{node.lineno} imports {m}" for m in imported_test_modules(node) if m != me]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.args.vararg and runs_the_cli(node):
            found.append(f"{path.name}:{node.lineno} {node.name}() runs the CLI itself (use tests.helpers.nutch2)")
    return found


def test_tests_share_helpers_through_tests_helpers() -> None:
    """No tests/test_*.py imports another one or runs the CLI through a subprocess helper of its own."""
    assert [f for path in sorted((REPO / "tests").glob("test_*.py")) for f in faults_of(path)] == []


def test_the_tests_check_sees_a_fault(tmp_path: Path) -> None:
    """The check finds each kind of fault, and passes what test modules legitimately do."""
    path = tmp_path / "test_fake.py"
    path.write_text("""\
import subprocess, sys
import tests.test_robots
from tests import helpers, test_stop
from tests.test_crash_safety import table
from .test_parse_job import put_fetched
from tests.helpers import nutch2
from tests.testweb import TestWeb
from tests.test_fake import me


def nutch(*args):
    return subprocess.run([sys.executable, "-m", "nutch2.cli", *map(str, args)], capture_output=True)


def nutch_on(tmp, *args):
    cmd = [sys.executable, "-m", "nutch2.cli", *map(str, args), "-crawlId", "x"]
    return subprocess.run(cmd, cwd=tmp)


def nutch2_with(site, *args):
    return nutch2(*args, env={"PYTHONPATH": str(site)})


def kill_when(*args):
    return subprocess.Popen([sys.executable, "-m", "nutch2.cli", *args])


def pip(*args):
    return subprocess.run([sys.executable, "-m", "pip", *args])


async def cli(*args):
    return subprocess.check_output(args=[sys.executable, "-m", "nutch2", *args])


def test_inline():
    subprocess.run([sys.executable, "-m", "nutch2", "--help"])
""")
    assert faults_of(path) == [
        "test_fake.py:2 imports tests.test_robots", "test_fake.py:3 imports tests.test_stop",
        "test_fake.py:4 imports tests.test_crash_safety", "test_fake.py:5 imports tests.test_parse_job",
        "test_fake.py:11 nutch() runs the CLI itself (use tests.helpers.nutch2)",
        "test_fake.py:15 nutch_on() runs the CLI itself (use tests.helpers.nutch2)",
        "test_fake.py:32 cli() runs the CLI itself (use tests.helpers.nutch2)"]
