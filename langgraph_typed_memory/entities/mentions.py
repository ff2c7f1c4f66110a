"""Mentions: the named things a turn talks about, with what the words around them tell.

A mention is a name ("Lena", "Acme Corp", "the platform team") or a pronoun ("she", "it",
"her team") at a place in the text. The words around a name can tell its type (a person, an
organisation, a place, a pet, a project), the role it holds for the speaker ("my sister
Lena"), the department or organisation it belongs to ("Sarah from accounting") and the
pronoun that refers to it (a sister is "she", "Mr Okafor" is "he"). Names come from the
extraction's value finder (`typed_spans`); a word that only starts a sentence counts as a name
when it is known, a verb of people follows it ("Sarah leads the team"), the words around it
type it, or it is no ordinary English word ("Sarah is", not "Pottery is"). Languages,
peoples, breeds, initials and the words of titles name nothing, and the one spoken to ("Hey
Mel!") is marked `addressed`. Pure functions, English.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from langgraph_typed_memory.entities.similarity import spelling_distance
from langgraph_typed_memory.extraction.lexicon import (
    DEPARTMENTS,
    GREETINGS,
    JOBS,
    ORG_WORDS,
    EntityType,
    Pronoun,
    Role,
    common_word,
    not_a_name,
    role,
)
from langgraph_typed_memory.extraction.text import sentences
from langgraph_typed_memory.extraction.values import typed_spans

__all__ = ["EntityType", "Mention", "find_mentions", "name_key", "ORG_SUFFIXES"]

ORG_SUFFIXES = frozenset(
    "inc inc. incorporated ltd ltd. limited llc llp plc corp corp. corporation co co. company "
    "gmbh ag sa s.a. bv nv oy ab srl spa pty kk".split())
"""Legal forms that end an organisation's name ("Acme Inc"); a name is the same without."""

_TITLES = {"mr": "he", "mrs": "she", "ms": "she", "miss": "she", "dr": None, "prof": None,
           "sir": "he", "dame": "she", "madam": "she"}
_STARTS_NAME = re.compile(  # a capital that opens a sentence is a name when a verb of
    # people or organisations follows ("Sarah said", "Acme raised"), not "Pottery is", "Art's"
    r"^(?:,\s*(?:who\b|aka\b|a\.k\.a\b)|\s+(?:(?:just|also|finally|recently|then)\s+)?"
    r"(?:said|says|told|tells|asked|asks|thinks|thought|wants|wanted|leads|led|manages|managed|"
    r"heads|works|worked|lives|lived|moved|joined|reports|founded|called|calls|texted|emailed|"
    r"messaged|met|loves|likes|hates|hired|fired|quit|studies|teaches|became|retired|signed|"
    r"agreed|approved|mentioned|suggested|promised|replied|answered|wrote|posted|raised|"
    r"acquired|announced|launched|shipped|is\s+hiring|barks|owns|bought|sold)\b|\s+\(|"
    r",\s*(?!I\b)(?-i:[A-Z])[\w'-]*(?!\s*[!?.,]|[\w'-]))", re.I)
_MAY_START_NAME = re.compile(
    r"^(?:'s\b|,\s*(?:(?:can|could|would|will|do|did|are|have)\s+you|i)\b|"
    r"\s+(?:and|from|who|is|was|has|had|will|would|can|could|just|also|"
    r"still|now|got|came|comes|went|left|made|took|turned|goes|uses|needs|plays|runs|ran|"
    r"started|(?-i:[a-z]+ed))\b)", re.I)
