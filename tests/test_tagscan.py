"""cap_attributes: start tags with too many attributes are cut before libxml2 sees them; other markup is untouched.

The property test checks the scan against the real libxml2: after capping, no element libxml2 builds has more
attributes than the cap, whatever comments, quotes and raw-text elements surround the tags."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from nutch2.parse.html import MAX_ATTRIBUTES, parse_html
from nutch2.parse.tagscan import cap_attributes


def _elements(markup: str) -> list[tuple[str, dict[str, str]]]:
    parser = etree.HTMLParser(encoding="utf-8", huge_tree=True, remove_comments=True, remove_pis=True,
                              no_network=True)
    root = etree.fromstring(markup.encode("utf-8"), parser)
    if root is None:
        return []
    return [(el.tag, dict(el.attrib)) for el in root.iter() if isinstance(el.tag, str)]


def _max_attrs(markup: str) -> int:
    return max((len(attrs) for _, attrs in _elements(markup)), default=0)


def _many(n: int, value: bool = True) -> str:
    return " ".join(f'a{i}="v"' if value else f"a{i}" for i in range(n))


NORMAL_PAGE = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>A <b>normal</b> page</title>
<!--[if lt IE 9]><script src="html5shiv.js"></script><![endif]-->
<style>a > b {{ color: red }} /* <div a b c d e> */</style>
<script>if (a < b && c > d) {{ document.write('<script src="x.js"><\\/script>'); }} // <!-- not a comment
var s = "</scrip" + "t>"; --></script>
<script type="text/template"><div {_many(300)}></div></script>
</head><body class="home page" data-a="1" {" ".join(f"data-x{i}='{i}'" for i in range(60))}>
<!-- <div {_many(300)}> inside a comment -->
<textarea name="t"><p {_many(300)}></textarea>
<svg viewBox="0 0 10 10"><path d="M0 0L10 10" stroke="#000"/></svg>
<form action="/s" method="get"><input type="text" name="q" value="a&gt;b" required autofocus/></form>
<p>text with < and > and a="b" c='d'</p><a href="/next.html" rel=next>next</a>
</body></html>"""


def test_normal_markup_is_returned_unchanged() -> None:
    assert cap_attributes(NORMAL_PAGE, MAX_ATTRIBUTES) is NORMAL_PAGE
    assert cap_attributes("", 1) == ""
    assert cap_attributes("plain text, no tags", 1) == "plain text, no tags"


def test_tag_with_too_many_attributes_keeps_the_first_ones() -> None:
    markup = f"<p>x</p><div {_many(10)}>text</div><a href=/y>y</a>"
    capped = cap_attributes(markup, 3)
    assert capped == '<p>x</p><div a0="v" a1="v" a2="v" >text</div><a href=/y>y</a>'
    assert dict(_elements(capped))["div"] == {"a0": "v", "a1": "v", "a2": "v"}
    assert cap_attributes(f"<p>x</p><div {_many(6)}", 3) == '<p>x</p><div a0="v" a1="v" a2="v" '  # cut by the end


@pytest.mark.parametrize("markup", [
    # quoted values hold '>' and '<'; the tag ends at the '>' outside quotes
    f'<div a=">" b=\'<\' {_many(5)}>',
    # attributes without whitespace after a quoted value, slashes between attributes
    '<div a="1"b="2"c="3"/d/e f>',
    # a self-closing script is not raw text: what follows is markup
    f"<script/><div {_many(5)}>",
    # end of a comment in the middle of a quoted value of a tag inside the comment
    f'<!-- <a x=" --><div {_many(5)}>"',
    # raw text ends at its end tag even inside quotes
    f'<title>"</title><div {_many(5)}>"',
    # script escape states: '</script>' inside '<!--<script>' does not end the script
    f'<script><!--<script>a</script><i x="--></script><div {_many(5)}>"',
    # a tag with cut attributes that was a raw-text start tag stays one (no '/>' created)
    f"<script {_many(4, value=False)}/x y><div {_many(5)}>",
])
def test_no_element_keeps_more_than_the_cap(markup: str) -> None:
    assert _max_attrs(markup) > 2  # the case is real: libxml2 builds an element with more attributes
    assert _max_attrs(cap_attributes(markup, 2)) <= 2


_CONTEXT = ["<b", ">", "/>", "<", "</", "</b ", "<!--", "-->", "--!>", "-", "!", "<!", "<?", "<script>", "</script>",
            "<script ", "</script ", "<script><!--", "<!--<script>", "<title>", "</title>", "<style>", "</style>",
            "<plaintext>", "<textarea>", "</textarea>", "<xmp>", "<iframe>", "<noscript>", "<!DOCTYPE ", "<svg>",
            "<![CDATA[", "]]>", "&", '"', "'", " ", "=", "<!-->", "x"]
_VALUE_BITS = st.sampled_from(["", "x", ">", "<", "'", '"', " ", "<b a b c>", "-->", "<!--", "</script>", "/"])


@st.composite
def _tag(draw: st.DrawFn) -> str:
    parts = ["<" + draw(st.sampled_from(["b", "p", "script", "title", "style", "textarea", "xmp", "Script"]))]
    for i in range(draw(st.integers(0, 5))):
        sep = draw(st.sampled_from([" ", "/", "\n", "", " / "]))
        name = draw(st.sampled_from(["a", "b", "c", "=h", "'k", '"l', "<m", "n-"])) + str(i)
        value = "".join(draw(st.lists(_VALUE_BITS, max_size=3)))
        parts.append(sep + draw(st.sampled_from([
            name, f'{name}="{value.replace(chr(34), "")}"', f"{name}='{value.replace(chr(39), '')}'",
            f"{name}={value.replace(' ', '').replace('>', '')}", f"{name} = " + value[:1]])))
    parts.append(draw(st.sampled_from([">", "/>", "", " >"])))
    return "".join(parts)


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.lists(st.one_of(_tag(), st.sampled_from(_CONTEXT)), max_size=25).map("".join))
def test_libxml2_never_sees_more_than_the_cap(markup: str) -> None:
    assert _max_attrs(cap_attributes(markup, 2)) <= 2


def test_parse_of_100000_attributes_is_bounded_and_keeps_the_page() -> None:
    page = (f"<html><head><title>T</title></head><body><p>hello <a href='/x'>x</a></p><div {_many(100_000)}>text"
            "</div></body></html>").encode()
    result = parse_html(page, "http://h/", "text/html", timeout=None)  # inline: nothing could abandon it
    assert result.is_success
    assert (result.title, result.text, result.outlinks) == ("T", "hello x text", [("http://h/x", "x")])

