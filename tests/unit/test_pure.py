"""Pure decisions, tested without a database: grammar, schemas, scoring, configuration."""

from __future__ import annotations

from typing import Any

import pytest

from langgraph_typed_memory import (
    ConfigurationError,
    InvalidNamespace,
    Scope,
    UnknownKind,
    memory_namespace,
    parse_namespace,
)
from langgraph_typed_memory.config import normalize_index, normalize_retrieval
from langgraph_typed_memory.lifecycle import initial_status
from langgraph_typed_memory.namespaces import is_typed
from langgraph_typed_memory.schemas import content_hash, validate_record
from langgraph_typed_memory.scoring import freshness, fuse, matches_filter, query_terms
from langgraph_typed_memory.store.core.search import visible_scope_sql
from tests.fake_embeddings import HashEmbeddings


@pytest.mark.parametrize(
    ("namespace", "scope", "kind"),
    [
        (("tenant:a", "policy"), Scope("a"), "policy"),
        (("tenant:a", "user:u", "fact"), Scope("a", "u"), "fact"),
        (("tenant:a", "agent:x", "procedure"), Scope("a", None, "x"), "procedure"),
        (("tenant:a", "user:u", "agent:x", "episode"), Scope("a", "u", "x"), "episode"),
    ],
)
def test_grammar_parses(namespace, scope, kind):
    parsed = parse_namespace(namespace)
    assert (parsed.scope, parsed.kind) == (scope, kind)
    assert parsed.namespace() == namespace
    assert memory_namespace(kind, tenant_id=scope.tenant_id, user_id=scope.user_id,
                            agent_id=scope.agent_id) == namespace


@pytest.mark.parametrize(
    ("namespace", "error"),
    [
        (("tenant:a",), UnknownKind),
        (("tenant:a", "user:u"), UnknownKind),
        (("tenant:a", "facts"), UnknownKind),
        (("tenant:a", "user:u", "user:v", "fact"), InvalidNamespace),
        (("tenant:a", "agent:x", "user:u", "fact"), InvalidNamespace),
        (("tenant:a", "team:x", "fact"), InvalidNamespace),
        (("tenant:a:b", "fact"), InvalidNamespace),
        (("tenant:" + "x" * 129, "fact"), InvalidNamespace),
    ],
)
def test_grammar_rejects_with_the_label(namespace, error):
    with pytest.raises(error) as info:
        parse_namespace(namespace)
    assert repr(namespace)[:40] in str(info.value)


@pytest.mark.parametrize("ids", [{"tenant_id": 7}, {"tenant_id": "a", "user_id": 5},
                                 {"tenant_id": "a", "agent_id": b"bot"}])
def test_memory_namespace_takes_string_ids(ids):
    with pytest.raises(InvalidNamespace, match="must be a string"):
        memory_namespace("fact", **ids)


def test_untyped_is_not_typed():
    assert not is_typed(("memories", "alice")) and not is_typed(())
    assert is_typed(("tenant:acme",))


def test_visibility_sql_widens_only_upwards():
    sql, params = visible_scope_sql(Scope("a", "u"), "fact", "m.status = 'active'")
    assert sql.count(" OR ") == 1 and sql.count("m.agent_id IS NULL") == 2
    assert "m.user_id IS NULL" in sql and "m.user_id = ?" in sql
    assert params == ["fact", "a", "fact", "a", "u"]
    sql, params = visible_scope_sql(Scope("a", "u", "bot"), "fact", "m.status = 'active'")
    assert sql.count(" OR ") == 3 and params.count("u") == 2 and params.count("bot") == 2
    assert params[-4:] == ["fact", "a", "u", "bot"]  # the own cell's term comes last


def test_initial_status_rules():
    assert initial_status("fact", Scope("a")) == "provisional"
    assert initial_status("fact", Scope("a", None, "bot")) == "active"
    assert initial_status("preference", Scope("a")) == "active"


def test_content_hash_normalizes():
    assert content_hash("Alice  lives\nin LYON") == content_hash("alice lives in lyon")
    assert content_hash("a", "b") != content_hash("a b")


