"""The offline rule extractor: deterministic, English, a rule table over sentences and clauses."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, NamedTuple

from langgraph_typed_memory.extraction.candidates import (
    EXPLICIT_CONFIDENCE,
    HEDGED_CONFIDENCE,
    SNAKE,
    Candidate,
    checked,
)
from langgraph_typed_memory.extraction.corrections import Change, find_changes
from langgraph_typed_memory.extraction.lexicon import (
    BELIEFS,
    FAMILY_AND_PET_WORDS,
    LANGUAGES,
    NATIONALITIES,
    NOT_A_VALUE,
    ROLES,
    WORKPLACES,
    occupation,
    possession,
)
from langgraph_typed_memory.extraction.statements import (
    TRIM,
    Draft,
    named_people,
    people_named,
    slug,
    statement_drafts,
)
from langgraph_typed_memory.extraction.text import (
    HYPOTHETICAL,
    quoted,
    sentences,
    statement_parts,
)

__all__ = ["extract_rules", "Rule", "RULES", "rule_table"]

_CLAUSE_BREAK = re.compile(r"\s*;\s+|:\s+|,\s+(?=so\s)|\s+[—–]\s+(?=(?:i|i'm|my|we|our)\s)|"
                           r"(?:,?\s+(?:and|but|also|plus)\s+|,\s+)"
                           r"(?=(?:i|my|please|"
                           r"call\s+me|use|be|answer|respond|reply|write|keep|always|never|"
                           r"actually)\b)", re.I)
_LEAD_IN = re.compile(  # stripped before matching; `standing` marks a lasting instruction
    r"^(?:(?P<standing>from now on|going forward|in the future|from here on(?: out)?|always)|"
    r"actually|no(?!\s+more\b)|nope|oh|well|also|and|but|so|ok|okay|btw|by the way|fyi|"
    r"for the record|correction|wait|oops|whoops|sorry|yes|yeah|hey|hi|hello|anyway|i mean|"
    r"please|ugh|hm+|"
    r"change of plans?|on second thought|(?:i'?ve )?changed my mind|scratch that|update|"
    r"before i forget|some background|for context|quick context|background|context|fwiw|"
    r"i'?d\s+rather\s+you|i(?:'d|\s+would)\s+like\s+you\s+to|i\s+(?:want|need)\s+you\s+to|"
    r"tbh|honestly|side note|technically|basically|officially|"
    r"(?:i think|i guess|i believe|i suppose|maybe|perhaps|probably|possibly)(?:\s+that)?)"
    r"\b[\s,:;.!—–-]*", re.I)
_ONE_OFF = re.compile(r"\b(?:for|in)\s+(?:this|that|the\s+next)\s+(?:one|email|message|letter|"
                      r"reply|answer|response|draft|post|document|doc|time|question|case|chat)\b|"
                      r"\bthis\s+time\b|\bjust\s+this\s+once\b|\bfor\s+now\b", re.I)
"""A request for one answer ("for this email, use a formal tone"): no standing preference."""
_QUOTES = " \t'\"\u201c\u2018"
_HEDGE = re.compile(r"\b(?:i think|i guess|i believe|i suppose|maybe|perhaps|probably|possibly|"
                    r"not sure|kind of|sort of|might)\b", re.I)
_CORRECTION = re.compile(
    r"^\W*(?:actually|no|nope|correction|wait|oops)\b|^\W*sorry\s*[,:;-]|\bi meant\b|\bno longer\b"
    r"|\bi misspoke\b|(?:\bnot|n't)\b.*\b(?:anymore|any more|any longer)\b|\bstopped being\b"
    r"|(?:,\s*|\s(?:and|but)\s+)not\s+\w|\b(?:rather than|instead)\b", re.I)
_CUT = re.compile(  # "Lyon, not Paris" keeps "Lyon"; "Lyon because ..." keeps "Lyon"
    r"(?:,\s*|\s+(?:and|but)\s+)not\s.*$|\s+(?:rather than|instead of|over|because|since|but|so|"
    r"which|who|where|while|when|until|though|although|if|whereas|with|instead)\b.*$"
    r"|\s*(?:,|\s[-—–])\s*(?:we|i|it|they|he|she|you|that|this|my|our|easier|better|"
    r"since|as)\b.*$|\s+and\s+(?:i|i'm|i've|we|my|it|it's|she|he|they)\b.*$", re.I)
_CUT_BUT_WITH = re.compile(_CUT.pattern.replace("whereas|with|", "whereas|")
                           + r"|\s+and\s+[a-z]+ing\s+(?:on|to|at|for|a|the|my)\b.*$", re.I)
"""`_CUT` keeping "with" ("animals with fur" is what one is allergic to), and cutting "and
working on ...", another clause."""
_TAIL = re.compile(  # filler at the end of a value: "Lyon now", "JSON from now on, please"
    r"(?:[\s,]+(?:now|right now|these days|nowadays|at the moment|currently|for now|anymore|"
    r"any more|any longer|please|thanks|thank you|from now on|going forward|in the future|too|"
    r"from here on(?: out)?|for me|with me|"
    r"if possible|by the way|btw|as well|again|recently|instead|originally|(?:last|this) "
    r"(?:year|month|week)|a while ago|(?:a few|\w+) (?:years|months|weeks|days) ago))+$", re.I)
_FORMATS = {f.split("=")[0].replace("_", " "): f.split("=")[-1].replace("_", " ") for f in (
    "json markdown md=markdown yaml csv html xml latex prose plain_text bullet_points "
    "bullets=bullet_points bulleted_list=bullet_points bulleted_lists=bullet_points table=tables "
    "tables numbered_list=numbered_lists numbered_lists").split()}
