"""Relations as facts: what a turn says of how people, teams and organisations stand to each
other ("I report to Priya", "Sarah leads the platform team", "Ana founded Brightwave") and
the other names it gives them ("Volkswagen (VW)", "Elizabeth goes by Liz"), proposed as fact
candidates the promotion gate writes like any other.

A relation is a fact whose subject is the entity ("user" for the speaker), whose predicate is
the relation and whose value is the other end. Relations that hold one value at a time
(`STATEFUL`: reports to, lives in, works at...) supersede the earlier value like every
one-value fact. What the rule extractor already writes (a person's home, employer and job,
the names of the user's family) is not proposed twice; a role it does not name ("Lena's
husband Tom", "Sam is my brother") is proposed as its holder's `<role>_name`. Pure
functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langgraph_typed_memory.entities.mentions import Mention, find_mentions
from langgraph_typed_memory.entities.relations import (
    STATEFUL,
    Relation,
    find_aliases,
    find_relations,
)
from langgraph_typed_memory.extraction.candidates import (
    EXPLICIT_CONFIDENCE,
    HEDGED_CONFIDENCE,
    Candidate,
    checked,
)
from langgraph_typed_memory.extraction.statements import MANY_HELD_ROLES
from langgraph_typed_memory.extraction.text import (
    HYPOTHETICAL,
    is_question,
    quoted,
    sentences,
)

__all__ = ["relation_facts", "SAME_AS_RULES"]

SAME_AS_RULES = {"lives_in": "home_city", "works_at": "employer", "works_as": "occupation",
                 "reports_to": "manager"}
"""Relations the rule extractor writes under its own predicate: proposed under that one, so
the two agree on one key, and not at all when the rules already did."""
_PHRASES = {
    "leads": "leads", "reports_to": "reports to", "married_to": "is married to",
    "founded": "founded", "member_of": "is in", "located_in": "is in", "works_in": "works in",
    "lives_in": "lives in", "works_at": "works at", "works_as": "works as",
}
_HEDGE = ("i think", "maybe", "probably", "might", "not sure", "i guess")
_PRONOUNS = frozenset("him her them it he she they".split())
_UNRESOLVED_OWNERS = _PRONOUNS | frozenset("his her their its".split())
"""Owners a role names by a pronoun ("his sister"), which the rules cannot resolve here."""
_NAMED_FRAMES = frozenset({"leads", "reports_to", "founded", "married_to", "works_at"})
"""Relations only a person holds: their subject is one even where no other word says so
("Ana founded Brightwave"); the others need a subject the turn shows is a person ("Barcelona
is a must-visit city" is no job of Barcelona's)."""


def _of_a_person(relation: Relation, mentions: Sequence[Mention]) -> bool:
    """Whether a relation's subject is the speaker or a person the turn names (not a pronoun
    left unresolved, a pet, a place or a word that only starts a sentence)."""
    if relation.subject == "user":
        return True
    said = next((m for m in mentions if m.start == relation.subject_at), None)
    if said is None or said.is_pronoun:
        return False
    pets = {m.text for m in mentions if m.type == "pet"}
    if relation.subject in pets:  # "my dog Toby": Toby is nobody's girlfriend
        return False
    return said.type == "person" or (said.type is None and relation.relation in _NAMED_FRAMES)


def _role_fact(relation: Relation, speaker: str, sentence: str,
               already: Sequence[Candidate], confidence: float) -> list[Candidate]:
    """A role as a fact of its owner ("Lena's husband Tom": Lena's `husband_name` is Tom;
    "Sam is my brother": the user's `brother_name`), unless the rules named that person
    already ("my sister Lena": `sister_name`) or the owner is a pronoun the rules cannot
    resolve here. One name at a time, as the rules hold a role (`MANY_HELD_ROLES` aside): a
    later "Tom's manager Ana" replaces Priya."""
    owner, name = relation.object, relation.subject
    if re.search(rf"\b{re.escape(name)}\s+(?:is|'s)\s+(?:\w+\s+)?my\s+best\s+friend", sentence):
        return []  # "Barnaby is my best friend": praise, of a dog as often as of a person
    if owner.lower() in _UNRESOLVED_OWNERS or any(
            c.kind == "fact" and str(c.value).lower() == name.lower() for c in already):
        return []
    role = relation.relation.removesuffix("_of").replace("_", " ")
    subject = speaker if owner == "user" else owner
    whose = "The user's" if owner == "user" and speaker == "user" else f"{subject}'s"
    return checked(kind="fact", subject=subject,
                   predicate=relation.relation.removesuffix("_of") + "_name", value=name,
                   content=f"{whose} {role} is {name}.", grounding=sentence,
                   confidence=confidence, stateful=role not in MANY_HELD_ROLES,
                   rule="relation.role_name")


def _content(relation: Relation, speaker: str, sentence: str) -> str:
    """The relation as a sentence of its own ("Sarah leads the platform team.")."""
    subject = "The user" if relation.subject == "user" and speaker == "user" else (
        speaker if relation.subject == "user" else relation.subject)
    phrase = _PHRASES.get(relation.relation, relation.relation.replace("_", " "))
    if relation.relation == "works_as":  # "Tom works as a chef."
        article = "an" if relation.object[:1] in "aeiou" else "a"
        return f"{subject} {phrase} {article} {relation.object}."
    whole = re.search(rf"\b{re.escape(relation.object)}\s+(?:team|department|group|squad)\b",
                      sentence, re.I)  # "on the data team": the team, not "the data"
    other = whole.group() if whole else relation.object
    said = re.search(rf"\b(?:the|our|my)\s+{re.escape(other)}\b", sentence, re.I)
    if said and said.group().lower().startswith("the") or whole:
        other = f"the {other}"
    return f"{subject} {phrase} {other}."


def relation_facts(text: str, *, speaker: str = "user",
                   already: Sequence[Candidate] = ()) -> list[Candidate]:
    """Fact candidates for the relations `text` states that `already` (the rule extractor's
    candidates for the same text) does not hold. Role relations to the speaker ("my sister
    Lena") are the rules' (`sister_name`), and so are a person's home, employer and job.

    Example:
        >>> [(c.subject, c.predicate, c.value, c.stateful) for c in relation_facts(
        ...     "I report to Priya. Sarah leads the platform team.")]
        [('user', 'manager', 'Priya', True), ('Sarah', 'leads', 'platform team', False)]
        >>> [(c.subject, c.predicate, c.value, c.content) for c in relation_facts(
        ...     "I work at Volkswagen (VW).", already=[])][-1]
        ('Volkswagen', 'also_called', 'VW', 'Volkswagen is also called VW.')
        >>> from langgraph_typed_memory.extraction import extract_rules
        >>> text = "My sister Lena lives in Vienna."  # the rules' sister_name and home_city
        >>> relation_facts(text, already=extract_rules(text))
        []
        >>> [c.content for c in relation_facts("Lena's husband Tom is a chef.")]
        ["Lena's husband is Tom.", 'Tom works as a chef.']
    """
    held = {((c.subject or "").lower(), c.predicate) for c in already if c.kind == "fact"}
    named: set[tuple[str, str]] = set()
    out: list[Candidate] = []
    for sentence in (s for s in sentences(text) if len(s) <= 1_000):
        if is_question(sentence) or HYPOTHETICAL.match(sentence) or quoted(
                text, text.find(sentence) + len(sentence) - len(sentence.lstrip(" '\"\u201c"))):
            continue  # "if I moved to Canada...?", text pasted to proofread: not so
        hedged = any(h in sentence.lower() for h in _HEDGE)
        confidence = HEDGED_CONFIDENCE if hedged else EXPLICIT_CONFIDENCE
        mentions = find_mentions(sentence)
        for relation in find_relations(sentence, mentions):
            if not _of_a_person(relation, mentions) and relation.relation != "located_in":
                continue
            if relation.relation.endswith("_of") and relation.relation != "member_of":
                for role in _role_fact(relation, speaker, sentence, already, confidence):
                    if ((role.subject or "").lower(), role.predicate) not in held:
                        held.add(((role.subject or "").lower(), role.predicate))
                        out.append(role)
                continue
            predicate = SAME_AS_RULES.get(relation.relation, relation.relation)
            subject = speaker if relation.subject == "user" else relation.subject
            if (subject.lower(), predicate) in held:
                continue
            held.add((subject.lower(), predicate))
            out += checked(kind="fact", subject=subject, predicate=predicate,
                           value=relation.object, content=_content(relation, speaker, sentence),
                           grounding=sentence, confidence=confidence,
                           stateful=relation.relation in STATEFUL,
                           rule=f"relation.{relation.relation}")
        for alias in find_aliases(sentence):  # "Volkswagen (VW)": a question about VW finds it
            if alias.name.lower() in _PRONOUNS or (alias.name.lower(), alias.alias) in named:
                continue  # "we call him Bob": who "him" is, the entity rules may tell later
            named.add((alias.name.lower(), alias.alias))
            out += checked(kind="fact", subject=alias.name, predicate="also_called",
                           value=alias.alias, grounding=sentence, confidence=confidence,
                           content=f"{alias.name} is also called {alias.alias}.",
                           stateful=False, rule="relation.also_called")
    return out
