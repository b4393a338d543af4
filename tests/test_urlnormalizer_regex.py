"""urlnormalizer-regex and urlnormalizer-pass (nutch2/plugins/urlnormalizer_regex, urlnormalizer_pass), and the
normalizers of a scope (urlnormalizer.scope/order.<scope>, urlnormalizer.loop.count): Nutch's TestRegexURLNormalizer
vectors with its sample rule files (tests/data/nutch/urlnormalizer-regex, sources named there), Java's regular
expression syntax, the scope files, one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.plugin import Plugins
from nutch2.plugins.urlnormalizer_pass.normalizer import PassURLNormalizer
from nutch2.plugins.urlnormalizer_regex.javaregex import JavaRegexError, translate_pattern, translate_replacement
from nutch2.plugins.urlnormalizer_regex.normalizer import RegexURLNormalizer, read_rules
from nutch2.urls.normalizers import URLNormalizers
from tests.conftest import make_conf

DATA = Path(__file__).parent / "data" / "nutch" / "urlnormalizer-regex"
SHIPPED = Path(__file__).parent.parent / "conf" / "regex-normalize.xml"


def vectors(name: str) -> list[tuple[str, str]]:
    lines = (DATA / f"regex-normalize-{name}.test").read_text(encoding="utf-8").splitlines()
    return [tuple(line.split()) for line in lines if line.strip() and not line.startswith("#")]  # type: ignore[misc]


def regex_conf(tmp_path: Path, **props: object) -> Configuration:
    return make_conf(tmp_path, **{"plugin.includes": "urlnormalizer-regex", **props})


@pytest.mark.parametrize("name", ["default", "scope1"])
def test_nutch_sample_rules_and_vectors(tmp_path: Path, name: str) -> None:
    """As TestRegexURLNormalizer: the rules of regex-normalize-<name>.xml for the scope <name>; here the file is
    named by urlnormalizer.regex.file(.<scope>), as a Nutch user names it."""
    scope = "default" if name == "default" else "outlink"
    prop = "urlnormalizer.regex.file" + ("" if name == "default" else ".outlink")
    n = RegexURLNormalizer(regex_conf(tmp_path, **{prop: str(DATA / f"regex-normalize-{name}.xml")}))
    cases = vectors(name)
    assert len(cases) == (68 if name == "default" else 3)
    assert [(url, n.normalize(url, scope)) for url, _ in cases] == cases


def test_shipped_rules_are_nutchs_without_the_default_page_rule(tmp_path: Path) -> None:
    n = RegexURLNormalizer(regex_conf(tmp_path))
    assert len(n.rules) == 7 and n.rules[0].where == f"{SHIPPED}:11"
    sample = dict(vectors("default"))
    for url, expected in sample.items():
        if "/index." in url or "/default." in url:
            assert n.normalize(url, "default") == url  # the rule Nutch ships commented out
        else:
            assert n.normalize(url, "default") == expected, url


def test_a_scope_file_replaces_the_default_rules_for_that_scope_only(tmp_path: Path) -> None:
    conf = regex_conf(tmp_path, **{"urlnormalizer.regex.file.generate_host_count":
                                   str(DATA / "regex-normalize-scope1.xml")})
    n = RegexURLNormalizer(conf)
    url = "http://www.foo.bar.com/foo.php?PHPSESSID=cdc993a493e899bed04f4d0c8a462a03"
    assert n.normalize(url, "generate_host_count") == "http://bar.com/"
    assert n.normalize(url, "outlink") == "http://www.foo.bar.com/foo.php"
    assert URLNormalizers.from_conf(conf, "generate_host_count").normalize(url) == "http://bar.com/"


def test_a_scope_file_without_rules_falls_back_to_the_default_rules(tmp_path: Path) -> None:
    """Nutch's rule: a scope whose file gives no rules uses the default ones."""
    empty = tmp_path / "empty.xml"
    empty.write_text("<regex-normalize><!-- nothing --></regex-normalize>", encoding="utf-8")
    n = RegexURLNormalizer(regex_conf(tmp_path, **{"urlnormalizer.regex.file.outlink": str(empty)}))
    assert n.normalize("http://foo.com/a.html#x", "outlink") == "http://foo.com/a.html"


def test_inline_rules_win_over_the_file(tmp_path: Path) -> None:
    rules = "<regex-normalize><regex><pattern>^http:</pattern><substitution>https:</substitution></regex>" \
            "</regex-normalize>"
    n = RegexURLNormalizer(regex_conf(tmp_path, **{"urlnormalizer.regex.rules": rules,
                                                   "urlnormalizer.regex.file": str(tmp_path / "nope.xml")}))
    assert n.normalize("http://a.org/#x", "default") == "https://a.org/#x"