_FORMAT_WORDS = "|".join(sorted(map(re.escape, _FORMATS), key=len, reverse=True))
_LANGUAGE_WORDS = "|".join(sorted(LANGUAGES))
_ROLE_WORDS = "|".join(w.replace(" ", r"\s+") for w in FAMILY_AND_PET_WORDS)
_ROLE_AT_START = re.compile(rf"^(?:{_ROLE_WORDS})\b", re.I)
_TONES = ("brief|concise|terse|short|shorter|succinct|formal|informal|casual|friendly|direct|"
          "detailed|polite|professional|blunt|warm|simple|simpler|technical|serious|playful|"
          "long|longer|lengthy|thorough|in-depth|verbose|relaxed|chill|laid-back|funny|jokey|"
          "gentle|encouraging|strict|neutral")
_UNITS = ("metric|imperial|si|us customary|miles?|kilometres?|kilometers?|km|celsius|fahrenheit|"
          "grams?|kilograms?|kilos?|kg|pounds?|lbs?|ounces?|oz|cups?|tablespoons?|teaspoons?|"
          "litres?|liters?|millilitres?|milliliters?|ml|gallons?|feet|foot|inches|metres?|"
          "meters?|centimetres?|centimeters?|cm|stones?")
_UNIT_RUN = re.compile(rf"^(?:(?:{_UNITS})(?:\s*(?:,|and|&|or|/)\s*|\s+)?)+(?:units?)?",
                       re.I)
_DATE_PATTERN = re.compile(r"[dmy]{1,4}[-/. ][dmy]{1,4}[-/. ][dmy]{1,4}", re.I)
_DATE_FORMAT = re.compile(_DATE_PATTERN.pattern + r"|iso(?:[ -]?8601)?", re.I)
_ADDRESSED = re.compile(r"\byou(?:'ll|\s+will|\s+can)?\s+(?:write|give|suggest|recommend|use|"
                        r"answer|reply|draft|show|make|generate|pick|choose|book|plan|send|"
                        r"code)\b|\byour\s+(?:answers?|replies|responses|suggestions|code)\b",
                        re.I)
"""Words that say a taste is for the assistant's work ("for any tests you write")."""
_SETTING = re.compile(r"\b(?:answers?|responses?|replies|output|everything)\b", re.I)
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
    "f:teaches": "The user teaches {v}.", "f:": "The user's {p} is {v}.",
}
_REJECT = {k: frozenset(v.split()) for k, v in {  # words that make a match mean something else
    "origin": "it hr support sales marketing accounting finance legal team department office "
              "company future past",  # "I'm from IT", "I'm from Acme support"
    "car": "lot bit little hard bargain uber lyft taxi cab bus ambulance forklift",  # a job
    "my": "question questions problem issue point guess concern bad answer request idea "
          "suggestion thought feeling code error output fault pleasure turn mistake bet advice "
          "opinion take reason test query prompt",  # "my point is"
    # "my X is": X is a clause, not a noun phrase ("my friend said she is from Brazil")
    "my_clause": "is are was were said says say told tells thinks think thought believes "
                 "believe knows know claims claimed heard she he they it that who which if and",
}.items()}
_NOT_A_NAME = "|".join((  # capitalized after "I'm" but not a name: "I'm Sorry", "I'm Nigerian"
    "in off here there home done sorry fine good great ok okay sure ready new lost stuck confused "
    "happy glad sad tired busy bored hungry late early serious kidding joking curious excited "
    "interested afraid scared sick well alright so just very really also still not always never "
    "back out up deaf blind autistic gay straight bi queer trans").split()
    + sorted(NATIONALITIES | BELIEFS))
_PRONOUNS = {"my": "their", "me": "them", "i": "they"}
_Kind = Literal["preference", "fact"]


_ASIDE = re.compile(r"\s*\([^()]*\)?")
"""A parenthesis in a value: an aside or another name ("Volkswagen (VW)"), not the value."""


def _clean(value: str | None, cut: re.Pattern[str] = _CUT) -> str:
    value = _ASIDE.sub("", (value or "")).strip(TRIM)
    for pattern in (cut, _TAIL):
        value = pattern.sub("", value).strip(TRIM)
    if "[" in value or "]" in value:  # a template's placeholder ("I'm [name]"), no value
        return ""
    return "" if value.lower().startswith(("not ", "no ", "that ")) else value.replace('"', "")


def _draft(kind: _Kind, name: str, value: str, template: str = "",
           stateful: bool | None = None) -> Draft:
    """A draft whose content is `template` (default: by kind and name) in the third person."""
    template = template or _TEMPLATES.get(f"{kind[0]}:{name}", _TEMPLATES[f"{kind[0]}:"])
    third = re.sub(r"\b(?:my|me|I)\b", lambda m: _PRONOUNS[m[0].lower()], value, flags=re.I)
    return Draft(kind, name, value, template.format(
        v=third, p=name.replace("_", " "), a="an" if value[:1].lower() in "aeiou" else "a"),
        stateful)


_TEMPERATURE = re.compile(r"^(?:(?:temperatures?|temps?|degrees)\s+in\s+)?(celsius|fahrenheit)"
                          r"(?:\s+please)?$")


