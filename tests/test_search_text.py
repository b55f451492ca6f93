"""The search text kept next to each cached document (rendering/searchtext.py): a word
search answered from it prints exactly what one answered from the documents prints, for every
agent's documents, sub-agents and every query mode; a damaged search text is a miss; it leaves
the cache with its document; and it counts steps exactly like `Query.locate` matches them,
whatever the letters' case rules."""

from __future__ import annotations

import glob
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commands import search
from core import cache, parallel
from rendering import doccache, documents, searchtext
from helpers import run_main
from homes import agent_homes
from stores import build_home

QUERIES = [
    ["note.txt"],
    ["README.md", "--limit", "0"],
    ["NOTE.TXT scenario", "--limit", "0"],
    [r"note.txt \| hello", "--offset", "3", "--limit", "4"],
    ["survey src/web", "--limit", "0"],                       # a sub-agent's steps
    ["--regex", r"hello-claude-\d", "--limit", "0"],
    ["zyzzyva-not-here"],
    ["note.txt", "--limit", "1"],
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_home(tmp_path_factory.mktemp("search-text"))[0]


def search_texts(env) -> list[str]:
    return sorted(glob.glob(os.path.join(doccache.folder(env), "*" + searchtext.SEARCH_TEXT)))


def content(env, *args, as_json: bool = False) -> tuple[int, bytes]:
    result = run_main(env, ["search", "--content", *(["--json"] if as_json else []), *args])
    return result.returncode, result.stdout


def without_search_texts(env, *args, as_json: bool = False) -> tuple[int, bytes]:
    for path in search_texts(env):
        os.unlink(path)
    return content(env, *args, as_json=as_json)


@pytest.mark.parametrize("args", QUERIES, ids=lambda a: " ".join(a))
@pytest.mark.parametrize("as_json", [False, True], ids=["markdown", "json"])
def test_the_same_output_with_and_without_search_texts(store, args, as_json):
    """First from the documents alone (writing the search texts), then from the search texts,
    on the pool and on one core: byte for byte the same, exit status included."""
    first = without_search_texts(store, *args, as_json=as_json)
    assert search_texts(store), "the first search kept no search text"
    assert content(store, *args, as_json=as_json) == first
    pool = parallel.cores
    try:
        parallel.cores = lambda: 1
        assert content(store, *args, as_json=as_json) == first
    finally:
        parallel.cores = pool


@pytest.mark.parametrize("home", agent_homes(), ids=lambda h: h.agent)
def test_every_agents_documents_search_the_same_from_their_search_texts(tmp_path, home, monkeypatch):
    monkeypatch.setattr(parallel, "cores", lambda: 1)
    env = home.build(tmp_path)
    for words in (home.anchor, home.anchor.split()[0].upper()):
        cold = content(env, words, "--limit", "0", as_json=True)
        assert cold[0] == 0, f"{home.agent}: {words!r} not found"
        assert content(env, words, "--limit", "0", as_json=True) == cold
    assert len(search_texts(env)) == len(glob.glob(os.path.join(doccache.folder(env), "*.json")))


def test_a_warm_word_search_reads_only_the_documents_whose_hits_it_prints(store, monkeypatch):
    monkeypatch.setattr(parallel, "cores", lambda: 1)
    content(store, "note.txt")  # every search text is there
    parsed = []
    real = documents.loads
    monkeypatch.setattr(documents, "loads", lambda data: parsed.append(1) or real(data))
    code, out = content(store, "note.txt", "--limit", "1")
    assert code == 0 and out.count(b"\n| `") == 1 and len(parsed) == 1
    parsed.clear()
    code, out = content(store, "note.txt", "--offset", "3", "--limit", "2")  # rows 4 and 5 only
    assert code == 0 and out.count(b"\n| `") == 2 and len(parsed) == 2
    parsed.clear()
    assert content(store, "zyzzyva-not-here")[0] == 1 and parsed == []


def test_a_document_searched_is_translated_once(store, monkeypatch):
    """Unredacted renderings are never kept, so a --no-redact search translates every session;
    none twice (the hits of a document in hand are found with it, not left to the parent)."""
    monkeypatch.setattr(parallel, "cores", lambda: 1)
    translated = []
    real = documents._translated
    monkeypatch.setattr(documents, "_translated", lambda session, env: translated.append(session) or real(session, env))
    code, out = content(store, "--no-redact", "note.txt", "--limit", "3")
    assert code == 0 and out.count(b"\n| `") == 3
    assert len(translated) == len(set(s.short_id for s in translated)) > 3


def test_facts_from_search_texts_are_the_documents_facts(store):
    """`list` and `stats` rely on the facts a search records; a warm search records them from
    the search texts."""
    facts_file = os.path.join(cache.cache_dir(store), documents.FACTS_FILE)
    os.unlink(facts_file)
    without_search_texts(store, "note.txt")
    from_documents = cache.load(store, documents.FACTS_FILE)
    os.unlink(facts_file)
    content(store, "note.txt")
    assert search_texts(store) and cache.load(store, documents.FACTS_FILE) == from_documents


# a damaged search text -------------------------------------------------------------------------
def damaged(data: bytes) -> list[bytes]:
    return [data[:cut] for cut in (0, 3, len(searchtext.SEARCH_TEXT_MAGIC) + 2, len(data) // 2, len(data) - 1)] + [
        b"x" + data[1:],                      # not our magic
        data + b"\0",                         # longer than its header says
        b"\xff" * len(data),
    ]


def test_a_damaged_search_text_is_a_miss():
    query = search.Query("note.txt")
    steps = searchtext.steps_text([searchtext.lowered_text([("message", "Read note.txt")]), b""])
    facts = {"size": 10, "steps": 2}
    data = searchtext.pack_search_text(steps, facts)
    count, left, packed = searchtext.search_text_count(data, query)
    assert (count, left, searchtext.facts(packed)) == (1, 0, facts)
    for bad in damaged(data):
        assert searchtext.search_text_count(bad, query) is None, bad
    unended = searchtext.pack_search_text(steps.rstrip(searchtext.STEP_END), facts)  # steps without their ends
    assert searchtext.search_text_count(unended, query) is None


@pytest.mark.parametrize("kind", range(len(damaged(b"0123456789abcdef"))))
def test_a_damaged_search_text_on_disk_is_searched_from_the_document_and_written_again(store, kind):
    expected = content(store, "note.txt", "--limit", "0", as_json=True)
    paths = search_texts(store)
    for path in paths:
        with open(path, "rb") as handle:
            data = handle.read()
        with open(path, "wb") as handle:
            handle.write(damaged(data)[kind])
    assert content(store, "note.txt", "--limit", "0", as_json=True) == expected
    query = search.Query("note.txt")
    for path in paths:
        with open(path, "rb") as handle:
            assert searchtext.search_text_count(handle.read(), query) is not None, "not written again"


# the same matching as Query.locate ---------------------------------------------------------------
TRICKY = "İıIiΣσςẞßﬁŉǅ"  # letters whose lower case differs in length, context or script


field_text = st.text(alphabet=st.sampled_from(TRICKY + "ab .\n"), max_size=12)


@settings(max_examples=400, deadline=None)
@given(steps=st.lists(st.tuples(st.lists(field_text, max_size=3), st.booleans()), max_size=4),
       query=st.text(alphabet=st.sampled_from(TRICKY + 'ab .\\|"'), min_size=1, max_size=8),
       system=st.booleans())
def test_counting_in_search_texts_agrees_with_locate(steps, query, system):
    """Words, quoted phrases and alternatives; the steps an agent wrote for itself (the
    booleans) counted apart, or with the others when `system`."""
    try:
        compiled = search.Query(query, system=system)
    except Exception:  # an empty query is refused before any search
        return
    fields = [([("message", text) for text in texts if text], own) for texts, own in steps]
    found = [sum(1 for f, own in fields if f and own == mine and compiled.locate(f)) for mine in (False, True)]
    expected = (sum(found), 0) if system else tuple(found)
    documented = [(n, "", f, own) for n, (f, own) in enumerate(fields, 1)]
    others, own = searchtext.split_texts(documented)
    packed = searchtext.pack_search_text(others, {}, own)
    assert searchtext.search_text_count(packed, compiled)[:2] == expected


# bounded with the documents ----------------------------------------------------------------------
def test_a_document_and_its_search_text_are_evicted_together(tmp_path, monkeypatch):
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    entries = [(f"key{i}", f"s{i}", [i]) for i in range(6)]
    for key, short_id, stamp in entries[:5]:
        doccache.put(env, key, short_id, stamp, b"d" * 100)
        doccache.put(env, key, short_id, stamp, b"t" * 100, searchtext.SEARCH_TEXT)
    def used(entry, *moments):
        for suffix, moment in zip(doccache.SUFFIXES, moments):
            os.utime(doccache.path_of(env, *entry, suffix), (moment, moment))

    used(entries[0], 1, 1)  # the least recently used entries
    used(entries[1], 3, 3)
    used(entries[2], 2)  # an older document, but its search text was just read
    monkeypatch.setattr(doccache, "LIMIT_BYTES", 1000)
    monkeypatch.setattr(doccache, "_known_total", {})
    doccache.put(env, *entries[5], b"d" * 200)  # 1,200 bytes: down to 900 or less
    kept = {name.split(".")[0] for name in os.listdir(doccache.folder(env))}
    gone = [entry for entry in entries if os.path.basename(doccache.path_of(env, *entry)).split(".")[0] not in kept]
    assert gone == entries[:2]
    for entry in gone:
        for suffix in doccache.SUFFIXES:
            assert not os.path.exists(doccache.path_of(env, *entry, suffix))
    assert doccache.get(env, *entries[2], searchtext.SEARCH_TEXT) == b"t" * 100
    assert doccache.get(env, *entries[2]) == b"d" * 100
