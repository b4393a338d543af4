"""urlnormalizer-regex, as Nutch's RegexURLNormalizer.

A rule file (regex-normalize.xml)::

    <regex-normalize>
      <regex><pattern>(?i)(;?\\bsid=.*?)(\\?|&amp;|$)</pattern><substitution>$2</substitution></regex>
      ...
    </regex-normalize>

Every rule replaces all matches of its pattern in the URL, in file order; patterns and substitutions are Java's
syntax (``$1`` for a group; see javaregex.py). A ``<regex>`` without ``<pattern>`` or ``<substitution>`` is skipped
with a warning, as Nutch skips it; an empty ``<substitution/>`` deletes the match.

Which rules: urlnormalizer.regex.rules (the XML itself) when set, else the file urlnormalizer.regex.file; for a scope
whose urlnormalizer.regex.file.<scope> names a file holding rules, that file's rules instead (Nutch's rule: a
scope file with no rules falls back to the default rules; there is no lookup by file name, e.g. of
regex-normalize-<scope>.xml, unless that property names it). Unlike Nutch, which then runs with no rules, a file
that cannot be read or parsed, or a pattern Python cannot run, stops the command with one line naming the rule.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.logs import config_warning
from nutch2.plugins.urlnormalizer_regex.javaregex import JavaRegexError, translate_pattern, translate_replacement
from nutch2.urls.normalizers import SCOPES, URLNormalizer

log = logging.getLogger(__name__)

ROOT, RULE = "regex-normalize", "regex"


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    template: str  # the substitution as an re.sub template
    java: tuple[str, str]  # pattern and substitution as written
    where: str  # file:line

    def apply(self, url: str) -> str:
        return self.pattern.sub(self.template, url)


def read_rules(data: bytes, source: str) -> list[Rule]:
    """The rules of a regex-normalize.xml document; ConfigError naming ``source`` (and the line) when it is not
    one or a pattern cannot be used."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True, huge_tree=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        raise ConfigError(f"{source}: not valid XML ({e}); fix the file (Nutch's regex-normalize.xml format)") \
            from None
    if root.tag != ROOT:
        raise ConfigError(f"{source}: the top element is <{root.tag}>, not <{ROOT}>; is this a regex-normalize.xml "
                          "file?")
    rules = []
    for element in root:
        if not isinstance(element.tag, str):  # a processing instruction
            continue
        where = f"{source}:{element.sourceline}"
        if element.tag != RULE:
            raise ConfigError(f"{where}: <{element.tag}> where a <{RULE}> rule was expected")
        fields = {child.tag: child.text or "" for child in element if isinstance(child.tag, str)}
        if not fields.get("pattern") or "substitution" not in fields:
            missing = "substitution" if fields.get("pattern") else "pattern"
            config_warning(log, f"warning: {where}: a <regex> without <{missing}> is skipped (as Nutch skips it)")
            continue
        java = (fields["pattern"], fields["substitution"])
        try:
            pattern = re.compile(translate_pattern(java[0]))
            template = translate_replacement(java[1], pattern)
            pattern.sub(template, "")  # a template error shows now, not at the first URL
        except (JavaRegexError, re.error) as e:
            raise ConfigError(f"{where}: cannot use the rule {java[0]!r} -> {java[1]!r}: {e}; fix the rule") \
                from None
        rules.append(Rule(pattern, template, java, where))
    return rules


def read_file(conf: Configuration, name: str, prop: str) -> list[Rule]:
    path = conf.resource(name)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}; check {prop}") from None
    return read_rules(data, str(path))


class RegexURLNormalizer(URLNormalizer):
    nutch_class = "org.apache.nutch.net.urlnormalizer.regex.RegexURLNormalizer"

    def __init__(self, conf: Configuration, rules: list[Rule] | None = None,
                 scoped: dict[str, list[Rule]] | None = None) -> None:
        super().__init__(conf)
        if rules is None:
            inline = conf.get_str("urlnormalizer.regex.rules")
            rules = (read_rules(inline.encode("utf-8"), "urlnormalizer.regex.rules") if inline.strip() else
                     read_file(conf, conf.get_str("urlnormalizer.regex.file"), "urlnormalizer.regex.file"))
            scoped = {}
            for scope in sorted(SCOPES):
                prop = f"urlnormalizer.regex.file.{scope}"
                name = conf.get_str(prop).strip()
                if name:
                    scoped[scope] = read_file(conf, name, prop)
        self.rules = rules
        # a scope file without rules falls back to the default rules, as Nutch's
        self.scoped = {scope: r for scope, r in (scoped or {}).items() if r}

    def rules_for(self, scope: str) -> list[Rule]:
        return self.scoped.get(scope, self.rules)

    def normalize(self, url: str, scope: str) -> str | None:
        for rule in self.rules_for(scope):
            url = rule.apply(url)
        return url or None

    def explain(self, url: str, scope: str) -> str | None:
        """The rules that changed the URL (file:line), for normalizerchecker."""
        changed = []
        for rule in self.rules_for(scope):
            new = rule.apply(url)
            if new != url:
                changed.append(rule.where)
            url = new
        return "rules " + ", ".join(changed) if changed else "no rule applies"