def _classify(value: str) -> tuple[str, str] | None:
    """The preference key and canonical value of a phrase such as "JSON" or "French"."""
    v = re.sub(r"^(?:the|a|an|more|very)\s+", "", value.lower().strip())
    if scale := _TEMPERATURE.search(v):  # "temperatures in Fahrenheit please", "Celsius"
        return "temperature_units", scale.group(1).capitalize()
    bare = re.sub(r"\s+(?:format|formatting|units?|system|language|dates?)$", "", v)
    if bare in LANGUAGES:
        return "language", bare.capitalize()
    if bare in _FORMATS:
        return "output_format", _FORMATS[bare]
    words = re.sub(r"[,;].*$", "", bare).split()
    for n in (3, 2, 1):  # "bullet points, easier to skim"
        if " ".join(words[:n]) in _FORMATS and len(words) <= n + 1:
            return "output_format", _FORMATS[" ".join(words[:n])]
    if (run := _UNIT_RUN.match(bare)) and run.group().strip(" ,&/"):
        rest = bare[run.end():].strip()
        if not rest or re.match(r"(?:for|when|in|please|units?)\b", rest):
            unit = re.sub(r"\s+units?$", "", run.group().strip(" ,&/"))
            return "units", unit
    if _DATE_FORMAT.fullmatch(bare):
        return "date_format", value.strip()
    plain = re.sub(r"\b(?:strictly|super|very|really|extra|more|a\s+(?:bit|little)\s+more|"
                   r"a|an|the|with\s+me)\b\s*", "", v).strip(" ,")
    tone = re.fullmatch(rf"(less\s+)?({_TONES})(?:\s+(?:answers?|responses?|replies|tone|style))?",
                        plain)
    comparative = {"shorter": "short", "simpler": "simple", "longer": "long"}
    if tone:
        return "tone", (tone[1] or "") + comparative.get(tone[2], tone[2])
    if re.match(rf"(?:{_TONES})\b", plain) and re.search(
            r"\b(?:answers?|responses?|replies|explanations?|examples?|tone|style)\b", plain):
        return "tone", value.strip()  # "long, detailed answers with worked examples"
    pattern = _DATE_PATTERN.search(value) or _DATE_FORMAT.search(value)
    if pattern and re.search(r"\b(?:format|dates?)\b|iso", bare):
        return "date_format", value[:pattern.end()].strip(" ,") if pattern.end() <= 40 else (
            pattern.group())
    named = re.findall(rf"\b(?:{_FORMAT_WORDS}|paragraphs?)\b", bare)
    if named and re.search(
            r"\b(?:answers?|responses?|replies|format\w*|paragraphs?|prose|bullets?|tables?)\b",
            bare) and len(bare.split()) <= 6:
        other = re.sub(rf"\b(?:{_FORMAT_WORDS}|all|your|my|the|a|answers?|responses?|replies|"
                       r"in|as|formatted|format|please)\b", " ", bare).split()
        if len(named) == 1 and not other and named[0] in _FORMATS:
            return "output_format", _FORMATS[named[0]]  # "all your answers in JSON"
        return "output_format", value.strip()  # "plain prose paragraphs"
    return None


def _role(phrase: str) -> str:
    """`phrase` with a leading family or pet word made canonical ("baby girl's name": daughter's).

    So "We have a baby girl named Lily" and "my daughter's name is Lily" share a predicate.
    """
    return _ROLE_AT_START.sub(lambda m: ROLES[" ".join(m[0].lower().split())].name, phrase)


_SAID_VALUE = re.compile(r"(?:an?|the)\s|\d|(?-i:[A-Z])", re.I)
"""What "my X's ..." says X is, when it is "is": "a dentist", "5", "Sam" (else a possessive)."""
_ELLIPTIC = frozenset("favorite favourite favorites favourites".split())
"""A subject that needs what was said before ("my favorite is the sundae": of what?)."""
_NOW_MODIFIER = re.compile(r"^(?:new|current|present)\s+(?=\S)", re.I)
_PLACE = re.compile(r"^(?:the\s+)?(?-i:[A-Z])")
"""A place is a name ("Lyon", "the Netherlands"), not "the city" or "a big city"."""
_EMPLOYER = re.compile(rf"^(?:the\s+)?(?-i:[A-Z])|^(?:an?|the)\s+(?:[\w'-]+\s+){{0,2}}"
                       rf"(?:{'|'.join(sorted(WORKPLACES))})$", re.I)
"""An employer is a name ("Acme", "the Museum of Natural History") or "a bank"."""
_A_GROUP = re.compile(r"(?:the|a|an|our|my)\s+(?:team|squad|group|club|office|department)", re.I)
"""Who one plays or works with, no employer ("a shooting guard for the team")."""


def _value_for(predicate: str, value: str) -> str | None:
    """The value a fact of that predicate may hold, cut to what it names; None if it names
    none: a job noun for an occupation, a place's name for a home, a name or an organisation
    for an employer, family, pets or a business for what one has."""
    if predicate == "occupation":
        return occupation(value)
    if predicate == "has":
        return possession(value)
    if predicate == "home_city":
        return value if _PLACE.match(value) else None
    if predicate == "employer":  # "a small startup called Freightly": Freightly
        called = re.search(rf"\b(?:called|named)\s+({_NAME})", value)
        value = called.group(1) if called else re.sub(r"\s+in\s+.*$", "", value)  # "in Leeds"
        return value if _EMPLOYER.match(value) and len(value.split()) <= 6 and not (
            _A_GROUP.fullmatch(value)) else None
    if predicate == "teaches":
        return None if re.match(r"(?:at|in|for|to|with|on)\b", value, re.I) else value
    return value


