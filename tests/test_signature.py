"""Tests for nutch2.parse.signature: MD5Signature, TextProfileSignature, SimHash and the names of the classes."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nutch2.errors import ConfigError
from nutch2.parse.signature import (
    hamming_distance,
    md5_signature,
    signature_class,
    simhash_bands,
    simhash_signature,
    text_profile,
    text_profile_signature,
)
from tests.conftest import make_conf
from tests.helpers import REPO, news_page

ARTICLE = (
    "The quick brown fox jumps over the lazy dog. The fox was quick and the dog was lazy. "
    "Foxes and dogs have been neighbours for a long time, and the fox usually wins. "
) * 20


def test_md5_signature_is_raw_digest() -> None:
    assert md5_signature(b"abc") == hashlib.md5(b"abc").digest()
    assert len(md5_signature(b"abc")) == 16
    assert md5_signature(None) == md5_signature(b"") == bytes.fromhex("d41d8cd98f00b204e9800998ecf8427e")


def test_profile_tokens_quantisation_and_order() -> None:
    # tokens of length <= 2 are dropped; with max freq 3 the quantum is 2
    text = "Alpha alpha ALPHA beta beta gamma an of 42 123 123"
    assert text_profile(text) == "123 2\nalpha 2\nbeta 2"  # ties ordered by token
    assert text_profile("single words only here") == "here 1\nonly 1\nsingle 1\nwords 1"
    assert text_profile("a b c") == ""


def test_profile_quant_rate_with_large_counts() -> None:
    text = "common " * 450 + "rare " * 3 + "middle " * 10
    # quantum = round(450 * 0.01) = 5 (Java rounds halves up): rare (3) dropped, middle 10 kept
    assert text_profile(text) == "common 450\nmiddle 10"


def test_profile_non_ascii_letters_and_punctuation() -> None:
    assert text_profile("Привет-мир! ПРИВЕТ, мир... привет") == "мир 2\nпривет 2"
    assert text_profile("ёж ёж ёж") == ""  # two letters: too short


def test_near_duplicates_share_signature() -> None:
    base = text_profile_signature(ARTICLE)
    variants = [
        ARTICLE + " Posted at 12:34.",  # small addition (single tokens are quantised away)
        ARTICLE.upper(),  # case
        ARTICLE.replace(".", "!").replace(",", ";"),  # punctuation
        "  ".join(ARTICLE.split()),  # whitespace
        "Menu Home " + ARTICLE,  # boilerplate seen once
    ]
    for variant in variants:
        assert text_profile_signature(variant) == base


def test_different_texts_differ() -> None:
    other = ("Completely different article about databases, tables, indexes and queries. " * 20).strip()
    assert text_profile_signature(ARTICLE) != text_profile_signature(other)
    assert text_profile_signature(ARTICLE) != md5_signature(ARTICLE.encode())


def test_signature_is_md5_of_profile() -> None:
    expected = hashlib.md5(text_profile(ARTICLE).encode("utf-8")).digest()
    assert text_profile_signature(ARTICLE) == expected
    assert len(expected) == 16


def test_parameters_change_the_profile() -> None:
    text = "ab ab ab abc abc"
    assert text_profile(text) == "abc 2"
    assert text_profile(text, min_token_len=1) == "ab 2\nabc 2"
    assert text_profile_signature(text, min_token_len=1) != text_profile_signature(text)


def test_empty_text_falls_back_to_content_md5() -> None:
    assert text_profile_signature("", fallback_content=b"<html></html>") == md5_signature(b"<html></html>")
    assert text_profile_signature(None) == md5_signature(b"")


@given(st.text(max_size=300))
def test_signature_deterministic_and_order_insensitive(text: str) -> None:
    words = text.split()
    assert text_profile_signature(text) == text_profile_signature(" ".join(reversed(words)) or text)
    assert len(text_profile_signature(text)) == 16


# ---------------------------------------------------------------- SimHash
def page_text(article: str, updated: str = "Monday, 4 March 2024 at 10:32", views: int = 12345) -> str:
    return " ".join(news_page(article, updated, views))


def reference_simhash(text: str) -> bytes:
    """SimHash as its docstring defines it, one shingle and one bit at a time."""
    words = [re.sub(r"\d+", "0", w) for w in re.findall(r"[^\W_]+", text.lower())]
    words += [""] * (3 - len(words))
    hashes = [hashlib.blake2b(w.encode(), digest_size=24).digest() for w in words]
    features = [int.from_bytes(hashes[i][:8], "big") ^ int.from_bytes(hashes[i + 1][8:16], "big")
                ^ int.from_bytes(hashes[i + 2][16:], "big") for i in range(len(words) - 2)]
    value = sum(1 << bit for bit in range(64) if 2 * sum(f >> bit & 1 for f in features) > len(features))
    return value.to_bytes(8, "big")


def test_simhash_is_charikars_over_three_word_shingles() -> None:
    for text in (page_text("harbour"), page_text("library"), "One", "one two", "a b c", "Ünïcode wörds, 42 of them!"):
        assert simhash_signature(text) == reference_simhash(text)
        assert len(simhash_signature(text)) == 8


def test_pages_that_differ_in_a_date_and_a_counter_are_near_duplicates() -> None:
    base = simhash_signature(page_text("harbour"))
    # the weekday is a word: a few bits; the numbers count as one word each: no bit at all
    assert 0 < hamming_distance(base, simhash_signature(page_text("harbour", "Tuesday, 5 March 2024 at 11:47",
                                                                   12391))) <= 3
    assert 0 < hamming_distance(base, simhash_signature(page_text("harbour", "Wednesday, 3 April 2024 at 9:05",
                                                                   20000))) <= 3
    assert simhash_signature(page_text("harbour", "Monday, 11 March 2025 at 8:00", 7)) == base
    other = simhash_signature(page_text("library"))
    assert 0 < hamming_distance(other, simhash_signature(page_text("library", "Tuesday, 5 March 2024 at 11:47",
                                                                    12391))) <= 3


def test_different_articles_are_far_apart() -> None:
    # the same page around them (navigation, date, counter, footer): still about half of the 64 bits apart
    assert hamming_distance(simhash_signature(page_text("harbour")), simhash_signature(page_text("library"))) > 16


def test_simhash_is_the_same_in_every_process() -> None:
    """No salted hash(): another interpreter with another PYTHONHASHSEED gives the same 8 bytes."""
    text = page_text("library")
    code = ("import sys; from nutch2.parse.signature import simhash_signature; "
            "print(simhash_signature(sys.stdin.read()).hex())")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True, check=True,
                             cwd=REPO, env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip()
        assert out == simhash_signature(text).hex()


def test_simhash_without_words_falls_back_to_the_contents_md5() -> None:
    assert simhash_signature("", fallback_content=b"<html></html>") == md5_signature(b"<html></html>")[:8]
    assert simhash_signature(None) == simhash_signature(" ... ") == md5_signature(b"")[:8]


@pytest.mark.parametrize("name, kind", [
    ("md5", "md5"), ("org.apache.nutch.crawl.MD5Signature", "md5"), ("textprofile", "textprofile"),
    ("org.apache.nutch.crawl.TextProfileSignature", "textprofile"), ("simhash", "simhash"), ("SimHash", "simhash"),
    ("SimHashSignature", "simhash"), ("nutch2.parse.signature.SimHashSignature", "simhash"),
])
def test_signature_class_names(tmp_path: Path, name: str, kind: str) -> None:
    assert signature_class(make_conf(tmp_path, "memory", **{"db.signature.class": name})) == kind


def test_an_unknown_signature_class_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="db.signature.class='sha1' is not known; use md5, textprofile or simhash"):
        signature_class(make_conf(tmp_path, "memory", **{"db.signature.class": "sha1"}))


@given(st.integers(0, 2**64 - 1), st.integers(0, 15), st.data())
def test_banding_finds_every_pair_within_the_distance(value: int, distance: int, data: st.DataObject) -> None:
    """Pigeonhole: a SimHash and one with at most `distance` of its bits flipped agree in at least one band."""
    flips = data.draw(st.sets(st.integers(0, 63), max_size=distance))
    other = value ^ sum(1 << bit for bit in flips)
    bands = simhash_bands(value, distance)
    assert len(bands) == distance + 1
    assert any(a == b for a, b in zip(bands, simhash_bands(other, distance), strict=True))


@given(st.integers(0, 2**64 - 1), st.integers(0, 15))
def test_bands_cut_the_64_bits_into_pieces(value: int, distance: int) -> None:
    widths = [64 // (distance + 1) + (1 if i < 64 % (distance + 1) else 0) for i in range(distance + 1)]
    joined = 0
    for band, width in zip(simhash_bands(value, distance), widths, strict=True):
        assert band < 1 << width
        joined = joined << width | band
    assert joined == value
