"""Continuity across sessions: what session 1 taught, seen by session 2's prompt.

Scripted two-session scenarios are played through the memory chat graph
(`create_memory_chat_graph`, offline defaults: rule extractor, extractive responder and
summary; an `InMemorySaver` checkpointer). In session 1 (thread `<scenario>-1`) a user states
preferences, facts and corrections; an administrator may author tenant policies
(`store.put`, as policies are never promoted from chat). Session 2 is a new thread
(`<scenario>-2`) whose first message asks something that depends on session 1; its assembled
prompt (`memory_prompt`, the text of every message) is what is checked:

* statements: each expected value (a city, a language, a policy limit...) is in the prompt;
* corrections: the corrected, old value is absent from the prompt (and the new one present,
  counted with the statements); a correction counts only if the old value was remembered
  first (a version of a record session 1 wrote holds it, the turn log included), else it is
  listed as never learned;
* leaks: no prompt of any turn of any scenario contains a private value of another
  scenario's user (every scenario has its own user; the isolation pairs share a tenant, or a
  user id across two tenants); must be 0;
* prompt tokens per turn (the trace's `tokens.total`), both sessions.

Scenarios, reported per category:

* `continuity_cases.py` (most of them): written by category from how people phrase things
  (corrections with and without a marker, organisation statements, standing instructions,
  named people and pets, identifiers, statements buried in a longer turn, several in one
  turn, and turns only the turn log can carry), independently of the extractor's rules;
* `SCENARIOS` below: the first set (preferences and facts in the phrasings the rule
  extractor was first built for, basic corrections, tenant policies, isolation pairs).

`--scenarios FILE` plays another file's `CASES` (same form as `continuity_cases.py`) instead,
for sets kept outside the repository.

`--index local` gives the store the bundled offline MiniLM (`LocalEmbeddings`, hybrid
retrieval); `--index none` (the default of a bare store) retrieves facts lexically. Default:
both, one after the other.

Usage:
    python benchmarks/continuity.py                     # both backends, both index settings
    python benchmarks/continuity.py --backend sqlite --index none --quick --json out.json
    python benchmarks/continuity.py --backend sqlite --index local --scenarios other_cases.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from _common import Clock, log, machine, postgres_backend, sqlite_backend, torch_threads
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

TENANT = "cont"
QUICK_SCENARIOS = 8


@dataclass(frozen=True)
class Scenario:
    name: str
    category: str
    session1: tuple[str, ...]
    question: str
    expect: tuple[str, ...]
    """Values that must be in the session-2 prompt (one per session-1 statement)."""
    absent: tuple[str, ...] = ()
    """Corrected values that must not be in the session-2 prompt."""
    private: tuple[str, ...] = ()
    """Values only this user stated: no other user's prompt may contain them."""
    tenant: str = TENANT
    policies: tuple[tuple[str, dict[str, Any]], ...] = ()
    """Tenant policies authored before session 1 (key, value)."""
    policies_between: tuple[tuple[str, dict[str, Any]], ...] = ()
    """Tenant policies authored between the sessions (a new version of the same key)."""
    user: str = ""

    @property
    def user_id(self) -> str:
        return self.user or f"user-{self.name}"


def _s(name: str, category: str, session1: Sequence[str], question: str,
       expect: Sequence[str], absent: Sequence[str] = (), private: Sequence[str] | None = None,
       **kw: Any) -> Scenario:
    return Scenario(name, category, tuple(session1), question, tuple(expect), tuple(absent),
                    tuple(expect if private is None else private), **kw)


