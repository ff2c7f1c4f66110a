"""Which checkpointer threads belong to a scope, so that erasing a user deletes their
conversations and nobody else's.

The memory nodes record each thread they serve with the scope they computed for the run
(`record_thread_plan`): the tenant, the user (the server's authenticated user when there is
one, never a name the client merely sent) and the agent, as text. Erasure deletes the threads
recorded for the erased scope (`threads_plan`).

Checkpoint metadata alone cannot say whose a thread is: it holds what the caller sent (a
client-sent `user_id` beside the authenticated user, an int, no tenant at all) and LangGraph
copies no UUID into it. Threads that were written before the nodes recorded them are found by
reading each candidate checkpoint's metadata the way the nodes read a run's configuration
(`legacy_lookups` narrows the candidates, `owned_by` decides), so a client-claimed name never
matches an authenticated user's thread.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from langgraph_typed_memory.errors import ConfigurationError
from langgraph_typed_memory.namespaces import THREAD_USER, Scope, scope_from_config
from langgraph_typed_memory.store.core.protocol import Begin, Commit, Plan, Sql

__all__ = ["Lookup", "SeenThreads", "anonymous_scopes_plan", "anonymous_thread",
           "forget_threads_plan", "legacy_lookups", "owned_by", "record_thread_plan",
           "scope_label", "threads_plan"]

SQL_RECORD_THREAD = (
    "INSERT INTO memory_threads (thread_id, scope, tenant_id, user_id, agent_id, at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, scope) DO NOTHING"
)
SQL_TENANT_THREADS = "SELECT DISTINCT thread_id FROM memory_threads WHERE tenant_id = ?"
SQL_USER_THREADS = (
    "SELECT DISTINCT thread_id FROM memory_threads WHERE tenant_id = ? AND user_id = ?")
SQL_ANONYMOUS_SCOPES = (
    "SELECT DISTINCT tenant_id, user_id FROM memories WHERE kind IS NOT NULL "
    "AND substr(user_id, 1, 7) = 'thread-'")
SQL_FORGET_TENANT_THREAD = "DELETE FROM memory_threads WHERE tenant_id = ? AND thread_id = ?"
SQL_FORGET_USER_THREAD = (
    "DELETE FROM memory_threads WHERE tenant_id = ? AND user_id = ? AND thread_id = ?")


def scope_label(scope: Scope) -> str:
    """A scope in one canonical text form: its namespace labels joined by "/".

    Example:
        >>> scope_label(Scope("acme", "42", "support"))
        'tenant:acme/user:42/agent:support'
    """
    return "/".join(scope.labels())


def record_thread_plan(thread_id: str, scope: Scope, at: float) -> Plan[None]:
    """Record that a run of `scope` used the thread (once: a repeat writes nothing)."""
    yield Begin()
    yield Sql(SQL_RECORD_THREAD, [thread_id, scope_label(scope), scope.tenant_id,
                                  scope.user_id, scope.agent_id, at])
    yield Commit()


def threads_plan(tenant_id: str, user_id: str | None) -> Plan[list[str]]:
    """The threads recorded for a user of the tenant (any agent), or for the whole tenant."""
    rows = yield (Sql(SQL_TENANT_THREADS, [tenant_id]) if user_id is None
                  else Sql(SQL_USER_THREADS, [tenant_id, user_id]))
    return sorted(str(r[0]) for r in rows)


def forget_threads_plan(tenant_id: str, user_id: str | None, threads: list[str]
                        ) -> Plan[None]:
    """Drop the scope's records of threads that were deleted."""
    yield Begin()
    for thread in threads:
        yield (Sql(SQL_FORGET_TENANT_THREAD, [tenant_id, thread]) if user_id is None
               else Sql(SQL_FORGET_USER_THREAD, [tenant_id, user_id, thread]))
    yield Commit()


Lookup = tuple[RunnableConfig | None, dict[str, Any] | None]
"""A checkpointer `list(config, filter=...)` call's two arguments."""


def anonymous_scopes_plan(tenant_id: str | None) -> Plan[list[tuple[str, str]]]:
    """The (tenant, `thread-<id>` user) scopes holding memory of callers that named no user,
    in one tenant or all."""
    rows = yield (Sql(SQL_ANONYMOUS_SCOPES, []) if tenant_id is None
                  else Sql(SQL_ANONYMOUS_SCOPES + " AND tenant_id = ?", [tenant_id]))
    return sorted((str(t), str(u)) for t, u in rows)


