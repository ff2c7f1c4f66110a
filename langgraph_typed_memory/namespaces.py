"""The namespace grammar: how a LangGraph namespace tuple maps to (scope, kind).

A namespace whose first label starts with ``tenant:`` is *typed*; every other namespace is
*untyped* and behaves exactly like LangGraph's own stores, unless it looks like a typed one that
breaks the grammar (see `check_untyped`): that is an error, not an untyped namespace.

    typed     := tenant [user] [agent] kind
    tenant    := "tenant:" ID
    user      := "user:" ID
    agent     := "agent:" ID
    kind      := "policy" | "preference" | "fact" | "episode" | "procedure" | "observation"
                 | "entity"
    ID        := 1-128 characters, none of them ":" or a control character, and no
                 "{...}" (an unfilled template such as "{langgraph_user_id}")

Examples:
    ``("tenant:acme", "policy")`` tenant-wide policies;
    ``("tenant:acme", "user:alice", "preference")`` Alice's preferences;
    ``("tenant:acme", "agent:support", "procedure")`` the support agent's procedures;
    ``("tenant:acme", "user:alice", "agent:support", "fact")`` facts Alice's support agent learned.

Ids may hold ``.`` and ``@`` (``alice@example.com``, ``acme.io``) and round-trip exactly. A write
lands in exactly the scope its namespace names. A read sees that scope and the wider shared
scopes it contains: tenant-wide records, the user's records, the agent's records.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

from langchain_core.runnables import RunnableConfig

from langgraph_typed_memory.errors import (
    ConfigurationError,
    InvalidNamespace,
    UnknownKind,
    shown,
)

__all__ = [
    "Kind",
    "KINDS",
    "EXACT_KINDS",
    "RANKED_KINDS",
    "Scope",
    "TypedNamespace",
    "memory_namespace",
    "parse_namespace",
    "parse_scope",
    "is_typed",
    "is_valid_id",
    "check_untyped",
    "misspelt_kind",
    "encode_namespace",
    "decode_namespace",
    "scope_from_config",
    "AUTH_USER_KEY",
]

Kind = Literal["policy", "preference", "fact", "episode", "procedure", "observation", "entity"]
KINDS: tuple[Kind, ...] = get_args(Kind)
EXACT_KINDS: frozenset[str] = frozenset({"policy", "preference", "procedure", "entity"})
"""Kinds read by exhaustive known-scope lookup: no ranking, no top-k."""
RANKED_KINDS: frozenset[str] = frozenset({"fact", "episode", "observation"})
"""Kinds read by semantic discovery: hybrid lexical + vector ranking."""

TENANT, USER, AGENT = "tenant:", "user:", "agent:"
THREAD_USER = "thread-"
"""The user id of a caller that names no user: `thread-<thread_id>`, its thread's own."""
SCOPE_PREFIXES = (TENANT, USER, AGENT)
_ID = re.compile(r"[^:\x00-\x1f\x7f]{1,128}")
_ID_RULE = ("1-128 characters without ':', control characters, lone surrogates or an "
            "unfilled '{...}' template")
_TEMPLATE = re.compile(r"\{[^{}]*\}")


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


def is_valid_id(ident: str) -> bool:
    """Whether `ident` can be a tenant, user or agent id: 1-128 characters, no ":", no
    control characters (".", "@", "/" and spaces are fine), and no "{...}": an unfilled
    template ("{langgraph_user_id}") would name one user shared by every caller.

    Example:
        >>> is_valid_id("alice@example.com"), is_valid_id("acme.io"), is_valid_id("a:b")
        (True, True, False)
        >>> is_valid_id("{langgraph_user_id}")
        False
    """
    return (bool(_ID.fullmatch(ident)) and not _has_surrogate(ident)
            and not _TEMPLATE.search(ident))


def _check_id(namespace: tuple[str, ...], label: str, prefix: str) -> str:
    ident = label[len(prefix) :]
    if template := _TEMPLATE.search(ident):
        raise InvalidNamespace(
            f"Namespace {namespace!r}: label {label!r} holds the unfilled template "
            f"{template.group()!r}: fill it before the store sees it (LangMem fills a label "
            "only when the whole label is a template)."
        )
    if not is_valid_id(ident):
        raise InvalidNamespace(
            f"Namespace {namespace!r}: label {label!r} has an invalid id {ident!r}. Ids are "
            f"{_ID_RULE}, e.g. 'tenant:acme' or 'user:alice@example.com'."
        )
    return ident


