"""Statements the main rule table leaves: standing instructions, the user's organisation,
named people and pets, identifiers. Each rule reads one clause and gives drafts.

- Instructions: "stop adding emojis", "please never ...", "don't bother with greetings",
  "I want replies to be under 100 words", "could you always ..." -> a preference
  `instruction_<slug>` holding the instruction.
- Organisation ("we use Jenkins for CI", "we host everything on Azure", "our standup is at
  9:30", "the company's fiscal year starts in April"): a fact about the organisation, proposed
  for the tenant scope, where it waits for a second person to confirm it (until then the
  speaker's turn log carries it).
- People and pets ("my brother Tom is a dentist in Cork", "our cat Pixel is diabetic"): the
  name in its role (`brother_name`, one at a time) and what is said of them. What a person
  does for a living, where they live and who employs them ("works as a paramedic", "moved to
  Leeds", "got a postdoc in Montreal", "joined Stripe") is one current value each (subject
  the name, predicate `occupation`, `home_city`, `employer`), also in a later sentence that
  opens with a name met before ("Saoirse just qualified as a midwife"), so the new value
  supersedes the old.
- Identifiers ("the staging db listens on 5433", "my passport expires 14 March 2029"): one
  current value per thing named.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Literal, NamedTuple

from langgraph_typed_memory.extraction.lexicon import (
    INSTRUCTION_VERBS,
    MONTHS,
    PERSON_ROLE_WORDS,
    WEEKDAYS,
    names_output,
    occupation,
)
from langgraph_typed_memory.extraction.values import STRONG_TYPES, typed_spans

__all__ = ["Draft", "named_people", "people_named", "statement_drafts", "slug", "TRIM"]

_Kind = Literal["preference", "fact"]


class Draft(NamedTuple):
    """What a rule makes of a clause, before it becomes a `Candidate`."""

    kind: _Kind
    name: str
    """The preference key or the fact predicate."""
    value: str
    content: str
    stateful: bool | None = None
    subject: str | None = None
    """A fact's subject when it is not the speaker ("Tom", "organisation")."""
    scope: Literal["user", "tenant"] = "user"
    rule: str | None = None
    """The id of the rule that made it ("fact.home_city"): the memory's `proposed_by`."""


def slug(text: str, words: int = 4) -> str:
    """snake_case of the first `words` words, ASCII only.

    Example:
        >>> slug("Staging DB's port!")
        'staging_dbs_port'
    """
    ascii_text = unicodedata.normalize("NFKD", text.replace("'", "")).encode("ascii", "ignore")
    return "_".join(re.findall(r"[a-z0-9]+", ascii_text.decode().lower())[:words])


TRIM = " \t\"'`.,;:!?)(\u2026-"
"""What is trimmed off both ends of a clause or a value: spaces, quotes, punctuation."""
_STOP_VALUE = re.compile(r"\s+(?:because|since|so|but|which|when|while|as|and\s+(?:i|we|it|"
                         r"they|he|she)\b).*$|\s+(?:everywhere|across\s+the\s+board|for\s+"
                         r"everything|now|these\s+days|nowadays|too)$", re.I)


def _value(text: str) -> str:
    return _STOP_VALUE.sub("", text).strip(TRIM)


_INSTRUCTION = re.compile(
    r"^(?:please\s+)?(?:(?:stop|quit|avoid)\s+\w+ing\b|never\b|no\s+more\b|don'?t\s+|"
    r"do\s+not\s+|always\b|(?:could|can|would)\s+you\s+(?:please\s+)?always\b|"
    r"i\s+(?:want|need|'d\s+like|would\s+like)\s+(?:your\s+)?(?:replies|answers|responses|"
    r"you)\s+to\b|keep\s+(?:your\s+)?(?:replies|answers|responses)\b)", re.I)
_VERB_LEAD = re.compile(r"^(?:please\s+|(?:could|can|would)\s+you\s+|i\s+(?:want|need|'d\s+like|"
                        r"would\s+like)\s+you\s+to\s+|(?:don'?t|do\s+not|never|always|ever|"
                        r"no\s+more)\s+)*", re.I)

