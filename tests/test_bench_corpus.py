"""The benchmark corpus (bench/make_corpus.py): the same seed gives the same files, every agent's
store is written, every session in it translates to a valid document, and the fixtures it is
made from are left as they were."""

from __future__ import annotations

import collections
import os
import statistics
import subprocess
import sys

from discovery import catalog
from rendering import documents
from helpers import LIVE, ROOT, assert_valid, tree_digest

MAKE_CORPUS = os.path.join(ROOT, "bench", "make_corpus.py")


def build(out: str) -> None:
    subprocess.run([sys.executable, MAKE_CORPUS, "--sessions", "40", "--giant-mb", "0.3,0.3,0.3,0.3",
                    "--seed", "3", "--out", out], check=True, capture_output=True, timeout=120)


def content_digest(root: str) -> dict:
    return {path: (size, digest) for path, (size, _, digest) in tree_digest(root).items()}


def test_corpus_is_deterministic_valid_and_leaves_the_fixtures_alone(tmp_path):
    before = tree_digest(LIVE)
    first = str(tmp_path / "corpus")
    build(first)
    digest = content_digest(first)
    build(first)  # again, from scratch, into the same place
    assert content_digest(first) == digest
    assert tree_digest(LIVE) == before
    env = {"HOME": os.path.join(first, "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PWD": os.path.join(first, "work")}
    catalog.discover(env)  # the second discovery finds the per-project stores (Aider, Crush)
    sessions = catalog.discover(env).sessions
    agents_found = collections.Counter(s.agent for s in sessions)
    assert set(agents_found) >= {"claude", "codex", "copilot", "gemini", "qwen", "pi", "kimi", "cline",
                                 "opencode", "kilo", "hermes", "goose", "crush", "cursor", "aider"}
    assert len({s.native_id for s in sessions}) == len(sessions)
    steps = collections.defaultdict(list)
    for session in sessions:
        doc = documents.translate(session, env)
        assert "error" not in doc["extra"], (session.agent, doc["extra"]["error"])
        assert_valid(doc)
        steps[session.agent].append(len(doc["steps"]))
    for agent in ("claude", "codex", "copilot", "opencode"):  # a grown session of every store kind
        assert max(steps[agent]) > 3 * statistics.median(steps[agent]), (agent, steps[agent])