SCENARIOS: tuple[Scenario, ...] = (
    # ---- preferences (known-scope lookup: loaded exhaustively, whatever the question)
    _s("pref-language", "preference", ["Please always answer in French."],
       "How do I reset my router?", ["French"], private=()),
    _s("pref-format", "preference", ["I prefer answers in bullet points."],
       "What are the steps to renew a passport?", ["bullet points"], private=()),
    _s("pref-name", "preference", ["Call me Theodora."], "Can you draft a short email for me?",
       ["Theodora"]),
    _s("pref-tone", "preference", ["Keep your answers concise."],
       "Explain how vaccines work.", ["concise"], private=()),
    _s("pref-timezone", "preference", ["My timezone is America/Winnipeg."],
       "When should I schedule the call with the London office?", ["America/Winnipeg"]),
    _s("pref-units", "preference", ["Use metric units."], "How far is a half marathon?",
       ["metric"], private=()),
    _s("pref-json", "preference", ["I'd like responses in JSON."],
       "List three fruits that are high in vitamin C.", ["json"], private=()),
    _s("pref-dates", "preference", ["Write dates as DD/MM/YYYY."],
       "When is the next leap day?", ["DD/MM/YYYY"], private=()),
    _s("pref-instruction", "preference", ["From now on, always cite your sources."],
       "Is coffee bad for your health?", ["cite your sources"], private=()),
    # ---- facts (semantic discovery: ranked by the session-2 question)
    _s("fact-city", "fact", ["I live in Ljubljana."],
       "Any good restaurants near where I live?", ["Ljubljana"]),
    _s("fact-work", "fact", ["I work at Initech as a data engineer."],
       "Should I ask my employer for a raise in my current role?",
       ["Initech", "data engineer"], private=["Initech"]),
    _s("fact-allergy", "fact", ["I'm allergic to hazelnuts."],
       "Can you suggest a snack for my hike, given my allergy?", ["hazelnuts"]),
    _s("fact-diet", "fact", ["I'm pescatarian."],
       "What should I cook tonight for my diet?", ["pescatarian"]),
    _s("fact-dog", "fact", ["My dog's name is Bramble."],
       "Suggest a good toy for my dog.", ["Bramble"]),
    _s("fact-pets", "fact", ["I have three ferrets."],
       "How big a cage do my ferrets need?", ["three ferrets"]),
    _s("fact-age", "fact", ["I'm 34 years old."],
       "What retirement savings make sense at my age?", ["34"], private=()),
    _s("fact-partner", "fact", ["My partner's name is Ingrid."],
       "What gift could I buy my partner?", ["Ingrid"]),
    _s("fact-several", "fact",
       ["I live in Narva and I work at Skype.", "I'm a violinist."],
       "Which orchestra near where I live would take a musician like me who keeps a day job at "
       "my employer?",
       ["Narva", "Skype", "violinist"]),
    _s("fact-intro-name", "fact", ["Hi, I'm Anjali."], "Can you sign this card with my name?",
       ["Anjali"]),
    _s("fact-origin", "fact", ["I'm from Brazil."],
       "Which dishes from my country of origin could I cook?", ["Brazil"]),
    _s("fact-speaks", "fact", ["I speak Portuguese."],
       "Which podcasts could I follow in a language I speak?", ["Portuguese"],
       private=()),
    _s("fact-married", "fact", ["I'm married."],
       "Which tax filing status fits my relationship status?", ["married"], private=()),
    _s("fact-car", "fact", ["I drive a Tesla."], "How often should I service my car?",
       ["Tesla"]),
    _s("fact-daughter", "fact", ["We have a baby girl named Lily."],
       "What toys suit my baby girl?", ["Lily"]),
    _s("fact-wife", "fact", ["My wife is called Mirela."],
       "What should I get my wife for her birthday?", ["Mirela"]),
    # ---- corrections (the old value must be gone)
    _s("fix-city", "basic-correction",
       ["I live in Lisbon.", "Actually, I moved to Braga last month."],
       "What should I visit near where I live?", ["Braga"], absent=["Lisbon"]),
    _s("fix-employer", "basic-correction",
       ["I work at Initrode.", "I don't work at Initrode anymore, I work at Umbrella now."],
       "How do I introduce my employer at the conference?", ["Umbrella"],
       absent=["Initrode"]),
    _s("fix-name", "basic-correction", ["Call me Bobby.", "Actually, call me Robert."],
       "Please write my signature line.", ["Robert"], absent=["Bobby"]),
    _s("fix-occupation", "basic-correction",
       ["I'm a teacher.", "I'm no longer a teacher; I'm a principal now."],
       "What books would help me in my current job?", ["principal"],
       absent=["teacher"], private=()),
    _s("fix-format", "basic-correction", ["Use markdown.", "Actually, use plain text."],
       "Summarize the rules of chess.", ["plain text"], absent=["markdown"], private=()),
    _s("fix-color", "basic-correction",
       ["My favorite color is teal.", "Actually my favorite color is mauve."],
       "Which paint should I choose, given my favorite color?", ["mauve"], absent=["teal"]),
    _s("fix-language", "basic-correction",
       ["Please answer in Spanish.", "Actually, please answer in German."],
       "How do I boil an egg?", ["German"], absent=["Spanish"], private=()),
    _s("fix-age", "basic-correction", ["I'm 47.", "Oops, I'm 48, not 47."],
       "What retirement plan suits someone my age?", ["48"], absent=["47"], private=()),
    # The new content ("The user is no longer vegetarian.") names the old value: the old
    # content must be gone.
    _s("fix-diet-ended", "basic-correction", ["I'm vegetarian.", "I'm not vegetarian anymore."],
       "Suggest a dinner recipe that fits my diet.", ["no longer vegetarian"],
       absent=["user is vegetarian"]),
    _s("fix-language-instead", "basic-correction",
       ["Please answer in Italian.", "Actually, answer in Swedish instead."],
       "How do I make pancakes?", ["Swedish"], absent=["Italian"], private=()),
    _s("fix-cat-name", "basic-correction",
       ["I have a cat named Miso.", "Sorry, my cat is named Mochi, not Miso."],
       "Which treats would my cat like?", ["Mochi"], absent=["Miso"]),
    # ---- policies (authored by an administrator, never promoted from chat)
    _s("policy-refund", "policy", ["I bought a kettle last week."],
       "Can I get a refund for the kettle?", ["max_refund_usd", "250"], private=(),
       tenant="cont-policy-a",
       policies=(("refunds", {"value": {"max_refund_usd": 250}, "created_by": "ops"}),)),
    _s("policy-updated", "policy", ["I need help with my invoice."],
       "What discount can I get on my invoice?", ["max_discount_pct", "15"], absent=["7.5"],
       private=(), tenant="cont-policy-b",
       policies=(("discounts", {"value": {"max_discount_pct": 7.5}, "created_by": "ops"}),),
       policies_between=(("discounts", {"value": {"max_discount_pct": 15}, "version": 2,
                                        "created_by": "ops"}),)),
    # ---- isolation pairs (each must see only its own memory)
    _s("pair-city-a", "isolation", ["I live in Reykjavik."],
       "What is the weather like where I live?", ["Reykjavik"], tenant="cont-pairs"),
    _s("pair-city-b", "isolation", ["I live in Kinshasa."],
       "What is the weather like where I live?", ["Kinshasa"], tenant="cont-pairs"),
    _s("pair-dog-a", "isolation", ["My dog's name is Pickles."],
       "What should I feed my dog?", ["Pickles"], tenant="cont-pairs"),
    _s("pair-dog-b", "isolation", ["My dog's name is Waffles."],
       "What should I feed my dog?", ["Waffles"], tenant="cont-pairs"),
    _s("pair-tenant-a", "isolation", ["I work at Hooli."],
       "How do I ask my employer for a day off?", ["Hooli"], tenant="cont-acme", user="sam"),
    _s("pair-tenant-b", "isolation", ["I work at Vandelay Industries."],
       "How do I ask my employer for a day off?", ["Vandelay Industries"],
       tenant="cont-globex", user="sam"),
    _s("pair-name-a", "isolation", ["Call me Zephyrine."], "Say hello to me.", ["Zephyrine"],
       tenant="cont-pairs"),
    _s("pair-name-b", "isolation", ["Call me Octavian."], "Say hello to me.", ["Octavian"],
       tenant="cont-pairs"),
)


