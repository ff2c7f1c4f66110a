"""Words that say who someone is to the speaker: family, friends, work, pets.

A role tells the type of what it names (a dog is a pet, a sister a person), often the pronoun
that refers to it (a sister is "she"), and which roles cannot be one person: the speaker's
sister is not their brother, nor the colleague from accounting.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["Role", "ROLES", "role", "roles_conflict", "DEPARTMENTS"]

Pronoun = Literal["she", "he", "they", "it"]
RoleClass = Literal["family", "social", "work", "pet"]


class Role(NamedTuple):
    """A role word made canonical ("mom" -> mother), its class and pronoun."""

    name: str
    kind: RoleClass
    pronoun: Pronoun | None


def _table() -> dict[str, Role]:
    table: dict[str, Role] = {}
    rows = {
        "family": "mother=she:mum,mom,mother,mummy,mommy,ma father=he:dad,father,daddy,papa,pa "
                  "sister=she:sister,sis brother=he:brother,bro wife=she:wife husband=he:husband "
                  "partner:partner,spouse girlfriend=she:girlfriend,gf boyfriend=he:boyfriend,bf "
                  "fiance:fiance,fiancé fiancee=she:fiancee,fiancée son=he:son,stepson "
                  "daughter=she:daughter,stepdaughter child:child,kid,baby,toddler "
                  "grandmother=she:grandmother,grandma,granny,nan,nana "
                  "grandfather=he:grandfather,grandpa,grandad,granddad "
                  "aunt=she:aunt,auntie uncle=he:uncle cousin:cousin niece=she:niece "
                  "nephew=he:nephew twin:twin mother-in-law=she:mother-in-law "
                  "father-in-law=he:father-in-law sister-in-law=she:sister-in-law "
                  "brother-in-law=he:brother-in-law stepmother=she:stepmother,stepmom,stepmum "
                  "stepfather=he:stepfather,stepdad",
        "social": "friend:friend,bestie,buddy,pal neighbour:neighbour,neighbor "
                  "roommate:roommate,flatmate,housemate landlord:landlord landlady=she:landlady "
                  "doctor:doctor,gp dentist:dentist therapist:therapist physio:physio "
                  "coach:coach trainer:trainer teacher:teacher tutor:tutor lawyer:lawyer "
                  "accountant:accountant vet:vet ex:ex",
        "work": "manager:manager,boss,supervisor,lead mentor:mentor colleague:colleague,coworker,"
                "co-worker,teammate report:report,intern cofounder:cofounder,co-founder "
                "client:client,customer ceo:ceo cto:cto cfo:cfo recruiter:recruiter "
                "assistant:assistant",
        "pet": "dog:dog,puppy,pup cat:cat,kitten horse:horse,pony rabbit:rabbit,bunny "
               "hamster:hamster parrot:parrot bird:bird tortoise:tortoise,turtle "
               "fish:fish ferret:ferret snake:snake lizard:lizard pet:pet",
    }
    for kind, spec in rows.items():
        for entry in spec.split():
            head, _, words = entry.partition(":")
            name, _, pronoun = head.partition("=")
            for word in words.split(","):
                table[word] = Role(name, kind, (pronoun or None))  # type: ignore[arg-type]
    return table


ROLES: dict[str, Role] = _table()
"""Role words, lower case, to their canonical role."""

DEPARTMENTS = frozenset(
    "accounting accounts finance legal marketing sales hr it engineering design support ops "
    "operations product procurement payroll compliance security research data platform infra "
    "infrastructure devops recruiting admin facilities qa billing growth partnerships "
    "customer-success analytics".split())
"""Departments that tell colleagues apart ("Sarah from accounting")."""


def role(word: str) -> Role | None:
    """The canonical role of a role word, or None.

    Example:
        >>> role("Mom")
        Role(name='mother', kind='family', pronoun='she')
        >>> role("table") is None
        True
    """
    return ROLES.get(word.lower())


def roles_conflict(a: Role, b: Role) -> bool:
    """Whether one person cannot hold both roles toward the speaker: two different family
    roles, family and anything else, or a pet and a person.

    Example:
        >>> roles_conflict(ROLES["sister"], ROLES["colleague"])
        True
        >>> roles_conflict(ROLES["friend"], ROLES["colleague"])
        False
    """
    if a.name == b.name:
        return False
    if "pet" in (a.kind, b.kind):
        return a.kind != b.kind or a.name != "pet" and b.name != "pet"
    if a.kind == "family" or b.kind == "family":
        compatible = {frozenset({"partner", "wife"}), frozenset({"partner", "husband"}),
                      frozenset({"partner", "girlfriend"}), frozenset({"partner", "boyfriend"}),
                      frozenset({"twin", "sister"}), frozenset({"twin", "brother"}),
                      frozenset({"child", "son"}), frozenset({"child", "daughter"}),
                      frozenset({"fiance", "fiancee"}), frozenset({"partner", "fiance"}),
                      frozenset({"partner", "fiancee"})}
        return frozenset({a.name, b.name}) not in compatible
    return False
