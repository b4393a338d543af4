"""The container files, checked without a Docker engine (the development machines and CI have none to build with):
docker/Dockerfile read by Docker's own parser (the `dockerfile` package wraps BuildKit's Go parser), .dockerignore
read as Docker matches it, docker/compose.yml by PyYAML, and the commands the compose services and README's
`docker run` lines give nutch2 parsed by nutch2's own command line. Each check returns the problems it finds; the
broken variants show that each can fail. The slow test runs the Dockerfile's pip steps in a fresh virtual
environment, then `nutch2 --help`, and the compose searcher's command and health check from there. The apt steps
(chromium, a JRE) need root and Debian's mirrors, so they are only read."""

from __future__ import annotations

import fnmatch
import ipaddress
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import dockerfile
import pytest
import yaml

from nutch2.cli import build_parser
from nutch2.config import parse_define
from nutch2.searcher.command import ServerArgs
from nutch2.tools import TOOLS
from nutch2.tools.args import ArgError, ToolArgs, from_namespace

REPO = Path(__file__).resolve().parent.parent
DOCKER = REPO / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
COMPOSE = DOCKER / "compose.yml"
DOCKERIGNORE = REPO / ".dockerignore"
BASE = "python:3.11-slim-bookworm"
VENV = "/opt/nutch2"
USER = "nutch"
# the extras an operator's image carries, pinned: not test (nor all, which holds it), spark only with WITH_SPARK
EXTRAS = ["server", "solr", "opensearch", "postgres", "hbase", "cassandra", "warc", "chromium", "socks", "http2",
          "xpath", "langid"]
# what the build context must not carry, and what it must (the package's sources)
IGNORED = [".git/config", ".services/solr/lib/x.jar", "crawl/webpage.db", "tests/data/articles", "bench/out/x",
           "nutch2/__pycache__/cli.cpython-311.pyc", "docker/secrets/searcher-token", "seeds/seeds.txt"]
KEPT = ["nutch2/cli.py", "nutch2/searcher/templates", "stores/sqlite.py", "jobs/fetch.py", "conf/nutch-default.toml",
        "conf/solr/nutch/conf/schema.xml", "pyproject.toml", "setup.py", "README.md", "docker/Dockerfile"]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------- the Dockerfile


@dataclass
class Stage:
    """One FROM and the instructions under it."""

    base: str
    name: str | None
    commands: list[dockerfile.Command] = field(default_factory=list)

    def all(self, cmd: str) -> list[dockerfile.Command]:
        return [c for c in self.commands if c.cmd == cmd]

    def last(self, cmd: str) -> dockerfile.Command | None:
        found = self.all(cmd)
        return found[-1] if found else None

    def index(self, cmd: str, value: tuple[str, ...] | None = None) -> int:
        """Where the last `cmd` (with this value) stands, -1 when there is none."""
        spots = [i for i, c in enumerate(self.commands) if c.cmd == cmd and (value is None or c.value == value)]
        return spots[-1] if spots else -1

    def pairs(self, cmd: str) -> dict[str, str]:
        """ENV's or LABEL's names and values (unquoted), later ones winning."""
        out: dict[str, str] = {}
        for c in self.all(cmd):
            out.update(zip(c.value[::2], (unquote(v) for v in c.value[1::2]), strict=True))
        return out

    def args(self) -> dict[str, str]:
        """The ARGs and their defaults."""
        return dict(unquote(v).partition("=")[::2] for c in self.all("ARG") for v in c.value)

    def runs(self) -> list[str]:
        return [c.value[0] for c in self.all("RUN")]


def unquote(value: str) -> str:
    return shlex.split(value)[0] if value[:1] in ('"', "'") else value


def stages(text: str) -> list[Stage]:
    found: list[Stage] = []
    for c in dockerfile.parse_string(text):
        if c.cmd == "FROM":
            named = len(c.value) == 3 and c.value[1].upper() == "AS"
            found.append(Stage(c.value[0], c.value[2] if named else None))
        elif found:
            found[-1].commands.append(c)
    return found


