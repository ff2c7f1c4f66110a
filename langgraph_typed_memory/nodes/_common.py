"""What the memory nodes share: scope from the run's configuration, the store, the trace."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.namespaces import Scope

MODEL_ENV = "TYPED_MEMORY_MODEL"


def scope_from_config(config: RunnableConfig | None) -> Scope:
    """The caller's scope from `configurable` (`tenant_id`, `user_id`, `agent_id`).

    Without a `tenant_id` the tenant is "default". Without a `user_id`, memory is scoped to
    the thread (`thread-<thread_id>`), so anonymous callers never share memory.
    """
    configurable = (config or {}).get("configurable", {}) or {}
    tenant = configurable.get("tenant_id") or "default"
    user = configurable.get("user_id")
    if user is None and configurable.get("thread_id"):
        user = f"thread-{configurable['thread_id']}"
    agent = configurable.get("agent_id")
    return Scope(str(tenant), None if user is None else str(user),
                 None if agent is None else str(agent))


def run_id_from_config(config: RunnableConfig | None) -> str:
    """The run id LangGraph assigned, else a fresh one."""
    run_id = (config or {}).get("run_id") or ((config or {}).get("configurable") or {}).get(
        "run_id"
    )
    return str(run_id) if run_id else uuid.uuid4().hex


def resolve_store(store: BaseStore | None) -> BaseStore:
    """The store given to the factory, else the graph's runtime store."""
    if store is not None:
        return store
    from langgraph.config import get_store

    try:
        found = get_store()
    except RuntimeError:
        found = None
    if found is None:
        raise ConfigurationError(
            "No store: pass store= to the node factory, or compile the graph with "
            "graph.compile(store=SqliteMemoryStore(...))."
        )
    return found


def last_human(messages: list[AnyMessage]) -> HumanMessage | None:
    """The newest user message of the conversation."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
    return None


def message_text(message: BaseMessage | None) -> str:
    """A message's text content (text parts joined)."""
    if message is None:
        return ""
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(
        part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
    )


def resolve_model(
    model: BaseChatModel | str | None, config: RunnableConfig | None
) -> BaseChatModel | None:
    """A chat model from the factory argument, `configurable["model"]`, or $TYPED_MEMORY_MODEL.

    Strings go through LangChain's `init_chat_model` ("provider:model"). None: offline.
    """
    chosen: Any = model
    if chosen is None:
        chosen = ((config or {}).get("configurable") or {}).get("model")
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


def model_name(model: BaseChatModel | None) -> str:
    """A readable model name for the trace."""
    if model is None:
        return "extractive-responder (offline, not a language model)"
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str):
            return value
    return type(model).__name__


def trace_of(state: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the state's trace envelope to update and return."""
    trace = dict(state.get("memory_trace") or {})
    trace["degraded"] = list(trace.get("degraded") or [])
    return trace
