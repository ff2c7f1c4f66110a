"""The Python trigram similarity is pg_trgm's: the same scores on the embedded Postgres."""

from __future__ import annotations

import os
import random
import string
from typing import Any

import pytest

from langgraph_typed_memory.entities import similarity, trigrams
from tests.conftest import fresh_database

pytestmark = pytest.mark.postgres

PAIRS = [
    ("Volkswagen", "Volkswagon"), ("Volkswagen", "volkswagen"), ("VW", "Volkswagen"),
    ("Acme Corporation Ltd", "ACME corporation, ltd."), ("Sarah", "Sara"), ("Sarah Chen", "Sarah"),
    ("Priya Patel", "Ms. Patel"), ("Kubernetes", "Kubernets"), ("Barcelona", "Barcelonna"),
    ("the platform team", "Platform Team"), ("New York City", "NYC"), ("a", "a"), ("", "x"),
    ("", ""), ("!!!", "???"), ("AT&T", "at t"), ("O'Brien", "OBrien"), ("foo_bar", "foo bar"),
    ("Jean-Luc", "jean luc"), ("x1 2y", "X1 2Y"), ("Tchaikovsky", "Tchaikovksy"),
    ("Christina", "Christine"), ("Daniel", "Danielle"), ("Meta", "Metabase"),
    ("International Business Machines", "IBM"), ("  spaced   out  ", "spaced out"),
    ("abcabcabc", "abc"), ("Q3 2024 plan", "q3 plan 2024"), ("rm -rf /", "rm rf"),
    ("Zürich", "Zurich"), ("Müller", "MÜLLER"), ("São Paulo", "Sao Paulo"), ("Łódź", "Lodz"),
    ("İstanbul", "istanbul"), ("straße", "STRASSE"), ("Ἀθῆναι", "ἀθῆναι"),
]


def _random_pairs(n: int) -> list[tuple[str, str]]:
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "  -_.,'&"
    words = ["sarah", "Sarah", "chen", "acme", "corp", "volkswagen", "vw", "team", "lena"]

    def text() -> str:
        if rng.random() < 0.5:
            return " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))

    return [(text(), text()) for _ in range(n)]


@pytest.fixture(scope="module")
def trgm_conn(request: pytest.FixtureRequest) -> Any:
    if os.environ.get("TYPED_MEMORY_SKIP_POSTGRES"):
        pytest.skip("TYPED_MEMORY_SKIP_POSTGRES is set: no embedded Postgres in this run")
    import psycopg

    url = fresh_database(request.getfixturevalue("pg_server"))
    conn = psycopg.connect(url, autocommit=True)
    available = conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'").fetchone()
    if available is None:
        conn.close()
        pytest.skip("the embedded Postgres has no pg_trgm extension to compare with")
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    yield conn
    conn.close()


def test_similarity_matches_pg_trgm(trgm_conn: Any) -> None:
    pairs = PAIRS + _random_pairs(300)  # float8: the exact value of the 4-byte result
    rows = trgm_conn.execute(
        "SELECT similarity(a, b)::float8 FROM unnest(%s::text[], %s::text[]) AS t(a, b)",
        ([a for a, _ in pairs], [b for _, b in pairs])).fetchall()
    mismatches = [(a, b, row[0], similarity(a, b)) for (a, b), row in zip(pairs, rows,
                                                                          strict=True)
                  if row[0] != similarity(a, b)]
    assert not mismatches


def test_trigrams_match_show_trgm(trgm_conn: Any) -> None:
    """ASCII texts (pg_trgm shows a trigram of other letters as a hash of its bytes)."""
    for text, _ in (p for p in PAIRS if p[0].isascii()):
        (shown,) = trgm_conn.execute("SELECT show_trgm(%s)", (text,)).fetchone()
        assert set(shown) == trigrams(text), text


def test_threshold_decisions_match(trgm_conn: Any) -> None:
    """`similarity(a, b) >= 0.85` as SQL decides it is the Python decision."""
    for a, b in PAIRS:
        (sql,) = trgm_conn.execute("SELECT similarity(%s, %s) >= 0.85", (a, b)).fetchone()
        assert sql == (similarity(a, b) >= 0.85), (a, b)
