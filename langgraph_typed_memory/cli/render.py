"""Plain-text tables and JSON for the CLI's output."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

__all__ = ["table", "short_value", "when", "to_json", "jsonable", "scope_label"]

_TEXT_FIELDS = ("content", "summary", "rule", "quote", "title", "text", "value")


def when(dt: datetime | str | None) -> str:
    """A timestamp to the second, in UTC.

    Example:
        >>> from datetime import UTC, datetime
        >>> when(datetime(2026, 1, 2, 3, 4, 5, 600, tzinfo=UTC))
        '2026-01-02 03:04:05'
    """
    if dt is None:
        return "-"
    if isinstance(dt, str):
        dt = datetime.fromisoformat(dt)
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def short_value(value: Any, width: int = 60) -> str:
    """The most telling part of a record's value on one line, cut to `width` characters.

    Example:
        >>> short_value({"subject": "alice", "content": "Alice lives in Lyon."})
        'Alice lives in Lyon.'
        >>> short_value({"value": {"a": 1}}, width=8)
        '{"a": 1}'
        >>> short_value("x" * 20, width=8)
        'xxxxxxx…'
        >>> short_value({"name": "Volkswagen", "type": "organisation", "aliases": ["VW"],
        ...              "links": []})
        'Volkswagen (organisation; also VW)'
    """
    text: Any = value
    if isinstance(value, Mapping) and isinstance(value.get("name"), str) and "links" in value:
        text = _entity_line(value)  # an entity record: its name, type and other names
    elif isinstance(value, Mapping):
        text = next((value[f] for f in _TEXT_FIELDS if value.get(f) not in (None, "")), value)
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _entity_line(value: Mapping[str, Any]) -> str:
    about = [str(value["type"])] if value.get("type") else []
    if value.get("aliases"):
        about.append("also " + ", ".join(map(str, value["aliases"])))
    return f"{value['name']} ({'; '.join(about)})" if about else str(value["name"])


def scope_label(scope: Mapping[str, str | None]) -> str:
    """A record's scope as namespace labels joined by ``/``.

    Example:
        >>> scope_label({"tenant_id": "acme", "user_id": "alice", "agent_id": None})
        'tenant:acme/user:alice'
    """
    labels = [f"tenant:{scope['tenant_id']}"]
    if scope.get("user_id") is not None:
        labels.append(f"user:{scope['user_id']}")
    if scope.get("agent_id") is not None:
        labels.append(f"agent:{scope['agent_id']}")
    return "/".join(labels)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows aligned under their headers.

    Example:
        >>> print(table(["key", "kind"], [["tone", "preference"], ["city", "fact"]]))
        key   kind
        tone  preference
        city  fact
    """
    cells = [[str(c) for c in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    return "\n".join(lines)


def jsonable(obj: Any) -> Any:
    """`obj` made of JSON types: dataclasses, items, tuples, sets and datetimes converted.

    Example:
        >>> from datetime import UTC, datetime
        >>> jsonable({"at": datetime(2026, 1, 1, tzinfo=UTC), "ids": ("a", "b")})
        {'at': '2026-01-01T00:00:00+00:00', 'ids': ['a', 'b']}
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return jsonable({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if hasattr(obj, "dict") and callable(obj.dict) and hasattr(obj, "namespace"):
        return jsonable(obj.dict())  # LangGraph items and MemoryItem
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, datetime):
        return obj.isoformat()
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def to_json(obj: Any) -> str:
    """Indented JSON of `obj` (see `jsonable`).

    Example:
        >>> print(to_json({"ok": True}))
        {
          "ok": true
        }
    """
    return json.dumps(jsonable(obj), indent=2, ensure_ascii=False)
