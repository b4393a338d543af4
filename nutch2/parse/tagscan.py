"""Cap the attributes of HTML start tags before libxml2 sees them.

libxml2 builds an element's attribute list by walking it to its end for every attribute it adds, so a start tag
with n (distinct) attributes costs O(n^2): 16 000 attributes take ~0.9 s of CPU, 100 000 take well over a minute,
and the parse cannot be interrupted. :func:`cap_attributes` finds start tags with more than ``cap`` attributes and
keeps only the first ``cap``; markup without such a tag is returned unchanged (the same object).

The scan follows libxml2 2.14's HTML tokenizer (HTML5 rules) wherever it decides where a tag begins and ends:
comments (``-->``, ``--!>``), bogus comments (``<!x``, ``<?x``, ``</1``), doctype, end tags (their attributes are
parsed and dropped), quoted and unquoted attribute values, and the raw-text elements whose content holds no tags
(script with its ``<!--`` escape states, style, xmp, iframe, noembed, noframes, plaintext, title, textarea).
Ordinary markup is consumed by one regular expression; Python runs once per raw-text element and per capped tag.
"""

from __future__ import annotations

import re

__all__ = ["cap_attributes"]

_WS = r"[ \t\n\f\r]"
_SLASH = rf"(?:/(?!>){_WS}*+)"  # a '/' inside a tag that does not close it is skipped
_VALUE = r"""(?:"[^"]*+"?|'[^']*+'?|[^ \t\n\f\r>]*+)"""  # an unterminated quote runs to the end of the input
_ATTR = rf"(?:[^ \t\n\f\r/>][^ \t\n\f\r/>=]*+{_WS}*+(?:={_WS}*+{_VALUE}{_WS}*+)?+)"
_TAG_NAME = r"[A-Za-z][^ \t\n\f\r/>]*+"
_RAW_NAMES = frozenset({"script", "style", "xmp", "iframe", "noembed", "noframes", "plaintext", "textarea", "title"})
_RAW = r"(?i:s(?:cript|tyle)|t(?:itle|extarea)|xmp|iframe|no(?:embed|frames)|plaintext)(?=[ \t\n\f\r/>])"
_TEMPLATE = r"""(?:
    [^<]++                                                                      # text
  | <(?:
        (?!{raw}){name}{ws}*+{slash}*+(?:{attr}{slash}*+){{0,{cap}}}+(?:/?>|\Z)  # start tag, <= cap attributes
      | /(?:{name}{ws}*+{slash}*+(?:{attr}{slash}*+)*+(?:/?>)?                  # end tag (attributes dropped)
          | [^>]*+>?)                                       # '</>', '</1..>' bogus comment, '</' at the end
      | !(?:--(?:>|->|(?:[^-]++|-(?!-!?>))*+(?:--!?>)?)     # comment
          | [^>]*+>?)                                       # doctype, bogus comment
      | \?[^>]*+>?                                          # processing instruction: a bogus comment
      | (?![A-Za-z!/?])                                     # a '<' that starts nothing
    )
)*+"""
_HEAD = re.compile(rf"<({_TAG_NAME}){_WS}*+{_SLASH}*+")
_ATTRS_REST = re.compile(rf"(?:{_ATTR}{_SLASH}*+)*+")
_TAG_END = re.compile(r"/?>")
_SCRIPT_TOKEN = re.compile(r"<!--|-->|</?(?i:script)(?=[ \t\n\f\r/>])")
_RAW_END: dict[str, re.Pattern[str]] = {}
_RUNS: dict[int, re.Pattern[str]] = {}
_CAPPED: dict[int, re.Pattern[str]] = {}


def _run(cap: int) -> re.Pattern[str]:
    """The pattern that consumes ordinary markup up to a raw-text element or a tag with more than ``cap``."""
    pattern = _RUNS.get(cap)
    if pattern is None:
        pattern = _RUNS[cap] = re.compile(_TEMPLATE.format(name=_TAG_NAME, ws=_WS, slash=_SLASH, attr=_ATTR,
                                                          raw=_RAW, cap=cap), re.X)
    return pattern


def _capped(cap: int) -> re.Pattern[str]:
    """Exactly ``cap`` attributes, without the slashes after the last one (``a/`` + ``>`` would close the tag)."""
    pattern = _CAPPED.get(cap)
    if pattern is None:
        pattern = _CAPPED[cap] = re.compile(rf"(?:{_ATTR}{_SLASH}*+){{{cap - 1}}}+{_ATTR}")
    return pattern


def _raw_end(markup: str, pos: int, name: str) -> int:
    """Where the content of raw-text element ``name`` that starts at ``pos`` ends (its end tag, or the input's)."""
    if name == "plaintext":
        return len(markup)
    if name == "script":
        return _script_end(markup, pos)
    pattern = _RAW_END.get(name)
    if pattern is None:
        pattern = _RAW_END[name] = re.compile(rf"</(?i:{name})(?=[ \t\n\f\r/>])")
    m = pattern.search(markup, pos)
    return m.start() if m else len(markup)


def _script_end(markup: str, pos: int) -> int:
    """End of script data, with libxml2's escape states: '<!--' escapes, '<script' inside it escapes twice."""
    state = 0  # 0 script data, 1 escaped ('<!--' seen), 2 double escaped
    while True:
        m = _SCRIPT_TOKEN.search(markup, pos)
        if m is None:
            return len(markup)
        token = m.group()
        pos = m.start() + 1  # tokens may overlap ('<!-->' opens and closes the escape)
        if token == "<!--":
            state = 1 if state == 0 else state
        elif token == "-->":
            state = 0 if state else state
        elif token[1] == "/":
            if state < 2:
                return m.start()
            state = 1
        elif state == 1:
            state = 2


def cap_attributes(markup: str, cap: int) -> str:
    """``markup`` with every start tag cut to its first ``cap`` attributes (unchanged when none has more)."""
    if cap < 1:
        raise ValueError(f"cap must be at least 1, not {cap}")
    run = _run(cap)
    out: list[str] = []
    start = pos = 0
    end = len(markup)
    while True:
        pos = run.match(markup, pos).end()
        if pos >= end:
            break
        head = _HEAD.match(markup, pos)  # the run stops only at a start tag: raw-text or with too many attributes
        if head is None:  # not reached (the run consumes every other '<'); never stall on a surprise
            pos += 1
            continue
        name = head.group(1).lower()
        attrs = head.end()
        rest = _ATTRS_REST.match(markup, attrs).end()
        closing = _TAG_END.match(markup, rest)
        keep = _capped(cap).match(markup, attrs)
        if keep is not None and keep.end() < rest:  # more than cap attributes: drop the others
            out.append(markup[start:keep.end()])
            start = rest
        pos = closing.end() if closing else rest
        if closing is not None and closing.group() == ">" and name in _RAW_NAMES:
            pos = _raw_end(markup, pos, name)
    if not out:
        return markup
    out.append(markup[start:])
    return "".join(out)

