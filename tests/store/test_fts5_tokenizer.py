"""The tokenizer run in this process against FTS5's own `porter unicode61`.

SQLite's search caches tokenize texts and query terms in Python (`index/fts5.Tokenizer`:
FTS5's porter stemmer ported, unicode61 with each character outside ASCII learned from FTS5).
A query token that differs from the one the full-text index holds by a single byte finds
nothing, so the tokens must be FTS5's, byte for byte: here every text's tokens, in order, are
compared with those FTS5 indexes for the same text bound as a value (as the full-text tables'
triggers write it), over English words and suffix combinations that exercise every porter
rule, every character of the Basic Multilingual Plane in several positions, and random texts
mixing scripts, case, diacritics (composed and combining), digits and separators.
"""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from langgraph_typed_memory.scoring import query_terms
from langgraph_typed_memory.store.core.protocol import Plan, Reads, Sql, interleave
from langgraph_typed_memory.store.index.fts5 import MAX_TOKEN_BYTES, TOKENIZE, Tokenizer
from langgraph_typed_memory.store.sqlite.store import connect_sqlite

ROOT = Path(__file__).resolve().parents[2]
SUFFIXES = [
    "s", "es", "ies", "sses", "ss", "ed", "eed", "ing", "y", "ational", "tional", "enci",
    "anci", "izer", "logi", "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator",
    "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "ical", "ness",
    "icate", "iciti", "ful", "ative", "alize", "al", "ance", "ence", "er", "ic", "able", "ible",
    "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou", "ism", "ate", "iti", "ous",
    "ive", "ize", "e", "ll", "at", "bl", "iz",
]
SCRIPTS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞßŒœŠšŸİıĞğŞşŁłĳﬁﬂ",
    "абвгдежзийклмнопрстуфхцчшщъыьэюяАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ",
    "αβγδεζηθικλμνξοπρσςτυφχψωΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩάέήίόύώΐΰ",
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年日本語ひらがなカタカナ한국어",
    "\u0300\u0301\u0302\u0303\u0308\u030a\u0327\u0345\u0483\u05b0\u064b\u093c\u20d7",
    "٠١٢٣٤٥٦٧٨٩०१२३४५६७८९１２３ＡＢＣａｂｃ²³¹½ⅠⅡⅢ",
    "🙂🎉👍🏽‍♀️𝐀𝐁𝐂𝔸𝕏𐐀𐐨\U00010400\U0001f600\U00020000",
    " \t\n\u00a0\u2002\u2003\u200b\u200d\u2014\u2013\u2019\u201c\u00bf¡§¶©®™€£¥°·•…\ufeff"
    "\ufffe\uffff\ufffd_-.,;:!?'\"()[]{}<>/\\|@#$%^&*+=~`\x00\x01\x7f",
]
"""Characters the random texts are drawn from: ASCII, Latin with diacritics and ligatures,
Cyrillic, Greek, CJK and Korean, combining marks, digits of other scripts and fullwidth
forms, characters outside the BMP, separators and controls (NUL and U+FFFE among them)."""


def _run(conn: sqlite3.Connection, plan: Plan[Any], seen: list[Sql] | None = None) -> Any:
    """Answer a plan's statements on the connection (recording them in `seen`); its value."""
    try:
        request = next(plan)
        while True:
            steps = request.steps if isinstance(request, Reads) else (request,)
            if seen is not None:
                seen.extend(steps)
            answers = [conn.execute(s.text, s.params).fetchall() for s in steps]
            request = plan.send(answers if isinstance(request, Reads) else answers[0])
    except StopIteration as stop:
        return stop.value


@pytest.fixture()
def conn() -> Iterator[sqlite3.Connection]:
    connection = connect_sqlite(":memory:")
    yield connection
    connection.close()


def _fts5(conn: sqlite3.Connection, texts: Sequence[str | None]) -> list[list[str]]:
    """FTS5's tokens of each text, in order, as a full-text table of the store's tokenizer
    indexes it (each text bound as a value, as the triggers write `search_text`)."""
    conn.execute("DROP TABLE IF EXISTS temp.reference_vocab")
    conn.execute("DROP TABLE IF EXISTS temp.reference")
    conn.execute(f"CREATE VIRTUAL TABLE temp.reference USING fts5(x, tokenize='{TOKENIZE}')")
    conn.execute("CREATE VIRTUAL TABLE temp.reference_vocab "
                 "USING fts5vocab(temp, reference, instance)")
    conn.executemany("INSERT INTO temp.reference (rowid, x) VALUES (?, ?)",
                     [(i + 1, text) for i, text in enumerate(texts)])
    found: list[list[tuple[int, str]]] = [[] for _ in texts]
    for doc, offset, term in conn.execute(  # porter may cut a character's bytes: as bytes
            "SELECT doc, offset, CAST(term AS BLOB) FROM temp.reference_vocab"):
        found[doc - 1].append((offset, term.decode(errors="surrogateescape")))
    return [[term for _, term in sorted(tokens)] for tokens in found]


