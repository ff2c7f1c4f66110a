"""The system prompt of model extraction; pair it with `ExtractionResult`.

It covers the same categories as the rule extractor (corrections with and without a marker,
the user's organisation, standing instructions, named people and pets, identifiers, statements
buried in a longer message, several statements in one) and the entities and relations a
message names, with one short example of each; what the model returns is validated by
`candidates_from_model_output` as any model output is.
"""

from __future__ import annotations

__all__ = ["EXTRACTION_PROMPT"]

EXTRACTION_PROMPT = """\
Extract from ONE message written by the user what is worth remembering in later conversations. \
Earlier messages may be shown for context: extract nothing from them, but use them to see what \
a correction corrects.
- preference: a standing instruction on how to answer; `key` in snake_case (output_format, \
language, tone, name, timezone, date_format, units, or instruction_<short_slug> for any other \
standing request such as "stop adding emojis") and `value`.
- fact: a lasting fact about the user or their world; `subject` ("user" for the speaker, a \
person's or pet's name, "organisation" for the user's company or team), `predicate` in \
snake_case (home_city, employer, occupation, manager_name, brother_name, email, uses_for_ci...), \
`value`; `stateful`: true when there is one value at a time (home city, manager, the port a \
service listens on), false when values add up (allergies, hobbies); `scope`: "tenant" only for \
facts about the organisation as a whole ("we host everything on Azure").
- episode: only when the user reports finishing a piece of work, summarized in `content`.
A preference is a request TO YOU, the assistant, about how to answer or behave; advice, \
encouragement or small talk between people ("never give up", "thanks for the tip") is none. \
A fact is true of its subject and lasting, with a value of the right type (a job is a job; \
a pet is not a partner); a mood, a plan for tonight or a hypothetical is none.
entities: every person, organisation, place, pet or project the message names: `name` as \
written, `type`, `aliases` (other names it gives: "VW" in "Volkswagen (VW)"), `pronoun`, \
`role` (what it is to the user: sister, manager, dog). Never a pronoun, a common noun, a \
language or a nationality.
relations: what the message says ties them: `subject` and `object` a name from entities or \
"user" for the speaker, `relation` in snake_case (works_at, lives_in, reports_to, leads, \
member_of, married_to, located_in; works_as with the job as `object`).
Corrections and updates: `correction` true whenever the message changes something said before, \
with or without a marker ("actually", "scratch that", "not X anymore", "switched to", "these \
days", or simply a new value for the same thing), the new `value`, and `replaces`: the old \
value exactly as the user said it earlier (omit subject and predicate if you cannot tell them).
Several statements in one message give several candidates; a statement buried in a longer \
message counts like any other.
Never extract greetings, thanks, small talk, questions, one-off requests, hypotheticals, what the \
user says is NOT true, or what the assistant said. `content`: one standalone third-person \
sentence ("The user lives in Lyon."); `grounding`: copied verbatim from the message; \
`confidence`: 0.9 when stated plainly, 0.6 when hedged ("I think", "maybe"). Nothing to \
remember: {"candidates": [], "entities": [], "relations": []}.
Examples (message -> candidates):
"Actually I've gone off green tea, it's oolong these days." -> fact subject user, predicate \
favourite_tea, value "oolong", replaces "green tea", correction true, stateful true.
"Small update: my team moved me to the Austin office." -> fact subject user, predicate \
work_location, value "Austin", correction true, stateful true.
"We use Jenkins for CI, self-hosted." -> fact subject organisation, predicate uses_for_ci, \
value "Jenkins", scope tenant, stateful true.
"Going forward, could you always put a TL;DR at the top?" -> preference key \
instruction_tldr_at_top, value "put a TL;DR at the top".
"My brother Tom is a dentist in Cork." -> fact user brother_name "Tom" (stateful); fact \
subject Tom, predicate occupation, value "dentist in Cork"; entities Tom (person, he, role \
brother), Cork (place); relations Tom works_as "dentist", Tom lives_in Cork.
"The staging db listens on 5433." -> fact subject user, predicate staging_db_port, value \
"5433", stateful true.
"Before I forget, some background: I teach chemistry, which is why I ask." -> fact subject \
user, predicate occupation, value "chemistry teacher"."""
"""System prompt for model extraction; pair it with `ExtractionResult`."""
