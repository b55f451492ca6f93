"""Checks shared by the agent translator tests: translating a whole fake home, golden files,
store immutability, and counting what a document holds."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field

import agents
from atif.serialize import dumps, loads
from helpers import ROOT, assert_valid

GOLDEN = os.path.join(ROOT, "tests", "golden")
UPDATE_GOLDEN = os.environ.get("UPDATE_GOLDEN") == "1"   # UPDATE_GOLDEN=1 pytest ... rewrites them


def sessions(name: str, env) -> list:
    module = agents.load(name)
    return [s for source in module.sources(env) for s in module.scan(source, env)]


def translate_all(name: str, env) -> dict:
    """native id -> a valid document, for every session the module finds under `env`."""
    module = agents.load(name)
    found = {}
    for session in sessions(name, env):
        doc = module.translate(session, env)
        assert_valid(doc)
        found[session.native_id] = doc
    return found


def tree_digest(root: str) -> dict:
    """Every file under `root` (side files of SQLite included) with its size, mtime and hash."""
    found = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
            st = os.stat(path)
            found[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns, digest)
    return found


def check_golden(agent: str, name: str, doc: dict) -> None:
    """The document equals `tests/golden/<agent>/<name>.atif.json` byte for byte."""
    path = os.path.join(GOLDEN, agent, f"{name}.atif.json")
    data = dumps(doc)
    if UPDATE_GOLDEN:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    assert os.path.exists(path), f"{path} is missing: write it with UPDATE_GOLDEN=1, then read it through"
    with open(path, "rb") as handle:
        expected = handle.read()
    assert loads(data) == loads(expected), f"{path} differs (UPDATE_GOLDEN=1 to accept, after reading it)"
    assert data == expected


def all_steps(doc: dict):
    """The steps of a document and of its embedded sub-agents."""
    yield from doc["steps"]
    for sub in doc.get("subagent_trajectories") or []:
        yield from all_steps(sub)


def doc_counts(doc: dict, nested: bool = False) -> dict:
    steps = list(all_steps(doc)) if nested else doc["steps"]
    return {
        "user": sum(1 for s in steps if s["source"] == "user"),
        "calls": sum(len(s.get("tool_calls") or []) for s in steps),
        "results": sum(1 for s in steps for r in (s.get("observation") or {}).get("results", [])
                       if r.get("source_call_id") and "content" in r),   # not a bare sub-agent ref
    }


def doc_tokens(doc: dict) -> tuple:
    fm = doc["final_metrics"]
    return (fm.get("total_prompt_tokens"), fm.get("total_completion_tokens"), fm.get("total_cached_tokens"))


def truncate_copy(source: str, target: str, keep: float = 0.6) -> None:
    """A copy of `source` cut in the middle of a line, as a crash or a copy mid-write leaves it."""
    with open(source, "rb") as handle:
        data = handle.read()
    cut = int(len(data) * keep)
    while cut < len(data) and data[cut:cut + 1] in (b"\n", b"{"):
        cut += 1
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as handle:
        handle.write(data[:cut])


# live stores -------------------------------------------------------------------------------------
@dataclass
class Run:
    """One run of a live store's SCENARIO.md: the prompt, where it was stored, and what the
    tools returned."""
    name: str
    cwd: str = ""
    prompt: str = ""
    stores: list = field(default_factory=list)
    tool_outputs: list = field(default_factory=list)


def scenario_runs(live_home: str) -> list[Run]:
    with open(os.path.join(live_home, "SCENARIO.md"), encoding="utf-8") as handle:
        text = handle.read()
    runs = []
    for chunk in re.split(r"^### Run \d+: ", text, flags=re.M)[1:]:
        run = Run(chunk.split("\n", 1)[0].strip())
        run.cwd = re.search(r"project dir \(cwd\): `([^`]+)`", chunk).group(1)
        run.prompt = json.loads(re.search(r"user prompt \(JSON string\): (\".*\")\s*$", chunk, re.M).group(1))
        run.stores = re.findall(r"`([^`]+)`", re.search(r"store files containing this prompt: (.*)", chunk).group(1))
        outputs = chunk.split("Tool outputs as the agent sent them back", 1)[-1]
        for block in re.findall(r"^\d+\. ```\n(.*?)\n```", outputs, re.M | re.S):
            try:
                block = json.loads(block)["functionResponse"]["response"]["output"]
            except (ValueError, KeyError, TypeError):
                pass
            run.tool_outputs.append(block.strip())
        runs.append(run)
    return runs
