"""The words the rules read, in one place: who someone is to the speaker (family, friends,
work, pets), jobs, what a person has, and what a standing instruction to the assistant
talks about. Word lists as data, with the few lookups the rules and entities share.

A role tells the type of what it names (a dog is a pet, a sister a person), the pronoun that
refers to it (a sister is "she"), and which roles cannot be one person. A job is a job noun
("nurse", "software engineer"), never "kid", "rookie" or "mix of". A standing instruction
names what the assistant produces (answers, emojis, sources, tables).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal, NamedTuple

__all__ = ["Role", "ROLES", "role", "roles_conflict", "DEPARTMENTS", "PERSON_ROLE_WORDS",
           "FAMILY_AND_PET_WORDS", "JOBS", "occupation", "possession", "INSTRUCTION_VERBS",
           "names_output", "NOT_A_VALUE", "LANGUAGES", "Pronoun", "ORG_WORDS", "WORKPLACES",
           "EntityType", "not_a_name", "common_word", "GREETINGS"]

Pronoun = Literal["she", "he", "they", "it"]
EntityType = Literal["person", "organisation", "place", "pet", "project"]
RoleClass = Literal["family", "social", "work", "pet"]


class Role(NamedTuple):
    """A role word made canonical ("mom" -> mother), its class and pronoun."""

    name: str
    kind: RoleClass
    pronoun: Pronoun | None


_ROLE_ROWS = {  # "<canonical>[=<pronoun>]:<word>,<word>..." ("_" joins words of one name)
    "family": "mother=she:mum,mom,mother,mummy,mommy,ma father=he:dad,father,daddy,papa,pa "
              "sister=she:sister,sis brother=he:brother,bro wife=she:wife husband=he:husband "
              "partner:partner,spouse girlfriend=she:girlfriend,gf boyfriend=he:boyfriend,bf "
              "fiance:fiance,fiancé fiancee=she:fiancee,fiancée "
              "son=he:son,stepson,baby_boy,little_boy "
              "daughter=she:daughter,stepdaughter,baby_girl,little_girl "
              "child:child,kid,baby,toddler grandmother=she:grandmother,grandma,granny,nan,nana "
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
    "pet": "dog:dog,puppy,pup cat:cat,kitten,kitty horse:horse,pony rabbit:rabbit,bunny "
           "hamster:hamster guinea_pig:guinea_pig parrot:parrot bird:bird "
           "tortoise:tortoise,turtle fish:fish ferret:ferret snake:snake lizard:lizard pet:pet",
}


def _table() -> dict[str, Role]:
    table: dict[str, Role] = {}
    for kind, spec in _ROLE_ROWS.items():
        for entry in spec.split():
            head, _, words = entry.partition(":")
            name, _, pronoun = head.partition("=")
            for word in words.split(","):
                table[word.replace("_", " ")] = Role(
                    name.replace("_", " "), kind, pronoun or None)  # type: ignore[arg-type]
    return table


ROLES: dict[str, Role] = _table()
"""Role words, lower case, to their canonical role ("puppy" -> dog, "baby girl" -> daughter)."""

PERSON_ROLE_WORDS = tuple(sorted(ROLES, key=len, reverse=True))
"""Every role word, longest first: what may stand before a name ("my brother Tom")."""

FAMILY_AND_PET_WORDS = tuple(w for w in PERSON_ROLE_WORDS if ROLES[w].kind in ("family", "pet"))
"""The role words of family and pets ("we have a baby girl named Lily")."""

DEPARTMENTS = frozenset(
    "accounting accounts finance legal marketing sales hr it engineering design support ops "
    "operations product procurement payroll compliance security research data platform infra "
    "infrastructure devops recruiting admin facilities qa billing growth partnerships "
    "customer-success analytics".split())
"""Departments that tell colleagues apart ("Sarah from accounting")."""


ORG_WORDS = frozenset(
    "labs lab bank university college school hospital clinic group foundation institute "
    "partners technologies technology systems software solutions airlines airways motors "
    "ventures capital consulting studios studio agency council ministry department "
    "association society club team squad committee office media health insurance "
    "pharmaceuticals pharma games network networks holdings industries enterprises "
    "logistics analytics robotics dynamics electric energy".split())
"""Last words of an organisation's name ("Brightwave Labs", "Acme Consulting")."""

