"""language-identifier: the parse filter (Nutch's HTMLLanguageParser)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from lxml import etree

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.parse.parsers import ParseFilter
from nutch2.plugins.language_identifier.codes import parse_language
from nutch2.webpage import WebPage

LANG_KEY = "lang"  # row metadata key (Nutch's Metadata.LANGUAGE)
CERTAIN = 0.9  # lang.identification.only.certain: the least probability of a language kept
NO_LANGUAGE = "zxx"  # the model's label for text of no language (numbers, code)
POLICIES = ("detect", "identify")
# what a document says about its language: the first lang attribute, Dublin Core's language, http-equiv
_LANG_ATTRIBUTES = etree.XPath("//@lang")
_DC_LANGUAGE = etree.XPath("//meta[translate(@name, 'DCLANGUE', 'dclangue') = 'dc.language']/@content")
_HTTP_EQUIV = etree.XPath("//meta[translate(@http-equiv, 'CONTENTLAGU', 'contentlagu') = 'content-language']"
                          "/@content")
_METADATA = ("dc.language", "content-language", "language", "lang")  # a document parser's metadata names


@cache
def identifier() -> Any:
    """py3langid's model, loaded once per process (read-only, shared by the threads of a task)."""
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError:
        raise ConfigError("language-identifier: lang.extraction.policy has identify, which needs py3langid; pip "
                          "install 'nutch2[langid]', or set lang.extraction.policy=detect") from None
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def header(headers: Mapping[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name), None)


def detect(page: WebPage, parse: Any, dom: Any | None) -> str | None:
    """The language the document names: its DOM (HTML), a document parser's metadata, the HTTP header."""
    if dom is not None:
        for xpath in (_LANG_ATTRIBUTES, _DC_LANGUAGE, _HTTP_EQUIV):
            for value in xpath(dom):
                lang = parse_language(str(value))
                if lang:
                    return lang
    meta = getattr(parse, "meta", None) or {}
    for name in _METADATA:
        lang = parse_language(meta.get(name))
        if lang:
            return lang
    return parse_language(header(page.headers or {}, "content-language"))


class HTMLLanguageParser(ParseFilter):
    """The language of the page into page.metadata["lang"] (removed when this parse finds none)."""

    nutch_class = "org.apache.nutch.analysis.lang.HTMLLanguageParser"
    fields = ("headers",)

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.policy = [p.strip().lower() for p in conf.get_str("lang.extraction.policy").split(",") if p.strip()]
        if not self.policy or any(p not in POLICIES for p in self.policy) or len(set(self.policy)) < len(self.policy):
            raise ConfigError(f"lang.extraction.policy={conf.get_str('lang.extraction.policy')!r} is not a policy; "
                              "give detect, identify, detect,identify or identify,detect")
        self.max_length = conf.get_int("lang.analyze.max.length")
        self.only_certain = conf.get_bool("lang.identification.only.certain")
        if "identify" in self.policy:  # the library is checked now; its model is loaded at the first page
            try:
                import py3langid  # noqa: F401
            except ImportError:
                raise ConfigError("language-identifier: lang.extraction.policy has identify, which needs py3langid; "
                                  "pip install 'nutch2[langid]', or set lang.extraction.policy=detect") from None

    def identify(self, parse: Any) -> str | None:
        """The language a statistical model finds in the title and text; None for text of no language, or of too
        little certainty with lang.identification.only.certain."""
        text = f"{getattr(parse, 'title', '') or ''} {getattr(parse, 'text', '') or ''}".strip()
        if self.max_length > 0:
            text = text[:self.max_length]
        if not any(ch.isalpha() for ch in text):
            return None
        lang, probability = identifier().classify(text)
        if lang == NO_LANGUAGE or (self.only_certain and probability < CERTAIN):
            return None
        return str(lang)

    def language(self, page: WebPage, parse: Any, dom: Any | None) -> str | None:
        for way in self.policy:
            lang = detect(page, parse, dom) if way == "detect" else self.identify(parse)
            if lang:
                return lang
        return None

    def filter(self, doc: Any, parse: Any, page: WebPage, dom: Any | None) -> None:
        lang = self.language(page, parse, dom)
        if lang:
            page.metadata[LANG_KEY] = lang.encode("ascii")
        elif LANG_KEY in page.metadata:
            del page.metadata[LANG_KEY]
