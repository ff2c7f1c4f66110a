"""What the memory nodes share: scope from the run's configuration, the store, the trace."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from langgraph_typed_memory.errors import ConfigurationError, StoreUnusable
from langgraph_typed_memory.namespaces import Scope, scope_from_config
from langgraph_typed_memory.state import MemoryTrace

logger = logging.getLogger(__name__)

MODEL_ENV = "TYPED_MEMORY_MODEL"
MODEL_KEY = "memory_model"
"""The `configurable` key naming the memory nodes' chat model (not LangGraph's generic
`model`, which templates and apps use for their own model)."""
def writable_scope(scope: Scope, writer: str) -> Scope:
    """The caller's scope, if it names a user or an agent: a conversation's memories are its
    speaker's (or its agent's), never the whole tenant's. `writer` names what writes them,
    for the message.

    Example:
        >>> writable_scope(Scope("acme"), "The promote node")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: The promote node writes a ...

    Raises:
        ConfigurationError: the run names no user, agent or thread.
    """
    if scope.user_id is None and scope.agent_id is None:
        raise ConfigurationError(
            f"{writer} writes a conversation's memories into the caller's own scope, "
            "and this run names none: no configurable user_id (or authenticated user), "
            f"agent_id or thread_id. Written to tenant {scope.tenant_id!r} as a whole, they "
            "would be shown to every one of its users. Send config={'configurable': "
            "{'user_id': ...}} (or compile the graph with a checkpointer and send a "
            "thread_id); write tenant-wide records deliberately with store.put or "
            "store.promote.")
    return scope


def run_id_from_config(config: RunnableConfig | None) -> str:
    """The run id LangGraph assigned, else a fresh one."""
    run_id = (config or {}).get("run_id") or ((config or {}).get("configurable") or {}).get(
        "run_id"
    )
    return str(run_id) if run_id else uuid.uuid4().hex


def record_thread(store: BaseStore, config: RunnableConfig | None) -> str | None:
    """Record the run's thread (`configurable["thread_id"]`) for the run's scope in a store
    that keeps them (`record_thread`), so erasing the scope's user deletes the thread from
    the checkpointer. Returns why it failed (for the trace; it is logged too), else None.

    Example:
        >>> from langgraph_typed_memory import SqliteMemoryStore, connect_sqlite
        >>> store = SqliteMemoryStore(connect_sqlite(":memory:"))
        >>> store.setup()
        >>> record_thread(store, {"configurable": {"user_id": 42, "thread_id": "t1"}})
        >>> store.erase("default", "42").threads_kept
        ['t1']
    """
    thread = _thread_of(config)
    if thread is None or not hasattr(store, "record_thread"):
        return None
    try:
        store.record_thread(thread, scope_from_config(config))
    except (StoreUnusable, ConfigurationError):  # a misconfiguration: fails loudly
        raise
    except Exception as exc:
        return _not_recorded(exc)
    return None


async def arecord_thread(store: BaseStore, config: RunnableConfig | None) -> str | None:
    """Async `record_thread`."""
    thread = _thread_of(config)
    if thread is None or not hasattr(store, "arecord_thread"):
        return None
    try:
        await store.arecord_thread(thread, scope_from_config(config))
    except (StoreUnusable, ConfigurationError):
        raise
    except Exception as exc:
        return _not_recorded(exc)
    return None


def _thread_of(config: RunnableConfig | None) -> str | None:
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(thread) if thread is not None and str(thread).strip() else None


def _not_recorded(error: BaseException) -> str:
    why = (f"thread not recorded for its scope ({error!r:.200}): erasing this user will not "
           "find the thread unless its checkpoint metadata names them")
    logger.warning("%s", why)
    return why


def resolve_store(store: BaseStore | None) -> BaseStore:
    """The store given to the factory, else the graph's runtime store.

    Raises:
        ConfigurationError: there is neither (a graph compiled without `store=`).
    """
    if store is not None:
        return store
    from langgraph.config import get_store

    try:
        found = get_store()
    except (RuntimeError, KeyError):  # outside a graph run, or a runnable outside a graph
        found = None
    if found is None:
        raise ConfigurationError(
            "No store: pass store= to the node factory (or to create_memory_chat_graph), or "
            "compile the graph with graph.compile(store=SqliteMemoryStore(...)); under "
            "`langgraph dev`, name a function yielding one in langgraph.json's store.path."
        )
    return found


_GATE_METHODS = ("promote", "apromote")


def check_gate_store(store: BaseStore, method: str | None = None) -> BaseStore:
    """`store`, refused unless it has the promotion gate (`promote`; `apromote` when
    `method` says so; either when `method` is None).

    LangGraph's own stores (`InMemoryStore`, `PostgresStore`...) have no gate: the promote
    node would store nothing, so that is a configuration error, not a degraded turn.

    Example:
        >>> from langgraph.store.memory import InMemoryStore
        >>> check_gate_store(InMemoryStore())
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: The memory nodes need ...

    Raises:
        ConfigurationError: the store has no promotion gate.
    """
    methods = _GATE_METHODS if method is None else (method,)
    if not any(callable(getattr(store, m, None)) for m in methods):
        raise ConfigurationError(
            f"The memory nodes need this package's store, which has the promotion gate "
            f"(`{methods[0]}`); got {type(store).__name__}, which has none, so nothing would "
            "be stored. Use SqliteMemoryStore, AsyncSqliteMemoryStore, PostgresMemoryStore or "
            "AsyncPostgresMemoryStore (from langgraph_typed_memory): pass it as store= or to "
            "graph.compile(store=...); under `langgraph dev`, name a function yielding one in "
            "langgraph.json's store.path."
        )
    return store


def check_memory_state(state: Mapping[str, Any], config: RunnableConfig | None, *,
                       node: str, keys: tuple[str, ...]) -> None:
    """Refuse to run inside a graph whose state schema drops the memory keys.

    LangGraph keeps only the keys of the graph's state schema: in a
    `StateGraph(MessagesState)` every `memory_*` key the nodes write is dropped without an
    error, so nothing reaches the store and even the trace vanishes. A node that runs in a
    graph (LangGraph's `langgraph_node` run metadata) after the nodes that write `keys`
    finds none of them then. Invoked alone (`node.invoke(state)`) it is not checked.

    Example:
        >>> check_memory_state({"messages": []}, {"metadata": {"langgraph_node": "promote"}},
        ...                    node="promote", keys=("memory_trace",))
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: The promote node ...

    Raises:
        ConfigurationError: in a graph, the state holds none of `keys`.
    """
    metadata = (config or {}).get("metadata") or {}
    if "langgraph_node" not in metadata or any(key in state for key in keys):
        return
    raise ConfigurationError(
        f"The {node} node found none of {', '.join(keys)} in the graph state: the graph's "
        "state schema lacks the memory keys, so LangGraph drops what the memory nodes write "
        "(no candidates, no trace, nothing stored). Build the graph with "
        "StateGraph(MemoryState) (from langgraph_typed_memory.state import MemoryState; it "
        "extends MessagesState), or a state class that extends it, or add MemoryState's keys "
        "to your state."
    )


def last_human(messages: Sequence[AnyMessage]) -> HumanMessage | None:
    """The newest user message of the conversation."""
    at = last_human_at(messages)
    return None if at is None else messages[at]  # type: ignore[return-value]


def last_human_at(messages: Sequence[BaseMessage]) -> int | None:
    """The position of the newest user message; None without one."""
    return next((i for i in range(len(messages) - 1, -1, -1)
                 if isinstance(messages[i], HumanMessage)), None)


def model_configured(model: BaseChatModel | str | None, config: RunnableConfig | None
                     ) -> bool:
    """Whether a chat model is named for the run (`resolve_model`'s sources), without
    building it.

    Example:
        >>> model_configured(None, {"configurable": {"memory_model": "openai:gpt-4o"}})
        True
    """
    return model is not None or bool(
        ((config or {}).get("configurable") or {}).get(MODEL_KEY) or os.environ.get(MODEL_ENV))


def resolve_model(
    model: BaseChatModel | str | None, config: RunnableConfig | None
) -> BaseChatModel | None:
    """A chat model from the factory argument, `configurable["memory_model"]`, or
    $TYPED_MEMORY_MODEL.

    Strings go through LangChain's `init_chat_model` ("provider:model"). None: offline.
    A model that cannot be built raises; nodes call `try_resolve_model` instead.

    Raises:
        ConfigurationError: the model is neither a chat model nor a string, or `langchain`
            is missing for a string.
    """
    chosen: Any = model
    if chosen is None:
        chosen = ((config or {}).get("configurable") or {}).get(MODEL_KEY)
    if chosen is None:
        chosen = os.environ.get(MODEL_ENV) or None
    if chosen is None or isinstance(chosen, BaseChatModel):
        return chosen
    if isinstance(chosen, str):
        try:
            from langchain.chat_models import init_chat_model  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ConfigurationError(
                f"model {chosen!r} is a string: install `langchain` (and the provider's "
                "package) for init_chat_model, or pass a chat model instance."
            ) from exc
        return init_chat_model(chosen)  # type: ignore[no-any-return]
    raise ConfigurationError(
        f"model {chosen!r:.80} is neither a LangChain chat model nor an init_chat_model string."
    )


def try_resolve_model(
    model: BaseChatModel | str | None, config: RunnableConfig | None
) -> tuple[BaseChatModel | None, str | None]:
    """`resolve_model` for a node: a model that cannot be built degrades the turn.

    Returns the chat model (None: offline) and, when building it failed, the reason to append
    to `memory_trace["degraded"]` (also logged); the node then takes its offline path.

    Example:
        >>> chat, why = try_resolve_model(None, {"configurable": {"memory_model": 42}})
        >>> chat, why.startswith("model could not be built, offline fallback used")
        (None, True)
    """
    try:
        return resolve_model(model, config), None
    except Exception as exc:  # a bad provider, a missing package or key: the turn goes on
        why = f"model could not be built, offline fallback used: {exc!r:.200}"
        logger.warning("%s", why)
        return None, why


OnModelError = Literal["degrade", "raise"]
"""What a node does when its chat model cannot be built or its call fails: "degrade" (the
offline path, the reason recorded in `memory_trace["degraded"]` and logged) or "raise" (the
exception reaches the caller: a missing API key, a provider's 400)."""
ON_MODEL_ERROR: tuple[OnModelError, ...] = ("degrade", "raise")


def check_on_model_error(value: Any, where: str) -> OnModelError:
    """`value`, refused unless it is one of `ON_MODEL_ERROR`.

    Example:
        >>> check_on_model_error("loud", "create_respond_node")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: create_respond_node(...): ...

    Raises:
        ConfigurationError: another value.
    """
    if value not in ON_MODEL_ERROR:
        raise ConfigurationError(
            f"{where}(on_model_error={value!r}): use \"degrade\" (the offline fallback, "
            "recorded in the trace and logged; the default) or \"raise\" (the model's "
            "exception reaches the caller).")
    return value  # type: ignore[no-any-return]


def model_for(
    model: BaseChatModel | str | None, config: RunnableConfig | None, on_error: OnModelError
) -> tuple[BaseChatModel | None, str | None]:
    """The run's chat model as `try_resolve_model` gives it; with `on_error="raise"` a model
    that cannot be built raises instead of degrading the turn.

    Example:
        >>> model_for(None, {"configurable": {"memory_model": 42}}, "raise")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: model 42 is neither ...
    """
    if on_error == "raise":
        return resolve_model(model, config), None
    return try_resolve_model(model, config)


def model_name(model: BaseChatModel | None) -> str:
    """A readable model name for the trace."""
    if model is None:
        return "extractive-responder (offline, not a language model)"
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str):
            return value
    return type(model).__name__


def noting(update: dict[str, Any], degraded: str | None) -> dict[str, Any]:
    """A node's update, with a degradation (if any) added to its trace's `degraded`."""
    if degraded:
        update["memory_trace"]["degraded"].append(degraded)
    return update


def trace_of(state: Mapping[str, Any]) -> MemoryTrace:
    """A copy of the state's trace envelope to update and return."""
    trace = MemoryTrace(**(state.get("memory_trace") or {}))
    trace["degraded"] = list(trace.get("degraded") or [])
    return trace