def server_port() -> int:
    return next(f.default for f in fields(ServerArgs) if f.name == "port")  # type: ignore[return-value]


def dockerfile_problems(text: str) -> list[str]:
    """What is wrong with the Dockerfile: two stages, a venv built in the first and copied into the second."""
    try:
        found = stages(text)
    except dockerfile.GoParseError as e:
        return [f"Docker's parser refuses it: {e}"]
    if len(found) != 2 or found[0].name != "build":
        return ["two stages expected: `FROM ... AS build` (the venv), then the image"]
    problems = [f"a stage is FROM {s.base}, not {BASE}" for s in found if s.base != BASE]
    for run in (r for s in found for r in s.runs()):
        if re.search(r"\b(curl|wget)\b[^;&|]*\|\s*(sudo\s+)?(ba|da|z)?sh\b", run):
            problems.append(f"a script from the network is piped into a shell: {run[:80]}")
    problems += [f"ADD {c.value}: use COPY (ADD fetches URLs, unpacks archives)" for s in found for c in s.all("ADD")]
    return problems + build_problems(found[0]) + image_problems(found[1])


def build_problems(build: Stage) -> list[str]:
    problems = []
    if build.pairs("ENV") != {"VIRTUAL_ENV": VENV, "PATH": "$VIRTUAL_ENV/bin:$PATH"}:
        problems.append(f"the build stage's ENV should be VIRTUAL_ENV={VENV} and PATH=$VIRTUAL_ENV/bin:$PATH only "
                        f"(the slow test gives the same two), not {build.pairs('ENV')}")
    copied = {s.rstrip("/") for c in build.all("COPY") for s in c.value[:-1]}
    needed = {"pyproject.toml", "setup.py", PYPROJECT["project"]["readme"],
              *PYPROJECT["tool"]["setuptools"]["package-dir"].values()}
    problems += [f"the build stage does not COPY {n} (the package is built from it)" for n in sorted(needed - copied)]
    args = build.args()
    extras = args.get("NUTCH2_EXTRAS", "").split(",")
    if extras != EXTRAS:
        problems.append(f"ARG NUTCH2_EXTRAS={','.join(extras)}, not the pinned {','.join(EXTRAS)}")
    declared = PYPROJECT["project"]["optional-dependencies"]
    problems += [f"extra {e!r} is not in pyproject.toml" for e in extras if e and e not in declared]
    if args.get("WITH_SPARK") != "false":
        problems.append("the build stage needs ARG WITH_SPARK=false")
    installs = [r for r in build.runs() if "pip install" in r]
    if not any('$NUTCH2_EXTRAS' in r and '".[$extras]"' in r and ',spark' in r and '"$WITH_SPARK" = true' in r
               for r in installs):
        problems.append('no RUN installs ".[$extras]" from NUTCH2_EXTRAS (plus spark when WITH_SPARK=true)')
    if not any(r.startswith('python3 -m venv "$VIRTUAL_ENV"') for r in build.runs()):
        problems.append('no RUN makes the venv: python3 -m venv "$VIRTUAL_ENV"')
    return problems