WORKPLACES = ORG_WORDS | frozenset(
    "company firm startup restaurant cafe shop store bakery factory library museum hotel "
    "supermarket warehouse nonprofit charity newspaper magazine church farm gym salon bar "
    "hospital dealer dealership pharmacy garage gallery theater theatre zoo".split())
"""What one works at when it is no name ("I work at a bank", "at the local library")."""


def role(word: str) -> Role | None:
    """The canonical role of a role word, or None.

    Example:
        >>> role("Mom")
        Role(name='mother', kind='family', pronoun='she')
        >>> role("pup").name, role("table") is None
        ('dog', True)
    """
    return ROLES.get(word.lower())


_COMPATIBLE = frozenset(frozenset(p.split("+")) for p in (
    "partner+wife partner+husband partner+girlfriend partner+boyfriend twin+sister "
    "twin+brother child+son child+daughter fiance+fiancee partner+fiance partner+fiancee"
).split())


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
        return frozenset({a.name, b.name}) not in _COMPATIBLE
    return False


# ------------------------------------------------------------------------------------- jobs

JOBS = frozenset("""
accountant actor actress administrator agent analyst announcer architect artist assistant
athlete attorney auditor author baker banker barber barista bartender beautician biologist
blogger bookkeeper broker builder butcher buyer captain carpenter cashier caterer ceo cfo
chef chemist cleaner clerk coach comedian consultant contractor cook cop counselor counsellor
courier cto curator custodian dancer dentist designer detective developer dietitian diplomat
director doctor driver economist editor electrician engineer entrepreneur farmer firefighter
fisherman florist freelancer gardener geologist guard guide hairdresser historian homemaker
housekeeper illustrator instructor intern interpreter investor janitor journalist judge
labourer laborer landscaper lawyer lecturer librarian lifeguard machinist manager marketer
mechanic medic midwife miner model monk musician nanny novelist nurse nutritionist officer
olympian optician painter paralegal paramedic pastor pharmacist photographer physician
physicist physio physiotherapist pilot plumber poet policeman policewoman politician postman
practitioner priest principal producer professor programmer psychiatrist psychologist
publicist rabbi ranger realtor receptionist recruiter reporter researcher sailor salesman
saleswoman salesperson scientist screenwriter secretary senator shopper singer soldier
solicitor songwriter statistician student supervisor surgeon surveyor tailor teacher
technician therapist trainer translator tutor veterinarian vet waiter waitress welder worker
wrestler writer lead streamer youtuber influencer activist
violinist pianist guitarist cellist bassist drummer vocalist saxophonist harpist flautist
organist percussionist trumpeter conductor composer columnist cartoonist archivist botanist
linguist hygienist orthodontist podiatrist chiropractor stylist typist specialist optometrist
""".split())
"""Job nouns: what "I'm a ..." or "works as ..." must end in to be an occupation."""
_JOB_SHAPE = re.compile(r"\w(?:ologist|ographer|ician|iatrist|smith|wright)$", re.I)
"""Endings only jobs have ("radiographer", "cardiologist", "technician", "locksmith")."""
_JOB_PHRASES = ("stay-at-home mom", "stay-at-home dad", "stay-at-home parent",
                "stay at home mom", "stay at home dad", "stay at home parent", "stunt double")
_NOT_JOB_MODIFIERS = frozenset("""
much better best good great bad terrible huge big little total real true avid keen amateur
aspiring wannabe former ex retired future hobby hobbyist decent excellent amazing awesome
proud lucky happy busy tired first-time bit lot kind sort type fan weekend wonderful expert
""".split())
_PHRASE_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_PHRASE_END = frozenset("at for in with and but or who which that since because so from by "
                        "on of to during while when".split())


