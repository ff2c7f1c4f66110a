"""Who a statement is about, as far as its first words tell: the speaker ("I", "my"), the
speaker's group ("we", "our"), a named person, a role ("my sister"), or "she"/"he"; and
whether a turn can change what an earlier statement says (`same_subject`). Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langgraph_typed_memory.extraction.lexicon import role
from langgraph_typed_memory.extraction.values import CONTENT_STOP

__all__ = ["same_subject"]


_LEAD = frozenset("""actually oh ok okay so well also btw update correction sorry ugh um hmm
quick small just hey anyway and but plus fyi heads up note""".split())
_USER = frozenset("i i'm im i've ive i'd i'll me myself".split())
_WE = frozenset("we we're we've we'd we'll our ours us".split())
_THIRD = {"she": "she", "she's": "she", "her": "she", "he": "he", "he's": "he", "his": "he"}
_OBJECTS = frozenset("she he they him her them his hers their it its".split())
_WHO_TOKEN = re.compile(r"[A-Za-z][\w'-]*")


def _who(clause: str) -> tuple[str | None, str | None, list[str]]:
    """Who a clause is about, when its first words tell, and the words after them: "user"
    (I, my flight), "we" (we, our team), or someone else: the name after a role ("my sister
    Lena": "lena"), the role ("sister"), "she" or "he". None when they do not tell ("they"
    is as often the airline as a person); "?tom" for a capitalized first word, which may be
    a name or only the sentence's first word ("Leadership changed..."). Then the pronoun it
    goes by, when known (a sister is "she").

    Example:
        >>> [_who(t)[0] for t in ("Actually I moved.", "My sister Lena lives in Vienna.",
        ...                      "Our standup is at 9:30.", "My flight leaves at 7.",
        ...                      "She just moved to Graz.", "My brother is a dentist.",
        ...                      "Tom is a dentist.", "They rescheduled it.")]
        ['user', 'lena', 'we', 'user', 'she', 'brother', '?tom', None]
        >>> _who("My sister Lena lives in Vienna.")[1]
        'she'
    """
    words = _WHO_TOKEN.findall(clause)
    while words and words[0].lower() in _LEAD:
        words = words[1:]
    if not words:
        return None, None, []
    first = words[0].lower()
    if first in _USER:
        return "user", None, words[1:]
    if first in _WE:
        return "we", None, words[1:]
    if first in _THIRD:
        return _THIRD[first], _THIRD[first], words[1:]
    if first == "my" and len(words) > 1:
        kin = role(words[1].lower().removesuffix("'s"))  # "my daughter's lesson": hers
        if kin is None:
            return "user", None, words[2:]  # my flight, my car: the speaker's
        if len(words) > 2 and words[2][0].isupper():
            return words[2].lower(), kin.pronoun, words[3:]
        return kin.name, kin.pronoun, words[2:]
    if words[0][0].isupper() and first not in CONTENT_STOP:
        return f"?{first}", None, words[1:]  # a name, or a word that starts the sentence
    return None, None, words


def _mentions(words: Sequence[str], who: str) -> bool:
    """Whether words name `who` again: the speaker (me, my, I), a person (their name or role
    word), or someone as an object (him, her, them)."""
    lower = {w.lower() for w in words}
    if who in ("user", "we"):
        return bool(lower & (_USER | _WE | {"my", "mine"}))
    return bool(lower & _OBJECTS) or who in lower or any(
        (r := role(w)) is not None and r.name == who for w in lower)


_ACTS_ON_IT = re.compile(
    r"^\W*(?:she|he)(?:'s|\s+is|\s+has|'s\s+just|\s+just)?\s+(?:moving|moved|pushing|pushed|"
    r"changing|changed|rescheduling|rescheduled|switching|switched|shifting|shifted|bumping|"
    r"bumped|cancelling|cancelled|canceled|renaming|renamed)\s+(?:it|that|this|them)\b", re.I)


def same_subject(turn: str, statement: str) -> bool:
    """Whether a turn can change what an earlier statement says: not when one is about the
    speaker and the other about someone else (or two different people), unless it names the
    other again ("my manager moved me to the late shift", "we switched him to a raw diet").

    Example:
        >>> same_subject("I moved to Berlin.", "My sister Lena lives in Vienna.")
        False
        >>> same_subject("She moved to Graz.", "My sister Lena lives in Vienna.")
        True
        >>> same_subject("My manager moved me to the late shift.", "I'm on the early shift.")
        True
        >>> same_subject("He moved to Cork.", "My sister Lena lives in Vienna.")
        False
        >>> same_subject("Tom moved to Cork.", "My sister Lena lives in Vienna.")
        False
        >>> same_subject("Mum moved to Spain.", "My mother lives in Leeds.")
        True
        >>> same_subject("My daughter's piano lesson is on Wednesdays.",
        ...              "My daughter has piano on Mondays.")
        True
    """
    (a, says_a, rest_a), (b, says_b, rest_b) = _who(turn), _who(statement)
    if a is None or b is None or a == b or {a, b} <= {"user", "we"}:
        return True
    if a.startswith("?") or b.startswith("?"):  # maybe a name: only against another person
        weak, strong, rest = (a[1:], b, rest_a) if a.startswith("?") else (b[1:], a, rest_b)
        said = role(weak)  # "Mum moved" is about "my mother"
        return (strong.startswith("?") or strong in ("user", "we") or weak == strong
                or (said is not None and said.name == strong) or _mentions(rest, strong))
    if _mentions(rest_a, b) or _mentions(rest_b, a):
        return True
    pronouns = ("she", "he")
    if a in pronouns and _ACTS_ON_IT.search(turn):  # "she's moving it to Thursdays"
        return True
    if (a in pronouns) != (b in pronouns):  # "she" and a name or a role: unless they disagree
        other, goes_by = (b, says_b) if a in pronouns else (a, says_a)
        pronoun = a if a in pronouns else b
        return other not in ("user", "we") and goes_by in (None, "they", pronoun)
    return False
