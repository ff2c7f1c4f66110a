"""The extract node: pre-filter, then a model's structured output or the rule extractor."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.store.base import BaseStore

from langgraph_typed_memory.entities import KnownEntities, named_subjects
from langgraph_typed_memory.entities.directories import DIRECTORIES, DirectoryRead
from langgraph_typed_memory.entities.facts import relation_facts
from langgraph_typed_memory.entities.records import (
    read_entities,
    scope_key,
    stamp,
    with_recent,
)
from langgraph_typed_memory.entities.turns import Told, told
from langgraph_typed_memory.errors import ConfigurationError, StoreUnusable
from langgraph_typed_memory.extraction import (
    EXTRACTION_PROMPT,
    Candidate,
    ExtractionResult,
    candidates_from_model_output,
    extract_rules,
    prefilter,
)
from langgraph_typed_memory.gate import own_scope
from langgraph_typed_memory.namespaces import scope_from_config
from langgraph_typed_memory.nodes._common import (
    OnModelError,
    check_on_model_error,
    last_human,
    model_configured,
    model_for,
    resolve_store,
    trace_of,
)
from langgraph_typed_memory.nodes.running import Call, Plan, arun, run
from langgraph_typed_memory.turns import message_text

__all__ = ["create_extract_node", "Extraction", "EXTRACTION_MODES"]

Extraction = Literal["auto", "model", "rules"]
"""Who reads a kept turn: the chat model when one is configured, else the rules ("auto");
the model ("model"); the rules ("rules")."""
EXTRACTION_MODES: tuple[Extraction, ...] = ("auto", "model", "rules")

logger = logging.getLogger(__name__)

RECENT_WINDOW_S = 300.0


@dataclass(slots=True)
class _Kept:
    """A turn the pre-filter kept: what extraction reads."""

    text: str
    speaker: str
    earlier: list[str]
    """The speaker's earlier statements, newest first: the thread's previous messages, then
    what memory returned for this turn (what a correction corrects)."""
    thread: list[str]
    """The thread's previous messages of the speaker, newest first (who "she" is)."""
    extraction: dict[str, Any]
    """The trace's `extraction` entry, filled as extraction goes."""
    combined: bool = False
    """A combined respond call already proposed the turn's candidates."""
    told: Told | None = None
    """What the model said the turn names (its entities and relations), read instead of the
    rules when the model extracted the turn."""

    def request(self) -> list[Any]:
        """The model's input: the extraction prompt, earlier messages as context, the turn."""
        earlier = "".join(f"- {t}\n" for t in reversed(self.earlier[:3]))
        head = (f"Earlier messages of the user (context only, extract nothing from them):\n"
                f"{earlier}\nMessage" if earlier else "Message")
        who = "" if self.speaker == "user" else f" from {self.speaker} (the subject for 'I')"
        return [SystemMessage(EXTRACTION_PROMPT), HumanMessage(f"{head}{who}:\n{self.text}")]