def _build(m: re.Match[str], how: str, standing: bool) -> list[Draft]:
    """The drafts of a matched rule; `how` is explained above `RULES`."""
    kind, _, spec = how.partition(":")
    if kind == "p":
        value = _clean(m["v"] if m["v"] is not None else m.groupdict().get("w"))
        if not value:
            return []
        if spec == "?setting" and not (standing or _SETTING.search(m.string)):
            return []  # "put this in a table" is a one-off request, not a setting
        found = _classify(value) if spec.startswith("?") else (spec, value)
        if found is None and spec == "?response_style":
            found = ("response_style", value)
        elif found is None and spec == "?prefers" and _ADDRESSED.search(m.string):
            found = ("prefers_" + slug(value), value)  # "I prefer pytest for tests you write"
        return [_draft("preference", *found)] if found and re.match(SNAKE, found[0]) else []
    if spec.startswith("my"):  # "my X is Y"; "my_name": "my X is named Y"; "my_origin": from Y
        subject, suffix = " ".join(m["x"].lower().split()), spec[2:]
        value = _clean(m["v"])
        if spec == "my's" and not _SAID_VALUE.match(value):
            return []  # "my daughter's football match": whose match, not what she is
        suffix = "" if spec == "my's" else suffix
        current = _NOW_MODIFIER.sub("", subject)  # "my new manager" is my manager now
        predicate = slug(_role(current).replace("'s", ""), words=5) + suffix
        if (not value or subject.split()[-1] in _REJECT["my"] or _REJECT["my_clause"] & set(
                subject.split()) or not re.match(SNAKE, predicate) or subject in _ELLIPTIC
                or value.split()[0].lower() in NOT_A_VALUE or re.match(  # "my fam's been awesome"
                    r"(?:my|our|your|their|his|her)\s+(?-i:[a-z])", value, re.I)):
            return []
        verb = f"{m.groupdict().get('be') or 'is'} {_MY_VERBS[suffix]}".lower().rstrip()
        text = "" if f"f:{predicate}" in _TEMPLATES else f"The user's {subject} {verb} {{v}}."
        single = m.groupdict().get("be") != "are" and not subject.endswith("s")  # one at a time
        return [_draft("fact", predicate, value, text, stateful=single or None)]
    if spec == "named":  # "I have a cat named Miso": keyed like "my cat's name is Miso"
        owned, value = " ".join(m["n"].lower().split()), _clean(m["v"])
        text = f"The user has {m['a'].lower()} {owned} named {{v}}."
        return [_draft("fact", slug(_role(owned)) + "_name", value, text)] if value else []
    out = []
    names = spec.split("+")
    groups = ("v", "w") if len(names) > 1 else (next(  # one value, said one of several ways
        (g for g in ("v", "w", "x") if m.groupdict().get(g) is not None), "v"),)
    for name, group in zip(names, groups, strict=False):
        predicate = name.lstrip("~")
        value = _clean(m.groupdict().get(group), _CUT_BUT_WITH if predicate == "allergy" else _CUT)
        reject = _REJECT.get(predicate, frozenset())
        if value and value.lower() not in reject and (
                predicate == "employer" or not reject & set(value.lower().split()[:3])) and (
                held := _value_for(predicate, value)):
            out.append(_draft("fact", predicate, "no longer " + held if name[0] == "~" else held))
    return out


class Rule(NamedTuple):
    """A rule of the table: its id (what a memory's `proposed_by` names), the pattern it
    matches on a clause (lead-ins stripped), what it emits (see above `RULES`), and phrasings
    it writes (`examples`) and leaves (`non_examples`: nothing typed), which run as tests."""

    id: str
    pattern: re.Pattern[str]
    emits: str
    examples: tuple[str, ...] = ()
    non_examples: tuple[str, ...] = ()


def _rule(ident: str, pattern: str, emits: str, examples: tuple[str, ...] = (),
          non_examples: tuple[str, ...] = ()) -> Rule:
    return Rule(ident, re.compile(pattern, re.I), emits, examples, non_examples)


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
_EXCLUDES = {diet: frozenset(foods.split()) for diet, foods in {  # what a diet leaves out
    "vegan": "meat fish seafood chicken poultry pork beef dairy eggs",
    "vegetarian": "meat fish seafood chicken poultry pork beef",
    "pescatarian": "meat chicken poultry pork beef",
    "pescetarian": "meat chicken poultry pork beef",
}.items()}
_DIETS = "|".join([*_EXCLUDES, r"gluten[- ]free", r"lactose[- ]intolerant", "kosher", "halal"])
_ZONES = (r"UTC|GMT|CET|CEST|EET|EEST|WET|WEST|BST|IST|EST|EDT|CST|CDT|MST|MDT|PST|PDT|AKST|HST|"
          r"JST|KST|SGT|HKT|AEST|AEDT|ACST|AWST|NZST|NZDT|BRT|ART")