def test_record_defaults_and_derived_fields():
    rec = validate_record("episode", "e1", {"title": "T", "summary": "S", "key_steps": ["k"]},
                          ("tenant:a", "episode"))
    assert rec.value["compaction_tier"] == 0 and rec.embed_text == "T\nS"
    assert "k" in rec.search_text
    pref = validate_record("preference", "fmt", {"value": "json"}, ("tenant:a", "preference"))
    assert pref.value["key"] == "fmt" and pref.embed_text is None


def test_filter_semantics_match_langgraph():
    value = {"n": 3, "tags": ["a", "b"], "meta": {"x": 1, "y": 2}}
    assert matches_filter(value, {"n": 3, "meta": {"x": 1}})
    assert matches_filter(value, {"n": {"$gt": 2, "$lte": 3}, "tags": ["a", "b"]})
    assert not matches_filter(value, {"tags": ["a"]})
    assert not matches_filter(value, {"missing": {"$gt": 1}})
    assert matches_filter(value, {"missing": {"$ne": 1}})


def test_query_terms_are_safe_words():
    assert query_terms('"x" OR y* NEAR(a b) -- \'; DROP') == ["x", "y", "near", "b", "drop"]
    assert query_terms("?!") == []


def test_query_terms_drop_stop_words_unless_nothing_else_is_left():
    assert query_terms("What did the user say about Lyon?") == ["say", "lyon"]  # role word too
    assert query_terms("Where is it?") == ["where", "is", "it"]


def test_freshness_halves_per_half_life():
    assert freshness(0, 30) == 1.0
    assert freshness(60, 30) == pytest.approx(0.25)
    assert freshness(10_000, None) == 1.0


def _fuse(lexical, vector, **kw):
    args = {"weights": {"lexical": 1.0, "vector": 1.0}, "priors": {}, "freshness_weight": 0.0,
            "confidence_weight": 0.0, "tiers": (0.6, 0.3)}
    args.update(kw)
    return fuse(lexical, vector, **args)


def test_fusion_rewards_agreement_and_keeps_a_far_ahead_lexical_match():
    out = _fuse([("a", 10.0), ("b", 1.0), ("c", 0.5)], [("b", 0.9), ("c", 0.8), ("a", 0.1)])
    assert out[0].id == "b" or out[0].id == "a"
    assert {r.id for r in out} == {"a", "b", "c"}
    assert all(0.0 <= r.relevance <= 1.0 for r in out)
    rrf = _fuse([("a", 10.0), ("b", 1.0)], [("b", 0.9), ("a", 0.1)], method="rrf")
    assert rrf[0].relevance == pytest.approx(rrf[1].relevance)


def test_a_record_holding_the_questions_words_is_not_low_for_matching_fewer():
    # three facts; the question's words match two, one more strongly: min-max would give
    # the weaker match 0 on the full-text list
    lexical, vector = [("dog", 8.0), ("city", 3.0)], [("dog", 0.5), ("city", 0.4), ("job", 0.3)]
    out = {r.id: r for r in _fuse(lexical, vector, weights={"lexical": 1.5, "vector": 1.0})}
    assert out["city"].tier != "low" and out["job"].tier == "low"
    assert out["dog"].score > out["city"].score > out["job"].score  # the ranking is min-max's
    assert out["city"].score == pytest.approx(1.0 * 0.5 / 2.5)


def test_the_nearest_vector_is_not_high_when_full_text_ran_and_matched_nothing():
    vector = [("job", 0.3), ("city", 0.1)]
    alone = _fuse([], vector)
    searched = _fuse([], vector, searched=["lexical", "vector"])
    assert alone[0].tier == "high" and searched[0].tier != "high"
    assert [r.id for r in alone] == [r.id for r in searched]


def test_priors_lower_stale_and_unsure_memories():
    out = _fuse([("old", 1.0), ("new", 1.0)], [], priors={"old": (0.1, 1.0), "new": (1.0, 1.0)},
                freshness_weight=0.5)
    assert [r.id for r in out] == ["new", "old"]
    assert out[1].score == pytest.approx(out[1].relevance * 0.55)


def test_zero_weight_list_is_ignored():
    out = _fuse([("a", 5.0)], [("b", 0.9)], weights={"lexical": 0.0, "vector": 1.0})
    assert out[0].id == "b" and out[0].relevance == 1.0 and out[1].relevance == 0.0


def test_documented_retrieval_config_takes_effect():
    settings = normalize_retrieval({"candidate_depth": 100, "fusion": "rrf"})
    assert settings.candidate_depth == 100 and settings.fusion == "rrf"
    assert normalize_retrieval(None).half_lives_days["episode"] == 30.0