def _noun_phrase(text: str) -> list[str]:
    """The first words of a text, up to four, until punctuation or a preposition."""
    words: list[str] = []
    at = 0
    for m in _PHRASE_WORD.finditer(text):
        if text[at:m.start()].strip() or m.group().lower() in _PHRASE_END:
            break
        words.append(m.group())
        at = m.end()
        if len(words) == 4:
            break
    return words


def occupation(phrase: str) -> str | None:
    """The job a phrase after "I'm a" or "works as" names: up to four words ending in a job
    noun, without what follows ("a waitress during the day" -> "waitress"); None when it is
    no job ("kid", "mix of", "much better cook", "big fan").

    Example:
        >>> [occupation(p) for p in ("a software engineer at Google", "nurse", "kid",
        ...                          "much better cook", "mix of excited and scared")]
        ['software engineer', 'nurse', None, None, None]
        >>> occupation("stay at home dad.")
        'stay at home dad'
    """
    text = re.sub(r"^(?:an?|the)\s+", "", phrase.strip(), flags=re.I)
    for job in _JOB_PHRASES:
        if re.match(rf"{job}\b", text, re.I):
            return text[:len(job)]
    words = _noun_phrase(text)
    heads = [i for i, w in enumerate(words) if w.lower() in JOBS or _JOB_SHAPE.search(w)]
    if not heads or any(w.lower() in _NOT_JOB_MODIFIERS for w in words[:heads[-1]]):
        return None
    return " ".join(words[:heads[-1] + 1])


# ------------------------------------------------------------------------------- possessions

_KIN = frozenset("""
child children kid kids son sons daughter daughters brother brothers sister sisters sibling
siblings twin twins grandchild grandchildren grandkid grandkids stepson stepdaughter baby
babies nephew nephews niece nieces cousin cousins
""".split())
_PETS = frozenset("""
dog dogs puppy puppies pup pups cat cats kitten kittens kitty kitties horse horses pony
ponies rabbit rabbits bunny bunnies hamster hamsters parrot parrots bird birds fish turtle
turtles tortoise tortoises ferret ferrets snake snakes lizard lizards pet pets goldfish chicken
chickens goat goats cow cows sheep pig pigs duck ducks retriever retrievers shepherd shepherds
poodle poodles terrier terriers labrador labradors lab labs beagle beagles bulldog bulldogs
spaniel spaniels husky huskies chihuahua chihuahuas dachshund dachshunds collie collies pug pugs
corgi corgis schnauzer schnauzers arabian arabians mare mares
""".split())
_HELD = frozenset("business company shop store restaurant bakery farm cafe startup".split())
_COUNT = re.compile(r"(?:an?|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+", re.I)


def possession(phrase: str) -> str | None:
    """What a phrase after "I have" names when it is family, pets or a business of one's
    own, cut after its noun ("two dogs who live with me" -> "two dogs"); None for anything
    else ("a funny story", "a question").

    Example:
        >>> [possession(p) for p in ("two dogs who live with me", "a funny story",
        ...                          "a golden retriever, a beagle, and a poodle")]
        ['two dogs', None, 'a golden retriever, a beagle and a poodle']
        >>> possession("a German Shepherd named Barnaby")
        'a German Shepherd named Barnaby'
    """
    kept: list[str] = []
    for item in re.split(r"\s*,\s*(?:and\s+)?|\s+and\s+", phrase.strip()):
        count = _COUNT.match(item)
        words = _noun_phrase(item[count.end():]) if count else []
        heads = [i for i, w in enumerate(words) if w.lower() in _KIN | _PETS | _HELD]
        if not heads or any(w.lower() in _NOT_JOB_MODIFIERS for w in words[:heads[-1]]):
            break
        said = f"{count.group() if count else ''}{' '.join(words[:heads[-1] + 1])}"
        named = re.match(r"\s+(?:named|called)\s+(?-i:[A-Z])[\w'-]+",
                         item[count.end() if count else 0:][len(" ".join(words[:heads[-1] + 1])):])
        kept.append(said + (named.group() if named else ""))
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else f"{', '.join(kept[:-1])} and {kept[-1]}"


# ------------------------------------------------------------------- standing instructions

