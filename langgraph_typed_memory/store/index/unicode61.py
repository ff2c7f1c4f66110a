"""FTS5's `unicode61` tokenizer, in this process, with what it does to each character learned
from the database's own FTS5.

unicode61 (default options: categories `L* N* Co`, `remove_diacritics 1`) reads a text one
character at a time and decides each character alone, from three facts about it:

- whether it starts a token (a token character: letters, digits, private use);
- whether it continues one (a token character, or a diacritic that follows one: a combining
  accent is part of the word it marks, but begins none);
- what it folds to (lower case, diacritics removed: one character, or nothing).

Every other character separates tokens. In ASCII the token characters are the letters and
digits and folding is lower-casing, fixed by FTS5's code. Outside ASCII the answers come from
tables of the SQLite library the process links, so they are not computed here from Python's
`unicodedata` (another Unicode version, other categories): they are learned from FTS5 itself,
one probe text per character the first time a text holds it (`probe`, `learn`), and kept.

Example:
    >>> table = Unicode61()
    >>> sorted(table.unknown("Crème brûlée")), table.words("Hello, WORLD_2")
    (['è', 'é', 'û'], ['hello', 'world', '2'])
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["Unicode61", "probe", "PROBED_TOKENS"]

_ASCII_WORD = re.compile(r"[0-9a-z]+")
"""unicode61's ASCII token characters, once a text is lower-cased."""

PROBED_TOKENS = 2
"""Tokens a probe text gives at least once learned (see `probe`)."""


def probe(char: str) -> list[str]:
    """The texts whose tokens tell what unicode61 does with `char`: `1c1 c1` and `c` alone.

    `1c1 c1` gives `1`, `1`, `1` when `char` separates; `1f1` then `1` when it continues a
    token only (`f`: what it folds to); `1f1` then `f1` when it starts one too. `c` alone gives
    a token exactly when it starts one and folds to something. No porter rule ends in a
    digit, so the porter tokenizer passes these tokens on unchanged.

    Example:
        >>> probe("é")
        ['1é1 é1', 'é']
    """
    return [f"1{char}1 {char}1", char]


class Unicode61:
    """What unicode61 does with the characters learned so far, and the tokens of a text made
    of known characters.

    `chars` maps a character to (fold, starts): it continues a token, folds to `fold` and,
    if `starts`, may begin one. A character mapped to None separates tokens.
    """

    def __init__(self) -> None:
        self.chars: dict[str, tuple[str, bool] | None] = {}

    def unknown(self, texts: str | Iterable[str]) -> set[str]:
        """The characters outside ASCII of `texts` not learned yet."""
        if isinstance(texts, str):
            texts = (texts,)
        return {c for text in texts if not text.isascii() for c in text
                if c >= "\x80" and c not in self.chars}

    def learn(self, chars: Sequence[str], tokens: Sequence[Sequence[str]]) -> None:
        """Keep what each of `chars` does, from the tokens FTS5 gave the `probe` texts of each
        (in order: the first text's tokens, then the second's, per character).

        Example:
            >>> table = Unicode61()
            >>> table.learn(["É", "\u0301", "\u2014"],
            ...             [["1e1", "e1"], ["e"], ["11", "1"], [], ["1", "1", "1"], []])
            >>> table.chars
            {'É': ('e', True), '́': ('', False), '—': None}
        """
        for i, char in enumerate(chars):
            spaced, alone = tokens[2 * i], tokens[2 * i + 1]
            if list(spaced) == ["1", "1", "1"]:
                self.chars[char] = None
                continue
            if len(spaced) != PROBED_TOKENS or not spaced[0].startswith("1") or not (
                    spaced[0].endswith("1")):
                raise ValueError(f"FTS5 tokenized the probe of {char!r} as {list(spaced)}: "
                                 "not a unicode61 tokenizer with its default options")
            self.chars[char] = (spaced[0][1:-1], bool(alone))

    def words(self, text: str) -> list[str]:
        """unicode61's tokens of `text`, whose characters must be known (`unknown`), in order.

        Example:
            >>> table = Unicode61()
            >>> table.learn(["É", "\u0301"], [["1e1", "e1"], ["e"], ["11", "1"], []])
            >>> table.words("Étude e\u0301te\u0301 \u0301x")
            ['etude', 'ete', 'x']
        """
        if text.isascii():
            return _ASCII_WORD.findall(text.lower())
        out: list[str] = []
        word: list[str] | None = None
        for char in text:
            if char < "\x80":
                lower = char.lower()
                known = (lower, True) if lower.isalnum() else None
            else:
                known = self.chars[char]
            if word is not None:
                if known is not None:
                    word.append(known[0])
                    continue
                out.append("".join(word))
                word = None
            elif known is not None and known[1]:
                word = [known[0]]
        if word is not None:
            out.append("".join(word))
        return out