def _scope_prefix(label: str) -> str | None:
    """The scope prefix a label starts with, ignoring case and surrounding blanks."""
    folded = label.strip().lower()
    return next((p for p in SCOPE_PREFIXES if folded.startswith(p)), None)


def _edits(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions, adjacent transpositions)."""
    rows = [list(range(len(b) + 1))]
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            row.append(min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (x != y)))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def misspelt_kind(label: str) -> Kind | None:
    """The memory kind `label` names or misspells, else None.

    Case, surrounding blanks and a plural are ignored; beyond that a label may be one edit
    away from "fact" and two from the longer kinds. Only used where a namespace already claims
    the typed grammar, so an untyped label that happens to be close stays untyped.

    Example:
        >>> misspelt_kind("facts"), misspelt_kind("Policies"), misspelt_kind("prefrence")
        ('fact', 'policy', 'preference')
        >>> misspelt_kind("memories") is None, misspelt_kind("prefs") is None
        (True, True)
    """
    word = label.strip().lower()
    forms = {word, word.removesuffix("s")}
    if word.endswith("ies"):
        forms.add(word[:-3] + "y")
    best = min((_edits(form, kind), kind) for form in forms for kind in KINDS)
    distance, kind = best
    return kind if distance <= (1 if len(kind) <= 4 else 2) else None


def check_untyped(namespace: tuple[str, ...]) -> None:
    """Refuse an untyped namespace that looks like a typed one breaking the grammar.

    A namespace that does not start with "tenant:" is untyped and works as in LangGraph,
    unless it *claims* the typed grammar, which would otherwise make it silently untyped and
    invisible to typed search. It claims it when:

    - a label starts with "tenant:" in another case or after blanks ("Tenant:acme"), or
      "tenant:" is not the first label;
    - or a label starts with "user:" or "agent:" (any case) and the last label is a memory
      kind or close to one (`misspelt_kind`): ("acme", "user:alice", "fact").

    So ("memories", "alice"), ("users", "123", "prefs"), ("docs",) and even
    ("memories", "user:123") stay untyped.

    Example:
        >>> check_untyped(("memories", "user:123"))
        >>> check_untyped(("acme", "user:alice", "fact"))
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.InvalidNamespace: Namespace ('acme', 'user:alice', 'fact') ...

    Raises:
        InvalidNamespace: the namespace looks typed but is not; the message says what to fix.
    """
    prefixes = [_scope_prefix(label) for label in namespace]
    if TENANT in prefixes:
        at = prefixes.index(TENANT)
        label = namespace[at]
        if at == 0:
            fixed = TENANT + label.strip()[len(TENANT) :]
            raise InvalidNamespace(
                f"Namespace {namespace!r} looks typed but its first label {label!r} is not "
                f"'tenant:' in lower case: write {fixed!r}, e.g. "
                f"{(fixed, *namespace[1:])!r}. A namespace is typed only when its first "
                "label starts with exactly 'tenant:'."
            )
        rest = namespace[:at] + namespace[at + 1 :]
        raise InvalidNamespace(
            f"Namespace {namespace!r} looks typed but {label!r} is not its first label: a "
            "typed namespace is ('tenant:ID', ['user:ID'], ['agent:ID'], KIND), e.g. "
            f"{(label, *rest)!r}."
        )
    if not (USER in prefixes or AGENT in prefixes) or len(namespace) < 2:
        return
    kind = misspelt_kind(namespace[-1])
    if kind is None:
        return
    scope = [p + label.strip()[len(p) :]
             for label, p in zip(namespace, prefixes, strict=True) if p is not None]
    first = namespace[0].strip()
    tenant = "tenant:ID" if prefixes[0] or ":" in first or first.lower() == "tenant" \
        else TENANT + first
    raise InvalidNamespace(
        f"Namespace {namespace!r} looks typed (scope labels and the kind {kind!r}) but does "
        "not start with a 'tenant:' label, so it would be untyped and invisible to typed "
        f"search. Write it as {(tenant, *scope, kind)!r}: ('tenant:ID', ['user:ID'], "
        "['agent:ID'], KIND)."
    )


def encode_namespace(namespace: tuple[str, ...]) -> str:
    """The text a namespace (or prefix) is stored and matched under: its labels joined by ".".

    Labels of untyped namespaces never hold "." (LangGraph forbids it). Ids of typed ones may,
    so in a typed namespace each "." of an id is stored as ":", which ids cannot hold: the
    text stays one label per "."-separated part, and one scope's text is never a prefix of
    another's (`tenant:a` does not prefix `tenant:a.b`, stored `tenant:a:b`). Stored texts
    written before ids could hold "." are unchanged.

    Example:
        >>> encode_namespace(("tenant:acme.io", "user:alice@example.com", "fact"))
        'tenant:acme:io.user:alice@example:com.fact'
        >>> encode_namespace(("memories", "alice"))
        'memories.alice'
    """
    return _encoded(namespace if type(namespace) is tuple else tuple(namespace))


@lru_cache(maxsize=4096)
def _encoded(namespace: tuple[str, ...]) -> str:
    """`encode_namespace`, remembered: a batch writes many records to few namespaces, and a
    write encodes its record's namespace three times."""
    if not is_typed(namespace):
        return ".".join(namespace)
    return ".".join(_encode_label(label) for label in namespace)


