"""Configuration: shipped defaults, nutch-site.toml / nutch-site.xml overrides, -D, typed coercion, store names."""

from __future__ import annotations

import getpass
import tempfile
import tomllib
from pathlib import Path

import pytest

from nutch2.config import Configuration, parse_define, shipped_conf_dir
from nutch2.errors import ConfigError, StoreError
from nutch2.stores import backend_name, open_store, table_name
from tests.conftest import CONF_DIR, make_conf

DEFAULT_TOML = CONF_DIR / "nutch-default.toml"


def site_dir(tmp_path: Path, toml: str | None = None, xml: str | None = None) -> Path:
    d = tmp_path / "conf"
    d.mkdir(exist_ok=True)
    if toml is not None:
        (d / "nutch-site.toml").write_text(toml, encoding="utf-8")
    if xml is not None:
        (d / "nutch-site.xml").write_text(xml, encoding="utf-8")
    return d


def hadoop_xml(**props: str) -> str:
    body = "".join(
        f"  <property>\n    <name>{k}</name>\n    <value>{v}</value>\n    <description>x</description>\n"
        "  </property>\n"
        for k, v in props.items()
    )
    return (
        '<?xml version="1.0"?>\n<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>\n'
        f"<configuration>\n{body}</configuration>\n"
    )


def one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg


# ------------------------------------------------------------------ defaults


def test_defaults_load_with_types() -> None:
    conf = Configuration(CONF_DIR)
    assert conf.get("fetcher.threads.fetch") == 10
    assert isinstance(conf.get("fetcher.threads.fetch"), int)
    assert conf.get("db.fetch.interval.default") == 2592000
    assert conf.get("db.score.injected") == 1.0
    assert isinstance(conf.get("fetcher.server.delay"), float)
    assert conf.get("http.timeout") == 10000  # ms, as Nutch
    assert conf.get("storage.data.store.class") == "sqlite"
    assert conf.get("storage.data.dir") == str(Path("./crawl").absolute())  # folders made absolute
    assert conf.get_bool("generate.filter") is True


def test_shipped_conf_dir_is_the_repo_conf() -> None:
    assert (shipped_conf_dir() / "nutch-default.toml").is_file()
    assert (shipped_conf_dir() / "regex-urlfilter.txt").is_file()
    # with no conf dir at all the shipped defaults are used
    assert Configuration(None).get("fetcher.threads.fetch") == 10


def test_every_default_has_a_comment_directly_above() -> None:
    lines = DEFAULT_TOML.read_text(encoding="utf-8").splitlines()
    declared = tomllib.loads(DEFAULT_TOML.read_text(encoding="utf-8"))
    seen = 0
    missing = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s.startswith("#") or s.startswith("["):
            continue
        seen += 1
        key = s.split("=", 1)[0].strip().strip('"')
        # a group of related keys (e.g. http.agent.description/url/email) may share the comment above them
        j = i - 1
        while j >= 0 and lines[j].strip() and not lines[j].strip().startswith("#"):
            j -= 1
        if j < 0 or not lines[j].strip().startswith("#") or len(lines[j].strip().lstrip("#").strip()) < 5:
            missing.append(key)
    assert seen == len(declared)
    assert not missing, f"keys without a comment line above them: {missing}"


def test_unknown_property_read_is_a_bug() -> None:
    conf = Configuration(CONF_DIR)
    with pytest.raises(KeyError, match="not declared"):
        conf.get("no.such.property")
    with pytest.raises(KeyError):
        conf.set("no.such.property", 1)


# ------------------------------------------------------------------ site files and -D


def test_site_toml_overrides_defaults(tmp_path: Path) -> None:
    d = site_dir(tmp_path, toml='"fetcher.threads.fetch" = 3\n"fetcher.server.delay" = 2\n'
                                '[http]\n"agent.name" = "MyBot"\n')
    conf = Configuration(d)
    assert conf.get("fetcher.threads.fetch") == 3
    assert conf.get("http.agent.name") == "MyBot"  # table spelling flattens to dotted names
    assert conf.get("fetcher.server.delay") == 2.0
    assert isinstance(conf.get("fetcher.server.delay"), float)  # an integer is fine where a number is wanted
    assert conf.get("fetcher.threads.per.queue") == 1  # untouched default