def test_rules_as_nutch_reads_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    xml = b"""<?xml version="1.0"?>
<regex-normalize>
  <!-- a comment between rules -->
  <regex><pattern>a</pattern><substitution>b</substitution></regex>
  <regex><pattern>no-substitution</pattern></regex>
  <regex><substitution>no-pattern</substitution></regex>
  <regex><pattern> x&amp;y </pattern><substitution/></regex>
  <regex><pattern><![CDATA[q=(\\d+)&r]]></pattern><substitution>r=$1</substitution></regex>
</regex-normalize>"""
    rules = read_rules(xml, "r.xml")
    assert [r.java for r in rules] == [("a", "b"), (" x&y ", ""), (r"q=(\d+)&r", "r=$1")]
    assert [r.where for r in rules] == ["r.xml:4", "r.xml:7", "r.xml:8"]
    err = capsys.readouterr().err
    assert "r.xml:5: a <regex> without <substitution> is skipped" in err
    assert "r.xml:6: a <regex> without <pattern> is skipped" in err
    n = RegexURLNormalizer(regex_conf(tmp_path), rules)
    assert n.normalize("http://a.org/? x&y ?q=12&r", "inject") == "http://b.org/??r=12"


@pytest.mark.parametrize(
    ("xml", "words"),
    [
        (b"<regex-normalize><regex>", "not valid XML"),
        (b"<configuration/>", "not <regex-normalize>"),
        (b"<regex-normalize><rule/></regex-normalize>", "r.xml:1: <rule> where a <regex> rule"),
        (b"<regex-normalize>\n<regex><pattern>(a</pattern><substitution/></regex></regex-normalize>",
         "r.xml:2: cannot use the rule '(a'"),
        (b"<regex-normalize><regex><pattern>(a)</pattern><substitution>$2</substitution></regex></regex-normalize>",
         "group 2, but the pattern has 1"),
        (b"<regex-normalize><regex><pattern>\\p{Alpha}</pattern><substitution/></regex></regex-normalize>",
         "\\p{...}"),
    ],
)
def test_bad_rule_files_are_one_line(xml: bytes, words: str) -> None:
    with pytest.raises(ConfigError) as e:
        read_rules(xml, "r.xml")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_missing_rule_file_stops_the_plugin(tmp_path: Path) -> None:
    conf = regex_conf(tmp_path, **{"urlnormalizer.regex.file.fetcher": "no-such-rules.xml"})
    with pytest.raises(ConfigError) as e:
        Plugins(conf).check(["url-normalizer"])
    assert "no-such-rules.xml" in str(e.value) and "urlnormalizer.regex.file.fetcher" in str(e.value)


@pytest.mark.parametrize(
    ("java", "python"),
    [
        (r"(?i)ab", r"(?i:ab)"),
        (r"/((?i)index|default)\.x", r"/((?i:index)|(?i:default))\.x"),
        (r"(a|b(?i)c|d)e", r"(a|b(?i:c)|(?i:d))e"),
        (r"a(?i)b(?-i)c", r"a(?i:b(?-i:c))"),
        (r"(?iu:x)(?u)y", r"(?i:x)y"),
        (r"[(|)](?i)x", r"[(|)](?i:x)"),
        (r"[]a](?<name>b)\k<name>(?<=c)(?<!d)", r"[]a](?P<name>b)(?P=name)(?<=c)(?<!d)"),
        (r"\Q.*(\E+\z", r"\.\*\(+\Z"),
        (r"a++(?>b)", r"a++(?>b)"),
    ],
)
def test_java_patterns_in_python(java: str, python: str) -> None:
    assert translate_pattern(java) == python
    re.compile(python)


def test_java_inline_flags_keep_their_scope() -> None:
    p = re.compile(translate_pattern(r"(a|b(?i)c|d)e"))
    assert p.fullmatch("bCe") and p.fullmatch("De") and p.fullmatch("ae")
    assert not p.fullmatch("Ae") and not p.fullmatch("BCe") and not p.fullmatch("dE")


@pytest.mark.parametrize("bad", [r"[a-z&&[^x]]", r"\p{Lower}", r"(a", r"a)", "a\\"])
def test_java_patterns_python_cannot_run_are_refused(bad: str) -> None:
    with pytest.raises(JavaRegexError):
        translate_pattern(bad)


def test_java_replacements() -> None:
    p = re.compile(r"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(?P<last>l)")
    url = "abcdefghijkl"
    assert p.sub(translate_replacement(r"$1$12-$13\$\\\x${last}", p), url) == "al-a3$\\xl"
    one = re.compile("(x)")
    assert one.sub(translate_replacement("$10", one), "x") == "x0"  # $10 is group 1 then "0": 10 > groups
    assert re.compile("(x)|y").sub(translate_replacement("[$1]", re.compile("(x)|y")), "y") == "[]"
    for bad in ("$", "$x", "${nope}", "\\", "$2"):
        with pytest.raises(JavaRegexError):
            translate_replacement(bad, one)


def test_pass_leaves_every_url_as_it_is() -> None:
    """TestPassURLNormalizer (apache/nutch master, src/plugin/urlnormalizer-pass/src/test/.../
    TestPassURLNormalizer.java), restated: the URL it gives is the one it got."""
    url = "http://www.example.com/test/..//"
    assert PassURLNormalizer(None).normalize(url, "default") == url  # type: ignore[arg-type]