def image_problems(image: Stage) -> list[str]:
    problems = []
    args, env, runs = image.args(), image.pairs("ENV"), image.runs()
    if args.get("WITH_CHROMIUM") != "false" or args.get("WITH_SPARK") != "false":
        problems.append("the image needs ARG WITH_CHROMIUM=false and ARG WITH_SPARK=false")
    apt = [r for r in runs if "apt-get install" in r]
    wanted = ['"$WITH_CHROMIUM" = true', 'packages="$packages chromium"', '"$WITH_SPARK" = true',
              "openjdk-17-jre-headless", "apt-get update", "--no-install-recommends", "rm -rf /var/lib/apt/lists/*"]
    if len(apt) != 1 or any(w not in apt[0] for w in wanted):
        problems.append(f"one RUN should apt-get install chromium (WITH_CHROMIUM) and a JRE (WITH_SPARK): {wanted}")
    if not any(f"useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin {USER}" in r for r in runs):
        problems.append(f"no RUN makes the user {USER} (uid 10001)")
    users = image.all("USER")
    entry = image.index("ENTRYPOINT")
    if not users or users[-1].value != (USER,) or image.index("USER") > entry:
        problems.append(f"USER {USER} must be the last USER, before the ENTRYPOINT")
    if image.index("ENTRYPOINT", ("nutch2",)) < 0 or not image.last("ENTRYPOINT").json:  # type: ignore[union-attr]
        problems.append('ENTRYPOINT ["nutch2"] expected (exec form)')
    cmd = image.last("CMD")
    if cmd is None or cmd.value != ("--help",) or not cmd.json:
        problems.append('CMD ["--help"] expected')
    if not any(c.value[-2:] == (VENV, VENV) and "--from=build" in c.flags for c in image.all("COPY")):
        problems.append(f"the image should COPY --from=build {VENV} {VENV}")
    if not env.get("PATH", "").startswith(f"{VENV}/bin:"):
        problems.append(f"PATH should start with {VENV}/bin")
    conf_dir = env.get("NUTCH_CONF_DIR")
    if not conf_dir or not any(re.search(rf"mkdir -p [^&;]*{re.escape(conf_dir)}\b", r) for r in runs):
        problems.append("NUTCH_CONF_DIR should name a folder a RUN makes (the conf mount point)")
    workdir = image.last("WORKDIR")
    volumes = [v for c in image.all("VOLUME") for v in c.value]
    data_dir = tomllib.loads((REPO / "conf" / "nutch-default.toml").read_text())["storage.data.dir"]
    if workdir is None or workdir.value[0] not in volumes or Path(data_dir).is_absolute():
        problems.append(f"the WORKDIR should be the VOLUME, so that storage.data.dir ({data_dir}) lies in it")
    if [v for c in image.all("EXPOSE") for v in c.value] != [str(server_port())]:
        problems.append(f"EXPOSE should be the searcher's default port {server_port()} alone")
    labels = image.pairs("LABEL")
    project = PYPROJECT["project"]
    expected = {"title": project["name"], "version": project["version"], "licenses": project["license"]["text"],
                "description": project["description"]}
    for key, value in expected.items():
        if labels.get(f"org.opencontainers.image.{key}") != value:
            problems.append(f"LABEL org.opencontainers.image.{key} should be {value!r} (pyproject.toml)")
    return problems


def ignore_patterns(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines()]
    return [line.strip("/") for line in lines if line and not line.startswith("#")]


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves `path` (relative to the context) out: a pattern matches it or a folder above it."""
    parts = path.split("/")
    for prefix in ("/".join(parts[:i]) for i in range(1, len(parts) + 1)):
        for pattern in patterns:
            if fnmatch.fnmatchcase(prefix, pattern) or (
                    pattern.startswith("**/") and fnmatch.fnmatchcase(prefix, pattern[3:])):
                return True
    return False


def dockerignore_problems(text: str) -> list[str]:
    patterns = ignore_patterns(text)
    if any(p.startswith("!") for p in patterns):
        return ["no exceptions (!pattern) please: this check does not read them"]
    return ([f"the build context keeps {p}" for p in IGNORED if not ignored(p, patterns)]
            + [f"the build context lacks {p}" for p in KEPT if ignored(p, patterns)])


def test_the_dockerfile() -> None:
    assert dockerfile_problems(DOCKERFILE.read_text(encoding="utf-8")) == []


def test_the_dockerignore() -> None:
    assert dockerignore_problems(DOCKERIGNORE.read_text(encoding="utf-8")) == []


# ------------------------------------------------------------------------------------------------ compose.yml


_VAR = re.compile(r"\$\$|\$\{(\w+)(?::?-([^}]*))?\}")


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's ${VAR}, ${VAR:-default} and $$ in every string of the file."""
    if isinstance(value, str):
        return _VAR.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1)) or m.group(2) or "", value)
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    return value


def compose(text: str) -> dict[str, Any]:
    return interpolate(yaml.safe_load(text), {})