INSTRUCTION_VERBS = frozenset("""
answer reply respond write format cite quote summarize summarise explain translate use add
include put show list give tell call address refer keep make stop avoid skip drop mention
start begin end finish sign open ask check double-check spell round convert number bold link
label greet apologize apologise swear curse sugarcoat repeat recap state flag warn suggest
recommend default assume capitalize abbreviate bother send draft lead leave number
""".split())
"""Verbs of an imperative about how the assistant answers ("cite", "stop adding")."""

_OUTPUT = re.compile(r"\b(?:" + "|".join(sorted("""
answers? repl(?:y|ies) responses? messages? emails? emojis? emoticons? sources? citations?
references? links? urls? footnotes? code comments? snippets? examples? summar(?:y|ies)
tl;?dr bullets? bullet\\s+points? \\d+-?hour\\s+clock headers? headings? titles? tables?
markdown lists? jargon acronyms? disclaimers? caveats? greetings? sign-?offs? signatures?
apolog(?:y|ies) exclamation\\s+marks? the\\s+word \\d+\\s+words sentences? paragraphs?
formatting units? dates? time\\s*zones? metric imperial spelling preambles? intros?
introductions? conclusions? recaps? explanations? reasoning calculations? the\\s+math
drafts? output filler fluff pleasantries small\\s+talk follow-?up\\s+questions? haikus?
""".split(), key=len, reverse=True)) + r")\b", re.I)


def names_output(text: str) -> bool:
    """Whether a text names something the assistant produces: its answers, their format,
    sources, emojis, examples. What tells a standing instruction from advice between people
    ("never use emojis in replies" / "never give up").

    Example:
        >>> names_output("Stop adding emojis to your replies"), names_output("Don't give up")
        (True, False)
    """
    return _OUTPUT.search(text) is not None


# -------------------------------------------------------------------------------- not names

_BREEDS = frozenset("""
retriever shepherd poodle terrier labrador beagle bulldog spaniel husky chihuahua dachshund
collie pug corgi schnauzer doodle labradoodle greyhound rottweiler dalmatian boxer
""".split())
_NOT_NAMES = frozenset("""
ceo cto cfo coo cmo vp svp evp hr it pm qa ui ux pr eta asap fyi ai ml api sdk ok tv usa eu
uk us mvp okr okrs kpi kpis roi faq pdf csv json sql aws gcp ide os ios q1 q2 q3 q4 h1 h2
btw imo tbh lol omg am pm tue tues wed thur thurs fri rpg rpgs diy diys dm dms r&r lgbt
lgbtq lgbtq+ nba nfl mma gpa ged sat sats dj mc vr
super yum yay wow woohoo whoa bummer congrats congratulations ha haha hah yo anytime yep
""".split())
_ZONE_WORDS = frozenset("central eastern western pacific mountain atlantic".split())
GREETINGS = ("thank you", "congratulations", "go", "yo", "hey", "hi", "hiya", "hello",
             "anytime", "thanks", "congrats", "wow", "bye", "cheers")
"""Words said to someone before their name ("Hey Mel!", "Go Jon!", "Thanks, Gina."): they
open no name ("Go Jon" is Jon) and the name after them is the one spoken to."""


def not_a_name(key: str) -> bool:
    """Whether a capitalised phrase (lower case, as `name_key` gives it) is no one's name: a
    language or people ("Spanish", "Indian food"), a faith, a breed ("Golden Retriever"), a
    time zone ("Central Time"), an abbreviation or exclamation that takes capitals ("RPG",
    "Yum"), a number.

    Example:
        >>> [not_a_name(k) for k in ("spanish", "spanish-speaking", "golden retriever",
        ...                          "central time", "rpgs", "100", "lena", "american airlines")]
        [True, True, True, True, True, True, False, False]
    """
    words = key.replace("-", " ").split()
    if not words or key in _NOT_NAMES or key.replace(",", "").isdigit():
        return True
    if " " not in key and (words[0] in PEOPLES or words[0] in LANGUAGES):
        return True  # "Spanish", "Spanish-speaking"; not "American Airlines"
    return len(words) <= 2 and (words[-1].removesuffix("s") in _BREEDS or (
        words[-1] == "time" and words[0] in _ZONE_WORDS))


