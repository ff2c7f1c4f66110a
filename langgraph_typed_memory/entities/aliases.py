"""Aliases a turn states: "Volkswagen (VW)", "VW, short for Volkswagen", "we call him Bob".

An alias is a second name for one entity. Learned only when the turn says so: two names that
merely look alike are the resolver's business, not an alias. A pronoun target ("we call him
Bob") is resolved with the turn's other pronouns. Pure functions, English.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Alias", "find_aliases"]

_NAME = r"(?-i:[A-Z])[\w&.'-]*(?:(?<!\.)\s+(?:(?-i:[A-Z])[\w&.'-]*|of|and|&|de|van|von))*(?<![.'-])"
_SHORT = r"(?-i:[A-Z])[\w&.'-]*(?:(?<!\.)\s+(?-i:[A-Z])[\w&.'-]*)?(?<![.'-])"
_CALL = (r"(?:we|everyone|everybody|they|people|most\s+people|the\s+team|i|friends|the\s+kids)"
         r"\s+(?:all\s+)?(?:just\s+)?(?:call|calls|called)")
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), order) for p, order in (
        # "Volkswagen (VW)", "Robert (Bob)", "VW (Volkswagen)", "Alexander (Sasha to friends)"
        (rf"(?P<a>{_NAME})\s+\((?:aka\s+|a\.k\.a\.?\s+|or\s+|i\.e\.\s+|called\s+|"
         rf"known\s+as\s+)?(?P<b>{_NAME})(?:\s+for\s+short|\s+to\s+(?:his|her|their|my|our|"
         rf"the)?\s*(?:friends|family|everyone|us|colleagues|the\s+team))?\)", "paren"),
        # "VW, short for Volkswagen"; "VW stands for Volkswagen"; "Liz is short for Elizabeth"
        (rf"(?P<b>{_SHORT})\s*,?\s+(?:is\s+|being\s+)?(?:short\s+for|stands\s+for|"
         rf"an?\s+(?:nickname|abbreviation)\s+for)\s+(?P<a>{_NAME})", "ab"),
        # "Elizabeth, Liz for short"; "Elizabeth, or Liz for short"
        (rf"(?P<a>{_NAME})\s*(?:,|—|–|-)\s*(?:or\s+)?(?:just\s+)?(?P<b>{_SHORT})\s+for\s+short",
         "ab"),
        # "Robert, aka Bob", "Robert, also known as Bob", "Robert, who goes by Bob"
        (rf"(?P<a>{_NAME})\s*,?\s+(?:aka|a\.k\.a\.?|also\s+known\s+as|better\s+known\s+as|"
         rf"known\s+as|(?:who|which)\s+(?:goes|go)\s+by|goes\s+by|(?:who|which)\s+"
         rf"(?:we|everyone)\s+(?:call|calls))\s+(?P<b>{_SHORT})", "ab"),
        # "Robert's nickname is Bob"
        (rf"(?P<a>{_NAME})'s\s+nickname\s+is\s+(?P<b>{_SHORT})", "ab"),
        # "we call him Bob", "everyone calls her Liz"
        (rf"\b{_CALL}\s+(?P<a>him|her|them|it)\s+(?:just\s+)?(?P<b>{_SHORT})", "ab"),
        # "we call Robert Bob" (two names): only when both are capitalized, as written
        (rf"\b{_CALL}\s+(?P<a>{_SHORT})\s+(?:just\s+)?(?P<b>(?-i:[A-Z])[\w'-]+)(?=\s*[.,;!?]|$)",
         "ab"),
    ))
_PRONOUNS = {"him": "he", "her": "she", "them": "they", "it": "it"}
_NOT_ALIASES = frozenset("i the a an we you he she it they my our ok".split())


@dataclass(frozen=True, slots=True)
class Alias:
    """`alias` is another name of `name`; when `name` is a pronoun, `pronoun` is its form.

    Example:
        >>> Alias("VW", "Volkswagen")
        Alias(alias='VW', name='Volkswagen', pronoun=None)
    """

    alias: str
    name: str
    pronoun: str | None = None


def _is_acronym(text: str) -> bool:
    return bool(re.fullmatch(r"[A-Z][A-Z0-9&.]{1,7}", text.replace(" ", "")))


def find_aliases(text: str) -> list[Alias]:
    """The aliases a turn states, left to right.

    In parentheses, the shorter name is the alias ("Volkswagen (VW)", "VW (Volkswagen)").

    Example:
        >>> [(a.alias, a.name) for a in find_aliases(
        ...     "I joined Volkswagen (VW) in May. Liz, short for Elizabeth, runs QA.")]
        [('VW', 'Volkswagen'), ('Liz', 'Elizabeth')]
        >>> find_aliases("My manager is Robert. We call him Bob.")
        [Alias(alias='Bob', name='him', pronoun='he')]
    """
    out: list[Alias] = []
    seen: set[tuple[str, str]] = set()
    for pattern, order in _PATTERNS:
        for m in pattern.finditer(text):
            a, b = (re.sub(r"^the\s+", "", m[g].strip(), flags=re.I) for g in "ab")
            if order == "paren" and (len(a) < len(b) and not _is_acronym(b) or _is_acronym(a)):
                a, b = b, a  # "VW (Volkswagen)": the longer, non-acronym name is the name
            if (a.lower() == b.lower() or b.lower() in _NOT_ALIASES
                    or a.split()[0].lower() in _NOT_ALIASES - {"it"}):
                continue
            if (b, a) in seen or (b, a.lower()) in seen:
                continue
            pronoun = _PRONOUNS.get(a.lower())
            if pronoun is None and a.lower() == "it":
                continue
            seen.add((b, a if pronoun is None else a.lower()))
            out.append(Alias(b, a, pronoun))
    return sorted(out, key=lambda x: text.find(x.alias))