_FOODS = f"(?:{'|'.join(sorted(_EXCLUDES['vegan']))})"
_STATUSES = r"married|single|divorced|engaged|widowed|separated"
_SPOKEN = rf"(?:{_LANGUAGE_WORDS})(?:(?:\s*,\s*|,?\s+and\s+)(?:{_LANGUAGE_WORDS}))*(?![\w-])"
_WE = r"(?:we|my\s+(?:wife|husband|partner|spouse)\s+and\s+i)"
_HAVE = r"(?:\s+have(?:\s+got)?|'ve\s+got|\s+own)\s+"  # "I have", "I've got", "we own"
_MY = r"^my\s+(?P<x>[a-z][a-z' -]{0,40}?)"
_MY_VERBS = {"": "", "_name": "named", "_origin": "from"}
# "p:<key>": preference; "p:?": key by the value's class (JSON -> output_format), or
# "?response_style" if unclassified, "?prefers": `prefers_<slug>` if unclassified and said of
# the assistant's work, "?setting" if standing. "f:<predicate>[+<of group w>]":
# fact; "f:~<predicate>": a state that ended ("no longer vegan"); "f:my's": "my X's Y" when it
# is "my X is Y" ("my brother's a dentist"); "f:my[_name|_origin]": "my X
# is [named|from] Y", predicate X[_name|_origin]; "f:named": "I have a <role n> named Y",
# predicate n_name.
RULES: tuple[Rule, ...] = (
    _rule("preference.name",
          rf"(?<!n't\s)(?<!not\s)(?<!never\s)\b(?:(?:call|address)\s+me\s+(?:as\s+|formally,?\s+"
          rf"(?:as\s+)?|by\s+)?|refer\s+to\s+me\s+as\s+|^i\s+go\s+by\s+)"
          rf"(?P<v>(?:(?-i:Dr|Prof|Mr|Mrs|Ms|Mx|Sir|Dame)\.?\s+)?{_NAME})", "p:name",
          ("Call me Sam from now on.", "I go by Jo.", "Please address me as Dr Whitcombe."),
          ("Call me crazy, but I love it.", "Call me back tomorrow.", "Don't call me Bob.")),
    _rule("preference.tone_like", r"^(?:talk|speak|write|reply|respond)\s+(?:to\s+me\s+)?like\s+"
          r"(?P<v>.+)", "p:tone", ("Talk to me like a pirate.",)),
    _rule("preference.units_for",
          rf"\b(?P<v>(?:{_UNITS})(?:\s*(?:,|and|&|or)\s*(?:{_UNITS}))*)\s+(?:for|in|when)\s+"
          r"(?:recipes|cooking|baking|distances?|measurements?|weights?|temperatures?|"
          r"(?:the\s+)?weather)\b", "p:units", ("Use cups and ounces for recipes.",)),
    _rule("preference.works_better", r"^(?P<v>.+?)\s+works?\s+(?:better|best)\s+for\s+me\b",
          "p:?", ("JSON works better for me.",), ("Mornings work better for me.",)),
    _rule("fact.occupation_new",  # a job one is given or takes, then what "as" names
          rf"^(?:\w+\s+)?(?:(?:they|she|he|my\s+\w+)\s+(?:made|promoted)\s+me(?:\s+to)?|"
          rf"i(?:'ve|\s+have)?\s+{_ADV}(?:been\s+|got\s+)promoted\s+to|(?:(?:{_AM}|"
          rf"i(?:'ll|\s+will)\s+be\s+|i(?:'ve|\s+have)\s+been\s+)(?:joining|starting|hired|"
          rf"taken\s+on|brought\s+in)|i(?:'ve|\s+have)?\s+{_ADV}(?:got|landed|found)\s+a\s+"
          r"(?:new\s+)?(?:job|role|position))\b[^,.;!?]*?\bas)\s+(?P<v>.+)", "f:occupation",
          ("They promoted me to senior engineer.", "I'm joining the data team as an analyst.",
           "I got a job as a financial analyst."),
          ("They promoted me to the top of the list.", "I'm starting the season as a rookie.")),
    _rule("preference.date_format",
          r"^(?:(?:use|write|format|show)\s+(?:all\s+)?dates\s+(?:as|like|in)\s+(?P<v>.+)|use\s+"
          r"(?:the\s+)?(?P<w>.+?)\s+(?:format\s+)?(?:for\s+dates|dates|date\s+format)\b)",
          "p:date_format", ("Write dates as DD/MM/YYYY.", "Use ISO 8601 format for dates.")),
    _rule("preference.timezone", r"^(?:my\s+)?time\s*zone\s+is\s+(?:now\s+)?(?P<v>.+)",
          "p:timezone", ("My timezone is Europe/Paris.",)),
    _rule("preference.timezone_on",
          rf"^{_AM}on\s+(?:(?P<v>[\w/+:-]+(?:\s+[\w/+:-]+)?)\s+time\b|"
          rf"(?P<w>(?-i:{_ZONES})(?:[+-]\d{{1,2}})?)(?![\w+-]))", "p:timezone",
          ("I'm on Pacific time.", "so I'm on CET now"), ("I'm on PTO next week.",)),
    _rule("preference.answer_in",
          r"^(?:(?:only|always)\s+)?(?:answer|respond|reply|write|talk|speak|communicate)"
          r"(?:\s+(?:to|with)\s+me|\s+me)?\s+(?:only\s+|always\s+)?in\s+(?P<v>.+)",
          "p:?response_style", ("Answer me in Spanish.", "Reply in one sentence.")),
    _rule("preference.answers_in",
          rf"^i(?:'d|\s+would)?\s+(?:like|prefer|want|need)\s+(?:your\s+|the\s+|all\s+|my\s+)?"
          rf"{_ANSWERS}\s+(?:to\s+be\s+)?(?:in|as|formatted\s+(?:in|as)|written\s+in)\s+"
          r"(?P<v>.+)", "p:?response_style", ("I'd like answers in French please.",)),
    _rule("preference.give_me",
          r"^(?:(?:please\s+)?give\s+me|i\s+(?:want|need)|(?:please\s+)?go)\s+(?P<v>.+)", "p:?",
          ("Give me all your answers in JSON.",), ("I need a break.", "Give me five minutes.")),
    _rule("preference.use", r"^(?:use|(?:let's\s+)?switch\s+(?:over\s+)?to)\s+(?P<v>.+)", "p:?",
          ("Use metric units.", "Use markdown format.", "Switch to German, please."),
          ("Use your head.",)),
    _rule("preference.temperature", r"^(?P<v>celsius|fahrenheit)(?:\s+please)?$", "p:?",
          ("wait, Celsius please",)),
    _rule("preference.tone",
          rf"^(?:be|stay|keep\s+it|(?:keep|make)\s+(?:your\s+|the\s+)?(?:{_ANSWERS}|things))\s+"
          rf"(?:(?:more|a\s+(?:bit|little)\s+more|very|extra|super|really)\s+)?"
          rf"(?P<v>(?:less\s+)?(?:{_TONES}))\b", "p:?",
          ("From now on, be more concise.", "Keep your answers short."),
          ("Be careful out there!", "Stay positive!")),
    _rule("preference.format_setting", rf"\b(?:in|as)\s+(?P<v>(?:a\s+)?(?:{_FORMAT_WORDS}))\b",
          "p:?setting", ("Everything in markdown from now on.",),
          ("Put this list in a table.", "I always keep my notes in a table.")),
    _rule("preference.prefer", rf"^i(?:'d|\s+would)?\s+{_ADV}prefer\s+(?P<v>.+)",
          "p:?prefers", ("I prefer JSON.", "I prefer pytest over unittest for tests you write."),
          ("I prefer to spend my money on travel.", "I prefer window seats over aisle seats.")),
    _rule("preference.like_better", rf"^i\s+{_ADV}like\s+(?P<v>.+?)\s+(?:better|more|best)\b",
          "p:?prefers", ("I like tables better.",),
          ("I like Baby One More Time.", "I usually like them a lot more then.")),
    _rule("preference.rather",
          r"^i(?:'d|\s+would)\s+(?:rather\s+(?:have\s+|get\s+|use\s+|see\s+)?|like\s+|want\s+)"
          r"(?P<v>.+)", "p:?prefers", ("I'd rather have plain text.",),
          ("I'd like to visit Paris.",)),
    _rule("fact.allergy",
          rf"^(?:{_AM}(?:very\s+|severely\s+|mildly\s+)?allergic\s+to\s+(?P<v>.+)|i\s+have\s+an?\s+"
          r"(?:severe\s+|mild\s+)?(?:allergy\s+to\s+(?P<w>.+)|(?P<x>[\w -]+?)\s+allergy\b))",
          "f:allergy", ("I'm allergic to peanuts.", "I have a peanut allergy.")),
    _rule("fact.diet",
          rf"^(?:{_AM}(?:an?\s+)?|i(?:'ve|\s+have)?\s+{_ADV}(?:gone|turned|become|went)\s+"
          rf"(?:fully\s+|completely\s+|full\s+|strictly\s+)?)(?P<v>{_DIETS})(?![\w-])", "f:diet",
          ("I'm vegetarian.", "I've gone vegan."), ("I'm not vegetarian.",)),
    _rule("fact.relationship_status",
          rf"^(?:{_AM}(?:an?\s+)?(?P<v>{_STATUSES})(?![\w-])(?!\s+(?:in|on|by|from|into|at)\b)|"
          rf"i\s+{_ADV}got\s+(?P<w>married|divorced|engaged)\b)", "f:relationship_status",
          ("I'm married.", "I just got divorced."), ("I'm engaged in a big project.",)),
    _rule("fact.diet_ended", rf"{_ENDED}(?P<v>{_DIETS})(?![\w-])", "f:~diet",
          ("I'm not vegan anymore.",)),
    _rule("fact.diet_eating_again",
          rf"^(?:i\s+{_ADV}|{_AM})?(?:(?:have\s+|'ve\s+)?started\s+|began\s+)?(?P<v>eating\s+"
          rf"{_FOODS}(?:\s+(?:and|or)\s+{_FOODS})?\s+again)\b", "f:diet",
          ("I started eating fish again.",)),
    _rule("fact.relationship_status_ended", rf"{_ENDED}(?P<v>{_STATUSES})(?![\w-])",
          "f:~relationship_status", ("I'm not married anymore.",)),
    _rule("fact.age",
          rf"^(?:{_AM}|i\s+{_ADV}turned\s+)(?P<v>\d{{1,3}})(?:\s+years?\s+old\b|{_END})",
          "f:age", ("I'm 34 years old.", "I just turned 30."), ("I'm 30 minutes late.",)),
    _rule("fact.home_city",
          rf"^(?:i(?:'ve|\s+have)?\s+{_ADV}(?:live|moved|relocated)\s+(?:in|to)|{_AM}(?:based|"
          r"living|located|staying)\s+in)\s+(?P<v>.+)", "f:home_city",
          ("I moved to Berlin last month.", "I'm based in Montreal, Canada."),
          ("I live in the city.", "I live in a rural farming community.",
           "I just moved in a few weeks ago.", "I'm staying in bed today.")),
    _rule("fact.home_city_home",
          rf"^(?:{_AM}|(?:i|{_WE})(?:'re|\s+are|'ve|\s+have)?\s+{_ADV})(?:renting|rent|own|"
          r"bought|got\s+the\s+keys\s+to|moved\s+into|moving\s+into|living\s+in|live\s+in)\s+"
          r"(?:a|an|the|my|our)\s+(?:[\w-]+\s+){0,2}?(?:flat|house|apartment|place|home|condo|"
          r"studio|bungalow|cottage|townhouse|loft)\s+in\s+(?P<v>.+)", "f:home_city",
          ("I'm renting a studio flat in Leith.",), ("We bought a house in the countryside.",)),
    _rule("fact.origin",
          rf"^(?:{_AM}from|i\s+{_ADV}(?:come\s+from|grew\s+up\s+in))\s+(?P<v>(?:the\s+)?{_CAP}.+)",
          "f:origin", ("I'm from Brazil.",), ("I'm from a small town.",)),
    _rule("fact.spoken_language",
          rf"^(?:i\s+{_ADV}(?:can\s+)?speak|{_AM}fluent\s+in)\s+(?:(?:some|a\s+little|"
          rf"a\s+bit\s+of|basic|fluent|conversational|native)\s+)?(?P<v>{_SPOKEN})|"
          rf"^{_AM}an?\s+(?:native|fluent)\s+(?P<w>{_SPOKEN})\s+speaker\b", "f:spoken_language",
          ("I speak Portuguese and English.", "I'm a native Portuguese speaker."),
          ("I speak my mind.",)),
    _rule("fact.car",
          rf"^i\s+{_ADV}drive\s+(?P<v>an?\s+[\w'-]+(?:\s+(?!(?:to|for|in|on|at|from|with|every|"
          r"each|around|and|but|because)\b)[\w'-]+){0,3})", "f:car", ("I drive a Tesla.",),
          ("I drive a hard bargain.",)),
    _rule("fact.employer",
          rf"^(?:i\s+{_ADV}work|{_AM}(?:employed|working))\s+(?:at|for|by)\s+(?P<v>.+?)"
          r"(?:\s+as\s+(?:an?\s+)?(?P<w>.+))?$", "f:employer+occupation",
          ("I work at Acme as a data scientist.", "I work at a bank."),
          ("I work for myself.", "I work for the team and our season opener is next week.")),
    _rule("fact.teaches", rf"^i\s+{_ADV}teach\s+(?P<v>.+?)(?:\s+at\s+(?P<w>.+))?$",
          "f:teaches+employer", ("I teach fifth grade.",), ("I teach at a public school.",)),
    _rule("fact.occupation",
          rf"^(?:i\s+{_ADV}work\s+as\s+(?:an?\s+)?|{_AM}an?\s+)(?P<v>.+?)"
          r"(?:\s+(?:at|for)\s+(?!home\b)(?P<w>.+))?$", "f:occupation+employer",
          ("I work as a nurse.", "I'm a software engineer at Google.", "I'm a stay at home dad."),
          ("I'm a mix of excited and scared.", "I'm a much better cook because of it.",
           "I'm a big fan of jazz.", "I'm a 12 year old girl.", "I'm a [user1_job].")),
    _rule("fact.name", rf"^i(?:'m|\s+am)\s+(?!(?:{_NOT_A_NAME})\b)(?P<v>{_NAME}){_END}",
          "f:name", ("I'm Priya.",), ("I'm Sorry.", "I'm French.")),
    _rule("fact.named",
          rf"^(?:i|{_WE}){_HAVE}(?P<a>an?|one)\s+(?P<n>{_ROLE_WORDS})\s+(?:named|called)\s+"
          rf"(?P<v>{_NAME}){_END}", "f:named", ("I have a cat named Miso.",)),
    _rule("fact.has", rf"^(?:i|{_WE}){_HAVE}(?P<v>(?:an?|one|two|three|four|five|\d+)\s+.+)",
          "f:has", ("I have two dogs who live with me.", "We have two kids."),
          ("I have a funny story.", "I have a question about my order.",
           "We have two offices in Berlin.")),
    _rule("fact.my_name",
          rf"{_MY}(?:\s+(?P<be>is|are)|'s)\s+(?:named|called)\s+(?P<v>{_NAME})", "f:my_name",
          ("My wife is called Ana.",), ("My cat is called whenever dinner is ready.",)),
    _rule("fact.my_origin",
          rf"{_MY}\s+(?P<be>is|are)\s+(?:originally\s+)?from\s+(?P<v>(?:the\s+)?{_CAP}.+)",
          "f:my_origin", ("My parents are from Brazil.",)),
    _rule("fact.my", rf"{_MY}\s+(?P<be>is|are)\s+(?!(?:named|called|from)\b)(?P<v>.+)", "f:my",
          ("My favorite color is blue.", "My birthday is May 3."),
          ("My fam's been awesome.", "My son's ok.", "My laptop is like half of my lifeline.",
           "My husband is my best friend.", "My kids are so excited about summer break!",
           "My name is [name].")),
    _rule("fact.my_possessive",
          r"^my\s+(?P<x>[a-z]+(?:\s+[a-z]+)?)'s\s+(?!(?:named|called|from)\b)(?P<v>.+)", "f:my's",
          ("My brother's a dentist.", "My name's Sam."),
          ("My week's been busy.", "My journal's pretty much my rock.",
           "Work Monday to Thursday, and my daughter's football match on Saturday.")),
)


