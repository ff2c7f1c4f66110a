"""Consolidation (maintenance step 2) as pure decisions: near-identical ranked records of one scope
become one.

Two facts (or two episodes of the same tier) are near-identical when their text is the same
word for word once case, punctuation, spacing and articles are ignored: "The user is
allergic to peanuts." and "user is allergic to peanuts" merge; "dog bites man" and "man bites
dog" do not. The survivor is the most confident, then the oldest; it absorbs the others'
repetitions and evidence, and they become `merged`, pointing at it.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Sequence

from langgraph_typed_memory.maintenance.records import MemoryRow

__all__ = ["CONSOLIDATED_KINDS", "signature", "duplicate_clusters"]

CONSOLIDATED_KINDS = ("fact", "episode")
"""Observations are deduplicated by the detector's pattern key instead."""
_WORD = re.compile(r"[^\W_]+")
_ARTICLES = frozenset({"a", "an", "the"})


def _norm(text: str) -> str:
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold().replace("'", ""))
    return " ".join(w for w in words if w not in _ARTICLES)


def signature(row: MemoryRow) -> str | None:
    """What two near-identical records share; None for records never merged.

    Example:
        >>> def fact(text):
        ...     return MemoryRow(1, "f", "ns", "k", "fact", "t", None, None, "active",
        ...                      {"subject": "user", "predicate": "allergy", "content": text},
        ...                      0.9, 0.0)
        >>> signature(fact("The user is allergic to peanuts.")) == signature(
        ...     fact("user is ALLERGIC to peanuts"))
        True
    """
    v = row.value
    if row.kind == "fact":
        text = f"{v.get('subject', '')} | {v.get('predicate', '')} | {v.get('content', '')}"
    elif row.kind == "episode":
        text = f"{row.tier} | {v.get('title', '')} | {v.get('summary', '')}"
    else:
        return None
    return "|".join(_norm(part) for part in text.split(" | "))


def duplicate_clusters(rows: Sequence[MemoryRow]) -> list[tuple[MemoryRow, list[MemoryRow]]]:
    """(survivor, records merged into it) for each set of near-identical records of one
    namespace; deterministic order.

    Example:
        >>> def fact(i, text, conf):
        ...     return MemoryRow(i, f"f{i}", "ns", f"k{i}", "fact", "t", None, None, "active",
        ...                      {"subject": "u", "predicate": "p", "content": text}, conf, 0.0)
        >>> [(s.id, [m.id for m in ms]) for s, ms in duplicate_clusters(
        ...     [fact(1, "Likes tea.", 0.7), fact(2, "likes TEA", 0.9), fact(3, "Likes cake", 1)])]
        [('f2', ['f1'])]
    """
    buckets: dict[tuple[str, str], list[MemoryRow]] = defaultdict(list)
    for row in rows:
        sig = signature(row)
        if sig is not None:
            buckets[(row.ns, sig)].append(row)
    out = []
    for (_, _), members in sorted(buckets.items()):
        if len(members) < 2:
            continue
        ordered = sorted(members, key=lambda r: (-r.confidence, r.created_at, r.seq))
        out.append((ordered[0], ordered[1:]))
    return out