"""Words after a capital that opens a sentence which a name takes as often as a common noun
("Sarah is", "Pottery is"): a name then if it is no ordinary English word."""
_DERIVED = re.compile(r"\w{3}(?:ing|[^aeiouy]ly)$")
"""A word shaped like a gerund or an adverb ("Painting helps", "Apparently, ..."): opening a
sentence, a name only when more than a verb tells so (a role, a type, "said"): "Sterling
said", "Kimberly is my sister"."""
_QUOTED_TITLE = re.compile(r"[\"\u201c]((?-i:[A-Z])[^\"\u201c\u201d\n]{0,100})[\"\u201d]")
"""A quoted phrase that opens on a capital: a title or a quote ("Charlotte's Web"), whose
capitals name nothing of their own."""
_TITLE_BEFORE = re.compile(r"(?-i:[A-Z])[\w']*\s+(?:of(?:\s+the)?|on\s+the)\s+$")
_TITLE_AFTER = re.compile(r"^\s+(?:of|on)\s+the\s+(?-i:[A-Z])")
"""A name inside a title that the value finder splits ("Call of Duty", "New Kids on the
Block"): a word of the title, not a name."""
_CONTRACTION = re.compile(r"(?:n't|'ve|'ll|'re|'d)$", re.I)  # "Haven't talked in a while"
_INITIAL = re.compile(r"(?-i:[A-Z])(?:\.(?-i:[A-Z]))*\.?")
_GREETING = "|".join(w.replace(" ", r"\s+") for w in GREETINGS)
_GREETING_LEAD = re.compile(rf"(?:{_GREETING})\s+", re.I)
_GREETED = re.compile(rf"\b(?:{_GREETING}|sorry|yeah|yep|okay|ok|oh|aw+|haha|woohoo|morning|"
                      r"dear)\s*,?\s+$", re.I)
_LISTLESS_COMMA = re.compile(r"(?:^|[.!?]\s+)[^,.!?]*\w,\s+$")
_ADDRESS_END = re.compile(r"^\s*(?:[,!?.]|$)")
_ASKED = re.compile(r"^,\s*(?:(?:can|could|would|will|do|did|are|have)\s+you|i)\b", re.I)
_SENTENCE_END = re.compile(r"^\s*(?:[!?.]|$)")
"""A name said to its bearer: after a greeting, or after the one comma of a sentence at
its end ("I 100% agree, Mel.")."""
_ADJ = (r"(?:(?:older|younger|little|big|baby|new|old|best|eldest|youngest|oldest|ex-?|"
        r"former|twin|step-?|dear|lovely|favourite|favorite|great|elder)\s*)*")
_ROLE_WORDS = (r"(?:mother-in-law|father-in-law|sister-in-law|brother-in-law|co-worker|"
               r"co-founder|customer-success|[a-z]+)")
_ROLE_BEFORE = re.compile(
    rf"\b(?P<owner>my|our|his|her|their|(?-i:[A-Z][\w'-]*)'s)\s+{_ADJ}"
    rf"(?P<role>{_ROLE_WORDS}(?:\s+{_ROLE_WORDS})?)\s*,?\s*$", re.I)
_ROLE_AFTER = re.compile(
    rf"^\s*(?:,|\(|\s(?:is|'s|was))\s*(?P<owner>my|our)\s+{_ADJ}"
    rf"(?P<role>{_ROLE_WORDS}(?:\s+{_ROLE_WORDS})?)\b(?!['\u2019]s\b)", re.I)
"""A role after the name ("Lena, my sister"; "Sam is my brother"), not a possession ("the
Corolla was my dad's")."""
_AFFILIATION = re.compile(  # "Sarah from accounting", "Michael from IT"
    r"^\s*(?:,\s*)?(?:\(|from|in|at|on|with|of)\s+(?:the\s+|our\s+)?(?P<dept>[a-z][\w-]*|(?-i:[A-Z]{2,3})(?=\W|$))"
    r"(?:\s+(?:team|department|dept|group|side|squad))?\b(?!\s+(?:team|department)\b)")
_AFFILIATION_GROUP = re.compile(  # "Tom from the gym", "Zara from my book club", "from work"
    r"^\s*(?:,\s*)?from\s+(?:(?:the|my|our)\s+(?P<group>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?)"
    r"(?=\s*(?:[,.;!?)]|$)|\s+(?:is|was|has|had|says|said|sent|called|texted|emailed|invited|"
    r"wants|asked|told|recommended|just|also|came|reviewed|approved|flagged|pinged|got|will|"
    r"and|who|lives|lived|works|worked|moved)\b)|"
    r"(?P<place>work|school|uni|college|church|yoga|class|the\s+office))\b")
_AFFILIATION_ORG = re.compile(
    r"^\s*(?:,\s*)?(?:from|at|with)\s+(?P<org>(?-i:[A-Z])[\w&.'-]*(?:\s+(?-i:[A-Z])[\w&.'-]*)*)")