_BRACKETED = re.compile(r"\s*\[[^\]]*\]?")
"""An image's caption ("[image: a photo of a dog]") or a template's "[name]": no one's words."""


def _emits_text(emits: str) -> str:
    """What a rule's `emits` writes, in words (the docs table's second column)."""
    kind, _, how = emits.partition(":")
    if kind == "p":
        return {"?": "preference by the value's class",
                "?prefers": "preference by the value's class",
                "?response_style": "preference by the value's class, else `response_style`",
                "?setting": "preference by the value's class (a standing setting only)",
                }.get(how, f"preference `{how}`")
    if how.startswith("~"):
        return f'fact `{how[1:]}`, "no longer X" (a correction)'
    named = {"my": 'fact `X` ("my X is Y")', "my's": 'fact `X` ("my X is Y")',
             "my_name": "fact `X_name`", "my_origin": "fact `X_origin`",
             "named": "fact `<role>_name`"}
    if how in named:
        return named[how]
    return "fact " + " and ".join(f"`{p}`" for p in how.split("+"))


def rule_table(rules: Sequence[Rule] = ()) -> str:
    """The rule table of docs/extraction.md, made from the rules (a test holds the docs to
    it): id, what it writes, its first two examples and non-examples.

    Example:
        >>> print(rule_table(RULES[:1]))  # doctest: +NORMALIZE_WHITESPACE
        | rule | candidate | writes | writes nothing |
        |---|---|---|---|
        | `preference.name` | preference `name` | "Call me Sam from now on."; "I go by Jo." | \
"Call me crazy, but I love it."; "Call me back tomorrow." |
    """
    lines = ["| rule | candidate | writes | writes nothing |", "|---|---|---|---|"]
    for rule in rules or RULES:
        said = ["; ".join(f'"{t}"' for t in texts[:2])
                for texts in (rule.examples, rule.non_examples)]
        lines.append(f"| `{rule.id}` | {_emits_text(rule.emits)} | {said[0]} | {said[1]} |")
    return "\n".join(lines)