def _encode_label(label: str) -> str:
    for prefix in SCOPE_PREFIXES:
        if label.startswith(prefix):
            return prefix + label[len(prefix) :].replace(".", ":")
    return label


@lru_cache(maxsize=4096)
def decode_namespace(text: str) -> tuple[str, ...]:
    """The namespace a stored text stands for (the inverse of `encode_namespace`); the few
    namespaces a store reads come back on every row, so the answers are remembered.

    Example:
        >>> decode_namespace("tenant:acme:io.user:alice@example:com.fact")
        ('tenant:acme.io', 'user:alice@example.com', 'fact')
    """
    labels = text.split(".")
    if not labels[0].startswith(TENANT):
        return tuple(labels)
    return tuple(_decode_label(label) for label in labels)


def _decode_label(label: str) -> str:
    head, colon, ident = label.partition(":")
    if colon and head + colon in SCOPE_PREFIXES:
        return head + colon + ident.replace(":", ".")
    return label


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
                f"Namespace {namespace!r}: unexpected label {label!r}{_why_unexpected(label)}. "
                "The grammar is ('tenant:ID', ['user:ID'], ['agent:ID'], KIND), e.g. "
                "('tenant:acme', 'user:alice', 'preference')."
            )
    return Scope(tenant, user, agent)


def _why_unexpected(label: str) -> str:
    """What is wrong with a label where a scope label was expected."""
    prefix = _scope_prefix(label)
    if prefix is not None and not label.startswith(prefix):
        return f" (write {prefix + label.strip()[len(prefix):]!r}: scope labels are lower case)"
    if prefix == TENANT:
        return " (a namespace has one tenant label, the first)"
    if prefix is not None:
        return " (each scope label once, 'user:' before 'agent:')"
    if (kind := misspelt_kind(label)) is not None:
        return f" (the kind, {kind!r}, is the last label)"
    return ""


def parse_namespace(namespace: tuple[str, ...]) -> TypedNamespace:
    """Parse a full typed namespace into its scope and kind.

    Example:
        >>> parse_namespace(("tenant:acme", "user:alice", "fact")).scope.user_id
        'alice'

    Raises:
        UnknownKind: the last label is not a memory kind.
        InvalidNamespace: the scope labels are malformed, or `namespace` is not a tuple (or
            list) of strings.
    """
    if (not isinstance(namespace, (tuple, list))
            or not all(isinstance(label, str) for label in namespace)):
        raise InvalidNamespace(
            f"Namespace {shown(namespace)} must be a tuple of strings, e.g. "
            "('tenant:acme', 'user:alice', 'fact')."
        )
    return _parsed(tuple(namespace))


@lru_cache(maxsize=4096)
def _parsed(namespace: tuple[str, ...]) -> TypedNamespace:
    """`parse_namespace` of a tuple of strings, remembered (a namespace that fails raises
    each time: errors are not kept)."""
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
            if (near := misspelt_kind(kind)) is not None:
                hint += f" (did you mean {near!r}?)"
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

    Raises:
        InvalidNamespace: an id that is not a valid one (not a string, too long, a ':'), or
            no `tenant_id`.
        UnknownKind: `kind` is not a memory kind.
    """
    if not isinstance(kind, str) or kind not in KINDS:
        raise UnknownKind(
            f"memory_namespace: kind={shown(kind)} is not a memory kind; use one of "
            f"{', '.join(KINDS)}."
        )
    for what, ident in (("tenant_id", tenant_id), ("user_id", user_id),
                        ("agent_id", agent_id)):
        if ident is None and what == "tenant_id":
            raise InvalidNamespace(
                "memory_namespace: tenant_id=None; every namespace has a tenant: give its id "
                "as a string, e.g. tenant_id='acme'."
            )
        if ident is not None and not isinstance(ident, str):
            raise InvalidNamespace(
                f"memory_namespace: {what} must be a string, not {type(ident).__name__} "
                f"({shown(ident, 60)}).")
    namespace = (*Scope(tenant_id, user_id, agent_id).labels(), kind)
    parse_namespace(namespace)
    return namespace


# ----------------------------------------------------------------------------- a run's scope

AUTH_USER_KEY = "langgraph_auth_user_id"
"""The `configurable` key where the LangGraph server puts the authenticated user's identity."""
_CONFIG_ID_RULE = "1-128 characters without ':' or control characters"