def _split(conn: sqlite3.Connection, tokenizer: Tokenizer, texts: Sequence[str]
           ) -> list[list[str]]:
    """The tokenizer's tokens of each text, its new characters learned first."""
    _run(conn, tokenizer.tokens(["".join(sorted(set("".join(texts))))]))
    return [tokenizer.split(text) for text in texts]


def _words() -> list[str]:
    """English words of the repository's docs and sources, and seeded random stems with one
    to three porter suffixes: every rule of every step, its condition met or not."""
    words: set[str] = set()
    for path in [*ROOT.glob("docs/*.md"), *ROOT.glob("langgraph_typed_memory/**/*.py")]:
        words |= set(re.findall(r"[a-z0-9]+", path.read_text(encoding="utf-8").lower()))
    rng = random.Random(5)
    letters = "aeiouybcdfghjklmnpqrstvwxz"
    for _ in range(60_000):
        stem = "".join(rng.choice(letters) for _ in range(rng.randint(0, 7)))
        words.add(stem + "".join(rng.choices(SUFFIXES, k=rng.randint(0, 3))))
    words |= {a + b + c for a in "aeybstl" for b in "aeybstl" for c in "aeybstl"}
    return sorted(w for w in words if w)


def test_porter_stems_as_fts5(conn: sqlite3.Connection) -> None:
    words = _words()
    assert len(words) > 50_000
    tokenizer = Tokenizer()
    assert [tokenizer.split(w) for w in words] == _fts5(conn, words)


def test_every_bmp_character_as_fts5(conn: sqlite3.Connection) -> None:
    """Each character of the Basic Multilingual Plane (surrogates aside) starting, inside and
    ending a word, between words and alone, with case and porter suffixes around it."""
    chars = [chr(c) for c in range(0x80, 0x10000) if not 0xD800 <= c <= 0xDFFF]
    texts = [f"Ab{c}Cd {c}run{c}ning x{c} {c}y {c} {c}{c}ies" for c in chars]
    assert _split(conn, Tokenizer(), texts) == _fts5(conn, texts)


def test_random_unicode_texts_as_fts5(conn: sqlite3.Connection) -> None:
    rng = random.Random(9)
    texts = []
    for _ in range(3000):
        pools = rng.sample(SCRIPTS, rng.randint(1, 4))
        texts.append("".join(rng.choice(rng.choice(pools)) if rng.random() > 0.15
                             else rng.choice(SUFFIXES) for _ in range(rng.randint(0, 60))))
    tokenizer = Tokenizer()
    assert _split(conn, tokenizer, texts) == _fts5(conn, texts)
    lengths, segment = _run(conn, tokenizer.postings([*texts, None]))
    reference = _fts5(conn, texts)
    assert lengths.tolist() == [len(tokens) for tokens in reference] + [0]
    for token in {t for tokens in reference for t in tokens}:
        held = [(i, tokens.count(token)) for i, tokens in enumerate(reference)
                if token in tokens]
        rows, counts = segment.postings(token)
        assert list(zip(rows.tolist(), counts.tolist(), strict=True)) == held
    # the tokens a record keeps (`joined`, made as it is written) split back to FTS5's, and
    # postings made from them, from some or from none, are the same
    joined = [tokenizer.joined(text) for text in texts]
    assert [[] if j is None else j.split(" ") for j in joined] == reference
    some = [j if i % 2 else None for i, j in enumerate(joined)]
    for kept in (joined, some):
        again, other = _run(conn, tokenizer.postings([*texts, None], [*kept, None]))
        assert again.tolist() == lengths.tolist()
        assert other.terms == segment.terms
        for mine, theirs in ((other.starts, segment.starts), (other.rows, segment.rows),
                             (other.counts, segment.counts)):
            assert mine.tolist() == theirs.tolist()