_ORG = "(?:our|the\\s+company'?s|the\\s+team'?s|my\\s+(?:company|team)'?s)"
_V = r"(?:[^,;.]|(?<=\d)\.(?=\d))+"  # a value: up to punctuation, "3.12" whole
_ORG_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p.replace("{V}", _V), re.I), name) for p, name in (
        (r"^we(?:'re|\s+are)?\s+(?:\w+\s+)?(?:use|using)\s+(?P<v>[^,;]+?)\s+(?:for|to\s+run|"
         r"to\s+manage)\s+(?P<x>[^,;.]+)", "uses_for"),
        (r"^we\s+(?:\w+\s+)?host\s+(?:everything|it\s+all|all\s+of\s+it|(?:our\s+)?\w+)\s+"
         r"(?:on|in|with)\s+(?P<v>{V})", "hosting"),
        (r"^we\s+(?:\w+\s+)?deploy\s+(?:everything\s+|\w+\s+)?(?:to|on)\s+(?P<v>{V})",
         "deploys_to"),
        (r"^we(?:'re|\s+are)\s+(?:all\s+|fully\s+|still\s+)?on\s+(?P<v>{V})", "runs_on"),
        (r"^we\s+(?:\w+\s+)?use\s+(?P<v>{V})", "uses"),
        (rf"^{_ORG}\s+(?P<x>[\w' -]{{2,40}}?)\s+(?:is|are|runs?|ships?|starts?|happens?|"
         r"takes?\s+place|lives?|goes\s+out)\s+(?P<v>{V})", "our"),
    ))

_PEOPLE = "|".join(w.replace(" ", r"\s+") for w in (*PERSON_ROLE_WORDS, "best friend"))
_CAP = r"(?-i:[A-Z])"
_WHEN_WORD = "(?:" + "|".join(w.capitalize() for w in (*WEEKDAYS, *MONTHS)) + r")\b"
_CAP_WORDS = (rf"{_CAP}[\w'&.-]*(?:\s+(?:(?:de|du|la|le|of|on|upon|am)\s+)?"
              rf"(?!{_WHEN_WORD}){_CAP}[\w'&.-]*)*")
"""A capitalized name of one or more words ("Rio de Janeiro", "Stratford upon Avon"), without
a day or month after it ("Graz on Monday", "Graz last week")."""
_NAMED = re.compile(
    rf"\b(?P<who>my|our)\s+(?P<adj>(?:(?:older|younger|little|big|new|eldest|youngest|oldest|"
    rf"best|old)\s+)?)(?P<role>{_PEOPLE})\s+(?P<name>{_CAP}[\w'-]+(?:\s+{_CAP}[\w'-]+)?)"
    r"(?:,)?(?:\s+(?P<rest>(?:is|was|lives|works|has|'s|just|got|goes|plays|studies|teaches|"
    r"runs|moved|relocated|emigrated|qualified|became|joined|started|trained|retrained|"
    r"finally|recently|now)\b[^.;!?]*))?", re.I)
_NAME_FIRST = re.compile(
    rf"^(?P<name>{_CAP}[\w'-]+),\s+(?P<who>my|our)\s+(?P<adj>)(?P<role>{_PEOPLE})\s*,?\s*"
    r"(?P<rest>(?:is|was|lives|works|has|'s)\b[^.;!?]*)?", re.I)

_THING = re.compile(
    r"^(?:my|our|the)\s+(?P<x>[\w' -]{2,40}?)\s+(?:is|are|'s|listens\s+on|runs\s+on|"
    r"expires(?:\s+on)?|renews(?:\s+on)?|ends(?:\s+on)?|is\s+due(?:\s+on)?|costs?|"
    r"lives\s+at|is\s+at|sits\s+at)\s+(?P<v>.+)", re.I)


def _instruction(body: str, standing: bool = False, said: str = "") -> list[Draft]:
    """A standing instruction to the assistant: an imperative ("never", "always", "stop
    ...ing", "don't", or any after "from now on") whose verb is one of answering or writing
    (`INSTRUCTION_VERBS`) and whose words name what the assistant produces (answers, emojis,
    sources: `names_output`), in it or in its sentence (`said`: "When you write code for me,
    always use type hints"). Encouragement and advice between people ("don't give up", "never
    give up", "always here to help") name none of it."""
    trigger = _INSTRUCTION.match(body)
    if not (trigger or standing) or len(body.split()) < 2 or (
            not trigger and re.match(r"(?:i|my|we|our)\b", body, re.I)):
        return []
    rest = _VERB_LEAD.sub("", body)
    if re.match(r"[a-z]+\s+(?:up|out|away|back|over)\b", rest, re.I):
        return []  # "don't give up", "never back out": advice, whatever else the clause says
    verbs = [w.lower() for w in re.findall(r"[a-z][\w-]*", rest, re.I)[:2]]
    if not any(re.sub(r"(?:ing|s)$", "", v) in INSTRUCTION_VERBS or v in INSTRUCTION_VERBS
               or re.sub(r"ing$", "e", v) in INSTRUCTION_VERBS for v in verbs):
        if not re.match(r"(?:no\s+more|i\s+(?:want|need|'d\s+like|would\s+like)\s+(?:your\s+)?"
                        r"(?:replies|answers|responses))\b", body, re.I):
            return []
    if not (names_output(body) or names_output(said)):
        return []
    text = re.sub(r"^(?:could|can|would)\s+you\s+(?:please\s+)?", "", body, flags=re.I)
    text = text.strip(TRIM)
    return [Draft("preference", "instruction_" + (slug(text) or "general"), text,
                  f"Standing instruction from the user: {text}.", rule="preference.instruction")]