def _given(configurable: Mapping[str, Any], key: str) -> str | None:
    """A `configurable` id as text: a string, an int or a UUID; None, empty or blank means
    absent.

    Example:
        >>> _given({"user_id": 42}, "user_id"), _given({"user_id": " "}, "user_id")
        ('42', None)
        >>> _given({"user_id": ["alice"]}, "user_id")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: configurable['user_id'] is a list ...

    Raises:
        ConfigurationError: any other type (a list, bytes, a bool, a float), which would name
            a scope by its printed form.
    """
    value = configurable.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, uuid.UUID)):
        raise ConfigurationError(
            f"configurable[{key!r}] is a {type(value).__name__} ({value!r:.60}), not an id: "
            "send a string (an int or a UUID is turned into one)."
        )
    text = str(value)
    return text if text.strip() else None


def scope_from_config(config: RunnableConfig | None) -> Scope:
    """The caller's scope from `configurable` (`tenant_id`, `user_id`, `agent_id`).

    Empty or blank values count as absent (the LangGraph server sends `"user_id": ""` when
    it runs without authentication). Without a `tenant_id` the tenant is "default". The user
    is the server's authenticated user (`langgraph_auth_user_id`) when there is one, so a
    client cannot name another user; else `user_id`; else memory is scoped to the thread
    (`thread-<thread_id>`), so anonymous callers never share memory.

    Ids are taken exactly as given: emails (`alice@example.com`), domains (`acme.io`), UUIDs.

    Example:
        >>> scope_from_config({"configurable": {"tenant_id": "acme", "user_id": "",
        ...                                     "thread_id": "t1"}})
        Scope(tenant_id='acme', user_id='thread-t1', agent_id=None)
        >>> scope_from_config({"configurable": {"user_id": "alice@example.com"}}).user_id
        'alice@example.com'

    Raises:
        ConfigurationError: an id that cannot name a scope (over 128 characters, a ':' or a
            control character), or a user id starting with `thread-` (reserved for callers
            that name no user); the message names the `configurable` key.
    """
    configurable = (config or {}).get("configurable", {}) or {}
    tenant = _checked(configurable, "tenant_id", "tenant")
    agent = _checked(configurable, "agent_id", "agent")
    user = _checked(configurable, AUTH_USER_KEY, "user") or _checked(
        configurable, "user_id", "user")
    if user is not None and user.startswith(THREAD_USER):
        key = AUTH_USER_KEY if _given(configurable, AUTH_USER_KEY) else "user_id"
        raise ConfigurationError(
            f"configurable[{key!r}]={user!r:.80}: user ids starting with {THREAD_USER!r} are "
            "reserved for callers that name no user (their memory is their thread's, "
            f"{THREAD_USER}<thread_id>), so a caller could otherwise read an anonymous "
            "thread's memory by naming it. Send another user id, or none.")
    if user is None and (thread := _given(configurable, "thread_id")):
        user = f"{THREAD_USER}{thread}"
        if not is_valid_id(user):
            raise ConfigurationError(
                f"No user_id, so memory is scoped to the thread, but configurable['thread_id']"
                f"={thread!r:.80} does not make a valid user id ({user!r:.80}): ids are "
                f"{_CONFIG_ID_RULE}. Send a user_id, or use thread ids without ':'."
            )
    return Scope(tenant or "default", user, agent)


def _checked(configurable: Mapping[str, Any], key: str, what: str) -> str | None:
    """A `configurable` id (None when absent), refused when it cannot name a scope."""
    value = _given(configurable, key)
    if value is not None and not is_valid_id(value):
        raise ConfigurationError(
            f"configurable[{key!r}]={value!r:.80} is not a valid {what} id: ids are "
            f"{_CONFIG_ID_RULE} (emails, domains and UUIDs are fine). Send another id, or map "
            "yours to one (a hash of it, for instance)."
        )
    return value