def from_case(case: dict[str, Any]) -> Scenario:
    """A scenario from a plain-data case (`continuity_cases.py`)."""
    return _s(str(case["name"]), str(case["category"]), case["session1"], str(case["question"]),
              case["expect"], case.get("absent") or (), case.get("private"))


def load_cases(path: Path) -> list[Scenario]:
    """The `CASES` of a Python file, as scenarios."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--scenarios {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [from_case(c) for c in module.CASES]


CASES_FILE = Path(__file__).with_name("continuity_cases.py")


def check_scenarios(scenarios: Sequence[Scenario]) -> None:
    """Private values must be unique, or a 'leak' could be a shared word."""
    for s in scenarios:
        for other in scenarios:
            if other is s:
                continue
            text = " ".join((*other.session1, other.question, *other.expect)).lower()
            clash = [v for v in s.private if v.lower() in text]
            if clash:
                raise SystemExit(f"scenario {s.name}: private {clash} also in {other.name}")


@dataclass
class Result:
    scenario: str
    category: str
    present: list[str]
    missing: list[str]
    corrected: list[str]
    not_corrected: list[str]
    never_learned: list[str]
    """Corrected values no session-1 prompt ever showed (the first statement was not
    remembered): the correction is vacuous and not counted either way."""
    leaks: list[str]
    prompt_tokens: list[int]
    """The trace's `tokens.total` of every turn, session 1 then session 2."""
    promotions: list[str] = field(default_factory=list)


