"""Entities: the people, organisations, places, pets and projects a conversation names.

Pure functions, no database: `find_mentions` finds the names and pronouns of a turn,
`find_aliases` the second names it states ("VW, short for Volkswagen"), `find_relations` the
(subject, relation, object) triples ("Sarah leads the platform team"); `resolve_mention`
decides which known entity a name is (exact, alias, trigram similarity as pg_trgm computes
it, variant, spelling, an optional model, else a new entity with a stable id) and
`resolve_pronoun` which one a pronoun means; `read_turn` does all of it for one turn against
what the scope and thread know. `records` keeps entities as memory (the entity records a turn
writes, the ids its records carry: `read_entities`); `graph` reads them at question time
(the entities a question names, one hop through relations, the fusion: `focus`,
`fuse_about`).
"""

from langgraph_typed_memory.entities.graph import EntityFocus, focus, fuse_about
from langgraph_typed_memory.entities.mentions import EntityType, Mention, find_mentions, name_key
from langgraph_typed_memory.entities.pronouns import resolve_pronoun
from langgraph_typed_memory.entities.records import EntityRead, read_entities
from langgraph_typed_memory.entities.relations import (
    STATEFUL,
    Alias,
    Relation,
    find_aliases,
    find_relations,
)
from langgraph_typed_memory.entities.resolve import (
    Entity,
    ModelFallback,
    Resolution,
    Stage,
    compatible,
    entity_id,
    resolve_mention,
)
from langgraph_typed_memory.entities.similarity import (
    TRIGRAM_THRESHOLD,
    similarity,
    spelling_distance,
    trigrams,
)
from langgraph_typed_memory.entities.turns import (
    KnownEntities,
    LinkedRelation,
    TurnEntities,
    named_subjects,
    read_turn,
)

__all__ = [
    "Alias", "Entity", "EntityFocus", "EntityRead", "EntityType", "KnownEntities",
    "LinkedRelation", "Mention", "ModelFallback", "Relation", "Resolution", "STATEFUL", "Stage",
    "TRIGRAM_THRESHOLD", "TurnEntities", "compatible", "entity_id", "find_aliases",
    "find_mentions", "find_relations", "focus", "fuse_about", "name_key", "named_subjects",
    "read_entities", "read_turn", "resolve_mention", "resolve_pronoun", "similarity",
    "spelling_distance", "trigrams",
]
