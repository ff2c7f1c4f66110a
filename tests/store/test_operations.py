"""What docs/operations.md promises about Postgres roles: the application can run as a role
with only SELECT, INSERT, UPDATE and DELETE once an owner has run the migrations."""

from __future__ import annotations

import os

import psycopg
import pytest

from langgraph_typed_memory import PostgresMemoryStore
from tests.conftest import fresh_database, hash_index

pytestmark = pytest.mark.skipif(bool(os.environ.get("TYPED_MEMORY_SKIP_POSTGRES")),
                                reason="needs the embedded Postgres")

FACTS = ("tenant:acme", "user:alice", "fact")


def test_a_dml_only_role_runs_setup_and_the_store_after_the_owner_migrated(pg_server):
    url = fresh_database(pg_server)
    with PostgresMemoryStore.from_conn_string(url, index=hash_index()) as owner:
        owner.setup()
    role = f"app_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP ROLE IF EXISTS "{role}"')
        admin.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD 'pw'")
        admin.execute(f'GRANT USAGE ON SCHEMA public TO "{role}"')
        admin.execute('REVOKE CREATE ON SCHEMA public FROM PUBLIC')
        admin.execute(
            f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "{role}"')
    app_url = psycopg.conninfo.make_conninfo(url, user=role, password="pw")
    with PostgresMemoryStore.from_conn_string(app_url, index=hash_index()) as app:
        app.setup()  # up to date: only reads
        app.put(FACTS, "city", {"subject": "alice", "predicate": "home_city",
                                "content": "Alice lives in Lyon."})
        assert [h.key for h in app.search(FACTS, query="Lyon")] == ["city"]
        assert app.check_invariants().ok
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.conn.execute("CREATE TABLE intruder (x int)")