_ORG_BEFORE = re.compile(
    r"\b(?:work(?:s|ed|ing)?\s+(?:at|for)|joined|join|joining|hired\s+(?:at|by)|employed\s+by|"
    r"interview(?:s|ed|ing)?\s+(?:at|with)|offer\s+(?:from|at)|quit|acquired|acquisition\s+of|"
    r"invest(?:ed|ing)?\s+in|shares\s+(?:in|of)|stock\s+in|customers?\s+of|clients?\s+of|"
    r"competitor\s+of|contract\s+with|deal\s+with|partnered\s+with|company|startup|firm|"
    r"bank|agency|employer|vendor|supplier|intern(?:ed|ing)?\s+at|job\s+at|role\s+at|"
    r"position\s+at|left|leaving|leave|bank(?:s|ed|ing)?\s+with|shop(?:s|ped|ping)?\s+at|"
    r"order(?:ed|ing)?\s+from|subscribed\s+to|(?:paycheck|paycheque|salary|payslip|pension|"
    r"mortgage|loan|refund|invoice|parcel|delivery|account)\s+(?:from|with|at))\s+$", re.I)
_ORG_AFTER = re.compile(
    r"^(?:'s\s+(?:is|was|has)\b|"  # "Wendy's is my guilty pleasure": a business
    r"\s+(?:(?:just|finally|recently|also)\s+)?(?:is\s+hiring|raised|acquired|announced|launched|released|shipped|went\s+public|"
    r"laid\s+off|is\s+headquartered|was\s+founded|is\s+based|IPO'?d)\b|'s\s+"
    r"(?:(?-i:[A-Z])\w+\s+)?(?:stock|shares|"
    r"ceo|cto|cfo|headquarters|hq|offices?|app|website|api|product|board|founders?)\b)", re.I)
_PERSON_AFTER = re.compile(
    r"^(?:\s+(?:(?:just|also|finally|recently|then|never|always)\s+)?(?:said|says|told|tells|"
    r"asked|asks|thinks|thought|texted|emailed|messaged|replied|mentioned|suggested|promised|"
    r"is\s+leading|leads|was\s+leading|is\s+visiting|visited|lent|cooked|brought|got\s+engaged|"
    r"got\s+married|turned\s+\d|is\s+(?:a|an)\s+(?:[\w-]+\s+)?(?:friend|"
    + "|".join(sorted(JOBS)) + r")\b|is\s+pregnant|is\s+retiring|retired|"
    r"and\s+i\b|and\s+her\b|and\s+his\b|and\s+(?-i:[A-Z])\w+\s+(?:came|are|were|got))|"
    r"'s\s+(?:wife|husband|partner|kids?|son|daughter|mum|mom|dad|birthday|wedding|flight))",
    re.I)
_PERSON_BEFORE = re.compile(
    r"\b(?:met|meeting\s+with|met\s+with|talked\s+to|talking\s+to|spoke\s+(?:to|with)|"
    r"speaking\s+(?:to|with)|texted|emailed|messaged|(?:lunch|coffee|dinner|drinks|call|chat|"
    r"1:1|one-on-one|date)\s+with|hung\s+out\s+with|dating|married|thanks\s+to|"
    r"introduced\s+me\s+to|according\s+to)\s+$", re.I)
_NAMED_ROLE = re.compile(
    rf"\b(?P<owner>a|an|our|my)\s+(?:[a-z-]+\s+)?(?P<role>{_ROLE_WORDS})\s+(?:called|named)\s+$",
    re.I)
_PLACE_BEFORE = re.compile(
    r"\b(?:live[sd]?\s+in|living\s+in|grew\s+up\s+in|born\s+in|based\s+in|located\s+in|"
    r"staying\s+in|settled\s+in|headquartered\s+in|moved\s+(?:back\s+)?to|moving\s+to|"
    r"(?:flying|flew|fly|expanding|expand|moving|moved|driving|drove|heading)\s+into|"
    r"in\s+the(?=\s+\S+\s+office)|"
    r"relocat\w+\s+to|flew\s+(?:in\s+)?to|fly(?:ing)?\s+to|travel\w*\s+to|trip\s+to|"
    r"holiday\s+in|vacation\s+in|visit(?:ed|ing)?\s+(?=\S)|back\s+(?:in|to)|near|outside(?:\s+of)?|"
    r"city\s+of|town\s+of|(?:dentist|doctor|nurse|teacher|lawyer|engineer|office|house|"
    r"flat|apartment|job|postdoc)\s+in|(?:is|am|are|was|were|i'm)\s+in|in)\s+$",
    re.I)