# ---------------------------------------------------------------- the normalizers of a scope
def chain(tmp_path: Path, scope: str, **props: object) -> list[str]:
    conf = make_conf(tmp_path, **{"plugin.includes": "urlnormalizer-(basic|regex|pass)", **props})
    return [n.plugin_id for n in URLNormalizers.from_conf(conf, scope).normalizers]


def test_scope_selection_and_order_as_nutch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert chain(tmp_path, "outlink") == ["urlnormalizer-basic", "urlnormalizer-pass", "urlnormalizer-regex"]
    # the order names some: those first, the others after (Nutch's URLNormalizers), Java class names accepted
    regex_class = "org.apache.nutch.net.urlnormalizer.regex.RegexURLNormalizer"
    assert chain(tmp_path, "outlink", **{"urlnormalizer.order": regex_class}) == [
        "urlnormalizer-regex", "urlnormalizer-basic", "urlnormalizer-pass"]
    # a scope's own order wins over urlnormalizer.order, in that scope only
    props = {"urlnormalizer.order": regex_class, "urlnormalizer.order.fetcher": "urlnormalizer-pass"}
    assert chain(tmp_path, "fetcher", **props)[0] == "urlnormalizer-pass"
    assert chain(tmp_path, "inject", **props)[0] == "urlnormalizer-regex"
    # a scope's own list: only those
    props = {"urlnormalizer.scope.inject": "PassURLNormalizer", "urlnormalizer.order": regex_class}
    assert chain(tmp_path, "inject", **props) == ["urlnormalizer-pass"]
    assert chain(tmp_path, "outlink", **props)[0] == "urlnormalizer-regex"
    assert "warning" not in capsys.readouterr().err
    assert chain(tmp_path, "inject", **{"urlnormalizer.scope.inject": "urlnormalizer-nope"}) == []
    assert "urlnormalizer.scope.inject names 'urlnormalizer-nope'" in capsys.readouterr().err


def test_a_scope_of_pass_alone_keeps_urls_as_they_are(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"plugin.includes": "urlnormalizer-(basic|pass)",
                                  "urlnormalizer.scope.fetcher": "urlnormalizer-pass"})
    url = "HTTP://Example.COM:80/a/../b"
    assert URLNormalizers.from_conf(conf, "fetcher").normalize(url) == url
    assert URLNormalizers.from_conf(conf, "outlink").normalize(url) == "http://example.com/b"


def test_loop_count_runs_the_chain_again_while_it_changes(tmp_path: Path) -> None:
    rules = ("<regex-normalize><regex><pattern>/index\\.html/?$</pattern><substitution>/</substitution></regex>"
             "</regex-normalize>")
    url = "http://example.com/a/index.html/x/.."
    props = {"plugin.includes": "urlnormalizer-(basic|regex)", "urlnormalizer.regex.rules": rules,
             "urlnormalizer.order": "urlnormalizer-regex urlnormalizer-basic"}
    once = URLNormalizers.from_conf(make_conf(tmp_path, **props), "outlink")
    assert once.normalize(url) == "http://example.com/a/index.html/"  # basic resolved "..", after regex ran
    twice = URLNormalizers.from_conf(make_conf(tmp_path, **props, **{"urlnormalizer.loop.count": 3}), "outlink")
    assert twice.normalize(url) == "http://example.com/a/"
    steps = twice.explain(url)
    assert [s[0] for s in steps] == ["urlnormalizer-regex", "urlnormalizer-basic"] * 3  # the third changes nothing
    assert steps[0] == ("urlnormalizer-regex", url, "no rule applies")
    assert steps[2] == ("urlnormalizer-regex", "http://example.com/a/", "rules urlnormalizer.regex.rules:1")


def test_normalizerchecker_names_each_normalizer_and_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.crawlutil import cli

    d = ["-D", "plugin.includes=urlnormalizer-(basic|regex)", "-D", f"storage.data.dir={tmp_path}",
         "-D", f"urlnormalizer.regex.file.outlink={DATA / 'regex-normalize-scope1.xml'}"]
    url = "HTTP://www.Foo.bar.com/x.php;jsessionid=12#top"
    assert cli("normalizerchecker", *d, url) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [f"{url}\t->\thttp://www.foo.bar.com/x.php",
                       "\turlnormalizer-basic: http://www.foo.bar.com/x.php;jsessionid=12"]
    assert out[2].startswith("\turlnormalizer-regex: http://www.foo.bar.com/x.php\t(rules ")
    assert out[2].endswith("conf/regex-normalize.xml:11)") and len(out) == 3  # the shipped file's session-id rule
    assert cli("normalizerchecker", *d, "-scope", "outlink", url) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{url}\t->\thttp://bar.com/"
    assert out[2] == f"\turlnormalizer-regex: http://bar.com/\t(rules {DATA / 'regex-normalize-scope1.xml'}:5)"