def prompt_text(out: dict[str, Any]) -> str:
    from langgraph_typed_memory.turns import message_text

    return "\n".join(message_text(m) for m in out["memory_prompt"])


def play(store: Any, scenarios: Sequence[Scenario], clock: Clock) -> list[Result]:
    from langgraph.checkpoint.memory import InMemorySaver

    from langgraph_typed_memory.graph import create_memory_chat_graph

    graph = create_memory_chat_graph(store=store, checkpointer=InMemorySaver())
    prompts: dict[str, list[str]] = {}
    written: dict[str, set[tuple[tuple[str, ...], str]]] = {}
    tokens: dict[str, list[int]] = {}
    promotions: dict[str, list[str]] = {}
    session2: dict[str, str] = {}

    def turn(s: Scenario, thread: str, text: str) -> str:
        clock.now += timedelta(minutes=1)
        config: RunnableConfig = {"configurable": {
            "thread_id": f"{s.name}-{thread}", "tenant_id": s.tenant, "user_id": s.user_id}}
        out = graph.invoke({"messages": [HumanMessage(text)]}, config)
        prompt = prompt_text(out)
        prompts.setdefault(s.name, []).append(prompt)
        written.setdefault(s.name, set()).update(
            ((f"tenant:{s.tenant}", f"user:{s.user_id}", p["kind"]), p["key"])
            for p in out["memory_trace"].get("promotions", []) if p.get("key"))
        tokens.setdefault(s.name, []).append(out["memory_trace"]["tokens"]["total"])
        promotions.setdefault(s.name, []).extend(
            f"{p['kind']}:{p['outcome']}" for p in out["memory_trace"].get("promotions", []))
        return prompt

    def author(s: Scenario, policies: Sequence[tuple[str, dict[str, Any]]]) -> None:
        for key, value in policies:
            store.put((f"tenant:{s.tenant}", "policy"), key, value)

    for s in scenarios:  # every session 1 first: later users' memory exists during session 2
        author(s, s.policies)
        for text in s.session1:
            turn(s, "1", text)
    for s in scenarios:
        author(s, s.policies_between)
        session2[s.name] = turn(s, "2", s.question)

    results = []
    for s in scenarios:
        prompt = session2[s.name].lower()
        question = s.question.lower()
        # Every version of every record session 1 wrote (or an administrator authored),
        # superseded ones included.
        records = written.get(s.name, set()) | {
            ((f"tenant:{s.tenant}", "policy"), key) for key, _ in s.policies}
        learned = json.dumps([item.value for ns, key in sorted(records)
                              for item in store.history(ns, key)]).lower()
        remembered = [v for v in s.absent if v.lower() in learned]
        without_question = prompt.replace(question, "")
        foreign = [(o.name, v) for o in scenarios if o is not s for v in o.private]
        leaks = [f"{name}:{v}" for p in prompts[s.name] for name, v in foreign
                 if v.lower() in p.lower()]
        results.append(Result(
            s.name, s.category,
            present=[v for v in s.expect if v.lower() in prompt],
            missing=[v for v in s.expect if v.lower() not in prompt],
            corrected=[v for v in remembered if v.lower() not in without_question],
            not_corrected=[v for v in remembered if v.lower() in without_question],
            never_learned=[v for v in s.absent if v not in remembered],
            leaks=leaks, prompt_tokens=tokens[s.name], promotions=promotions[s.name],
        ))
    return results


