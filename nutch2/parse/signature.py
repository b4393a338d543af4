"""Page signatures (Nutch's MD5Signature and TextProfileSignature, and a 64-bit SimHash), chosen by db.signature.class.

A signature identifies page content; comparing it with the previous one tells updatedb whether
the page was MODIFIED or NOTMODIFIED, and dedup groups rows by it. A SimHash also says how near
two pages are: the number of bits in which two of them differ (hamming_distance).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from nutch2.config import Configuration
from nutch2.errors import ConfigError

__all__ = ["SIGNATURE_CLASSES", "hamming_distance", "md5_signature", "signature_class", "simhash_bands",
           "simhash_signature", "text_profile", "text_profile_signature"]

# db.signature.class: the last part of a dotted class name, case-insensitive, so Nutch's
# org.apache.nutch.crawl.MD5Signature and TextProfileSignature work as they are
SIGNATURE_CLASSES = {"md5": "md5", "md5signature": "md5", "textprofile": "textprofile",
                     "textprofilesignature": "textprofile", "simhash": "simhash", "simhashsignature": "simhash"}


def signature_class(conf: Configuration) -> str:
    """The signature db.signature.class names: "md5", "textprofile" or "simhash" (ConfigError for another)."""
    name = conf.get_str("db.signature.class")
    kind = SIGNATURE_CLASSES.get(name.rsplit(".", 1)[-1].strip().lower())
    if kind is None:
        raise ConfigError(f"db.signature.class={name!r} is not known; use md5, textprofile or simhash")
    return kind


def md5_signature(content: bytes | None) -> bytes:
    """Raw 16-byte MD5 digest of the raw content (None counts as empty), as MD5Signature."""
    return hashlib.md5(content or b"", usedforsecurity=False).digest()


def _tokens(text: str, min_token_len: int) -> Counter[str]:
    """Count lower-cased runs of letters/digits longer than min_token_len characters."""
    counts: Counter[str] = Counter()
    current: list[str] = []
    for ch in text + " ":  # the sentinel flushes the last token
        if ch.isalpha() or ch.isdecimal():  # Java Character.isLetterOrDigit
            current.append(ch.lower())
            continue
        if len(current) > min_token_len:
            counts["".join(current)] += 1
        current.clear()
    return counts


def _quant(max_freq: int, quant_rate: float) -> int:
    """Quantum of the profile: round(max_freq * rate), at least 2 when any token repeats, else 1."""
    quant = int(max_freq * quant_rate + 0.5)  # Java Math.round rounds halves up
    if quant < 2:
        quant = 2 if max_freq > 1 else 1
    return quant


def text_profile(text: str, *, min_token_len: int = 2, quant_rate: float = 0.01) -> str:
    """The TextProfileSignature profile: "token count" lines, by decreasing quantised count.

    Counts are rounded down to a multiple of the quantum and tokens below it are dropped. Nutch
    left ties in hash-map order; here ties are ordered by token so the profile is deterministic.
    """
    counts = _tokens(text, min_token_len)
    if not counts:
        return ""
    quant = _quant(max(counts.values()), quant_rate)
    profile = [(tok, cnt // quant * quant) for tok, cnt in counts.items() if cnt >= quant]
    profile.sort(key=lambda item: (-item[1], item[0]))
    return "\n".join(f"{tok} {cnt}" for tok, cnt in profile)


def text_profile_signature(
    text: str | None,
    *,
    min_token_len: int = 2,
    quant_rate: float = 0.01,
    fallback_content: bytes | None = None,
) -> bytes:
    """MD5 of the text profile, as TextProfileSignature.

    With no text, Nutch falls back to MD5Signature of the raw content: pass it as fallback_content.
    """
    if not text:
        return md5_signature(fallback_content)
    profile = text_profile(text, min_token_len=min_token_len, quant_rate=quant_rate)
    return hashlib.md5(profile.encode("utf-8"), usedforsecurity=False).digest()


# ---------------------------------------------------------------- SimHash
SIMHASH_BITS = 64
SHINGLE_WORDS = 3
WORD_CACHE_SIZE = 20_000  # words whose hashes a process keeps (about 3 MB); then it starts a new cache
_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits
_NUMBER = re.compile(r"\d+")
_word_cache: dict[str, bytes] = {}


def _word_hashes(word: str) -> bytes:
    """Three 64-bit hashes of a word (one 24-byte BLAKE2b digest: the same in every process); a number is the
    word "0", so that dates, times and counters do not tell pages apart."""
    if not word.isalpha():
        word = _NUMBER.sub("0", word)
    return hashlib.blake2b(word.encode("utf-8"), digest_size=24).digest()


def _words(text: str) -> list[str]:
    """The text's lower-cased runs of letters and digits (the regular expression only for tokens with other
    characters: most are words already, and this is twice as fast as one findall over the text)."""
    words: list[str] = []
    for token in text.lower().split():
        if token.isalnum():
            words.append(token)
        else:
            words += _WORD.findall(token)
    return words


def _hashes_of(words: list[str]) -> bytes:
    """The words' hashes, 24 bytes per word, from the process's cache of them (words recur from page to page).
    A full cache is replaced, not cleared, so a thread still reading the old one reads all it needs."""
    global _word_cache
    cache = _word_cache
    if len(cache) > WORD_CACHE_SIZE:
        cache = _word_cache = {}
    for word in set(words).difference(cache):
        cache[word] = _word_hashes(word)
    return b"".join(map(cache.__getitem__, words))


def simhash_signature(text: str | None, *, fallback_content: bytes | None = None) -> bytes:
    """Charikar's 64-bit SimHash of the text's 3-word shingles, as 8 bytes (big-endian).

    Words are lower-cased runs of letters and digits. Each shingle is a feature; bit i of the SimHash is 1 when
    more than half of the features' 64-bit hashes have bit i set. A shingle's hash is the XOR of its first word's
    first hash, its second word's second and its third word's third (simple tabulation hashing, 3-independent):
    each distinct word is hashed once, and the bits are counted a byte column at a time over every shingle.
    Near-identical texts get SimHashes a few bits apart. With no word, the first 8 bytes of MD5Signature of
    fallback_content (as TextProfileSignature falls back).
    """
    words = _words(text) if text else []
    if not words:
        return md5_signature(fallback_content)[:8]
    words += [""] * (SHINGLE_WORDS - len(words))  # one shingle for a text of one or two words
    hashes = _hashes_of(words)
    n = len(words) - SHINGLE_WORDS + 1  # shingles
    masks = [int.from_bytes(bytes([1 << bit]) * n, "big") for bit in range(8)]  # that bit of each byte
    out = bytearray(8)
    for p in range(8):  # byte p of every shingle's hash: byte p of hash 0 of word i, of hash 1 of word i+1, ...
        column = (int.from_bytes(hashes[p:24 * n:24], "big")
                  ^ int.from_bytes(hashes[24 + 8 + p:24 * (n + 1):24], "big")
                  ^ int.from_bytes(hashes[48 + 16 + p::24], "big"))
        for bit in range(8):
            if 2 * (column & masks[bit]).bit_count() > n:  # more than half of the shingles have the bit set
                out[p] |= 1 << bit
    return bytes(out)


def hamming_distance(a: bytes, b: bytes) -> int:
    """The number of bits in which two signatures of one length differ."""
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).bit_count()


def simhash_bands(value: int, distance: int) -> list[int]:
    """A SimHash's 64 bits (as an int) cut into distance + 1 bands, high bits first (the first bands a bit wider
    when 64 does not divide): two SimHashes at most `distance` bits apart are equal in at least one band, as the
    differing bits can fall into `distance` bands at most (pigeonhole)."""
    count = distance + 1
    width, wider = divmod(SIMHASH_BITS, count)
    bands, shift = [], SIMHASH_BITS
    for i in range(count):
        bits = width + (1 if i < wider else 0)
        shift -= bits
        bands.append(value >> shift & ((1 << bits) - 1))
    return bands