_PROJECT_BEFORE = re.compile(r"\b(?:project|codename|code\s+name|initiative)\s+$", re.I)
_PROJECT_AFTER = re.compile(r"^\s+(?:project|initiative|migration|launch|rollout|rewrite)\b",
                            re.I)
_GROUP_AFTER = re.compile(r"^\s+(?P<word>team|squad|department|dept|group|guild|tribe|office)\b",
                          re.I)
_GROUP = re.compile(
    r"\b(?P<owner>the|our|my|his|her|their|its)\s+(?!(?:right|wrong|new|old|whole|entire|"
    r"same|other|favou?rite|best|great|good|local|home|first|next|last|own|dream|perfect|"
    r"current|previous|former|national|rival|opposing)\b)(?P<name>(?:[a-z][\w-]*\s+){1,2}?"
    r"(?:team|squad|department|guild|tribe))\b", re.I)
_POSSESSED_GROUP = re.compile(r"\b(?P<owner>his|her|their|its)\s+(?P<name>team|squad|"
                              r"department|company|startup|firm|group|office)\b", re.I)
_PRONOUN = re.compile(r"\b(?P<p>he|him|his|himself|she|her|hers|herself|they|them|their|theirs|"
                      r"themselves|it|its|itself)\b", re.I)
_PRONOUNS: dict[str, Pronoun] = {
    **dict.fromkeys("he him his himself".split(), "he"),
    **dict.fromkeys("she her hers herself".split(), "she"),
    **dict.fromkeys("they them their theirs themselves".split(), "they"),
    **dict.fromkeys("it its itself".split(), "it"),
}
_IT_SUBJECT = re.compile(  # "it" refers when it acts: "It just raised", "it's based in Lyon"
    r"^\s*(?:(?:is|was|'s)\s+(?:based|located|headquartered|founded|owned|run|called|named|"
    r"hiring|growing|shipping|launching|behind\s+schedule|over\s+budget|on\s+track|"
    r"a\s+(?:company|startup|"
    r"firm|bank|dog|cat|puppy|kitten|project)|an\s+(?:agency|app))\b|(?!(?:is|was|'s|will|"
    r"would|feels|felt|seems|seemed|looks|looked|takes|took|rains|rained|snows|depends|"
    r"doesn't|didn't|does|did|makes\s+sense|might|may|must|should|could|can|sounds|turns|"
    r"happens|happened|means|meant|costs|cost|gets|got|hurts|hurt|isn't|wasn't|matters|"
    r"works|worked|helps|helped|went|goes)\b)(?:just\s+|also\s+|finally\s+|now\s+)?"
    r"(?:has|had|raised|launched|shipped|released|hired|laid|acquired|announced|makes|sells|"
    r"builds|employs|barks|sleeps|eats|ate|needs|needed|won|lost|moved|opened|closed|"
    r"merged|pivoted|grew|signed|started|ended|runs|ran|missed|slipped|passed|failed))", re.I)
_CLAUSE_START = re.compile(r"(?:^|[.!?;:,(—–-]|\b(?:and|but|so|because|since|that|when|while|"
                           r"though|if|as|then|until|before|after))\s*$", re.I)
_TRIM = " \t\"'`.,;:!?)(\u2026"


@dataclass(frozen=True, slots=True)
class Mention:
    """A named thing or a pronoun at `start:end` of a turn, with what its context tells.

    Example:
        >>> Mention("Lena", 10, 14, "person", "she").is_pronoun
        False
    """

    text: str
    start: int
    end: int
    type: EntityType | None = None
    pronoun: Pronoun | None = None
    """For a pronoun, its form ("she" for "her"); for a name, how it is referred to, if told."""
    is_pronoun: bool = False
    role: Role | None = None
    """What it is to `role_of` ("sister", "colleague", "dog")."""
    role_of: str | None = None
    """"user" for the speaker ("my sister"), else whose ("Tom's sister": "Tom")."""
    affiliation: str | None = None
    """A department or organisation it belongs to ("accounting", "Acme")."""
    group_of: Pronoun | None = None
    """For "her team" and the like: the pronoun of who it belongs to."""
    affiliation_end: int = -1
    """Where the words giving the affiliation end ("Tom from accounting": after
    "accounting"; -1 without one): what the name does follows them."""
    addressed: bool = False
    """The one spoken to ("Hey Mel!", "I agree, Jon."): "you" in this turn, so no "she" or
    "they" of the turn refers to them."""