def anonymous_thread(user_id: str) -> str | None:
    """The thread whose own scope `user_id` is (`thread-<thread_id>`), else None.

    Example:
        >>> anonymous_thread("thread-t7"), anonymous_thread("alice")
        ('t7', None)
    """
    if user_id.startswith(THREAD_USER) and len(user_id) > len(THREAD_USER):
        return user_id[len(THREAD_USER):]
    return None


def legacy_lookups(tenant_id: str, user_id: str | None) -> list[Lookup]:
    """The checkpointer lookups that find every checkpoint a scope's runs may have written
    (and others, which `owned_by` then refuses); `(None, None)` lists every checkpoint.

    A user's runs carry their id as `user_id` (text, or an int when the caller sent one) or
    as the server's `langgraph_auth_user_id`; a caller that named no user is its thread's
    own (`thread-<thread_id>`); a tenant's runs carry `tenant_id`, except the "default"
    tenant's, which name none.

    Example:
        >>> [where for _, where in legacy_lookups("acme", "42")]
        [{'user_id': '42'}, {'langgraph_auth_user_id': '42'}, {'user_id': 42}]
        >>> legacy_lookups("acme", "thread-t7")[-1]
        ({'configurable': {'thread_id': 't7'}}, None)
        >>> legacy_lookups("acme", None), legacy_lookups("default", None)
        ([(None, {'tenant_id': 'acme'})], [(None, None)])
    """
    if user_id is None:
        return [(None, None if tenant_id == "default" else {"tenant_id": tenant_id})]
    found: list[Lookup] = [(None, {"user_id": user_id}),
                           (None, {"langgraph_auth_user_id": user_id})]
    if user_id.isascii() and user_id.isdigit() and str(int(user_id)) == user_id:
        found.append((None, {"user_id": int(user_id)}))
    if (thread := anonymous_thread(user_id)) is not None:
        found.append(({"configurable": {"thread_id": thread}}, None))
    return found


def owned_by(metadata: Mapping[str, Any] | None, thread_id: str, tenant_id: str,
             user_id: str | None) -> bool:
    """Whether a checkpoint of `thread_id` with this metadata was written by a run of the
    tenant (of the user, when one is given), its scope read as the nodes read a run's
    configuration: the authenticated user before a client-sent `user_id`, "default" for no
    tenant, `thread-<thread_id>` for no user.

    Example:
        >>> meta = {"tenant_id": "acme", "user_id": "mallory",
        ...         "langgraph_auth_user_id": "carol"}
        >>> owned_by(meta, "t1", "acme", "mallory"), owned_by(meta, "t1", "acme", "carol")
        (False, True)
        >>> owned_by({"user_id": 42}, "t2", "default", "42")
        True
        >>> owned_by({}, "t3", "default", "thread-t3")
        True
    """
    configurable = {k: v for k, v in (metadata or {}).items()
                    if k in ("tenant_id", "user_id", "agent_id", "langgraph_auth_user_id")}
    try:
        scope = scope_from_config({"configurable": {**configurable, "thread_id": thread_id}})
    except ConfigurationError:  # no run of the nodes could have had this configuration
        return False
    return scope.tenant_id == tenant_id and (user_id is None or scope.user_id == user_id)


class SeenThreads:
    """The (thread, scope) pairs this process has recorded, at most `limit` of them, so a
    thread's later turns write nothing.

    Example:
        >>> seen = SeenThreads(limit=2)
        >>> [seen.first("t1", "s"), seen.first("t1", "s"), seen.first("t2", "s")]
        [True, False, True]
    """

    def __init__(self, limit: int = 4096) -> None:
        self._pairs: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def first(self, thread_id: str, scope: str) -> bool:
        """True the first time a pair is seen (it is then remembered)."""
        with self._lock:
            if (thread_id, scope) in self._pairs:
                self._pairs.move_to_end((thread_id, scope))
                return False
            self._pairs[(thread_id, scope)] = None
            while len(self._pairs) > self._limit:
                self._pairs.popitem(last=False)
            return True

    def forget(self, thread_id: str, scope: str) -> None:
        """Let the next sight of the pair record it again (its write failed)."""
        with self._lock:
            self._pairs.pop((thread_id, scope), None)

    def clear(self) -> None:
        """Forget every pair (after an erasure removed records of them)."""
        with self._lock:
            self._pairs.clear()
