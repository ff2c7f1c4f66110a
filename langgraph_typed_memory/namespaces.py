"""The namespace grammar: how a LangGraph namespace tuple maps to (scope, kind).

A namespace whose first label starts with ``tenant:`` is *typed*; every other namespace is
*untyped* and behaves exactly like LangGraph's own stores.

    typed     := tenant [user] [agent] kind
    tenant    := "tenant:" ID
    user      := "user:" ID
    agent     := "agent:" ID
    kind      := "policy" | "preference" | "fact" | "episode" | "procedure" | "observation"
    ID        := 1-128 characters, none of them "." or ":" or control characters

Examples:
    ``("tenant:acme", "policy")`` tenant-wide policies;
    ``("tenant:acme", "user:alice", "preference")`` Alice's preferences;
    ``("tenant:acme", "agent:support", "procedure")`` the support agent's procedures;
    ``("tenant:acme", "user:alice", "agent:support", "fact")`` facts Alice's support agent learned.

A write lands in exactly the scope its namespace names. A read sees that scope and the wider
shared scopes it contains: tenant-wide records, the user's records, the agent's records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

from langgraph_typed_memory.errors import InvalidNamespace, UnknownKind

__all__ = [
    "Kind",
    "KINDS",
    "EXACT_KINDS",
    "RANKED_KINDS",
    "Scope",
    "TypedNamespace",
    "memory_namespace",
    "parse_namespace",
    "is_typed",
]

Kind = Literal["policy", "preference", "fact", "episode", "procedure", "observation"]
KINDS: tuple[Kind, ...] = get_args(Kind)
EXACT_KINDS: frozenset[str] = frozenset({"policy", "preference", "procedure"})
"""Kinds read by exhaustive known-scope lookup: no ranking, no top-k."""
RANKED_KINDS: frozenset[str] = frozenset({"fact", "episode", "observation"})
"""Kinds read by semantic discovery: hybrid lexical + vector ranking."""

TENANT, USER, AGENT = "tenant:", "user:", "agent:"
_ID = re.compile(r"^[^.:\x00-\x1f\x7f]{1,128}$")


@dataclass(frozen=True, slots=True)
class Scope:
    """Who a record belongs to. `tenant_id` is required; user and agent narrow it.

    Example:
        >>> Scope("acme", user_id="alice").labels()
        ('tenant:acme', 'user:alice')
    """

    tenant_id: str
    user_id: str | None = None
    agent_id: str | None = None

    def labels(self) -> tuple[str, ...]:
        """The namespace labels naming this scope, without the kind.

        Example:
            >>> Scope("acme", user_id="alice").labels()
            ('tenant:acme', 'user:alice')
        """
        out = [TENANT + self.tenant_id]
        if self.user_id is not None:
            out.append(USER + self.user_id)
        if self.agent_id is not None:
            out.append(AGENT + self.agent_id)
        return tuple(out)

    @property
    def level(self) -> Literal["tenant", "user", "agent", "user_agent"]:
        """The breadth of the scope, from widest to narrowest."""
        if self.user_id is None:
            return "tenant" if self.agent_id is None else "agent"
        return "user" if self.agent_id is None else "user_agent"


@dataclass(frozen=True, slots=True)
class TypedNamespace:
    """A parsed typed namespace."""

    scope: Scope
    kind: Kind

    def namespace(self) -> tuple[str, ...]:
        """The namespace tuple again."""
        return (*self.scope.labels(), self.kind)


def is_typed(namespace: tuple[str, ...]) -> bool:
    """Whether a namespace (or namespace prefix) belongs to the typed grammar."""
    return bool(namespace) and namespace[0].startswith(TENANT)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _check_id(namespace: tuple[str, ...], label: str, prefix: str) -> str:
    ident = label[len(prefix) :]
    if not _ID.match(ident) or _has_surrogate(ident):
        raise InvalidNamespace(
            f"Namespace {namespace!r}: label {label!r} has an invalid id {ident!r}. Ids are "
            "1-128 characters without '.', ':', control characters or lone surrogates, "
            "e.g. 'tenant:acme'."
        )
    return ident


def parse_scope(labels: tuple[str, ...], *, namespace: tuple[str, ...] | None = None) -> Scope:
    """Parse the scope labels of a typed namespace (without the kind).

    Args:
        labels: ``tenant:ID [user:ID] [agent:ID]``.
        namespace: The whole namespace, to name it in errors (default: `labels`).

    Raises:
        InvalidNamespace: the labels are not ``tenant:ID [user:ID] [agent:ID]`` in that order.
    """
    namespace = namespace if namespace is not None else labels
    if not is_typed(labels):
        raise InvalidNamespace(
            f"Namespace {namespace!r} is not typed: a typed namespace starts with 'tenant:ID'."
        )
    tenant = _check_id(namespace, labels[0], TENANT)
    user = agent = None
    for label in labels[1:]:
        if label.startswith(USER) and user is None and agent is None:
            user = _check_id(namespace, label, USER)
        elif label.startswith(AGENT) and agent is None:
            agent = _check_id(namespace, label, AGENT)
        else:
            raise InvalidNamespace(
                f"Namespace {namespace!r}: unexpected label {label!r}. The grammar is "
                "('tenant:ID', ['user:ID'], ['agent:ID'], KIND), e.g. "
                "('tenant:acme', 'user:alice', 'preference')."
            )
    return Scope(tenant, user, agent)


def parse_namespace(namespace: tuple[str, ...]) -> TypedNamespace:
    """Parse a full typed namespace into its scope and kind.

    Example:
        >>> parse_namespace(("tenant:acme", "user:alice", "fact")).scope.user_id
        'alice'

    Raises:
        UnknownKind: the last label is not a memory kind.
        InvalidNamespace: the scope labels are malformed.
    """
    if not is_typed(namespace):
        raise InvalidNamespace(
            f"Namespace {namespace!r} is not typed: a typed namespace starts with 'tenant:ID'."
        )
    if len(namespace) < 2:
        raise UnknownKind(
            f"Namespace {namespace!r} names no memory kind: add one of {', '.join(KINDS)} as "
            "its last label, e.g. ('tenant:acme', 'policy')."
        )
    kind = namespace[-1]
    if kind not in KINDS:
        if ":" in kind:
            hint = f"it ends in the scope label {kind!r}; add a kind after it"
        else:
            hint = f"{kind!r} is not one of {', '.join(KINDS)}"
        raise UnknownKind(f"Namespace {namespace!r} names no valid memory kind: {hint}.")
    return TypedNamespace(parse_scope(namespace[:-1], namespace=namespace), kind)  # type: ignore[arg-type]


def memory_namespace(
    kind: Kind,
    *,
    tenant_id: str,
    user_id: str | None = None,
    agent_id: str | None = None,
) -> tuple[str, ...]:
    """Build the namespace of a kind in a scope, validated.

    Example:
        >>> memory_namespace("preference", tenant_id="acme", user_id="alice")
        ('tenant:acme', 'user:alice', 'preference')
    """
    namespace = (*Scope(tenant_id, user_id, agent_id).labels(), kind)
    parse_namespace(namespace)
    return namespace