def parse_command(argv: list[str]) -> tuple[Any, ToolArgs]:
    """nutch2's own parse of a command line (raises SystemExit or ArgError when it refuses it)."""
    ns, extra = build_parser().parse_known_args(argv)
    if extra or not ns.command:
        raise ArgError(f"unrecognized: {extra or argv}")
    return ns, from_namespace(TOOLS[ns.command].Args, ns)


def published(port: Any) -> tuple[str, int]:
    """(host address, container port) of a `ports:` entry."""
    if isinstance(port, dict):
        return str(port.get("host_ip", "")), int(port["target"])
    parts = str(port).split(":")
    return (parts[0] if len(parts) == 3 else ""), int(parts[-1].split("/")[0])


def container_port(service: dict[str, Any]) -> int | None:
    ports = [published(p)[1] for p in service.get("ports", [])]
    return ports[0] if ports else None


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """target -> source of a service's volumes."""
    out = {}
    for v in service.get("volumes", []):
        source, target = (v["source"], v["target"]) if isinstance(v, dict) else str(v).split(":")[:2]
        out[target] = source
    return out


def healthy_dependency(service: dict[str, Any], name: str) -> bool:
    deps = service.get("depends_on", {})
    return isinstance(deps, dict) and deps.get(name, {}).get("condition") == "service_healthy"


def git_ignored(path: Path) -> bool:
    rel = os.path.relpath(path, REPO)
    return subprocess.run(["git", "check-ignore", "-q", rel], cwd=REPO).returncode == 0


def compose_problems(doc: dict[str, Any]) -> list[str]:
    services = doc.get("services", {})
    problems = [f"{name}: port {port} is published beyond 127.0.0.1" for name, svc in services.items()
                for port in svc.get("ports", []) if published(port)[0] != "127.0.0.1"]
    if "crawler" not in services or "searcher" not in services:
        return [*problems, "no crawler and searcher services"]
    parsed = {}
    for name in ("crawler", "searcher"):
        svc = services[name]
        build = svc.get("build", {})
        if (DOCKER / build.get("context", "?")).resolve() != REPO or build.get("dockerfile") != "docker/Dockerfile":
            problems.append(f"{name}: build should be the repository root with docker/Dockerfile")
        if svc.get("image") != "nutch2" or svc.get("init") is not True:
            problems.append(f"{name}: image nutch2 (as README's docker build tags it) with init: true")
        try:
            parsed[name] = parse_command([str(w) for w in svc.get("command", [])])
        except (SystemExit, ArgError) as e:
            problems.append(f"{name}: nutch2 refuses its command {svc.get('command')}: {e}")
    if problems:
        return problems
    (cns, crawl), (sns, server) = parsed["crawler"], parsed["searcher"]
    crawler, searcher = services["crawler"], services["searcher"]
    # both over one crawl: the same table (in the shared volume, or a store service) and the same index
    data = mounts(crawler).get("/data")
    if data is None or mounts(searcher).get("/data") != data or data not in doc.get("volumes", {}):
        problems.append("crawler and searcher should mount one named volume on /data (the image's VOLUME)")
    elif (doc["volumes"][data] or {}).get("name") != data:
        problems.append(f"volume {data} should be named {data} (README's docker run -v {data}:/data sees it)")
    for name, ns in (("crawler", cns), ("searcher", sns)):
        store = dict(parse_define(d) for d in ns.defines).get("storage.data.store.class", "sqlite")
        if store not in ("sqlite", "memory") and not healthy_dependency(services[name], store):
            problems.append(f"{name}: the {store} store needs depends_on {store} (service_healthy)")
    if cns.crawl_id != sns.crawl_id or (crawl.solr, crawl.opensearch) != (server.solr, server.opensearch):
        problems.append("crawler and searcher should name the same crawl and the same index")
    index = urlparse(crawl.solr or crawl.opensearch or "")
    target = services.get(index.hostname or "")
    if target is None or not healthy_dependency(crawler, index.hostname) or not healthy_dependency(
            searcher, index.hostname) or index.port != container_port(target):
        problems.append(f"the index {index.geturl()} should be a service both depend on (healthy), at its port")
    elif crawl.solr and index.path.split("/")[2:3] != target.get("command", [None, None])[1:2]:
        problems.append(f"{index.path}: not the core the solr service creates ({target.get('command')})")
    # the crawler: for ever, from a mounted seed folder, listening on nothing
    if cns.command != "crawl" or not crawl.continuous:
        problems.append("the crawler should run `crawl SEEDS -continuous`")
    if str(crawl.seeds) not in mounts(crawler):
        problems.append(f"the crawler's seeds {crawl.seeds} are not a mounted folder")
    if crawler.get("ports"):
        problems.append("the crawler listens on nothing: no ports")
    # the searcher: on its container's every address, so a login, and its port published and checked
    if sns.command != "server":
        problems.append("the searcher should run `server`")
    loopback = server.host in ("localhost", "::1") or ipaddress.ip_address(server.host).is_loopback
    if loopback:
        problems.append("the searcher should listen on -host 0.0.0.0 (a loopback host is unreachable from outside)")
    if server.insecure or not (server.tokenFile or server.users):
        problems.append("the searcher needs -tokenFile or -users (not -insecure): README, Security")
    secret = re.fullmatch(r"/run/secrets/(\w+)", server.tokenFile or "")
    if server.tokenFile and (secret is None or secret.group(1) not in searcher.get("secrets", [])):
        problems.append(f"-tokenFile {server.tokenFile} should be a secret of the searcher (/run/secrets/NAME)")
    elif secret:
        source = doc.get("secrets", {}).get(secret.group(1), {}).get("file")
        if not source or not git_ignored(DOCKER / source):
            problems.append(f"secret {secret.group(1)}: its file ({source}) should be git-ignored")
    if container_port(searcher) != server.port:
        problems.append(f"the searcher's published port should be its -port {server.port}")
    check = " ".join(searcher.get("healthcheck", {}).get("test", []))
    if f'"127.0.0.1", {server.port}' not in check:
        problems.append(f"the searcher's healthcheck should ask 127.0.0.1:{server.port}")
    return problems