@lru_cache(maxsize=16384)
def name_key(name: str) -> str:
    """A name as resolution compares it: case, accents, spacing, quotes, a leading "the", a
    title and a trailing possessive dropped. Remembered: a scope's names are compared again
    at every turn and question.

    Example:
        >>> name_key("  The  Platform   Team ")
        'platform team'
        >>> name_key("Dr. Patel's")
        'patel'
        >>> name_key("AT&T"), name_key("Zürich")
        ('at&t', 'zurich')
    """
    text = unicodedata.normalize("NFKD", name.replace("\u2019", "'"))
    text = unicodedata.normalize("NFKC", "".join(c for c in text if not unicodedata.combining(c)))
    text = text.casefold()
    words = text.strip(_TRIM).split()
    if words and words[0] in ("the", "a", "an"):
        words = words[1:]
    if len(words) > 1 and words[0].rstrip(".") in _TITLES:
        words = words[1:]
    key = " ".join(words).strip(_TRIM)
    return key[:-2] if key.endswith("'s") else key


def _sentence_starts(text: str) -> set[int]:
    starts, at = set(), 0
    for sentence in sentences(text):
        at = text.find(sentence, at)
        if at >= 0:
            starts.add(at)
            starts.add(at + len(sentence) - len(sentence.lstrip("\"'([ ")))
            at += len(sentence)
    return starts


def _type_of(name: str, before: str, after: str) -> tuple[EntityType | None, Pronoun | None]:
    words = name_key(name).split()
    first = name.split()[0].lower().rstrip(".")
    if first in _TITLES and len(name.split()) > 1:
        return "person", _TITLES[first]  # type: ignore[return-value]
    if words and (words[-1] in ORG_SUFFIXES or words[-1] in ORG_WORDS):
        return "organisation", None
    if _PROJECT_BEFORE.search(before) or _PROJECT_AFTER.match(after):
        return "project", None
    group = _GROUP_AFTER.match(after)
    if group and group["word"].lower() == "office":
        return "place", None  # "the Leeds office"
    if group or _ORG_BEFORE.search(before) or _ORG_AFTER.match(after):
        return "organisation", None
    if _PLACE_BEFORE.search(before):
        return "place", None
    return None, None


_OTHERS_HAVE = re.compile(
    r"(?<![\w'])(?!(?:i|we|i've|we've|also|just|now|still|finally|already|recently)\b)[\w']+\s+"
    r"(?:just\s+|also\s+|now\s+|recently\s+)?(?:has|have|had|got|adopted)\s+$", re.I)
"""Someone else as the subject right before "a daughter called Mia" ("Tom and Lena have"):
the role is theirs, not the speaker's."""


_LISTED = re.compile(r"^\s*(?:and|&|or)\b|^\s*,\s*(?:(?-i:[A-Z])|and\b)", re.I)
"""A name that goes on a list ("my girlfriend, Toby and I"): the role before it is another's."""


def _role_cues(before: str, after: str) -> tuple[Role | None, str | None]:
    appositive = _ROLE_BEFORE.search(before)
    if appositive and "," in appositive.group() and _LISTED.match(after):
        appositive = None  # "me, my girlfriend, Toby and I": three people, not one
    for m, lead in ((appositive, before), (_ROLE_AFTER.match(after), ""),
                    (_NAMED_ROLE.search(before), before)):
        words = m["role"].split() if m else []
        found = next((r for w in reversed(words) if (r := role(w))), None)  # "sales lead"
        if m and found:
            owner = m["owner"].lower()
            if owner in ("a", "an") and _OTHERS_HAVE.search(lead[:m.start("owner")]):
                return found, None  # whose, the rules cannot tell
            if owner in ("my", "our", "a", "an"):
                return found, "user"
            if owner.endswith("'s"):
                return found, m["owner"][:-2]
            return found, owner  # "his", "her": resolved with the pronoun
    return None, None