def test_query_terms_as_fts5(conn: sqlite3.Connection) -> None:
    """The tokens of a query's terms (`query_terms`: lower-cased by Python, whose `lower`
    differs from FTS5's folding: `İ` gives `i` and a combining dot) are FTS5's."""
    rng = random.Random(13)
    queries = ["".join(rng.choice(rng.choice(SCRIPTS)) for _ in range(rng.randint(1, 40)))
               for _ in range(500)]
    queries += ["İstanbul'da ŞEKER", "Crème BRÛLÉE naïve café", "Straße STRASSE ﬁnance",
                "ＡＢＣ１２３ fullwidth", "Ελληνικά ΣΟΦΟΣ", "run_running__ran"]
    terms = sorted({t for query in queries for t in query_terms(query)})
    tokens = _run(conn, Tokenizer().tokens(terms))
    assert [list(t) for t in tokens] == _fts5(conn, terms)


def test_long_tokens_are_cut_as_fts5_cuts_them(conn: sqlite3.Connection) -> None:
    texts = ["a" * (MAX_TOKEN_BYTES + 10) + " b", "é" * (MAX_TOKEN_BYTES // 2 + 3),
             "running" * 9, "x" * 64 + "ing", "x" * 61 + "ing",
             "中" * (MAX_TOKEN_BYTES // 3 + 5) + " c"]
    tokenizer = Tokenizer()
    assert _split(conn, tokenizer, texts) == _fts5(conn, texts)
    # the tokens a record keeps: the same, but none where the cut split a character (the
    # token's bytes are no UTF-8 text a database takes): that record is tokenized when read
    kept = [tokenizer.joined(text) for text in texts]
    assert kept[-1] is None and [k.split(" ") for k in kept[:-1]] == [
        tokenizer.split(t) for t in texts[:-1]]


def test_statements_only_for_new_characters(conn: sqlite3.Connection) -> None:
    """ASCII needs no statement; a character outside ASCII is probed once, in one round of
    statements for all the new characters of a call, and the probe table is emptied."""
    tokenizer = Tokenizer()
    seen: list[Sql] = []
    assert _run(conn, tokenizer.tokens(["Running", "foo_bar", "_"]), seen) == [
        ("run",), ("foo", "bar"), ()]
    assert _run(conn, tokenizer.postings(["Red tulips", None, "ponies"]), seen)[0].tolist() == [
        2, 0, 1]
    assert seen == []
    assert _run(conn, tokenizer.tokens(["crème", "brûlée"]), seen) == [("creme",), ("brule",)]
    inserts = [s for s in seen if s.text.startswith("INSERT")]
    assert len(inserts) == 2  # the probes of è, û and é, and the table emptied
    seen.clear()
    assert _run(conn, tokenizer.tokens(["crèmè", "éé"]), seen) == [("creme",), ("ee",)]
    lengths, _ = _run(conn, tokenizer.postings(["Crème brûlée, été"]), seen)
    assert seen == [] and lengths.tolist() == [3]
    assert conn.execute("SELECT count(*) FROM temp.memory_tokenizer_instances").fetchone() == (
        0,)


def test_interleaved_probes_keep_their_own_tokens(conn: sqlite3.Connection) -> None:
    """The reads of a batch run interleaved: plans probing new characters at once (their
    probe texts in the table together) each learn their own, and the last out empties it;
    another store's tokenizer on the connection (after a probe left unfinished) too."""
    tokenizer = Tokenizer()
    texts = [["Ünïcödé çàfé"], ["Ωμέγα Straße"], ["Ünïcödé Ωμέγα"]]
    together = _run(conn, interleave([tokenizer.postings(x) for x in texts]))
    for (lengths, segment), x in zip(together, texts, strict=True):
        reference = _fts5(conn, x)
        assert lengths.tolist() == [len(reference[0])]
        assert sorted(segment.terms) == sorted(set(reference[0]))
    assert conn.execute("SELECT count(*) FROM temp.memory_tokenizer_instances").fetchone() == (
        0,)
    unfinished = Tokenizer().tokens(["ǅungla"])
    next(unfinished)  # its probe written, never read back
    other = Tokenizer()
    assert _run(conn, other.tokens(["ǅungla", "ŉ"])) == [tuple(t) for t in _fts5(
        conn, ["ǅungla", "ŉ"])]


def test_probe_of_an_unexpected_tokenizer_is_refused() -> None:
    from langgraph_typed_memory.store.index.unicode61 import Unicode61

    with pytest.raises(ValueError, match="not a unicode61 tokenizer"):
        Unicode61().learn(["é"], [["1é"], []])