@pytest.mark.parametrize(
    "config",
    [{"candidate_depth": 0}, {"fusion": "max"}, {"freshness_weight": 2}, {"depth": 5},
     {"tier_thresholds": (0.2, 0.5)}, {"half_lives_days": {"fact": -1}}],
)
def test_bad_retrieval_config_is_named(config):
    with pytest.raises(ConfigurationError, match=next(iter(config))):
        normalize_retrieval(config)


def test_index_config_uses_langgraph_keys():
    settings = normalize_index({"dims": 8, "embed": HashEmbeddings(8), "fields": ["a.b", "$"]})
    assert settings is not None and settings.fields == ("a.b", "$")
    with pytest.raises(ConfigurationError, match="dims"):
        normalize_index({"embed": HashEmbeddings(8)})
    with pytest.raises(ConfigurationError, match="text_field"):
        normalize_index({"dims": 8, "embed": HashEmbeddings(8), "text_field": ["x"]})
    langgraph_sqlite = normalize_index({"dims": 8, "embed": HashEmbeddings(8),
                                        "text_fields": ["x"]})
    assert langgraph_sqlite is not None and langgraph_sqlite.fields == ("x",)


def _drive(plan, fail=(), groups=None):
    """Run a plan of `Sql`/`Reads`/`Begin`/`Commit` steps: a statement answers with its own
    text, or fails when its text is in `fail`. Returns (the statements' texts in order, the
    plan's value); `groups`, if given, collects the texts of each `Reads`."""
    from langgraph_typed_memory.store.core.protocol import Reads, Sql

    def one(step):
        text = step.text if isinstance(step, Sql) else type(step).__name__
        seen.append(text)
        return ([text], None) if text not in fail else (None, RuntimeError(text))

    seen, answer, error = [], None, None
    try:
        while True:
            step = plan.throw(error) if error else plan.send(answer)
            if isinstance(step, Reads):
                answers = [one(read) for read in step.steps]
                if groups is not None:
                    groups.append([read.text for read in step.steps])
                answer, error = [rows if err is None else err for rows, err in answers], None
            else:
                answer, error = one(step)
    except StopIteration as done:
        return seen, done.value


def test_interleaved_plans_keep_their_transactions_and_their_failures():
    from langgraph_typed_memory.store.core.protocol import Begin, Commit, Sql, interleave

    def reader(name):
        try:
            first = yield Sql(f"{name} 1")
        except RuntimeError:
            first = ["degraded"]  # a failed read the plan absorbs
        return first + (yield Sql(f"{name} 2"))

    def writer():
        yield Sql("w read")
        yield Begin()
        yield Sql("w write")
        yield Commit()
        return "written"

    groups: list[list[str]] = []
    steps, values = _drive(interleave([reader("a"), writer(), reader("b")]), fail={"b 1"},
                           groups=groups)
    assert steps == ["a 1", "w read", "b 1", "a 2", "Begin", "w write", "Commit", "b 2"]
    assert values == [["a 1", "a 2"], "written", ["degraded", "b 2"]]
    # The first turn's three reads go out together; "a 2", asked before the transaction,
    # goes alone ahead of it, and "b 2" alone after it.
    assert groups == [["a 1", "w read", "b 1"]]


def test_a_plans_own_reads_join_the_turns_round_trip():
    """A plan that asks for several reads at once (`Reads`) shares the turn's round trip with
    the other plans' statements, and gets its answers back in its order, a failed one in
    place, while the other plans get theirs."""
    from langgraph_typed_memory.store.core.protocol import Reads, Sql, interleave

    def several():
        first, second = yield Reads((Sql("r 1"), Sql("r 2")))
        return [first, second, (yield Sql("r 3"))]

    def single(name):
        return (yield Sql(f"{name} 1")) + (yield Sql(f"{name} 2"))

    groups: list[list[str]] = []
    steps, values = _drive(interleave([single("a"), several(), single("b")]), fail={"r 2"},
                           groups=groups)
    assert groups == [["a 1", "r 1", "r 2", "b 1"], ["a 2", "r 3", "b 2"]]
    assert values[0] == ["a 1", "a 2"] and values[2] == ["b 1", "b 2"]
    assert values[1][0] == ["r 1"] and values[1][2] == ["r 3"]
    assert isinstance(values[1][1], RuntimeError) and str(values[1][1]) == "r 2"
    # Alone in its turn, the plan's `Reads` goes out as it is.
    assert _drive(interleave([several()]), groups=(alone := []))[1] == [
        [["r 1"], ["r 2"], ["r 3"]]]
    assert alone == [["r 1", "r 2"]]