def test_conf_dir_without_default_falls_back_to_shipped(tmp_path: Path) -> None:
    d = site_dir(tmp_path, toml='"http.agent.name" = "x"\n')
    conf = Configuration(d)
    assert conf.get("db.fetch.interval.default") == 2592000
    assert conf.resource("regex-urlfilter.txt") == shipped_conf_dir() / "regex-urlfilter.txt"
    (d / "regex-urlfilter.txt").write_text("+.\n")
    assert conf.resource("regex-urlfilter.txt") == d / "regex-urlfilter.txt"


def test_nutch_site_xml_is_read_and_coerced(tmp_path: Path) -> None:
    d = site_dir(tmp_path, xml=hadoop_xml(**{
        "http.agent.name": "NutchUserBot",
        "fetcher.threads.fetch": " 25 ",
        "fetcher.server.delay": "1.5",
        "db.ignore.external.links": "true",
        "generate.filter": "false",
        "plugin.includes": "protocol-http|parse-html",  # Nutch's plugin selection, read as Nutch reads it
        "indexer.skip.notmodified": "true",  # a Nutch property nutch2 does not have: ignored
        "storage.data.store.class": "org.apache.gora.memory.store.MemStore",
    }))
    conf = Configuration(d)
    assert conf.get("http.agent.name") == "NutchUserBot"
    assert conf.get("fetcher.threads.fetch") == 25
    assert isinstance(conf.get("fetcher.threads.fetch"), int)
    assert conf.get("fetcher.server.delay") == 1.5
    assert conf.get("db.ignore.external.links") is True
    assert conf.get("generate.filter") is False
    assert conf.get("plugin.includes") == "protocol-http|parse-html"
    assert "indexer.skip.notmodified" in conf.unknown
    assert backend_name(conf) == "memory"