def summary(results: Sequence[Result]) -> dict[str, Any]:
    statements = sum(len(r.present) + len(r.missing) for r in results)
    corrections = sum(len(r.corrected) + len(r.not_corrected) for r in results)
    tokens = [t for r in results for t in r.prompt_tokens]
    by_category: dict[str, dict[str, int]] = {}
    for r in results:
        c = by_category.setdefault(r.category, {"scenarios": 0, "statements": 0, "present": 0,
                                                "corrections": 0, "corrected": 0})
        c["scenarios"] += 1
        c["statements"] += len(r.present) + len(r.missing)
        c["present"] += len(r.present)
        c["corrections"] += len(r.corrected) + len(r.not_corrected)
        c["corrected"] += len(r.corrected)
    return {
        "scenarios": len(results),
        "statements": statements,
        "statements_present": sum(len(r.present) for r in results),
        "statements_share": round(sum(len(r.present) for r in results) / statements, 4),
        "corrections": corrections,
        "corrections_applied": sum(len(r.corrected) for r in results),
        "corrections_share": round(sum(len(r.corrected) for r in results) / corrections, 4)
        if corrections else None,
        "leaks": sum(len(r.leaks) for r in results),
        "turns": len(tokens),
        "prompt_tokens_mean": round(float(np.mean(tokens)), 1),
        "prompt_tokens_max": int(max(tokens)),
        "by_category": by_category,
        "missing": {r.scenario: r.missing for r in results if r.missing},
        "not_corrected": {r.scenario: r.not_corrected for r in results if r.not_corrected},
        "never_learned": {r.scenario: r.never_learned for r in results if r.never_learned},
        "leaked": {r.scenario: r.leaks for r in results if r.leaks},
    }


HEAD = ("| backend | index | scenarios | statements present | corrections applied | "
        "cross-user leaks | prompt tokens per turn (mean / max) |")


def table(runs: dict[str, dict[str, Any]]) -> str:
    lines = [HEAD, "|---" * (HEAD.count("|") - 1) + "|"]
    for name, s in runs.items():
        backend, index = name.split("/")
        corr = (f"{s['corrections_applied']}/{s['corrections']} ({s['corrections_share']:.2f})"
                if s["corrections"] else "")
        lines.append(
            f"| {backend} | {index} | {s['scenarios']} | {s['statements_present']}/"
            f"{s['statements']} ({s['statements_share']:.2f}) | {corr} | {s['leaks']} "
            f"| {s['prompt_tokens_mean']:.0f} / {s['prompt_tokens_max']} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--index", choices=("none", "local", "both"), default="both",
                        help="store without an index (lexical) or with the bundled MiniLM")
    parser.add_argument("--quick", action="store_true",
                        help=f"the first {QUICK_SCENARIOS} scenarios of each category")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the figures here")
    parser.add_argument("--scenarios", metavar="FILE", type=Path,
                        help="play this file's CASES instead of the project's scenarios")
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(arguments)
    every = load_cases(args.scenarios) if args.scenarios else [
        *load_cases(CASES_FILE), *SCENARIOS]
    scenarios = list(every)
    if args.quick:  # a few of each category, isolation pairs kept whole
        scenarios = [s for s in every if s.category == "isolation"][:4]
        for category in dict.fromkeys(s.category for s in every if s.category != "isolation"):
            scenarios += [s for s in every if s.category == category][:2]
    check_scenarios(scenarios)
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    indexes = ("none", "local") if args.index == "both" else (args.index,)
    meta: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/continuity.py", *arguments]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "scenarios": [s.name for s in scenarios],
        "load1": os.getloadavg()[0],
    }
    log(f"machine: {meta['machine']}")
    runs: dict[str, dict[str, Any]] = {}
    details: dict[str, list[dict[str, Any]]] = {}
    with ExitStack() as stack:
        stack.enter_context(torch_threads(1))
        pg = None
        clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))  # moved a minute per turn
        for backend in backends:
            for index_name in indexes:
                index = None
                if index_name == "local":
                    from langgraph_typed_memory import LocalEmbeddings

                    index = {"dims": 384, "embed": LocalEmbeddings(), "fields": ["text"]}
                if backend == "sqlite":
                    make = stack.enter_context(sqlite_backend(clock))(f"cont_{index_name}")
                else:
                    pg = pg or stack.enter_context(postgres_backend(clock))[0]
                    make = pg(f"cont_{index_name}")
                store = make(index=index)
                store.setup()  # type: ignore[attr-defined]
                log(f"{backend}, index {index_name}: {len(scenarios)} scenarios")
                results = play(store, scenarios, clock)
                name = f"{backend}/{index_name}"
                runs[name] = summary(results)
                details[name] = [asdict(r) for r in results]
                log(f"  {table({name: runs[name]}).splitlines()[-1]}")
    print(f"Continuity, {len(scenarios)} two-session scenarios")
    print(table(runs))
    for name, s in runs.items():
        for label in ("missing", "not_corrected", "never_learned", "leaked"):
            if s[label]:
                print(f"{name} {label}: {s[label]}")
    if args.json:
        report = {"meta": meta, "runs": runs, "details": details}
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