def _clause_drafts(clause: str, standing: bool = False, known: frozenset[str] = frozenset(),
                   said: str = "") -> list[Draft]:
    """The drafts of the first rule that matches a clause, after its lead-ins (`standing`:
    the sentence began with "from now on" and the like; `known`: people named before; `said`:
    the whole sentence), each with the id of the rule that made it."""
    body = _BRACKETED.sub("", clause.replace("\u2019", "'")).strip(TRIM)
    while (lead := _LEAD_IN.match(body)) and lead.end():
        standing, body = standing or bool(lead["standing"]), body[lead.end():].strip(TRIM)
    if people := named_people(body, known):
        return people
    for rule in RULES:
        if (m := rule.pattern.search(body)) and (drafts := _build(m, rule.emits, standing)):
            return [d._replace(rule=rule.id) for d in drafts]
    return statement_drafts(body, standing, said)


def extract_rules(text: str, *, speaker: str = "user", earlier: Sequence[str] = ()
                  ) -> list[Candidate]:
    """Extract candidate preferences and facts from a user's turn with deterministic rules.

    English only. Each sentence, then each clause ("..., and I work at ...") yields the
    candidates of the first rule that matches it. Questions and negations yield nothing, except
    the end of a diet or relationship status ("I'm not vegan anymore": diet "no longer vegan",
    so the old value is superseded); hedged statements get confidence 0.6, plain ones 0.9; a
    sentence with a correction marker ("actually", "no,", "sorry,", "not ... anymore", "X, not
    Y", "instead") marks its candidates `correction=True`. The turn is then read against the
    speaker's `earlier` statements, newest first (the thread's previous messages, what memory
    returned for the turn; see `corrections.find_changes`): a value it replaces, with or without
    a marker, becomes `replaces` on the candidate that states the new value, or a candidate of
    its own carrying the earlier statement corrected. `speaker` names the subject of facts
    ("user" for an app's user, a name in a conversation between people). `grounding` is the
    sentence, an exact substring of `text`. Never raises.

    Example:
        >>> [(c.kind, c.key or c.predicate, c.value) for c in extract_rules(
        ...     "Please always answer in French. My dog's name is Rex, and I'm a nurse.")]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('preference', 'language', 'French'), ('fact', 'dog_name', 'Rex'),
         ('fact', 'occupation', 'nurse')]
        >>> extract_rules("I don't live in Paris. Do I live in Lyon?")
        []
        >>> [(c.value, c.replaces, c.content) for c in extract_rules(
        ...     "Small update: my team moved me to the Austin office.",
        ...     earlier=["I work in the Denver office."])]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('Austin', 'Denver',
          'user (updated): Small update: my team moved me to the Austin office.')]
    """
    out: list[Candidate] = []
    seen: set[tuple[str, str, str]] = set()
    known = people_named([*earlier, text])
    at = 0
    for sentence in sentences(text):
        at = text.find(sentence, at)
        if len(sentence) > 1_000 or HYPOTHETICAL.match(sentence):  # bounds regex work; "if I"
            continue
        correction = bool(_CORRECTION.search(sentence))
        one_off = bool(_ONE_OFF.search(sentence))  # "for this email, use a formal tone"
        standing = False
        for clause in (c for p in statement_parts(sentence) for c in _CLAUSE_BREAK.split(p)):
            where = at + sentence.find(clause) + len(clause) - len(clause.lstrip(_QUOTES))
            if quoted(text, where):  # pasted text to proofread or translate: not the speaker's
                continue
            confidence = HEDGED_CONFIDENCE if _HEDGE.search(clause) else EXPLICIT_CONFIDENCE
            lead = _LEAD_IN.fullmatch(clause.strip(TRIM) + " ")
            if lead and lead["standing"]:  # "Going forward, please cite sources."
                standing = True
                continue
            for draft in _clause_drafts(clause, standing, known, sentence):
                fact, ident = draft.kind == "fact", (draft.kind, draft.name, draft.value.lower())
                if ident in seen or (one_off and not fact) or draft.value == speaker:
                    continue
                seen.add(ident)
                content = draft.content
                if speaker != "user":
                    content = content.replace("The user's", f"{speaker}'s").replace(
                        "The user", speaker)
                out += checked(
                    kind=draft.kind, key=None if fact else draft.name,
                    subject=(draft.subject or speaker) if fact else None,
                    predicate=draft.name if fact else None, content=content,
                    value=draft.value, confidence=confidence, grounding=sentence,
                    correction=correction, stateful=draft.stateful, scope=draft.scope,
                    rule=draft.rule)
    if len(text) <= 4_000:
        for change in find_changes(text, earlier):
            out = _apply(change, out, text, speaker)
    return [_ended_diet(c, earlier) for c in out]


