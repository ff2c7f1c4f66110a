"""Extraction: a user's chat turn becomes candidate memories for the promotion gate (C1, C8).

`prefilter` decides cheaply whether a turn is worth extracting from; `extract_rules` is the
offline, deterministic extractor (A8); with a chat model, `with_structured_output(
ExtractionResult)` and `EXTRACTION_PROMPT` do the job and `candidates_from_model_output` checks
what it returned. Pure functions, no I/O. Candidates are proposals the gate verifies and writes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from langgraph_typed_memory.schemas import MAX_TEXT_CHARS, check_json_value

__all__ = [
    "Candidate", "ExtractionResult", "EXTRACTION_PROMPT", "FilterDecision", "FilterReason",
    "prefilter", "extract_rules", "ValidatedCandidates", "candidates_from_model_output",
]

_SNAKE = r"^[a-z][a-z0-9_]*$"
EXPLICIT_CONFIDENCE = 0.9  # a plain first-person statement
HEDGED_CONFIDENCE = 0.6  # "I think", "maybe": below the gate's default fact threshold (0.7)


class Candidate(BaseModel):
    """A candidate memory from `extract_rules` or a model; field docstrings are what it reads.

    Example:
        >>> Candidate(kind="fact", subject="user", predicate="home_city", value="Lyon",
        ...           content="The user lives in Lyon.", confidence=0.9,
        ...           grounding="I live in Lyon.").correction
        False
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True,
                              json_schema_extra={"description": "A memory the user stated."})

    kind: Literal["preference", "fact", "episode"]
    """"preference": a standing instruction on how to answer (format, language, tone, name,
    timezone, units...); "fact": a lasting fact about the user; "episode": work they finished."""
    key: str | None = Field(default=None, pattern=_SNAKE, max_length=64)
    """Preferences only (required): snake_case setting key, e.g. output_format, language, tone."""
    subject: str | None = Field(default=None, min_length=1, max_length=256)
    """Facts only, required there: the entity the fact is about; "user" for the speaker."""
    predicate: str | None = Field(default=None, pattern=_SNAKE, max_length=64)
    """Facts only, required there: snake_case relation (home_city, employer, pet, birthday)."""
    content: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    """One standalone third-person sentence, e.g. "The user lives in Lyon."."""
    value: Any = None
    """The short structured value ("Lyon", "json", "French"); for a correction, the new one."""
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    """0.9 when the user states it plainly; 0.6 when hedged ("I think", "maybe", "probably")."""
    grounding: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    """The exact words of the user's message this comes from, copied verbatim."""
    correction: bool = False
    """true when the user corrects an earlier statement ("actually", "not X anymore")."""

    @model_validator(mode="after")
    def _fits_kind(self) -> Candidate:
        check_json_value(self.value, "candidate")  # raises InvalidRecord, a ValueError
        if self.kind == "preference" and self.key is None:
            raise ValueError("a preference candidate needs a key, e.g. 'output_format'")
        if self.kind == "fact" and (self.subject is None or self.predicate is None):
            raise ValueError("a fact candidate needs a subject and a predicate")
        return self


