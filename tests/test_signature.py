"""Tests for nutch2.parse.signature."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from nutch2.parse.signature import md5_signature, text_profile, text_profile_signature

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