_PARTS = re.compile(r"(?<=[.!?;,])\s+|\s+[—–-]\s+|\s+and\s+(?=(?:i|we|bought|got|"
                    r"started|moved|switched|use|now)\b)", re.I)


def _without(text: str, old: str) -> str:
    """What a turn says besides an old value: its sentences and clauses that do not name it
    (all of it when each does).

    Example:
        >>> _without("Sold the diesel last month and bought an electric scooter.", "diesel")
        'bought an electric scooter.'
    """
    said = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)", re.I)
    rest = [p for s in sentences(text) for p in _PARTS.split(s) if p and not said.search(p)]
    return " ".join(" ".join(rest).split()) or " ".join(text.split())


_DIET_SAID = re.compile(r"\bi(?:'m|\s+am|'ve\s+been|\s+have\s+been|\s+was|\s+went|'ve\s+gone|"
                        r"\s+have\s+gone)\s+(?:[\w-]+\s+){0,2}?"
                        rf"({'|'.join(_EXCLUDES)})\b", re.I)


def _ended_diet(candidate: Candidate, earlier: Sequence[str]) -> Candidate:
    """A diet the speaker said before ends when a turn states another of the same family
    ("I've gone vegan" after "I'm vegetarian") or eating again what it left out ("started
    eating fish again"): the new diet replaces the old one."""
    value = str(candidate.value or "").lower()
    if candidate.predicate != "diet" or candidate.replaces:
        return candidate
    eaten = set(value.split()) if value.startswith("eating ") else set()
    if not eaten and value not in _EXCLUDES:
        return candidate
    for text in earlier:
        for m in _DIET_SAID.finditer(text):
            old = m.group(1).lower()
            if (eaten & _EXCLUDES[old]) or (not eaten and old != value):
                return candidate.model_copy(update={"replaces": m.group(1), "correction": True})
    return candidate


def _apply(change: Change, found: list[Candidate], text: str, speaker: str) -> list[Candidate]:
    """A change joins the candidate that states its new value (or, for a withdrawal, the
    turn's first candidate), else becomes a candidate of its own: the clauses of the user's
    sentence that says the new value, word for word (those naming the old value left out),
    or, for a withdrawal, what else the turn says."""
    new = (change.new or "").lower()
    for i, c in enumerate(found):
        value = str(c.value or "").lower()
        if c.replaces is None and (not new or (value and (new in value or value in new))):
            found[i] = c.model_copy(update={"replaces": change.old, "correction": True})
            return found
    said = next((s for s in sentences(text) if change.new and change.new.lower() in s.lower()),
                text.strip()[:1_000])
    if change.new:  # its clauses that do not name the old value, as said
        content, rule = f"{speaker} (updated): {_without(said, change.old)}", "correction.replaces"
    else:  # a withdrawal: what the turn says besides the old value
        content, rule = f"{speaker}: {_without(text, change.old)[:2_000]}", "correction.withdraws"
    return found + checked(kind="fact", subject=speaker, content=content, value=change.new,
                           replaces=change.old[:512], confidence=EXPLICIT_CONFIDENCE,
                           grounding=said, correction=True, rule=rule)