def create_extract_node(
    model: BaseChatModel | str | None = None,
    /,
    *,
    extraction: Extraction = "auto",
    messages_key: str = "messages",
    clock: Callable[[], float] = time.time,
    store: BaseStore | None = None,
    entities: bool = True,
    on_model_error: OnModelError = "degrade",
) -> RunnableLambda:
    """Build the extract node.

    The newest user message first meets the pre-filter (role, word count, chit-chat,
    questions, near-duplicates of the last minute): most turns stop there. A kept turn is read
    by one structured-output call of the chat model (`ExtractionResult`: facts, preferences,
    corrections, the people, places and organisations it names and their relations) when
    `extraction` is "model", or "auto" (the default) and a model is configured (the argument,
    `configurable["memory_model"]` or `TYPED_MEMORY_MODEL`); else by the offline rules. The
    model's answer is checked as any output is (ungrounded items dropped); a failing model or
    an answer that is not structured falls back to the rules, recorded in
    `memory_trace["degraded"]` and logged (with `on_model_error="raise"`, a model that fails
    or cannot be built raises instead). If a combined respond call already produced
    candidates this turn, the node keeps them. Candidates go to `memory_candidates`, each with
    `proposed_by` ("model", or "rule:<id>").

    With a store (the argument, else the graph's runtime store), a kept turn is also read
    for entities (`entities.records.read_entities`) against the scope's entity records (one
    lookup, listed again only when they changed since the last turn or question read
    them: `entities.directories`): the candidates carry the ids of the entities they name in
    `metadata.entities`, the entities the turn creates or teaches something new of (an
    alias, a role, a relation) join the candidates as entity records for the gate, and
    `memory_entities` holds the turn's entity ids (the promote node stamps them on the
    logged turn) and the thread's latest ones (who "she" is next turn). Without a store,
    or with `entities=False`, none of this happens.

    In the chat graph it runs after `respond`, so the reply is in the state (and streamed)
    before extraction starts.

    Args:
        model: A chat model or an `init_chat_model` string; None: configuration or rules.
        extraction: "auto" (the model when one is configured, else the rules), "model" (a
            run without a model is a `ConfigurationError`) or "rules" (never the model).
        messages_key: The state key holding the conversation.
        clock: Seconds since the epoch (inject one in tests).
        store: The memory store the entities are read from; default: the graph's runtime
            store, if any.
        entities: Set False to read no entities.
        on_model_error: "degrade" (default: the rules, recorded and logged) or "raise" (the
            model's exception propagates).

    Raises:
        ConfigurationError: `extraction` or `on_model_error` is not one of its values.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> node = create_extract_node(extraction="rules")
        >>> out = node.invoke({"messages": [HumanMessage("I live in Lyon now.")]})
        >>> [(c["kind"], c["predicate"], c["value"]) for c in out["memory_candidates"]]
        [('fact', 'home_city', 'Lyon')]
    """

    if extraction not in EXTRACTION_MODES:
        raise ConfigurationError(
            f"create_extract_node(extraction={extraction!r}): use \"auto\" (the model when "
            "one is configured, else the rules), \"model\" or \"rules\".")
    on_error = check_on_model_error(on_model_error, "create_extract_node")

    def check_model(config: RunnableConfig | None) -> None:
        if extraction == "model" and not model_configured(model, config):
            raise ConfigurationError(
                "extraction=\"model\" but this run names no chat model: pass one to the "
                "factory (or to create_memory_chat_graph), or set configurable['memory_model'] "
                "or TYPED_MEMORY_MODEL; extraction=\"auto\" falls back to the rules instead.")

    def prepare(state: dict[str, Any]) -> tuple[_Kept | None, dict[str, Any]]:
        """The pre-filter's decision; the turn to extract from when it keeps it."""
        trace = trace_of(state)
        extraction = dict(trace.get("extraction") or {})
        trace["extraction"] = extraction
        messages = state.get(messages_key) or []
        human = last_human(messages)
        text = message_text(human)
        now = clock()
        recent = [(t, ts) for t, ts in (state.get("memory_recent") or [])
                  if now - ts <= RECENT_WINDOW_S]
        decision = prefilter(text, role="human", recent=recent, now=now)
        extraction["prefilter"] = decision.reason
        update = {"memory_recent": [*recent, (text, now)][-20:], "memory_trace": trace,
                  "memory_entities": {"mentioned": [], "recent": _recent_entities(state)}}
        speaker = str(human.name) if human is not None and human.name else "user"
        if extraction.get("method") == "combined":
            extraction["candidates"] = len(state.get("memory_candidates") or [])
            if not decision.keep:
                return None, update
            return _Kept(text, speaker, [], [], extraction, combined=True), update
        if not decision.keep:
            extraction.update(method="prefiltered", candidates=0)
            return None, {**update, "memory_candidates": []}
        thread = _previous_user_texts(messages, human)
        earlier = [*thread, *_remembered(state.get("memory_context") or {}, speaker)]
        return _Kept(text, speaker, earlier, thread, extraction), update

    def rules(turn: _Kept, update: dict[str, Any], why: str | None = None) -> dict[str, Any]:
        text = named_subjects(turn.text, turn.thread[::-1])  # "She moved" -> "Lena moved"
        ruled = extract_rules(text, speaker=turn.speaker, earlier=turn.earlier)
        ruled += relation_facts(text, speaker=turn.speaker, already=ruled)  # "I report to Priya"
        found = [_proposal(c, "rule") for c in ruled]
        turn.extraction.update(method="rules", candidates=len(found))
        if why:
            update["memory_trace"]["degraded"].append(why)
            logger.warning("extract: %s", why)
        return {**update, "memory_candidates": found}

    def from_model(answer: Any, turn: _Kept, update: dict[str, Any]) -> dict[str, Any]:
        checked = candidates_from_model_output(answer, turn.text)
        if any(r.startswith("output:") for r in checked.reasons):  # not structured at all
            return rules(turn, update, f"extraction model output unusable ({checked.reasons[0]})")
        turn.extraction.update(method="model", candidates=len(checked.candidates),
                               dropped=checked.dropped)
        turn.told = told(turn.text, checked.entities, checked.relations)
        return {**update, "memory_candidates": [
            _proposal(c, "model") for c in checked.candidates]}

    def chosen(turn: _Kept, update: dict[str, Any], config: RunnableConfig | None
               ) -> BaseChatModel | None:
        if extraction == "rules":
            return None
        chat, why = model_for(model, config, on_error)
        if why:
            update["memory_trace"]["degraded"].append(f"extract: {why}")
        return chat

    def with_entities(out: dict[str, Any], turn: _Kept, state: dict[str, Any],
                      config: RunnableConfig, scope_known: KnownEntities | None
                      ) -> dict[str, Any]:
        """`out` with the turn read for entities against the scope's directory."""
        if scope_known is None:
            return out
        labels = own_scope(scope_from_config(config)).labels()
        known = with_recent(scope_known, _recent_entities(state))
        read = read_entities(turn.text, known, scope=scope_key(labels), speaker=turn.speaker,
                             told=turn.told)
        candidates = out.get("memory_candidates", state.get("memory_candidates")) or []
        turn.extraction["entities"] = {"mentioned": len(read.ids),
                                       "proposed": len(read.proposals)}
        return {**out, "memory_candidates": [*stamp(candidates, read, speaker=turn.speaker),
                                             *read.proposals],
                "memory_entities": {"mentioned": list(read.ids),
                                    "recent": list(read.known.recent)}}

    def entity_source(config: RunnableConfig
                      ) -> tuple[BaseStore, tuple[str, ...], DirectoryRead] | None:
        """The store, the scope and the read of its entity directory, when entities are
        read (listed only if it changed since last read: `DIRECTORIES`)."""
        if not entities:
            return None
        found = _entity_store(store)
        if found is None:
            return None
        labels = own_scope(scope_from_config(config)).labels()
        return found, labels, DIRECTORIES.read(found, labels)

    def failed(update: dict[str, Any], exc: Exception) -> None:
        why = f"entities not read: {exc!r:.200}"
        update["memory_trace"]["degraded"].append(why)
        logger.warning("extract: %s", why)

    def plan(state: dict[str, Any], config: RunnableConfig) -> Plan[dict[str, Any]]:
        check_model(config)
        turn, update = prepare(state)
        if turn is None:
            return update
        scope_known = None
        if (source := entity_source(config)) is not None:
            found_in, labels, read = source
            try:
                listed = yield Call(found_in.batch, found_in.abatch, ([read.op],))
                scope_known = DIRECTORIES.known(found_in, labels, read, listed[0])
            except StoreUnusable:  # a misconfiguration: fails loudly
                raise
            except Exception as exc:  # the turn goes on without entities
                failed(update, exc)
        if turn.combined:
            return with_entities(update, turn, state, config, scope_known)
        chat = chosen(turn, update, config)
        if chat is None:
            return with_entities(rules(turn, update), turn, state, config, scope_known)
        try:
            structured = chat.with_structured_output(ExtractionResult)
            answer = yield Call(structured.invoke, structured.ainvoke, (turn.request(),))
        except Exception as exc:  # degrade to the rules, recorded
            if on_error == "raise":
                raise
            out = rules(turn, update, f"extraction model failed: {exc!r:.200}")
            return with_entities(out, turn, state, config, scope_known)
        return with_entities(from_model(answer, turn, update), turn, state, config, scope_known)

    def extract(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return run(plan(state, config))

    async def aextract(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return await arun(plan(state, config))

    return RunnableLambda(extract, afunc=aextract, name="extract")


def _entity_store(store: BaseStore | None) -> BaseStore | None:
    """The store entities are read from: the factory's, else the graph's runtime store; None
    without one, or for a store without the promotion gate (which keeps no entities)."""
    try:
        found = resolve_store(store)
    except ConfigurationError:
        return None
    return found if callable(getattr(found, "promote", None)) else None


def _recent_entities(state: dict[str, Any]) -> list[str]:
    """The thread's latest entity ids, newest first, as the previous turn left them."""
    held = state.get("memory_entities") or {}
    return [str(i) for i in held.get("recent") or []] if isinstance(held, dict) else []


def _previous_user_texts(messages: list[Any], human: Any) -> list[str]:
    """The texts of the (up to three) earlier messages of the same speaker, newest first."""
    out: list[str] = []
    for message in reversed(messages):
        if message is human or not isinstance(message, HumanMessage):
            continue
        if message.name == getattr(human, "name", None) and (text := message_text(message)):
            out.append(text)
            if len(out) == 3:
                break
    return out


REMEMBERED = 10
"""The best-ranked facts, and as many logged turns, a turn is read against for corrections
(what it corrects is found by the turn's own words, so it ranks near the top)."""


def _remembered(context: dict[str, Any], speaker: str) -> list[str]:
    """What the retrieve node found for this turn that the speaker said or that is about
    them, best ranked first (`REMEMBERED` of each kind): the statements a correction may
    correct."""
    facts, turns = [], []
    for item in [*context.get("facts", ()), *context.get("episodes", ())]:
        value = item.get("value") or {}
        if value.get("task_type") == "turn":
            said = str(value.get("summary") or "")
            if said.startswith(f"{speaker}: "):
                turns.append(said.removeprefix(f"{speaker}: "))
        elif value.get("subject") in (speaker, "user") and value.get("content"):
            facts.append(str(value["content"]))
    return [*facts[:REMEMBERED], *turns[:REMEMBERED]]


def _proposal(candidate: Candidate, source: str) -> dict[str, Any]:
    """A candidate as the promotion gate takes it, with what proposed it (`proposed_by`:
    `rule:<id>` for a rule that names itself, else `rule` or `model`).

    Example:
        >>> _proposal(Candidate(kind="preference", key="tone", value="terse", content="x",
        ...                     confidence=0.9, grounding="be terse", rule="tone"),
        ...           "rule")["proposed_by"]
        'rule:tone'
    """
    out = candidate.model_dump(mode="json", exclude_defaults=True)
    rule = candidate.rule
    out["proposed_by"] = f"{source}:{rule}" if rule and source == "rule" else source
    return out
