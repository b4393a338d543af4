"""Conformance: the regex URL filter against Apache Nutch's sample rule files and URL lists.

Source: apache/nutch master, src/plugin/urlfilter-regex/sample/{WholeWebCrawling,IntranetCrawling,Benchmarks,
nutch1838}.{rules,urls} as run by src/plugin/urlfilter-regex/src/test/.../TestRegexURLFilter.java (through
RegexURLFilterBaseTest: each URL line is '+' when the filter must accept it, '-' when it must reject it). The files
are copied unchanged into tests/data/nutch/urlfilter-regex/. nutch1838 exercises host-specific rule blocks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLES = Path(__file__).parent / "data" / "nutch" / "urlfilter-regex"
FILES = ("WholeWebCrawling", "IntranetCrawling", "Benchmarks", "nutch1838")


def vectors(name: str) -> list[tuple[str, bool]]:
    """(url, accepted) pairs of a sample .urls file."""
    lines = (SAMPLES / f"{name}.urls").read_text(encoding="utf-8").splitlines()
    return [(line[1:], line[0] == "+") for line in lines if line]


def _filter(name: str):
    from nutch2.plugins.urlfilter_regex.filter import RegexURLFilter

    return RegexURLFilter.from_file(SAMPLES / f"{name}.rules")


@pytest.mark.parametrize("name", FILES)
def test_sample_rules(name: str) -> None:
    url_filter = _filter(name)
    wrong = [(url, accepted) for url, accepted in vectors(name) if (url_filter.filter(url) is not None) != accepted]
    assert not wrong


def agreement() -> dict[str, tuple[int, int]]:
    """{source: (agree, total)} for tests/conformance.py."""
    agree = total = 0
    for name in FILES:
        cases = vectors(name)
        total += len(cases)
        try:
            url_filter = _filter(name)
        except Exception:  # noqa: BLE001 - a rule file that does not load agrees with nothing
            continue
        agree += sum((url_filter.filter(url) is not None) == accepted for url, accepted in cases)
    return {"nutch TestRegexURLFilter samples": (agree, total)}