def test_site_xml_expands_hadoop_variables(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """${name}: another property (of the file, else the defaults), or a Java system property Hadoop's files use;
    a property set only to be used as a variable draws no "not implemented" warning; an unknown one stays."""
    d = site_dir(tmp_path, xml=hadoop_xml(**{
        "db.fetch.interval.default": "${db.fetch.interval.max}",
        "http.agent.name": "${my.agent}",
        "my.agent": "Bot-${user.name}",
        "storage.data.dir": "${java.io.tmpdir}/crawls",
        "http.agent.description": "${no.such.name}",
    }))
    conf = Configuration(d)
    assert conf.get("db.fetch.interval.default") == conf.get("db.fetch.interval.max") == 7776000
    assert conf.get("http.agent.name") == f"Bot-{getpass.getuser()}"
    assert conf.get("storage.data.dir") == f"{tempfile.gettempdir()}/crawls"
    assert conf.get("http.agent.description") == "${no.such.name}"  # as Hadoop leaves it
    assert "my.agent" not in caplog.text


def test_site_xml_bad_value_names_key(tmp_path: Path) -> None:
    d = site_dir(tmp_path, xml=hadoop_xml(**{"fetcher.threads.fetch": "many"}))
    with pytest.raises(ConfigError) as e:
        Configuration(d)
    msg = one_line(e)
    assert "fetcher.threads.fetch" in msg and "nutch-site.xml" in msg


def test_site_xml_not_xml(tmp_path: Path) -> None:
    d = site_dir(tmp_path, xml="<configuration><property>")
    with pytest.raises(ConfigError) as e:
        Configuration(d)
    assert "nutch-site.xml" in one_line(e)


def test_site_xml_empty_values_are_not_set_as_in_hadoop(tmp_path: Path) -> None:
    """Nutch's own nutch-default.xml, copied as a nutch-site.xml, has <value></value> for http.proxy.port and
    others: Hadoop sets no property for an empty value (the default stands), so the file must load."""
    xml = hadoop_xml(**{"http.proxy.port": "", "fetcher.threads.fetch": "  ", "http.agent.name": "Bot"})
    xml = xml.replace("</configuration>", "<property><name>db.score.injected</name><value/></property>"
                      "<property><name>generate.filter</name></property></configuration>")
    conf = Configuration(site_dir(tmp_path, xml=xml))
    for key in ("http.proxy.port", "fetcher.threads.fetch", "db.score.injected", "generate.filter"):
        assert conf.get(key) == conf.defaults[key]
    assert conf.get("http.agent.name") == "Bot"


@pytest.mark.parametrize("root", ["html", "properties", "regex-normalize"])
def test_site_xml_of_another_kind_is_refused(tmp_path: Path, root: str) -> None:
    """A file whose top element is not <configuration> (an HTML page saved by mistake, another tool's file) was read
    as holding no property at all: every setting in it was silently lost."""
    d = site_dir(tmp_path, xml=hadoop_xml(**{"fetcher.threads.fetch": "3"}).replace("configuration>", f"{root}>"))
    with pytest.raises(ConfigError) as e:
        Configuration(d)
    msg = one_line(e)
    assert "nutch-site.xml" in msg and f"<{root}>" in msg and "<configuration>" in msg


def test_site_xml_property_set_twice_to_different_values_warns(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A property added at the end of a long nutch-site.xml while the file set it above already: the last one wins
    (as in Hadoop), which the user of the first one did not see; the values are not shown (a password?)."""
    xml = hadoop_xml(**{"http.proxy.password": "s3cret", "fetcher.parse": "true"})
    xml = xml.replace("</configuration>", "<property><name>http.proxy.password</name><value>other</value></property>"
                      "<property><name>fetcher.parse</name><value>true</value></property></configuration>")
    conf = Configuration(site_dir(tmp_path, xml=xml))
    assert conf.get("http.proxy.password") == "other"
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "http.proxy.password is set twice" in lines[0] and "nutch-site.xml" in lines[0]
    assert "s3cret" not in lines[0] and "other" not in lines[0].replace("remove the other", "")


def final_xml(*props: tuple[str, str, str]) -> str:
    """A nutch-site.xml of (name, value, final) properties, in order."""
    body = "".join(f"  <property><name>{k}</name><value>{v}</value>{f'<final>{f}</final>' if f else ''}</property>\n"
                   for k, v, f in props)
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


def test_a_final_property_of_the_site_xml_is_not_overridden(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Hadoop's <final>true</final>: a later resource, -D, cannot change it; each attempt that would change the
    value is one warning line naming the property and the file that made it final (none for the same value)."""
    d = site_dir(tmp_path, toml='"http.timeout" = 3000\n', xml=final_xml(
        ("http.agent.name", "LockedBot", "true"), ("fetcher.server.delay", "5.0", " true "),
        ("http.timeout", "4000", "true"), ("fetcher.threads.fetch", "4", "false"), ("fetcher.parse", "true", "yes"),
        ("fetcher.server.delay", "0.1", "")))  # set again further down the same file: ignored, as in Hadoop
    conf = Configuration(d, {"http.agent.name": "Other", "fetcher.server.delay": "5", "http.timeout": "4000",
                             "fetcher.threads.fetch": "7", "fetcher.parse": "false"})
    assert conf.get("http.agent.name") == "LockedBot" and conf.get("fetcher.server.delay") == 5.0
    assert conf.get("http.timeout") == 4000  # the xml made final what the toml set before: the xml's value
    assert conf.get("fetcher.threads.fetch") == 7 and conf.get("fetcher.parse") is False  # not "true": not final
    assert set(conf.final) == {"http.agent.name", "fetcher.server.delay", "http.timeout"}
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines  # -D fetcher.server.delay=5 and http.timeout=4000 change nothing: no line
    assert "fetcher.server.delay is final" in lines[0] and "nutch-site.xml" in lines[0] and "0.1" not in lines[0]
    assert lines[1].startswith("warning: -D: http.agent.name is final in ") and "nutch-site.xml" in lines[1]
    assert "Other" not in lines[1]  # a value may be a secret
    assert conf.copy().final == conf.final
    with pytest.raises(ConfigError) as e:
        conf.check_not_final("http.agent.name", "a job's conf")
    assert "http.agent.name is final in" in one_line(e)
    conf.check_not_final("fetcher.threads.fetch", "a job's conf")  # not final: nothing said
    conf.set("http.agent.name", "Programmatic")  # code may (Hadoop's Configuration.set)
    assert conf.get("http.agent.name") == "Programmatic"


def test_a_job_of_the_api_cannot_set_a_final_property(tmp_path: Path) -> None:
    from nutch2.searcher.jobapi import JobManager
    from nutch2.searcher.params import ParamError

    d = site_dir(tmp_path, xml=final_xml(("http.agent.name", "LockedBot", "true"),
                                         ("storage.data.dir", str(tmp_path / "crawl"), "")))
    jobs = JobManager(Configuration(d), "c")
    with pytest.raises(ParamError, match="http.agent.name is final in"):
        jobs.job_conf({"http.agent.name": "Other"})
    assert jobs.job_conf({"http.timeout": 999}).get("http.timeout") == 999


def test_site_toml_not_toml(tmp_path: Path) -> None:
    d = site_dir(tmp_path, toml="fetcher.threads.fetch = = 3\n")
    with pytest.raises(ConfigError) as e:
        Configuration(d)
    assert "nutch-site.toml" in one_line(e)


def test_define_overrides_site_toml_and_xml(tmp_path: Path) -> None:
    d = site_dir(tmp_path, toml='"fetcher.threads.fetch" = 3\n"http.agent.name" = "T"\n',
                 xml=hadoop_xml(**{"fetcher.threads.fetch": "4", "http.timeout": "999"}))
    conf = Configuration(d)
    assert conf.get("fetcher.threads.fetch") == 4  # the xml is read after the toml
    assert conf.get("http.timeout") == 999
    assert conf.get("http.agent.name") == "T"
    conf = Configuration(d, {"fetcher.threads.fetch": "7", "http.timeout": "5", "http.agent.name": "D"})
    assert conf.get("fetcher.threads.fetch") == 7
    assert conf.get("http.timeout") == 5
    assert conf.get("http.agent.name") == "D"


@pytest.mark.parametrize("key,value,expected", [
    ("fetcher.parse", "yes", True),
    ("fetcher.parse", "0", False),
    ("fetcher.parse", "FALSE", False),
    ("fetcher.server.delay", "3", 3.0),
    ("generate.max.count", "-1", -1),
    ("http.agent.name", "a=b", "a=b"),
    ("http.agent.name", "", ""),
])
def test_define_coercion(key: str, value: str, expected: object) -> None:
    got = Configuration(CONF_DIR, {key: value}).get(key)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("value", ["y", "maybe", "enabled"])
def test_a_bad_boolean_names_what_is_taken(value: str) -> None:
    """The line said 'give a boolean like False': Python's spelling, in a message to a -D or XML user."""
    with pytest.raises(ConfigError) as e:
        Configuration(CONF_DIR, {"fetcher.store.content": value})
    msg = one_line(e)
    assert "give true or false" in msg and "False" not in msg and "True" not in msg


@pytest.mark.parametrize("key,value", [
    ("fetcher.threads.fetch", "abc"),
    ("fetcher.threads.fetch", "1.5"),
    ("fetcher.threads.fetch", ""),
    ("fetcher.server.delay", "soon"),
    ("fetcher.parse", "maybe"),
])
def test_define_wrong_type_is_one_line_naming_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as e:
        Configuration(CONF_DIR, {key: value})
    msg = one_line(e)
    assert key in msg and repr(value) in msg


@pytest.mark.parametrize("line", [
    '"fetcher.threads.fetch" = "ten"',
    '"fetcher.threads.fetch" = "10"',  # TOML has types: a quoted number is a string
    '"fetcher.threads.fetch" = 2.5',
    '"fetcher.threads.fetch" = true',
    '"fetcher.parse" = "yes"',
    '"http.agent.name" = 5',
])
def test_site_toml_wrong_type_is_one_line_naming_key(tmp_path: Path, line: str) -> None:
    d = site_dir(tmp_path, toml=line + "\n")
    with pytest.raises(ConfigError) as e:
        Configuration(d)
    msg = one_line(e)
    key = line.split("=")[0].strip().strip('"')
    assert key in msg and "nutch-site.toml" in msg


def test_unknown_define_warns_but_works(capsys: pytest.CaptureFixture[str]) -> None:
    conf = Configuration(CONF_DIR, {"no.such.thing": "1", "fetcher.threads.fetch": "2"})
    assert conf.get("fetcher.threads.fetch") == 2
    assert conf.unknown == {"no.such.thing": "1"}
    err = capsys.readouterr().err
    assert "no.such.thing" in err and err.count("\n") == 1


def test_missing_conf_dir_is_clear(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        Configuration(tmp_path / "nope")
    msg = one_line(e)
    assert str(tmp_path / "nope") in msg and "--conf" in msg


def test_conf_dir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = site_dir(tmp_path, toml='"fetcher.threads.fetch" = 9\n')
    monkeypatch.setenv("NUTCH_CONF_DIR", str(d))
    assert Configuration().get("fetcher.threads.fetch") == 9


def test_cwd_conf_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site_dir(tmp_path, toml='"fetcher.threads.fetch" = 8\n')
    monkeypatch.delenv("NUTCH_CONF_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert Configuration().get("fetcher.threads.fetch") == 8


def test_set_and_copy() -> None:
    conf = Configuration(CONF_DIR)
    other = conf.copy()
    other.set("fetcher.threads.fetch", "4")
    assert other.get("fetcher.threads.fetch") == 4
    assert conf.get("fetcher.threads.fetch") == 10
    with pytest.raises(ConfigError):
        other.set("fetcher.threads.fetch", "x")


@pytest.mark.parametrize("text,expected", [
    ("a=b", ("a", "b")),
    ("a=b=c", ("a", "b=c")),
    ("a=", ("a", "")),
    (" a =b", ("a", "b")),
])
def test_parse_define(text: str, expected: tuple[str, str]) -> None:
    assert parse_define(text) == expected


@pytest.mark.parametrize("text", ["a", "=b", "", " =x"])
def test_parse_define_rejects(text: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_define(text)
    assert "key=value" in one_line(e)


# ------------------------------------------------------------------ store names


def test_unknown_store_name_lists_valid_names(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, "foo")
    with pytest.raises(ConfigError) as e:
        open_store(conf, "x")
    msg = one_line(e)
    assert "storage.data.store.class" in msg and "'foo'" in msg
    for name in ("memory", "sqlite", "postgres", "hbase", "cassandra"):
        assert name in msg


@pytest.mark.parametrize("name", ["hbase", "cassandra", "org.apache.gora.hbase.store.HBaseStore",
                                  "org.apache.gora.cassandra.store.CassandraStore"])
def test_service_stores_down_fail_fast(tmp_path: Path, name: str) -> None:
    conf = make_conf(tmp_path, name, **{"hbase.thrift.port": 9, "storage.cassandra.port": 9})
    with pytest.raises(StoreError) as e:
        open_store(conf, "x")
    msg = one_line(e)
    assert "127.0.0.1:9" in msg and ("hbase.thrift.port" in msg or "storage.cassandra.port" in msg)


@pytest.mark.parametrize("value,expected", [
    ("org.apache.gora.memory.store.MemStore", "memory"),
    ("org.apache.gora.sql.store.SqlStore", "postgres"),
    ("nutch2.stores.sqlite.SqliteStore", "sqlite"),
    ("MEMORY", "memory"),
    (" sqlite ", "sqlite"),
])
def test_gora_class_names_map(tmp_path: Path, value: str, expected: str) -> None:
    conf = make_conf(tmp_path, value)
    assert backend_name(conf) == expected
    if expected == "postgres":  # the name is what this test is about; opening it needs the server
        return
    store = open_store(conf, "gora")
    try:
        assert store.name == expected
    finally:
        store.drop_schema()
        store.close()


def test_table_names(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, "memory")
    assert table_name(conf, "abc") == "abc_webpage"
    assert table_name(conf, None) == "webpage"
    assert table_name(make_conf(tmp_path, "memory", **{"storage.crawl.id": "cid"}), None) == "cid_webpage"
    with pytest.raises(ConfigError):
        table_name(conf, "../etc")


def test_sqlite_open_without_create_is_clear(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, "sqlite")
    with pytest.raises(StoreError) as e:
        open_store(conf, "never", create=False)
    assert "never_webpage.sqlite" in one_line(e)


def test_unknown_key_in_site_toml_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = site_dir(tmp_path, toml='"fetcher.thread.fetch" = 3\n')  # a typo
    conf = Configuration(d)
    assert conf.get("fetcher.threads.fetch") == 10
    err = capsys.readouterr().err
    assert "fetcher.thread.fetch" in err and "nutch-site.toml" in err


@pytest.mark.parametrize("key,hint", [
    ("fetcher.thread.fetch", "did you mean fetcher.threads.fetch?"),  # typos of a property
    ("http.agent.nmae", "did you mean http.agent.name?"),
    ("fetcher.server.dely", "did you mean fetcher.server.delay?"),
    ("storage.schema", "nutch2 reads this setting as storage.schema.webpage"),  # Nutch's older names
    ("fetcher.threads.per.host", "nutch2 reads this setting as fetcher.threads.per.queue"),
    ("db.default.fetch.interval", "db.fetch.interval.default, in seconds"),
    ("mapreduce.job.reduces", "nutch2 reads this setting as mapreduce.job.tasks"),  # Nutch's bin/crawl passes it
    ("DOWNLOAD_DELAY", "nutch2 reads this setting as fetcher.server.delay"),  # Scrapy's settings
    ("DOWNLOAD_TIMEOUT", "http.timeout, in milliseconds"),
    ("ROBOTSTXT_OBEY", "nutch2 always obeys robots.txt"),
])
def test_an_unknown_property_close_to_a_known_one_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           key: str, hint: str) -> None:
    """A -D typo (or a Nutch name nutch2 reads under another) was ignored with a warning that named no fix: the
    crawl then ran with the default, e.g. without its agent name."""
    for source, conf_dir in (("-D", CONF_DIR), ("nutch-site.xml", site_dir(tmp_path, xml=hadoop_xml(**{key: "3"})))):
        Configuration(conf_dir, {key: "3"} if source == "-D" else None)
        lines = [x for x in capsys.readouterr().err.splitlines() if key in x]
        assert len(lines) == 1 and source in lines[0] and hint in lines[0], lines


@pytest.mark.parametrize("key", ["file.content.limit", "ftp.timeout", "urlfilter.prefix.file", "http.useHttp11"])
def test_a_nutch_property_nutch2_lacks_is_not_taken_for_a_typo(capsys: pytest.CaptureFixture[str], key: str) -> None:
    Configuration(CONF_DIR, {key: "1"})
    assert "did you mean" not in capsys.readouterr().err


def test_a_nutch_property_nutch2_lacks_gets_one_warning_naming_it(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    d = site_dir(tmp_path, xml=hadoop_xml(**{"http.robot.rules.whitelist": "a.com", "http.agent.name": "Bot",
                                             "spark.executor.memory": "2g"}))
    Configuration(d)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "http.robot.rules.whitelist" in lines[0] and "does not implement" in lines[0], lines


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_nutch_conf_dir_that_is_no_folder_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               kind: str) -> None:
    """$NUTCH_CONF_DIR set long ago (a Nutch install's profile) pointing nowhere: the line told the user to pass
    --conf, which they had not used, and called a file a folder that does not exist."""
    target = tmp_path / "gone"
    if kind == "file":
        target.write_text("x")
    monkeypatch.setenv("NUTCH_CONF_DIR", str(target))
    with pytest.raises(ConfigError) as e:
        Configuration()
    msg = one_line(e)
    assert "$NUTCH_CONF_DIR" in msg and "unset it" in msg and "--conf" not in msg
    assert ("is not a folder" if kind == "file" else "does not exist") in msg
    with pytest.raises(ConfigError, match="pass --conf with an existing folder"):
        Configuration(target)


def test_a_conf_file_that_is_a_device_is_refused(tmp_path: Path) -> None:
    """-D urlfilter.regex.file=/dev/zero (or a named pipe) was read as a file: a line that never ends, held in memory
    until the machine ran out of it."""
    conf = Configuration(CONF_DIR)
    with pytest.raises(ConfigError) as e:
        conf.resource("/dev/zero")
    assert "/dev/zero is a device or a pipe" in one_line(e)
    assert conf.resource("regex-urlfilter.txt").is_file()