class ExtractionResult(BaseModel):
    """The schema to pass to `model.with_structured_output(ExtractionResult)`.

    Example:
        >>> ExtractionResult().candidates
        []
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True,
                              json_schema_extra={"description": "Memories in the user's message."})

    candidates: list[Candidate] = Field(default_factory=list)
    """Every durable preference or fact the user stated in this message; [] when none."""


EXTRACTION_PROMPT = """\
Extract from ONE message written by the user what is worth remembering in later conversations.
- preference: a standing instruction on how to answer; `key` in snake_case (output_format, \
language, tone, name, timezone, date_format, units) and `value`.
- fact: a lasting fact about the user or their world; `subject` ("user" for the speaker), \
`predicate` in snake_case (home_city, employer, occupation, pet, birthday, allergy), `value`.
- episode: only when the user reports finishing a piece of work, summarized in `content`.
Never extract greetings, thanks, small talk, questions, one-off requests, hypotheticals, what the \
user says is NOT true, or what the assistant said. `content`: one standalone third-person \
sentence ("The user lives in Lyon."); `grounding`: copied verbatim from the message; \
`confidence`: 0.9 when stated plainly, 0.6 when hedged ("I think", "maybe"); `correction`: true \
when the user corrects an earlier statement ("actually", "no, I meant", "not X anymore"), with \
the new `value`. Nothing to remember: {"candidates": []}."""
"""System prompt for model extraction; pair it with `ExtractionResult`."""

# ----------------------------------------------------------------------------- text helpers
_TOKEN = re.compile(r"[^\W_]+")
_SENTENCE_BREAK = re.compile(r"(?<!\b(?:Dr|Mr|Ms|St|Jr|Sr)\.)(?<!\bMrs\.)(?<!\b[A-Z]\.)"
                             r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+|\n+")
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|im|ive)\b", re.I)
_AUX = (r"(?:is|are|am|was|were|do|does|did|can|could|would|will|should|shall|have|has|isnt|"
        r"arent|dont|doesnt|didnt|cant|couldnt|wouldnt|wont|shouldnt)")
_QUESTION_START = re.compile(  # on normalized text: "whats ...", "where is ...", "do i ..."
    rf"^(?:(?:what|where|when|who|why|how)s|(?:what|where|when|who|why|how|which|whose)\s+{_AUX}"
    rf"|{_AUX}\s+(?:i|you|we|it|he|she|they|there|this|that|my|your|our|the))\b")
_REQUEST = re.compile(  # "Could you answer in French?" is a setting, not a question
    r"^(?:can|could|would|will)\s+you\s+(?:please\s+)?(?=(?:always\s+|from\s+now\s+on\s+)?"
    r"(?:answer|respond|reply|write|talk|speak|use|call|be|keep|switch|stop|format)\b)", re.I)


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold().replace("'", "").replace("\u2019", "")
    return " ".join(_TOKEN.findall(text))


def _sentences(text: str) -> list[str]:
    """Sentences, each an exact substring of `text`."""
    return [s.strip() for s in _SENTENCE_BREAK.split(text) if s.strip()]


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(_normalize(sentence)))


def _statement_parts(sentence: str) -> list[str]:
    """What a sentence states: all of it, a polite request's body, or a question's lead-ins."""
    if request := _REQUEST.match(sentence):
        return [sentence[request.end():]]
    if not _is_question(sentence):
        return [sentence]
    parts = sentence.split(",")[:-1] if sentence.endswith("?") else []  # "I'm in Lyon, tips?"
    return [p for p in parts if p.strip() and not _is_question(p)]


# ----------------------------------------------------------------------------- pre-filter (C8)
FilterReason = Literal["role", "too_short", "too_long", "chit_chat", "question", "duplicate",
                       "kept"]
_CHIT_CHAT = re.compile(r"\b(?:" + "|".join(sorted((  # whole turns made of these are chit-chat
    "hi|hello|hey|yo|whats up|good morning|good afternoon|good evening|good night|morning|evening|"
    "how are you|how are you doing|hows it going|how is it going|hope youre well|im good|im fine|"
    "im ok|im great|not bad|doing well|thanks|thank you|thx|ty|cheers|much appreciated|"
    "appreciate it|ok|okay|k|yes|yeah|yep|yup|no|nope|nah|sure|cool|great|nice|awesome|perfect|"
    "excellent|good|fine|alright|all right|got it|understood|sounds good|makes sense|i see|"
    "fair enough|right|true|exactly|correct|agreed|i agree|of course|no problem|no worries|"
    "youre welcome|never mind|wow|lol|haha|hehe|hmm|oh|ah|oops|my bad|me too|you too|done|noted|"
    "will do|bye|goodbye|see you|later|take care|have a nice day|have a good day|love it|"
    "well done|good job|great job|thats it|thats all|that works|works for me|i dont know|idk|"
    "absolutely|definitely|youre right").split("|"), key=len, reverse=True)) + r")\b")
_FILLER = frozenset("so very much thing a lot the there again all everyone guys man dude buddy "
                    "friend mate for that this it is its thats really too just well then now "
                    "you your and but super totally help to me".split())


@dataclass(frozen=True, slots=True)
class FilterDecision:
    """Whether a turn goes on to extraction, and why (a short, stable reason string).

    Example:
        >>> FilterDecision(keep=False, reason="chit_chat").keep
        False
    """

    keep: bool
    reason: FilterReason


def prefilter(text: str, *, role: str, recent: Sequence[tuple[str, float]] = (), now: float,
              min_words: int = 2, max_words: int = 400, duplicate_window_s: float = 60.0
              ) -> FilterDecision:
    """Decide whether a turn is worth extracting from (C8); most turns stop here.

    Gates, in order: `role` (only "human"/"user"), `too_short`/`too_long` (alphanumeric words),
    `chit_chat` (only greetings, thanks, acknowledgements, emoji), `question` (questions with no
    first-person statement), `duplicate` (same normalized text as, or token Jaccard >= 0.9 with,
    a `recent` `(text, timestamp)` at most `duplicate_window_s` before `now`); else `kept`.

    Example:
        >>> prefilter("Thanks a lot, that's great!", role="human", now=0.0)
        FilterDecision(keep=False, reason='chit_chat')
    """
    normalized = _normalize(text)
    tokens, n_words = set(normalized.split()), len(normalized.split())
    if role.lower() not in ("human", "user"):
        return FilterDecision(False, "role")
    if n_words < min_words or n_words > max_words:
        return FilterDecision(False, "too_short" if n_words < min_words else "too_long")
    if all(w in _FILLER for w in _CHIT_CHAT.sub(" ", normalized).split()):
        return FilterDecision(False, "chit_chat")
    sentences = _sentences(text)
    if any(_is_question(s) for s in sentences) and not any(
            _REQUEST.match(s) or any(_FIRST_PERSON.search(p) for p in _statement_parts(s))
            for s in sentences):
        return FilterDecision(False, "question")
    for seen, at in recent:  # equal normalized texts have Jaccard 1
        other = set(_normalize(seen).split())
        if now - at <= duplicate_window_s and len(tokens & other) >= 0.9 * len(tokens | other) > 0:
            return FilterDecision(False, "duplicate")
    return FilterDecision(True, "kept")


# ----------------------------------------------------------------------------- rule extractor
_CLAUSE_BREAK = re.compile(r"\s*;\s*|(?:,?\s+(?:and|but|also|plus)\s+|,\s+)(?=(?:i|my|please|"
                           r"call\s+me|use|be|answer|respond|reply|write|keep|always|never|"
                           r"actually)\b)", re.I)
_LEAD_IN = re.compile(  # stripped before matching; `standing` marks a lasting instruction
    r"^(?:(?P<standing>from now on|going forward|in the future|from here on|always)|actually|no|"
    r"nope|oh|well|also|and|but|so|ok|okay|btw|by the way|fyi|for the record|correction|wait|oops|"
    r"sorry|yes|yeah|hey|hi|hello|anyway|i mean|please|(?:i think|i guess|i believe|i suppose|"
    r"maybe|perhaps|probably|possibly)(?:\s+that)?)\b[\s,:;.!-]*", re.I)
_HEDGE = re.compile(r"\b(?:i think|i guess|i believe|i suppose|maybe|perhaps|probably|possibly|"
                    r"not sure|kind of|sort of|might)\b", re.I)
_CORRECTION = re.compile(
    r"^\W*(?:actually|no|nope|correction|wait|oops)\b|^\W*sorry\s*[,:;-]|\bi meant\b|\bno longer\b"
    r"|\bi misspoke\b|(?:\bnot|n't)\b.*\b(?:anymore|any more|any longer)\b|\bstopped being\b"
    r"|(?:,\s*|\s(?:and|but)\s+)not\s+\w|\b(?:rather than|instead)\b", re.I)
_CUT = re.compile(  # "Lyon, not Paris" keeps "Lyon"; "Lyon because ..." keeps "Lyon"
    r"(?:,\s*|\s+(?:and|but)\s+)not\s.*$|\s+(?:rather than|instead of|over|because|since|but|so|"
    r"which|who|where|while|when|until|though|although|if|whereas|with)\b.*$", re.I)
_TAIL = re.compile(  # filler at the end of a value: "Lyon now", "JSON from now on, please"
    r"(?:[\s,]+(?:now|right now|these days|nowadays|at the moment|currently|for now|anymore|"
    r"any more|any longer|please|thanks|thank you|from now on|going forward|in the future|too|"
    r"if possible|by the way|btw|as well|again|recently|instead|originally|(?:last|this) "
    r"(?:year|month|week)|a while ago|(?:a few|\w+) (?:years|months|weeks|days) ago))+$", re.I)
_TRIM = " \t\"'`.,;:!?)(\u2026-"
_LANGUAGES = frozenset("english french german spanish italian portuguese dutch swedish norwegian "
                       "danish finnish polish czech russian ukrainian greek turkish arabic hebrew "
                       "hindi chinese mandarin japanese korean vietnamese thai indonesian".split())
_FORMATS = {f.split("=")[0].replace("_", " "): f.split("=")[-1].replace("_", " ") for f in (
    "json markdown md=markdown yaml csv html xml latex prose plain_text bullet_points "
    "bullets=bullet_points bulleted_list=bullet_points bulleted_lists=bullet_points table=tables "
    "tables numbered_list=numbered_lists numbered_lists").split()}
_FORMAT_WORDS = "|".join(sorted(map(re.escape, _FORMATS), key=len, reverse=True))
_LANGUAGE_WORDS = "|".join(sorted(_LANGUAGES))
_ROLES = {r.split("=")[0].replace("_", " "): r.split("=")[-1] for r in (  # family and pets
    "dog cat pet puppy=dog kitten=cat horse pony rabbit bunny=rabbit hamster guinea_pig parrot "
    "bird fish turtle tortoise ferret snake lizard son daughter baby child kid=child "
    "baby_girl=daughter little_girl=daughter baby_boy=son little_boy=son wife husband partner "
    "spouse boyfriend girlfriend fiance fiancee brother sister twin").split()}
_ROLE_WORDS = "|".join(sorted((w.replace(" ", r"\s+") for w in _ROLES), key=len, reverse=True))
_ROLE_AT_START = re.compile(rf"^(?:{_ROLE_WORDS})\b", re.I)
_TONES = ("brief|concise|terse|short|shorter|succinct|formal|informal|casual|friendly|direct|"
          "detailed|polite|professional|blunt|warm|simple|simpler|technical|serious|playful")
_DATE_FORMAT = re.compile(r"[dmy]{1,4}[-/. ][dmy]{1,4}[-/. ][dmy]{1,4}|iso(?:[ -]?8601)?", re.I)
_SETTING = re.compile(r"\b(?:answers?|responses?|replies|output|everything|always|all)\b", re.I)
_TEMPLATES = {  # "<kind initial>:<key or predicate>" -> content; "p:" and "f:" are the defaults
    "p:language": "The user wants replies in {v}.", "p:name": "The user wants to be called {v}.",
    "p:output_format": "The user wants answers formatted as {v}.", "p:": "The user prefers {v}.",
    "p:tone": "The user wants {v} answers.", "p:timezone": "The user's timezone is {v}.",
    "p:date_format": "The user wants dates written as {v}.", "p:units": "The user wants {v} units.",
    "p:response_style": "The user wants answers in {v}.", "f:has": "The user has {v}.",
    "f:home_city": "The user lives in {v}.", "f:employer": "The user works at {v}.",
    "f:occupation": "The user works as {a} {v}.", "f:allergy": "The user is allergic to {v}.",
    "f:diet": "The user is {v}.", "f:relationship_status": "The user is {v}.",
    "f:origin": "The user is from {v}.", "f:spoken_language": "The user speaks {v}.",
    "f:": "The user's {p} is {v}.",
}
_REJECT = {k: frozenset(v.split()) for k, v in {  # words that make a match mean something else
    "occupation": "fan person big huge little bit lot believer lover beginner newbie novice "
                  "total real member part",  # "I'm a big fan of jazz"
    "employer": "myself me home free fun money",  # "I work for myself"
    "origin": "it hr support sales marketing accounting finance legal team department office "
              "company future past",  # "I'm from IT", "I'm from Acme support"
    "car": "lot bit little hard bargain uber lyft taxi cab bus ambulance forklift",  # a job
    "name": "back later tomorrow tonight now when if at on after before sometime anytime asap "
            "maybe a an the out up",  # "call me back"
    "has": "question questions problem issue bug meeting call appointment doubt idea suggestion "
           "request feeling few lot minute second look try",  # "I have a question"
    "my": "question questions problem issue point guess concern bad answer request idea "
          "suggestion thought feeling code error output fault pleasure turn mistake bet advice "
          "opinion take reason test query prompt",  # "my point is"
    # "my X is": X is a clause, not a noun phrase ("my friend said she is from Brazil")
    "my_clause": "is are was were said says say told tells thinks think thought believes "
                 "believe knows know claims claimed heard she he they it that who which if",
}.items()}
_NOT_A_NAME = "|".join((  # capitalized after "I'm" but not a name: "I'm Sorry", "I'm Nigerian"
    "in off here there home done sorry fine good great ok okay sure ready new lost stuck confused "
    "happy glad sad tired busy bored hungry late early serious kidding joking curious excited "
    "interested afraid scared sick well alright so just very really also still not always never "
    "back out up deaf blind autistic gay straight bi queer trans american british english french "
    "german spanish italian portuguese brazilian mexican canadian chinese japanese korean indian "
    "irish scottish welsh dutch swedish norwegian danish finnish polish russian ukrainian greek "
    "turkish australian african european asian latino latina hispanic nigerian kenyan ghanaian "
    "ethiopian egyptian moroccan colombian peruvian argentinian argentine chilean venezuelan "
    "cuban filipino indonesian malaysian vietnamese thai pakistani bangladeshi iranian iraqi "
    "syrian lebanese israeli palestinian saudi romanian hungarian bulgarian serbian croatian "
    "czech slovak austrian swiss belgian icelandic estonian latvian lithuanian jewish muslim "
    "christian catholic protestant hindu buddhist sikh atheist agnostic mormon").split())
_PRONOUNS = {"my": "their", "me": "them", "i": "they"}
_Kind = Literal["preference", "fact"]
_Draft = tuple[_Kind, str, str, str]  # kind, key or predicate, value, content


def _slug(text: str, words: int = 4) -> str:
    ascii_text = unicodedata.normalize("NFKD", text.replace("'", "")).encode("ascii", "ignore")
    return "_".join(re.findall(r"[a-z0-9]+", ascii_text.decode().lower())[:words])


def _clean(value: str | None) -> str:
    value = (value or "").strip(_TRIM)
    for pattern in (_CUT, _TAIL):
        value = pattern.sub("", value).strip(_TRIM)
    return "" if value.lower().startswith(("not ", "no ", "that ")) else value


def _draft(kind: _Kind, name: str, value: str, template: str = "") -> _Draft:
    """A draft whose content is `template` (default: by kind and name) in the third person."""
    template = template or _TEMPLATES.get(f"{kind[0]}:{name}", _TEMPLATES[f"{kind[0]}:"])
    third = re.sub(r"\b(?:my|me|I)\b", lambda m: _PRONOUNS[m[0].lower()], value, flags=re.I)
    return kind, name, value, template.format(v=third, p=name.replace("_", " "),
                                              a="an" if value[:1].lower() in "aeiou" else "a")


def _classify(value: str) -> tuple[str, str] | None:
    """The preference key and canonical value of a phrase such as "JSON" or "French"."""
    v = re.sub(r"^(?:the|a|an|more|very)\s+", "", value.lower().strip())
    bare = re.sub(r"\s+(?:format|formatting|units?|system|language|dates?)$", "", v)
    if bare in _LANGUAGES:
        return "language", bare.capitalize()
    if bare in _FORMATS:
        return "output_format", _FORMATS[bare]
    if bare in ("metric", "imperial", "si", "us customary"):
        return "units", bare
    if _DATE_FORMAT.fullmatch(bare):
        return "date_format", value.strip()
    tone = re.fullmatch(rf"(less\s+)?({_TONES})(?:\s+(?:answers?|responses?|replies|tone|style))?",
                        v)
    comparative = {"shorter": "short", "simpler": "simple"}
    return ("tone", (tone[1] or "") + comparative.get(tone[2], tone[2])) if tone else None


def _role(phrase: str) -> str:
    """`phrase` with a leading family or pet word made canonical ("baby girl's name": daughter's).

    So "We have a baby girl named Lily" and "my daughter's name is Lily" share a predicate.
    """
    return _ROLE_AT_START.sub(lambda m: _ROLES[" ".join(m[0].lower().split())], phrase)


def _build(m: re.Match[str], how: str, standing: bool) -> list[_Draft]:
    """The drafts of a matched rule; `how` is explained above `_RULES`."""
    kind, _, spec = how.partition(":")
    if kind == "p":
        value = _clean(m["v"])
        if not value or value.split()[0].lower() in _REJECT.get(spec, ()):
            return []
        if spec == "?setting" and not (standing or _SETTING.search(m.string)):
            return []  # "put this in a table" is a one-off request, not a setting
        found = _classify(value) if spec.startswith("?") else (spec, value)
        if found is None and spec in ("?slug", "?response_style"):
            found = ("prefers_" + _slug(value) if spec == "?slug" else spec[1:], value)
        return [_draft("preference", *found)] if found and re.match(_SNAKE, found[0]) else []
    if spec.startswith("my"):  # "my X is Y"; "my_name": "my X is named Y"; "my_origin": from Y
        subject, suffix = " ".join(m["x"].lower().split()), spec[2:]
        value = _clean(m["v"])
        predicate = _slug(_role(subject).replace("'s", ""), words=5) + suffix
        if (not value or subject.split()[-1] in _REJECT["my"] or _REJECT["my_clause"] & set(
                subject.split()) or not re.match(_SNAKE, predicate)):
            return []
        verb = f"{m.groupdict().get('be') or 'is'} {_MY_VERBS[suffix]}".lower().rstrip()
        text = "" if f"f:{predicate}" in _TEMPLATES else f"The user's {subject} {verb} {{v}}."
        return [_draft("fact", predicate, value, text)]
    if spec == "named":  # "I have a cat named Miso": keyed like "my cat's name is Miso"
        owned, value = " ".join(m["n"].lower().split()), _clean(m["v"])
        text = f"The user has {m['a'].lower()} {owned} named {{v}}."
        return [_draft("fact", _slug(_role(owned)) + "_name", value, text)] if value else []
    out = []
    for name, group in zip(spec.split("+"), ("v", "w"), strict=False):
        predicate, value = name.lstrip("~"), _clean(m.groupdict().get(group))
        reject = _REJECT.get(predicate, frozenset())
        if value and value.lower() not in reject and (
                predicate == "employer" or not reject & set(value.lower().split()[:3])):
            out.append(_draft("fact", predicate, "no longer " + value if name[0] == "~" else value))
    return out


_ADV = (r"(?:(?:now|currently|still|just|also|actually|recently|really|finally|mostly|usually|"
        r"definitely|honestly|probably|possibly|originally|happily)\s+){0,2}")
_AM = rf"i(?:'m|\s+am)\s+{_ADV}"
_ENDED = (rf"^(?:{_AM}(?:no\s+longer|not(?=.*\bany\s*(?:more|longer)\b))|i\s+(?:have\s+|'ve\s+)?"
          r"stopped\s+being)\s+(?:an?\s+)?")  # "I'm not vegan anymore", "I stopped being vegan"
_END = r"(?=\s*(?:[,;]|$)|\s+(?:now|today|too|btw|by\s+the\s+way)\b)"  # nothing else follows
_CAP = r"(?-i:[A-Z\u00C0-\u00D6\u00D8-\u00DE])"  # an uppercase letter, even under re.I
_PROPER = rf"{_CAP}[\w']+(?:-{_CAP}[\w']+)*"  # "Lily", "O'Brien", "Jean-Luc"; not "Lyon-based"
_NAME = rf"(?!(?-i:[A-Z]+\b)){_PROPER}(?:\s+{_PROPER}){{0,2}}"  # "Ana Lima", not "OK"
_ANSWERS = r"(?:answers?|responses?|replies|output|messages|explanations|summaries)"
_DIETS = (r"vegan|vegetarian|pescatarian|pescetarian|gluten[- ]free|lactose[- ]intolerant|kosher|"
          r"halal")
_STATUSES = r"married|single|divorced|engaged|widowed|separated"
_SPOKEN = rf"(?:{_LANGUAGE_WORDS})(?:(?:\s*,\s*|,?\s+and\s+)(?:{_LANGUAGE_WORDS}))*(?![\w-])"
_WE = r"(?:we|my\s+(?:wife|husband|partner|spouse)\s+and\s+i)"
_HAVE = r"(?:\s+have(?:\s+got)?|'ve\s+got|\s+own)\s+"  # "I have", "I've got", "we own"
_MY = r"^my\s+(?P<x>[a-z][a-z' -]{0,40}?)"
_MY_VERBS = {"": "", "_name": "named", "_origin": "from"}
# "p:<key>": preference; "p:?": key by the value's class (JSON -> output_format), "?slug" or
# "?response_style" if unclassified, "?setting" if standing. "f:<predicate>[+<of group w>]": fact;
# "f:~<predicate>": a state that ended ("no longer vegan"); "f:my[_name|_origin]": "my X is [named
# |from] Y", predicate X[_name|_origin]; "f:named": "I have a <role n> named Y", predicate n_name.
_RULES: list[tuple[re.Pattern[str], str]] = [(re.compile(p, re.I), how) for p, how in [
    (r"^(?:(?:you\s+can\s+|you\s+may\s+|just\s+)?call\s+me|i\s+go\s+by)\s+(?P<v>.+)", "p:name"),
    (r"^(?:use|write|format|show)\s+(?:all\s+)?dates\s+(?:as|like|in)\s+(?P<v>.+)",
     "p:date_format"),
    (r"^use\s+(?:the\s+)?(?P<v>.+?)\s+(?:format\s+)?(?:for\s+dates|dates|date\s+format)\b",
     "p:date_format"),
    (r"^(?:my\s+)?time\s*zone\s+is\s+(?P<v>.+)", "p:timezone"),
    (rf"^{_AM}on\s+(?P<v>[\w/+:-]+(?:\s+[\w/+:-]+)?)\s+time\b", "p:timezone"),
    (r"^(?:(?:only|always)\s+)?(?:answer|respond|reply|write|talk|speak|communicate)"
     r"(?:\s+(?:to|with)\s+me)?\s+(?:only\s+|always\s+)?in\s+(?P<v>.+)", "p:?response_style"),
    (rf"^i(?:'d|\s+would)?\s+(?:like|prefer|want|need)\s+(?:your\s+|the\s+|all\s+|my\s+)?"
     rf"{_ANSWERS}\s+(?:to\s+be\s+)?(?:in|as|formatted\s+(?:in|as)|written\s+in)\s+(?P<v>.+)",
     "p:?response_style"),
    (r"^use\s+(?:the\s+)?(?P<v>.+?)\s+(?:format|formatting)\b", "p:?"),
    (r"^(?:use|(?:let's\s+)?switch\s+(?:over\s+)?to)\s+(?P<v>.+)", "p:?"),
    (rf"^(?:be|stay|keep\s+it|(?:keep|make)\s+(?:your\s+|the\s+)?(?:{_ANSWERS}|things))\s+"
     rf"(?:(?:more|a\s+(?:bit|little)\s+more|very|extra|super|really)\s+)?"
     rf"(?P<v>(?:less\s+)?(?:{_TONES}))\b", "p:?"),
    (rf"\b(?:in|as)\s+(?P<v>(?:a\s+)?(?:{_FORMAT_WORDS}))\b", "p:?setting"),
    (rf"^i(?:'d|\s+would)?\s+{_ADV}prefer\s+(?P<v>.+)", "p:?slug"),
    (rf"^i\s+{_ADV}like\s+(?P<v>.+?)\s+(?:better|more|best)\b", "p:?slug"),
    (r"^i(?:'d|\s+would)\s+(?:rather\s+(?:have\s+|get\s+|use\s+|see\s+)?|like\s+|want\s+)"
     r"(?P<v>.+)", "p:?"),
    (rf"^(?:{_AM}(?:very\s+|severely\s+|mildly\s+)?allergic\s+to|i\s+have\s+an?\s+(?:severe\s+|"
     r"mild\s+)?allergy\s+to)\s+(?P<v>.+)", "f:allergy"),
    (r"^i\s+have\s+an?\s+(?:severe\s+|mild\s+)?(?P<v>[\w -]+?)\s+allergy\b", "f:allergy"),
    (rf"^{_AM}(?:an?\s+)?(?P<v>{_DIETS})(?![\w-])", "f:diet"),
    (rf"^{_AM}(?:an?\s+)?(?P<v>{_STATUSES})(?![\w-])(?!\s+(?:in|on|by|from|into|at)\b)",
     "f:relationship_status"),  # not "engaged in a project"
    (rf"^i\s+{_ADV}got\s+(?P<v>married|divorced|engaged)\b", "f:relationship_status"),
    (rf"{_ENDED}(?P<v>{_DIETS})(?![\w-])", "f:~diet"),
    (rf"{_ENDED}(?P<v>{_STATUSES})(?![\w-])", "f:~relationship_status"),
    (rf"^(?:{_AM}|i\s+{_ADV}turned\s+)(?P<v>\d{{1,3}})(?:\s+years?\s+old\b|{_END})", "f:age"),
    (rf"^(?:i(?:'ve|\s+have)?\s+{_ADV}(?:live|moved|relocated)\s+(?:in|to)|{_AM}(?:based|living|"
     r"located|staying)\s+in)\s+(?P<v>.+)", "f:home_city"),
    (rf"^(?:{_AM}from|i\s+{_ADV}(?:come\s+from|grew\s+up\s+in))\s+(?P<v>(?:the\s+)?{_CAP}.+)",
     "f:origin"),
    (rf"^(?:i\s+{_ADV}(?:can\s+)?speak|{_AM}fluent\s+in)\s+(?:(?:some|a\s+little|a\s+bit\s+of|"
     rf"basic|fluent|conversational|native)\s+)?(?P<v>{_SPOKEN})", "f:spoken_language"),
    (rf"^{_AM}an?\s+(?:native|fluent)\s+(?P<v>{_SPOKEN})\s+speaker\b", "f:spoken_language"),
    (rf"^i\s+{_ADV}drive\s+(?P<v>an?\s+[\w'-]+(?:\s+(?!(?:to|for|in|on|at|from|with|every|each|"
     r"around|and|but|because)\b)[\w'-]+){0,3})", "f:car"),
    (rf"^(?:i\s+{_ADV}work|{_AM}(?:employed|working))\s+(?:at|for|by)\s+(?P<v>.+?)"
     r"(?:\s+as\s+(?:an?\s+)?(?P<w>.+))?$", "f:employer+occupation"),
    (rf"^(?:i\s+{_ADV}work\s+as\s+(?:an?\s+)?|{_AM}an?\s+)(?P<v>.+?)"
     r"(?:\s+(?:at|for)\s+(?P<w>.+))?$", "f:occupation+employer"),
    (rf"^i(?:'m|\s+am)\s+(?!(?:{_NOT_A_NAME})\b)(?P<v>{_NAME}){_END}", "f:name"),  # "I'm Priya"
    (rf"^(?:i|{_WE}){_HAVE}(?P<a>an?|one)\s+(?P<n>{_ROLE_WORDS})\s+(?:named|called)\s+"
     rf"(?P<v>{_NAME}){_END}", "f:named"),
    (rf"^i{_HAVE}(?P<v>(?:an?|one|two|three|four|five|\d+)\s+.+)", "f:has"),
    (rf"^{_WE}{_HAVE}(?P<v>(?:an?|one|two|three|four|five|\d+)\s+(?:[\w-]+\s+)?"
     rf"(?:children|(?:{_ROLE_WORDS})s?)\b.*)", "f:has"),  # family and pets, not "two offices"
    (rf"{_MY}(?:\s+(?P<be>is|are)|'s)\s+(?:named|called)\s+(?P<v>{_NAME})", "f:my_name"),
    (rf"{_MY}\s+(?P<be>is|are)\s+(?:originally\s+)?from\s+(?P<v>(?:the\s+)?{_CAP}.+)",
     "f:my_origin"),
    (rf"{_MY}\s+(?P<be>is|are)\s+(?!(?:named|called|from)\b)(?P<v>.+)", "f:my"),
    (r"^my\s+(?P<x>[a-z]+(?:\s+[a-z]+)?)'s\s+(?!(?:named|called|from)\b)(?P<v>.+)", "f:my"),
]]


def _clause_drafts(clause: str) -> list[_Draft]:
    """The drafts of the first rule that matches a clause, after its lead-ins."""
    body, standing = clause.replace("\u2019", "'").strip(_TRIM), False
    while (lead := _LEAD_IN.match(body)) and lead.end():
        standing, body = standing or bool(lead["standing"]), body[lead.end():].strip(_TRIM)
    for pattern, how in _RULES:
        if (m := pattern.search(body)) and (drafts := _build(m, how, standing)):
            return drafts
    standing = standing or bool(re.match(r"(?:never|don't ever|do not ever)\b", body, re.I))
    if standing and len(body.split()) >= 2 and not re.match(r"(?:i|my|we|our)\b", body, re.I):
        key = "instruction_" + (_slug(body) or "general")  # "From now on, cite your sources."
        return [_draft("preference", key, body, "Standing instruction from the user: {v}.")]
    return []


def extract_rules(text: str) -> list[Candidate]:
    """Extract candidate preferences and facts from a user's turn with deterministic rules.

    English only. Each sentence, then each clause ("..., and I work at ...") yields the
    candidates of the first rule that matches it. Questions and negations yield nothing, except
    the end of a diet or relationship status ("I'm not vegan anymore": diet "no longer vegan",
    so the old value is superseded); hedged statements get confidence 0.6, plain ones 0.9; a
    sentence with a correction marker ("actually", "no,", "sorry,", "not ... anymore", "X, not
    Y", "instead") marks its candidates `correction=True`.
    `grounding` is the sentence, an exact substring of `text`. Never raises.

    Example:
        >>> [(c.kind, c.key or c.predicate, c.value) for c in extract_rules(
        ...     "Please always answer in French. My dog's name is Rex, and I'm a nurse.")]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('preference', 'language', 'French'), ('fact', 'dog_name', 'Rex'),
         ('fact', 'occupation', 'nurse')]
        >>> extract_rules("I don't live in Paris. Do I live in Lyon?")
        []
    """
    out: list[Candidate] = []
    seen: set[tuple[str, str, str]] = set()
    for sentence in (s for s in _sentences(text) if len(s) <= 1_000):  # bounds regex work
        correction = bool(_CORRECTION.search(sentence))
        for clause in (c for p in _statement_parts(sentence) for c in _CLAUSE_BREAK.split(p)):
            confidence = HEDGED_CONFIDENCE if _HEDGE.search(clause) else EXPLICIT_CONFIDENCE
            for kind, name, value, content in _clause_drafts(clause):
                fact, ident = kind == "fact", (kind, name, value.lower())
                if ident in seen:
                    continue
                seen.add(ident)
                try:
                    out.append(Candidate(
                        kind=kind, key=None if fact else name, subject="user" if fact else None,
                        predicate=name if fact else None, content=content, value=value,
                        confidence=confidence, grounding=sentence, correction=correction))
                except ValidationError:  # e.g. a lone surrogate in the value
                    continue
    return out


# ----------------------------------------------------------------------------- model output


@dataclass(frozen=True, slots=True)
class ValidatedCandidates:
    """What survived validation of a model's output, and how many items were dropped and why.

    Example:
        >>> ValidatedCandidates(candidates=[], dropped=0).reasons
        []
    """

    candidates: list[Candidate]
    dropped: int
    reasons: list[str] = field(default_factory=list)
    """One short reason per dropped item: "item 2: invalid", "item 3: ungrounded"."""


def candidates_from_model_output(result: ExtractionResult | Mapping[str, Any] | None, text: str
                                 ) -> ValidatedCandidates:
    """Validate a model's structured output item by item; never raises.

    `result`: an `ExtractionResult`, a dict `{"candidates": [...]}`, or the `include_raw=True`
    form `{"parsed": ...}`. Invalid items (unknown kind, missing key, NaN or out-of-range
    confidence: nothing is clamped) and ungrounded ones (grounding not in `text`, ignoring case
    and whitespace) are dropped and counted; kept groundings become the exact span of `text`.

    Example:
        >>> fact = {"kind": "fact", "subject": "user", "predicate": "home_city",
        ...         "value": "Lyon", "content": "The user lives in Lyon.", "confidence": 0.9}
        >>> out = candidates_from_model_output({"candidates": [
        ...     {**fact, "grounding": "i LIVE  in lyon"}, {**fact, "grounding": "I live in Paris"},
        ...     {**fact, "confidence": 1.5, "grounding": "I live in Lyon"}]}, "Hi! I live in Lyon.")
        >>> [c.grounding for c in out.candidates], out.dropped, out.reasons
        (['I live in Lyon'], 2, ['item 1: ungrounded', 'item 2: invalid'])
    """
    if isinstance(result, Mapping) and "parsed" in result and "candidates" not in result:
        result = result["parsed"]
    if result is None:  # the model answered in prose instead of calling the schema's tool
        return ValidatedCandidates([], 1, ["output: no structured answer"])
    items: Any = getattr(result, "candidates", None)
    items = result.get("candidates") if isinstance(result, Mapping) else items
    if not isinstance(items, (list, tuple)):
        return ValidatedCandidates([], 1, ["output: no list of candidates"])
    kept: list[Candidate] = []
    reasons: list[str] = []
    for i, item in enumerate(items):
        try:
            candidate = Candidate.model_validate(
                item.model_dump() if isinstance(item, Candidate) else item)
        except (ValidationError, ValueError, TypeError):
            reasons.append(f"item {i}: invalid")
            continue
        words = candidate.grounding.strip(" \t\n\"'\u201c\u201d").split()
        span = re.search(r"\s+".join(map(re.escape, words)), text, re.I) if words else None
        if span is None:
            reasons.append(f"item {i}: ungrounded")
        else:
            kept.append(candidate.model_copy(update={"grounding": span.group()}))
    return ValidatedCandidates(kept, len(reasons), reasons)