def _affiliation(after: str) -> tuple[str, int] | None:
    """The group a name's following words give it, and where in `after` they end."""
    if (m := _AFFILIATION.match(after)) and m["dept"].lower() in DEPARTMENTS and (
            m["dept"] != "it"):  # "from IT", not "walking in it"
        return m["dept"].lower(), m.end()
    if m := _AFFILIATION_GROUP.match(after):
        return " ".join((m["group"] or m["place"]).lower().split()), m.end()
    if m := _AFFILIATION_ORG.match(after):
        return m["org"].strip(_TRIM), m.end()
    return None


_NAME_STOP = re.compile(r"(?<!\b[A-Z])(?<!Mr|Ms|Dr|St|Jr|Sr)(?<!Mrs)(?<!Prof)\.\s")
_LEADING = re.compile(r"(?-i:\b(?:New|North|South|East|West|Upper|Lower|Great|Old|Saint))\s$")
_ACRONYM = re.compile(r"[A-Z][A-Z0-9&]{1,5}")
_JOINED = re.compile(r"^\s*&\s*(?-i:[A-Z])[\w.]*")


def _names(text: str) -> list[tuple[str, int, int]]:
    """The name values of `text`, split at a possessive ("Google's Zurich office") and
    joined across "&" ("Tiffany & Co")."""
    out: list[tuple[str, int, int]] = []
    for span in typed_spans(text, fragment=True):
        if span.type != "name":
            continue
        start = span.start
        if lead := _LEADING.search(text[:start]):  # "New York": "New" starts many sentences
            start = lead.start()
        said = _NAME_STOP.split(text[start:span.end])[0]  # "you, User 2. What do": User 2
        for part in re.split(r"(?<=\w)['\u2019]s\s+", said):
            at = text.index(part, start)
            out.append((part, at, at + len(part)))
            start = at + len(part)
    merged: list[tuple[str, int, int]] = []
    for name, start, end in out:
        if merged and (joint := _JOINED.match(text[merged[-1][2]:])) and (
                merged[-1][2] + joint.end() >= end > merged[-1][2]):
            last = merged.pop()
            end = min(end, last[2] + joint.end())
            merged.append((text[last[1]:end].rstrip("."), last[1], last[1] + len(
                text[last[1]:end].rstrip("."))))
            continue
        merged.append((name, start, end))
    return merged


def _near(key: str, known: set[str]) -> bool:
    return len(key) >= 5 and any(
        k[:1] == key[:1] and spelling_distance(key, k, 1) <= 1 for k in known)


_ASCII_FOLDS = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}
"""The letters besides ASCII's that a case-insensitive search for an ASCII letter matches
("İ", "ı", "ſ", "K"), as that letter: with them, an ASCII name matches a text only where the
text lower-cased holds it."""