_NOT_ORG_VALUE = re.compile(r"(?:it|that|this|them|our|my|your|their|his|her|a|an|the|some|"
                            r"lots?|same)\b", re.I)
"""What starts a phrase that names no tool or place ("we're on the same page")."""


def _organisation(body: str) -> list[Draft]:
    for pattern, name in _ORG_RULES:
        m = pattern.search(body)
        if not m:
            continue
        value = _value(m["v"])
        if not value or (_NOT_ORG_VALUE.match(value) if name != "our" else not typed_spans(
                value, fragment=True)):  # "we're on a trip", "our kids are our future"
            continue
        thing = m.groupdict().get("x")
        if name == "uses_for" and thing:
            predicate, text = "uses_for_" + slug(thing, 3), f"uses {value} for {_value(thing)}"
        elif name == "our" and thing:
            verb = m.group()[m.end("x"):m.start("v")].strip()
            predicate, text = slug(thing, 4), f"{_value(thing)} {verb} {value}"
        else:
            predicate = name
            text = {"hosting": f"hosts on {value}", "deploys_to": f"deploys to {value}",
                    "runs_on": f"runs on {value}", "uses": f"uses {value}"}[name]
        if not predicate or not re.match(r"^[a-z][a-z0-9_]*$", predicate):
            continue
        return [Draft("fact", predicate, value, f"The user's organisation {text}.",
                      stateful=name != "uses", subject="organisation", scope="tenant",
                      rule=f"fact.organisation_{name}")]
    return []


_ADVERBS = r"(?:(?:just|finally|recently|now|also|has|have|had|officially|since)\s+)*"
_FRAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(_ADVERBS + p, re.I), slot) for p, slot in (
        (r"(?:works?\s+as|working\s+as|qualified\s+as|(?:re)?trained\s+as|became|become|"
         r"got\s+a\s+(?:new\s+)?job\s+as|started\s+(?:work(?:ing)?\s+)?as|"
         r"(?:was\s+|got\s+|been\s+)?promoted\s+to)\s+(?:an?\s+)?"
         r"(?P<v>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?)(?=\s*(?:[,;!?.]|$)|\s+(?:at|for|in|and|"
         r"but|so|since|after|last|this|now|!))", "occupation"),
        (r"(?:(?:lives|living|is\s+living|is\s+based|based|settled)\s+in|(?:moved|relocated|"
         r"emigrated|is\s+moving|moving)\s+(?:back\s+)?to|flew\s+out\s+to|"
         r"got\s+an?\s+(?:new\s+)?(?:job|postdoc|position|post|place|offer|fellowship|"
         r"residency)\s+(?:\w+\s+){0,2}?in)\s+(?P<v>" + _CAP_WORDS + ")", "home_city"),
        (r"(?:(?:works?|working)\s+(?:at|for)|joined|got\s+a\s+(?:new\s+)?job\s+(?:at|with)|"
         r"started\s+(?:a\s+new\s+job\s+)?at|is\s+now\s+at)\s+(?P<v>" + _CAP_WORDS + ")",
         "employer"),
    ))


def person_drafts(name: str, rest: str, content: str, subject: str) -> list[Draft]:
    """The one-current-value facts a clause says of a named person (`_FRAMES`): the job,
    the home city, the employer.

    Example:
        >>> [(d.name, d.value) for d in person_drafts(
        ...     "Ines", "got a postdoc in Montreal and flew out on Sunday", "Ines ...", "Ines")]
        [('home_city', 'Montreal')]
    """
    for pattern, slot in _FRAMES:
        m = pattern.match(rest)
        if m is None:
            continue
        value = _value(m["v"])
        if slot == "occupation":
            value = occupation(value) or ""
        if not value:
            continue
        return [Draft("fact", slot, value, content, stateful=True, subject=subject,
                      rule=f"fact.person_{slot}")]
    return []


_KNOWN_FIRST = re.compile(rf"^(?P<name>{_CAP}[\w'-]+)\s+(?P<rest>[^.;!?]+)")