@lru_cache(maxsize=1)
def _common_words() -> frozenset[str]:
    """Webster's word list (public domain, from the `english-words` package): its lower-case
    words that are not also listed capitalised ("pottery", not "tom": "Tom" is a name)."""
    from english_words import get_english_words_set

    words = get_english_words_set(["web2"])
    return frozenset(w for w in words if w.islower() and w.capitalize() not in words)


def common_word(word: str) -> bool:
    """Whether a word is an ordinary English word and not also a name: what a capital that
    only opens a sentence most likely is ("Pottery is my life", "Setbacks happen"), where
    "Sarah is", "Maria was" name someone. Plurals and "-ed" forms count as their word.

    Example:
        >>> [common_word(w) for w in ("Pottery", "Setbacks", "Dairy-free", "Sarah", "Tom")]
        [True, True, True, False, False]
    """
    common = _common_words()
    return all(w in common or any(
        w.endswith(end) and w[:-len(end)] + add in common
        for end, add in (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("d", "")))
        for w in word.lower().split("-"))


# ----------------------------------------------------------------------------------- values

NOT_A_VALUE = frozenset("""
been being so too very really always never still just like all pretty such kind sort going
getting paying coming comin' its those that what how why where when who which not no ok okay
fine great good nice awesome amazing cool fun cute lovely beautiful wonderful perfect
fantastic incredible important key special tough hard easy rough crazy wild busy tired happy
sad excited nervous scared proud grateful thankful better worse best worst here there back
everything nothing something anything super totally definitely honestly literally kinda
sorta gonna same different
""".split())
"""First words of a phrase that make it a state or an opinion, not a value ("my fam's been
awesome", "my son's ok", "my kids are so excited"): what "my X is Y" does not write; "my",
"our", "your", "their", "his", "her" too, unless a name follows ("my Rolex Submariner", not
"my best friend")."""

LANGUAGES = frozenset("english french german spanish italian portuguese dutch swedish norwegian "
                      "danish finnish polish czech russian ukrainian greek turkish arabic hebrew "
                      "hindi chinese mandarin japanese korean vietnamese thai indonesian".split())
"""Languages an answer is written in, or a person speaks."""


# -------------------------------------------- origins, beliefs and the calendar (appended)

__all__ += ["NATIONALITIES", "BELIEFS", "PEOPLES", "WEEKDAYS", "MONTHS"]

NATIONALITIES = frozenset("""
american british english french german spanish italian portuguese brazilian mexican canadian
chinese japanese korean indian irish scottish welsh dutch swedish norwegian danish finnish
polish russian ukrainian greek turkish australian african european asian latino latina
hispanic nigerian kenyan ghanaian ethiopian egyptian moroccan colombian peruvian argentinian
argentine chilean venezuelan cuban filipino indonesian malaysian vietnamese thai pakistani
bangladeshi iranian iraqi syrian lebanese israeli palestinian saudi romanian hungarian
bulgarian serbian croatian czech slovak austrian swiss belgian icelandic estonian latvian
lithuanian
""".split())
"""Where someone is from, as an adjective ("I'm Nigerian"): capitalized, and no name."""

BELIEFS = frozenset("jewish muslim christian catholic protestant hindu buddhist sikh atheist "
                    "agnostic mormon".split())
"""Faiths and beliefs one says one is ("I'm Catholic"): capitalized, and no name."""

PEOPLES = NATIONALITIES | BELIEFS | frozenset(
    "caribbean scandinavian nordic arab persian midwestern southern northern judaism islam "
    "christianity catholicism hinduism buddhism sikhism olympic".split())
"""A people, a region's or a faith's word ("Irish music", "practise Buddhism"): capitalised,
and never the name of someone or something."""

WEEKDAYS = tuple("monday tuesday wednesday thursday friday saturday sunday".split())
"""The days of the week, in order."""

MONTHS = tuple("january february march april may june july august september october november "
               "december".split())
"""The months, in order."""
