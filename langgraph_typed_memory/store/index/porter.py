"""FTS5's `porter` stemmer, in this process: the same stem, byte for byte, for every token.

SQLite's full-text tables tokenize with `porter unicode61` (`index/fts5`): unicode61 splits
and folds a text into tokens, and porter stems each one. This is porter as FTS5 implements it
(`fts5_tokenize.c`), which is not quite Martin Porter's published algorithm, so it follows
FTS5 rather than the paper where they differ:

- it works on the token's UTF-8 bytes: a token under 3 or over 64 bytes is left alone, and a
  byte outside ASCII is a consonant;
- `y` is a vowel after a consonant when measuring a stem (m), but anywhere past the first byte
  when asking whether a stem has a vowel at all (`*v*`);
- in each step the first listed suffix the token ends with (and is longer than) decides: if
  its condition fails, no shorter suffix of that step is tried.

`tests/store/test_fts5_tokenizer.py` compares it with FTS5 itself on many words.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["stem"]

MAX_TOKEN = 64
"""Tokens longer than this (in bytes) are not stemmed; neither are those under 3 bytes."""

_VOWELS = frozenset(b"aeiou")
_Y = ord("y")


def _vowel(byte: int, y_is_vowel: bool) -> bool:
    return byte in _VOWELS or (y_is_vowel and byte == _Y)


def _vc_end(word: bytes, start: int, end: int, consonant: bool) -> int:
    """The position after the first vowel-consonant run of `word[start:end]` (a consonant
    before it when `consonant`), or 0 if there is none."""
    i = start
    while i < end:
        consonant = not _vowel(word[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < end:
        consonant = not _vowel(word[i], consonant)
        if consonant:
            return i + 1
        i += 1
    return 0


def _m_gt0(word: bytes, end: int) -> bool:
    return bool(_vc_end(word, 0, end, False))


def _m_gt1(word: bytes, end: int) -> bool:
    first = _vc_end(word, 0, end, False)
    return bool(first and _vc_end(word, first, end, True))


def _m_eq1(word: bytes, end: int) -> bool:
    first = _vc_end(word, 0, end, False)
    return bool(first and not _vc_end(word, first, end, True))


def _ends_cvc(word: bytes, end: int) -> bool:
    """*o: the stem ends consonant, vowel, consonant, the last not w, x or y."""
    if word[end - 1] in b"wxy":
        return False
    mask, consonant = 0, False
    for i in range(end):
        consonant = not _vowel(word[i], consonant)
        mask = (mask << 1) + consonant
    return mask & 7 == 5


def _m_gt1_s_or_t(word: bytes, end: int) -> bool:
    return word[end - 1] in b"st" and _m_gt1(word, end)


def _has_vowel(word: bytes, end: int) -> bool:
    return any(_vowel(word[i], i > 0) for i in range(end))


Condition = Callable[[bytes, int], bool]
Rule = tuple[bytes, Condition | None, bytes]
Step = dict[int, tuple[Rule, ...]]

_STEP1B: tuple[Rule, ...] = ((b"eed", _m_gt0, b"ee"), (b"ed", _has_vowel, b""),
                             (b"ing", _has_vowel, b""))
_STEP1B2: tuple[Rule, ...] = ((b"at", None, b"ate"), (b"bl", None, b"ble"),
                              (b"iz", None, b"ize"))
_STEP2: tuple[Rule, ...] = tuple((suffix, _m_gt0, out) for suffix, out in (
    (b"ational", b"ate"), (b"tional", b"tion"), (b"enci", b"ence"), (b"anci", b"ance"),
    (b"izer", b"ize"), (b"logi", b"log"), (b"bli", b"ble"), (b"alli", b"al"),
    (b"entli", b"ent"), (b"eli", b"e"), (b"ousli", b"ous"), (b"ization", b"ize"),
    (b"ation", b"ate"), (b"ator", b"ate"), (b"alism", b"al"), (b"iveness", b"ive"),
    (b"fulness", b"ful"), (b"ousness", b"ous"), (b"aliti", b"al"), (b"iviti", b"ive"),
    (b"biliti", b"ble"),
))
_STEP3: tuple[Rule, ...] = tuple((suffix, _m_gt0, out) for suffix, out in (
    (b"ical", b"ic"), (b"ness", b""), (b"icate", b"ic"), (b"iciti", b"ic"), (b"ful", b""),
    (b"ative", b""), (b"alize", b"al"),
))
_STEP4: tuple[Rule, ...] = tuple(
    (suffix, _m_gt1_s_or_t if suffix == b"ion" else _m_gt1, b"") for suffix in (
        b"al", b"ance", b"ence", b"er", b"ic", b"able", b"ible", b"ant", b"ement", b"ment",
        b"ent", b"ion", b"ou", b"ism", b"ate", b"iti", b"ous", b"ive", b"ize",
    ))
"""Each step's suffixes in FTS5's order (grouped by their next-to-last letter, as its
generated code tests them)."""


def _by_next_to_last(rules: tuple[Rule, ...]) -> Step:
    """A step's rules by their suffix's next-to-last letter, in order: a word can only end with
    the suffixes of its own next-to-last letter (FTS5's generated code switches on it)."""
    step: dict[int, list[Rule]] = {}
    for rule in rules:
        step.setdefault(rule[0][-2], []).append(rule)
    return {letter: tuple(group) for letter, group in step.items()}


_STEPS = {name: _by_next_to_last(rules) for name, rules in (
    ("1b", _STEP1B), ("1b2", _STEP1B2), ("2", _STEP2), ("3", _STEP3), ("4", _STEP4))}

_CHANGED_ENDINGS = frozenset(b"sdgyliranmectu")
"""The last letters a word must end with for any step to change it (the steps' suffixes end
in them): a word ending otherwise is its own stem."""


def _apply(word: bytes, step: Step) -> tuple[bytes, bytes | None]:
    """`word` after the step's first matching rule, and the suffix that rule replaced (None:
    no rule did)."""
    if len(word) < 2:
        return word, None
    for suffix, condition, out in step.get(word[-2], ()):
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = len(word) - len(suffix)
            if condition is None or condition(word, stem):
                return word[:stem] + out, suffix
            return word, None
    return word, None


def stem(token: str) -> str:
    """The token as FTS5's porter tokenizer passes it on.

    Example:
        >>> [stem(w) for w in ("caresses", "ponies", "hopping", "relational", "y", "ÿes")]
        ['caress', 'poni', 'hop', 'relat', 'y', 'ÿe']
    """
    word = token.encode()
    if not 3 <= len(word) <= MAX_TOKEN or word[-1] not in _CHANGED_ENDINGS:
        return token
    if word[-1] == ord("s"):  # step 1a
        if word[-2] == ord("e"):
            cut = 2 if (len(word) > 4 and word[-4:-2] == b"ss") or (
                len(word) > 3 and word[-3] == ord("i")) else 1
            word = word[:-cut]
        elif word[-2] != ord("s"):
            word = word[:-1]
    word, replaced = _apply(word, _STEPS["1b"])
    if replaced in (b"ed", b"ing"):
        word, replaced = _apply(word, _STEPS["1b2"])
        if replaced is None:
            last = word[-1]
            if not _vowel(last, False) and last not in b"lsz" and last == word[-2]:
                word = word[:-1]
            elif _m_eq1(word, len(word)) and _ends_cvc(word, len(word)):
                word += b"e"
    if word[-1] == _Y and _has_vowel(word, len(word) - 1):  # step 1c
        word = word[:-1] + b"i"
    for name in ("2", "3", "4"):
        word, _ = _apply(word, _STEPS[name])
    end = len(word)
    if word[-1] == ord("e") and (_m_gt1(word, end - 1) or (  # step 5a
            _m_eq1(word, end - 1) and not _ends_cvc(word, end - 1))):
        word = word[:-1]
    if len(word) > 1 and word.endswith(b"ll") and _m_gt1(word, len(word) - 1):  # step 5b
        word = word[:-1]
    return word.decode(errors="surrogateescape")