def test_waits_are_answered_after_every_plan_has_had_its_turn():
    """Plans that wait on background work (`Wait`: the query's embedding under way) let
    the other plans take their turn first: the turn's reads go out together, then the waits
    are answered in the plans' order, a failed future's error thrown into its plan. The sync
    driver blocks on the future; the async one awaits it (here set from another thread)."""
    import asyncio
    import threading
    from concurrent.futures import Future

    from langgraph_typed_memory.store.core.protocol import (
        Sql,
        Wait,
        drive_async,
        drive_sync,
        interleave,
    )

    log: list[Any] = []

    class Logged(Future):  # type: ignore[type-arg]
        def result(self, timeout: float | None = None) -> Any:
            log.append("wait")
            return super().result(timeout)

    def search(name: str, future: Future) -> Any:  # type: ignore[type-arg]
        counted = yield Sql(f"{name} counters")
        try:
            ranked = yield Wait(future)
        except RuntimeError as exc:
            ranked = [f"failed: {exc}"]
        return counted + ranked + (yield Sql(f"{name} page"))

    def lookup() -> Any:
        return (yield Sql("d1"))

    def plans(later: bool = False) -> Any:
        ranked, broken = Logged(), Logged()
        broken.set_exception(RuntimeError("b broke"))
        if later:
            threading.Timer(0.05, ranked.set_result, [["ranked a"]]).start()
        else:
            ranked.set_result(["ranked a"])
        return interleave([search("a", ranked), search("b", broken), lookup()])

    def execute(step: Sql) -> list[Any]:
        log.append(step.text)
        return [step.text]

    def reads(steps: Any) -> list[Any]:
        log.append([step.text for step in steps])
        return [[step.text] for step in steps]

    expected = [["a counters", "ranked a", "a page"], ["b counters", "failed: b broke", "b page"],
                ["d1"]]
    assert drive_sync(plans(), execute, None, lambda: None, reads=reads) == expected
    assert log == [["a counters", "b counters", "d1"], "wait", "wait", ["a page", "b page"]]

    async def aexecute(step: Sql) -> list[Any]:
        return execute(step)

    async def areads(steps: Any) -> list[Any]:
        return reads(steps)

    async def nothing() -> None:
        pass

    assert asyncio.run(drive_async(plans(later=True), aexecute, None, nothing,
                                   reads=areads)) == expected


def test_reads_run_one_by_one_when_sending_them_together_fails():
    """A failed statement in a round trip of several: each statement runs again alone, so
    that only its own plan sees the error."""
    from langgraph_typed_memory.store.core.protocol import Reads, Sql, _reads_sync

    sent = []

    def together(steps):
        sent.append([s.text for s in steps])
        raise RuntimeError("one of them failed")

    def execute(step):
        if step.text == "bad":
            raise ValueError("bad statement")
        return [(step.text,)]

    answers = _reads_sync(Reads((Sql("a"), Sql("bad"), Sql("c"))), execute, together)
    assert sent == [["a", "bad", "c"]]
    assert answers[0] == [("a",)] and answers[2] == [("c",)]
    assert isinstance(answers[1], ValueError)
    assert _reads_sync(Reads((Sql("a"), Sql("c"))), execute, lambda steps: [["x"], ["y"]]) \
        == [["x"], ["y"]]


def test_postgres_bulk_insert_types_every_record_column():
    """The one-statement record insert casts each column of the JSON rows: one type per
    column, the rows in one parameter."""
    from langgraph_typed_memory.store.core import queries as q
    from langgraph_typed_memory.store.postgres.dialect import _ROW_TYPES, SQL_INSERT_ROWS

    assert len(_ROW_TYPES) == q.SQL_INSERT_ROW.count("?")
    assert SQL_INSERT_ROWS.count("?") == 1
    assert SQL_INSERT_ROWS.count("(r.row ->> ") == len(_ROW_TYPES)
