"""How alike two names are: PostgreSQL pg_trgm's trigram similarity, and spelling distance.

`similarity` computes what pg_trgm's `similarity(a, b)` returns, so a decision taken in Python
on the embedded SQLite store is the one Postgres would take: the text is lower-cased and cut
into words of letters and digits; each word, padded with two spaces before and one after,
gives its three-character windows; the score is the share of trigrams the two sets have in
common, |A ∩ B| / |A ∪ B|, as a 4-byte float. (pg_trgm stores a trigram of non-ASCII letters as
a hash of its bytes; two different such trigrams sharing a hash is the one place the two could
differ, and it is vanishingly rare. Letters are those of Unicode, as on a database whose
character type is UTF-8, the default of the embedded server.)

`spelling_distance` counts the edits (insert, delete, substitute, swap two neighbours) from one
name to another: one slip of the keyboard ("Volkswagon") is one edit, while trigram similarity
scores it 0.57.
"""

from __future__ import annotations

import re
import struct
from functools import lru_cache

__all__ = ["TRIGRAM_THRESHOLD", "trigrams", "similarity", "spelling_distance"]

TRIGRAM_THRESHOLD = 0.85
"""Trigram similarity from which two names are taken for one (typos and variants of long
names: "Acme Corporation Ltd" and "Acme Corporation Ltd." score 1.0)."""

_WORD = re.compile(r"[^\W_]+")


@lru_cache(maxsize=16384)
def trigrams(text: str) -> frozenset[str]:
    """The trigrams pg_trgm makes of `text` (its `show_trgm`). Remembered: a scope's names
    are compared again at every turn and question.

    Example:
        >>> sorted(trigrams("Cat"))
        ['  c', ' ca', 'at ', 'cat']
    """
    out: set[str] = set()
    lower = "".join(c if len(c := ch.lower()) == 1 else c[0] for ch in text)  # "İ" -> "i"
    for word in _WORD.findall(lower):
        padded = f"  {word} "
        out.update(padded[i:i + 3] for i in range(len(padded) - 2))
    return frozenset(out)


def _real(value: float) -> float:
    """`value` as PostgreSQL's `real` (4-byte float) holds it."""
    return float(struct.unpack("f", struct.pack("f", value))[0])


def similarity(a: str, b: str) -> float:
    """pg_trgm's `similarity(a, b)`: shared trigrams over all trigrams, 0 without any.

    Example:
        >>> similarity("Volkswagen", "volkswagen")
        1.0
        >>> round(similarity("Volkswagen", "Volkswagon"), 4)
        0.5714
        >>> similarity("Acme Corporation Ltd", "ACME corporation, ltd.") >= TRIGRAM_THRESHOLD
        True
    """
    left, right = trigrams(a), trigrams(b)
    if not left or not right:
        return 0.0
    shared = len(left & right)
    return _real(shared / (len(left) + len(right) - shared))


def spelling_distance(a: str, b: str, limit: int = 2) -> int:
    """Edits from `a` to `b` (insert, delete, substitute, swap two neighbours), at most
    `limit + 1` (anything further is reported as `limit + 1`).

    Example:
        >>> spelling_distance("volkswagen", "volkswagon")
        1
        >>> spelling_distance("priya", "priay")
        1
        >>> spelling_distance("sarah", "maria")
        3
    """
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return min(row[-1], limit + 1)