def test_the_compose_file() -> None:
    assert compose_problems(compose(COMPOSE.read_text(encoding="utf-8"))) == []


def readme_docker_runs() -> list[list[str]]:
    """nutch2's arguments in the `docker run` lines of README's "Running in containers"."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Running in containers", 1)[1].split("\n## ", 1)[0]
    runs = []
    for line in section.splitlines():
        if line.startswith("docker run "):
            words = shlex.split(line.split("  #", 1)[0])
            runs.append(words[words.index("nutch2") + 1:])
    return runs


def test_the_readme_docker_runs_are_nutch2_commands() -> None:
    runs = readme_docker_runs()
    assert any(r[:1] == ["crawl"] for r in runs), runs
    for argv in runs:
        parse_command(argv)


# ------------------------------------------------------------------------------------ each check can fail


DOCKERFILE_BREAKS = [
    ("FROM python:3.11-slim-bookworm\nARG WITH_CHROMIUM", "FROM debian:bookworm-slim\nARG WITH_CHROMIUM", "not python"),
    ("USER nutch\nENTRYPOINT", "USER root\nENTRYPOINT", "USER nutch"),
    ('USER nutch\nENTRYPOINT ["nutch2"]\n', 'ENTRYPOINT ["nutch2"]\nUSER nutch\n', "before the ENTRYPOINT"),
    ('ENTRYPOINT ["nutch2"]', "ENTRYPOINT nutch2", "ENTRYPOINT"),
    ('CMD ["--help"]', 'CMD ["crawl"]', "CMD"),
    ('VOLUME ["/data"]\n', "", "VOLUME"),
    ("WORKDIR /data", "WORKDIR /app", "VOLUME"),
    ("EXPOSE 8081", "EXPOSE 8080", "EXPOSE"),
    ("ARG WITH_CHROMIUM=false", "ARG WITH_CHROMIUM=true", "WITH_CHROMIUM=false"),
    ('packages="$packages chromium"', 'packages="$packages"', "apt-get install chromium"),
    ("USER nutch\n", "RUN curl -fsSL https://example.org/install | sh\nUSER nutch\n", "piped into a shell"),
    ("USER nutch\n", "ADD https://example.org/x.tar.gz /opt/\nUSER nutch\n", "ADD"),
    ("ARG NUTCH2_EXTRAS=server,", "ARG NUTCH2_EXTRAS=test,server,", "pinned"),
    ("ARG NUTCH2_EXTRAS=server,", "ARG NUTCH2_EXTRAS=nosuchextra,server,", "not in pyproject"),
    ('pip install ".[$extras]"', 'pip install ".[all]"', 'installs ".[$extras]"'),
    ("COPY stores/ stores/\n", "", "COPY stores"),
    ("ENV PATH=$VIRTUAL_ENV/bin:$PATH", "ENV PATH=/usr/local/bin:$PATH", "build stage's ENV"),
    ("COPY --from=build /opt/nutch2", "COPY --from=build /opt/venv", "COPY --from=build /opt/nutch2"),
    (" NUTCH_CONF_DIR=/conf", "", "NUTCH_CONF_DIR"),
    ("useradd --uid 10001", "useradd --uid 0", "makes the user"),
    ('image.version="0.1.0"', 'image.version="0.0.9"', "image.version"),
    ("FROM python:3.11-slim-bookworm AS build", "FROM python:3.11-slim-bookworm", "two stages"),
]


@pytest.mark.parametrize(("old", "new", "said"), DOCKERFILE_BREAKS, ids=[b[2] for b in DOCKERFILE_BREAKS])
def test_a_broken_dockerfile_is_caught(old: str, new: str, said: str) -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    problems = dockerfile_problems(text.replace(old, new))
    assert any(said in p for p in problems), problems


DOCKERIGNORE_BREAKS = [
    ("\ntests\n", "\n", "keeps tests/data"),
    ("\n.services\n", "\n", "keeps .services"),
    ("\ndocker/secrets\n", "\n", "keeps docker/secrets"),
    ("\ncrawl\n", "\n*.py\n", "lacks setup.py"),
    ("\nbench/out\n", "\nbench/out\nconf\n", "lacks conf"),
    ("\ntests\n", "\n!tests\n", "exceptions"),
]


@pytest.mark.parametrize(("old", "new", "said"), DOCKERIGNORE_BREAKS, ids=[b[2] for b in DOCKERIGNORE_BREAKS])
def test_a_broken_dockerignore_is_caught(old: str, new: str, said: str) -> None:
    text = DOCKERIGNORE.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    problems = dockerignore_problems(text.replace(old, new))
    assert any(said in p for p in problems), problems


COMPOSE_BREAKS = [
    ('"127.0.0.1:8081:8081"', '"8081:8081"', "searcher: port"),
    ('"127.0.0.1:8983:8983"', '"0.0.0.0:8983:8983"', "solr: port"),
    ('"-tokenFile", "/run/secrets/searcher_token"]', '"-v"]', "-tokenFile or -users"),
    ('"-tokenFile", "/run/secrets/searcher_token"]', '"-insecure"]', "-tokenFile or -users"),
    ('"-tokenFile", "/run/secrets/searcher_token"', '"-token", "/run/secrets/searcher_token"', "refuses"),
    ('"-tokenFile", "/run/secrets/searcher_token"', '"-tokenFile", "/data/token"', "should be a secret"),
    ("file: ./secrets/searcher-token", "file: ./searcher-token", "git-ignored"),
    ('"-host", "0.0.0.0"', '"-host", "127.0.0.1"', "-host 0.0.0.0"),
    ('"-port", "8081"', '"-port", "9000"', "published port"),
    ("HTTPConnection(\"127.0.0.1\", 8081", "HTTPConnection(\"127.0.0.1\", 8080", "healthcheck"),
    ('"/seeds", "-continuous",', '"/seeds", "-rounds", "2",', "crawl SEEDS -continuous"),
    ("      - ../seeds:/seeds:ro", "      - ../seeds:/in:ro", "seeds /seeds"),
    ('"-continuous", "-solr", "http://solr:8983/solr/nutch"', '"-continuous", "-solr", "http://127.0.0.1:8983/solr/nutch"',
     "same index"),
    ('"solr-precreate", "nutch"', '"solr-precreate", "other"', "not the core"),
    ("    volumes:\n      - nutch2-data:/data\n    secrets:", "    volumes:\n      - solr-data:/data\n    secrets:",
     "one named volume"),
    ("    name: nutch2-data", "", "should be named"),
    ("    depends_on:\n      solr: {condition: service_healthy}\n    # a STOP", "    # a STOP", "depend on"),
    ("    dockerfile: docker/Dockerfile", "    dockerfile: Dockerfile", "build should be"),
    ("  init: true", "  init: false", "init: true"),
    ('"-D", "http.agent.name=${NUTCH2_AGENT_NAME:-}"', '"-D", "storage.data.store.class=postgres"',
     "depends_on postgres"),
]


@pytest.mark.parametrize(("old", "new", "said"), COMPOSE_BREAKS, ids=[b[2] for b in COMPOSE_BREAKS])
def test_a_broken_compose_file_is_caught(old: str, new: str, said: str) -> None:
    text = COMPOSE.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    problems = compose_problems(compose(text.replace(old, new)))
    assert any(said in p for p in problems), problems


# ------------------------------------------------------------------- the Dockerfile's pip steps, for real


def copy_into(command: dockerfile.Command, workdir: Path, patterns: list[str]) -> None:
    """A build-stage COPY: files into a folder (`a b ./`) or a folder onto one (`nutch2/ nutch2/`), without
    what .dockerignore leaves out of the context."""
    *sources, dest = command.value

    def skip(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if ignored(os.path.relpath(Path(folder, n), REPO), patterns)]

    for source in sources:
        path = REPO / source
        if path.is_dir():
            shutil.copytree(path, workdir / dest, ignore=skip, dirs_exist_ok=True)
        else:
            (workdir / dest).mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, workdir / dest / path.name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_values(argv: list[str], values: dict[str, str]) -> list[str]:
    """The command with these options' values replaced (-host, -port, ... for this machine)."""
    out = list(argv)
    for flag, value in values.items():
        out[out.index(flag) + 1] = value
    return out


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_dockerfile_installs_a_working_nutch2(tmp_path: Path) -> None:
    build = stages(DOCKERFILE.read_text(encoding="utf-8"))[0]
    patterns = ignore_patterns(DOCKERIGNORE.read_text(encoding="utf-8"))
    workdir, venv, shim = tmp_path / "src", tmp_path / "venv", tmp_path / "shim"
    for command in build.commands:
        if command.cmd == "WORKDIR":
            assert command.value == ("/src",)
        elif command.cmd == "COPY":
            copy_into(command, workdir, patterns)
    # the build stage's ENV (checked above: VIRTUAL_ENV and PATH) and ARG defaults, with this test's venv; python3
    # is this interpreter (3.11, as the image's); a cache mount only keeps pip's cache out of the image
    shim.mkdir()
    (shim / "python3").symlink_to(sys.executable)
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "NUTCH_CONF_DIR")
    keep = {k: v for k, v in os.environ.items() if k not in drop}
    env = {**keep, **build.args(), "VIRTUAL_ENV": str(venv), "PATH": f"{venv}/bin:{shim}:{os.environ['PATH']}"}
    for command in build.all("RUN"):
        assert all(f.startswith("--mount=type=cache,") for f in command.flags), command.flags
        p = subprocess.run(["/bin/sh", "-c", command.value[0]], cwd=workdir, env=env, capture_output=True, text=True,
                           timeout=1500)
        assert p.returncode == 0, f"{command.original}\n{p.stderr[-3000:]}"
    nutch2 = str(venv / "bin" / "nutch2")
    data, conf = tmp_path / "data", tmp_path / "conf"  # the image's WORKDIR /data and its empty /conf
    data.mkdir()
    conf.mkdir()
    env = {**keep, "NUTCH_CONF_DIR": str(conf)}
    for argv, shows in ((["--help"], "crawl"), (["server", "--help"], "-tokenFile")):
        p = subprocess.run([nutch2, *argv], cwd=data, env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and shows in p.stdout, p.stderr[-2000:]
    # the compose searcher's command, on loopback and a free port, and its health check before and after it starts
    searcher = compose(COMPOSE.read_text(encoding="utf-8"))["services"]["searcher"]
    port = free_port()
    token = tmp_path / "token"
    token.write_text("t" * 32 + "\n")
    argv = with_values(searcher["command"], {"-host": "127.0.0.1", "-port": str(port), "-tokenFile": str(token),
                                             "-solr": "http://127.0.0.1:9/solr/nutch"})
    check = searcher["healthcheck"]["test"]
    assert check[:3] == ["CMD", "python3", "-c"]
    listens = searcher["command"][searcher["command"].index("-port") + 1]
    health = [str(venv / "bin" / "python3"), "-c", check[3].replace(f'"127.0.0.1", {listens}', f'"127.0.0.1", {port}')]
    assert subprocess.run(health, capture_output=True, timeout=30).returncode != 0  # nothing listens yet
    server = subprocess.Popen([nutch2, *argv], cwd=data, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(health, capture_output=True, timeout=30).returncode != 0:
            assert server.poll() is None and time.monotonic() < deadline, server.communicate(timeout=10)[0][-2000:]
            time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _xml_props(text: str) -> dict[str, str]:
    return dict(re.findall(r"<name>([^<]+)</name><value>([^<]*)</value>", text))


def test_the_hbase_image_bounds_its_thrift_servers_hbase_client_as_the_dev_gateway() -> None:
    """The HBase image's Thrift server read hbase-site.xml alone, with HBase's client defaults (a call waits up to
    hbase.client.operation.timeout, 20 minutes, on a dead or frozen master): a job then waited out nutch2's own
    timeouts instead of failing in one line naming HBase. Its conf-thrift/hbase-site.xml is the master's settings
    plus the bounded client values that docker/services.sh gives its gateway and that the README tells an operator."""
    base = _xml_props((DOCKER / "hbase" / "hbase-site.xml").read_text())
    thrift = _xml_props((DOCKER / "hbase" / "hbase-site-thrift.xml").read_text())
    script = (DOCKER / "services" / "hbase.sh").read_text()
    block = script[script.index('>>"$d/conf-thrift/hbase-site.xml" <<'):]
    dev = _xml_props(block[:block.index("\nXML\n")])  # what the gateway gets on top of the master's settings
    assert len(dev) >= 8 and "hbase.client.operation.timeout" in dev
    assert thrift == {**base, **dev}, set(thrift.items()) ^ set({**base, **dev}.items())
    readme = " ".join((REPO / "README.md").read_text().split())
    for name, value in dev.items():
        assert re.search(rf"`{re.escape(name)}`(?: and `[\w.]+`)? {value}\b", readme), (name, value)
    assert "COPY hbase-site-thrift.xml /opt/hbase/conf-thrift/hbase-site.xml" in \
        (DOCKER / "hbase" / "Dockerfile").read_text()
    start = (DOCKER / "hbase" / "start.sh").read_text()
    assert re.search(r'-cp "/opt/hbase/conf-thrift:\$cp" org\.apache\.hadoop\.hbase\.thrift\.ThriftServer', start)
    assert 'HMaster start' in start and '-cp "$cp" org.apache.hadoop.hbase.master.HMaster start' in start
    # standalone (master, region server and ZooKeeper in one JVM): a freeze of up to 90 s is survived, in both
    master = _xml_props(script[:script.index('mkdir -p "$d/conf-thrift"')])
    for conf in (base, master):
        assert conf["zookeeper.session.timeout.localHBaseCluster"] == "90000"
        assert conf["hbase.zookeeper.property.maxSessionTimeout"] == "90000"