def people_named(texts: Iterable[str]) -> frozenset[str]:
    """The names earlier statements gave people and pets in their role ("my wife Saoirse").

    Example:
        >>> sorted(people_named(["My wife Saoirse works nights.", "Lena, my sister, is 30."]))
        ['Lena', 'Saoirse']
    """
    found: set[str] = set()
    for text in texts:
        for pattern in (_NAMED, _NAME_FIRST):
            found.update(m["name"] for m in pattern.finditer(text[:4_000]))
    return frozenset(found)


MANY_HELD_ROLES = frozenset({"friend", "colleague", "coworker", "co-worker", "teammate",
                             "cousin"})
"""Roles a person holds toward many at once: "my friend Sam" does not replace another friend
(every other role named so holds one current name: "my manager Tomasz" replaces Priya)."""


def named_people(body: str, known: frozenset[str] = frozenset()) -> list[Draft]:
    """A person or pet named in their role ("my brother Tom", "Lena, my sister"): the name
    as `<role>_name`, and what the clause says of them (a job, a home city, an employer as one
    current value each, see `person_drafts`). A clause opening with a name in `known` (named
    so before) gives what it says of them.

    Example:
        >>> [(d.name, d.value) for d in named_people("My brother Tom is a dentist in Cork")]
        [('brother_name', 'Tom'), ('about_tom', 'is a dentist in Cork')]
        >>> [(d.subject, d.name, d.value) for d in named_people(
        ...     "Saoirse just qualified as a midwife", frozenset({"Saoirse"}))]
        [('Saoirse', 'occupation', 'midwife')]
    """
    m = _NAMED.search(body) or _NAME_FIRST.search(body)
    if not m:
        first = _KNOWN_FIRST.match(body)
        if first is None or first["name"] not in known:
            return []
        rest = first["rest"].strip(TRIM)
        return person_drafts(first["name"], rest, f"{first['name']} {rest}.", first["name"])
    role = " ".join(m["role"].lower().split())
    adj = (m["adj"] or "").strip().lower()
    name = re.sub(r"'s$", "", m["name"])  # "my daughter Sara's birthday": Sara
    whose = "The user's" if m["who"].lower() == "my" else "The user's family's"
    label = f"{adj} {role}".strip()
    out = [Draft("fact", slug(label, 3) + "_name", name, f"{whose} {label} is {name}.",
                 stateful=adj not in ("", "new") or role not in MANY_HELD_ROLES,
                 rule="fact.person_role_name")]
    rest = (m["rest"] or "").strip(TRIM)
    if rest:
        rest = re.sub(r"^'s\b", "is", rest)
        content = f"{name} ({whose[0].lower()}{whose[1:]} {label}) {rest}."
        out.extend(person_drafts(name, rest, content, name)
                   or [Draft("fact", "about_" + slug(name, 2), rest, content, subject=name,
                             rule="fact.person_about")])
    return out


def _identifier(body: str) -> list[Draft]:
    m = _THING.match(body)
    if not m or m["x"].lower() in ("favorite", "favourite"):
        return []
    said = re.split(r"\s[-—–]\s|[,;]\s", m["v"])[0]  # the value, not the clause after it
    values = [s for s in typed_spans(said, fragment=True)
              if s.type in STRONG_TYPES or s.type == "number"]
    if len(values) != 1 or len(said[:values[0].start].split()) > 2:
        return []  # "my favorite is the sundae - after a day of volunteering": no identifier
    thing = " ".join(m["x"].split())
    predicate = slug(thing, 4)
    if not predicate or not re.match(r"^[a-z][a-z0-9_]*$", predicate):
        return []
    said = body.strip(TRIM)
    return [Draft("fact", predicate, values[0].text, f"The user: {said}.", stateful=True,
                  rule="fact.identifier")]


def statement_drafts(body: str, standing: bool = False, said: str = "") -> list[Draft]:
    """Drafts of a clause (its lead-ins stripped; `standing`: it follows "from now on" and
    the like; `said`: its sentence) from the instruction, organisation and identifier rules
    of this module, the first that matches (`named_people` runs before the main rule table,
    these after it).

    Example:
        >>> [(d.name, d.value, d.scope) for d in statement_drafts("we use Jenkins for CI")]
        [('uses_for_ci', 'Jenkins', 'tenant')]
        >>> statement_drafts("never give up"), statement_drafts("make us smile", standing=True)
        ([], [])
        >>> [d.name for d in statement_drafts("never use emojis in your replies")]
        ['instruction_never_use_emojis_in']
    """
    return _instruction(body, standing, said) or _organisation(body) or _identifier(body)
