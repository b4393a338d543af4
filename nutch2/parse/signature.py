"""Page signatures (Nutch's MD5Signature and TextProfileSignature).

A signature identifies page content; comparing it with the previous one tells updatedb whether
the page was MODIFIED or NOTMODIFIED, and the index dedup groups documents by it.
"""

from __future__ import annotations

import hashlib
from collections import Counter

__all__ = ["md5_signature", "text_profile", "text_profile_signature"]


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