def find_mentions(text: str, *, known_names: Iterable[str] = ()) -> list[Mention]:
    """The names and pronouns of a turn, left to right, each with the cues around it.

    `known_names` are names met before: they count wherever they stand, in any case ("talked
    to sarah"). A pronoun "it" counts only where it acts as a thing would ("It just raised a
    round", not "it's raining").

    Example:
        >>> [(m.text, m.type, m.role and m.role.name, m.affiliation)
        ...  for m in find_mentions("My sister Lena lives in Vienna. Sarah from accounting "
        ...                         "leads the platform team.")]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('Lena', 'person', 'sister', None), ('Vienna', 'place', None, None),
         ('Sarah', 'person', None, 'accounting'), ('platform team', 'organisation', None, None)]
        >>> [(m.text, m.pronoun) for m in find_mentions("She said it's late. It just shipped.")]
        [('She', 'she'), ('It', 'it')]
    """
    found: list[Mention] = []
    starts = _sentence_starts(text)
    known = {name_key(n) for n in known_names if name_key(n)}
    titles = [m.span(1) for m in _QUOTED_TITLE.finditer(text)]
    for name, start, end in _names(text):
        if start in starts and (lead := _GREETING_LEAD.match(name)):
            start, name = start + lead.end(), name[lead.end():]  # "Go Jon!": Jon
        key = name_key(name)
        if (not key or not_a_name(key) or _PRONOUN.fullmatch(name) or _INITIAL.fullmatch(name)
                or _CONTRACTION.search(name) or name.isupper() and common_word(name)
                or key not in known and (any(a <= start < b for a, b in titles) or (
                    _TITLE_BEFORE.search(text[max(0, start - 60):start])
                    or _TITLE_AFTER.match(text[end:end + 80])))):
            continue  # a language, an initial, a word of a title ("The Lord of the Rings")
        after = text[end:end + 80]
        typed_only = (start in starts and " " not in name and key not in known
                      and not _ACRONYM.fullmatch(name) and not _near(key, known)) and (
            bool(_DERIVED.search(name)) or not _STARTS_NAME.match(after) and not (
                _MAY_START_NAME.match(after) and not common_word(name)))
        before = text[max(0, start - 80):start]
        if (group := _GROUP_AFTER.match(after)) and group["word"].lower() != "office":
            end += group.end()
            name, after = text[start:end], text[end:end + 80]
        elif (name.lower().startswith(("project ", "codename "))
              and len(name.split()) > 1):
            before, name = before + name.split()[0] + " ", " ".join(name.split()[1:])
            start = end - len(name)
        entity_type, pronoun = _type_of(name, before, after)
        greeted = bool(_GREETED.search(before)) and bool(_ADDRESS_END.match(after)) or (
            start in starts and bool(_ASKED.match(after)) and not common_word(name))
        found_role, owner = _role_cues(before, after) if not greeted else (None, None)
        if found_role is not None and found_role.name not in ("client", "report"):
            entity_type = "pet" if found_role.kind == "pet" else "person"
            pronoun = pronoun or found_role.pronoun
        affiliated = _affiliation(after) if entity_type in (None, "person") else None
        affiliation = affiliated[0] if affiliated else None
        if affiliation and affiliation[0].islower():
            entity_type = "person"  # "Sarah from accounting", "Tom from the gym"
        if entity_type is None and (_PERSON_AFTER.match(after) or _PERSON_BEFORE.search(before)):
            entity_type = "person"
        if greeted and entity_type is None:
            entity_type = "person"  # "Hey Mel!", "Thanks, Jon."
        if typed_only and entity_type in (None, "project"):
            continue  # "Pottery is my life", "Taking initiative": opens the sentence, no more
        found.append(Mention(name, start, end, entity_type, pronoun, False, found_role, owner,
                             affiliation, affiliation_end=end + affiliated[1] if affiliated
                             else -1, addressed=greeted or bool(
                                 _LISTLESS_COMMA.search(before) and _SENTENCE_END.match(after))))
    taken = [(m.start, m.end) for m in found]

    def free(a: int, b: int) -> bool:
        return not any(s < b and a < e for s, e in taken)

    for m in _GROUP.finditer(text):
        a, b = m.start("name"), m.end("name")
        owner = m["owner"].lower()
        if not free(a, b):
            continue
        if owner in _PRONOUNS:
            continue  # "her platform team": left to the possessive pronoun below
        found.append(Mention(m["name"], a, b, "organisation"))
        taken.append((a, b))
    folded = text.translate(_ASCII_FOLDS).lower()
    for key in known:
        if key.isascii() and key not in folded:
            continue  # cannot match: the search below finds only what `folded` holds
        for m in re.finditer(rf"(?<![\w@.]){re.escape(key)}(?![\w@])", text, re.I):
            if free(m.start(), m.end()):
                found.append(Mention(m.group(), m.start(), m.end()))
                taken.append((m.start(), m.end()))
    for m in _POSSESSED_GROUP.finditer(text):
        if free(m.start(), m.end()):
            form = _PRONOUNS[m["owner"].lower()]
            found.append(Mention(m.group(), m.start(), m.end(), "organisation", None, True,
                                 group_of=form))
            taken.append((m.start(), m.end()))
    for m in _PRONOUN.finditer(text):
        if not free(m.start(), m.end()):
            continue
        form = _PRONOUNS[m["p"].lower()]
        if m["p"].lower() == "it" and not (
                _CLAUSE_START.search(text[:m.start()]) and _IT_SUBJECT.match(text[m.end():])):
            continue
        found.append(Mention(m.group(), m.start(), m.end(), None, form, True))
    return sorted(found, key=lambda m: m.start)
