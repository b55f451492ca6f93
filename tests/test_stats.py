"""`trajectoriz stats`: every number checked against the documents `show` prints, added up
here independently; the facts cache serves a second run without translating anything."""

import json
import math
import os
import re
import statistics

import pytest

from helpers import run_main
from stores import build_home


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_home(tmp_path_factory.mktemp("stats"))


def documents_of(env, *scope, cwd=None) -> list[dict]:
    listed = run_main(env, ["list", "--json", *scope], cwd=cwd)
    ids = [json.loads(line)["id"] for line in listed.stdout.splitlines()]
    return [json.loads(run_main(env, ["show", ident]).stdout) for ident in ids]


def all_calls(doc: dict) -> int:
    return (sum(len(s.get("tool_calls", [])) for s in doc["steps"])
            + sum(all_calls(sub) for sub in doc.get("subagent_trajectories", [])))


def expected(docs: list[dict]) -> dict:
    def total(key):
        values = [d["final_metrics"][key] for d in docs if key in d["final_metrics"]]
        return sum(values) if values else None

    tokens = sorted(d["final_metrics"].get("total_prompt_tokens", 0)
                    + d["final_metrics"].get("total_completion_tokens", 0) for d in docs
                    if {"total_prompt_tokens", "total_completion_tokens"} & set(d["final_metrics"]))
    cost = total("total_cost_usd")
    return {"sessions": len(docs), "steps": sum(d["final_metrics"]["total_steps"] for d in docs),
            "tool_calls": sum(all_calls(d) for d in docs), "prompt": total("total_prompt_tokens"),
            "completion": total("total_completion_tokens"), "cached": total("total_cached_tokens"),
            "cost": None if cost is None else round(cost, 6), "with_tokens": len(tokens),
            "tokens_per_trajectory": {
                "median": statistics.median(tokens) if tokens else None,
                "p90": tokens[math.ceil(len(tokens) * 0.9) - 1] if tokens else None,
                "max": max(tokens) if tokens else None}}


def test_numbers_match_the_documents(store):
    env, _ = store
    docs = documents_of(env, "--all")
    result = run_main(env, ["stats", "--json"])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["scope"] == "every project"
    assert report["overall"] == expected(docs)
    agents = sorted({d["extra"]["agent"] for d in docs})
    assert list(report["agents"]) == agents
    for agent in agents:
        assert report["agents"][agent] == expected([d for d in docs if d["extra"]["agent"] == agent])
    assert report["overall"]["tool_calls"] > report["overall"]["sessions"]  # sub-agents' included
    assert report["overall"]["with_tokens"] >= 4


def test_scoped_to_a_project(store):
    env, work = store
    inside = os.path.join(work, "proj-claude", "src")
    docs = documents_of(env, cwd=inside)  # list: the current project
    assert len(docs) == 2
    local = json.loads(run_main(env, ["stats", "--json", "--local"], cwd=inside).stdout)
    assert local["overall"] == expected(docs)
    assert local["scope"] == os.path.realpath(os.path.join(work, "proj-claude"))
    by_dir = json.loads(run_main(env, ["stats", "--json", "--dir", os.path.join(work, "proj-claude")]).stdout)
    assert by_dir["overall"] == local["overall"]


def test_markdown_table(store):
    env, _ = store
    report = json.loads(run_main(env, ["stats", "--json"]).stdout)
    lines = run_main(env, ["stats"]).stdout.decode().splitlines()
    overall = report["overall"]
    assert lines[0] == f"## Stats: every project — {overall['sessions']} session(s)"
    assert lines[2] == ("| Agent | Sessions | Steps | Tool calls | Prompt tokens | Cached tokens | "
                        "Completion tokens | Cost (USD) | Tokens/trajectory median | p90 | max |")
    last = lines[3 + len(report["agents"]) + 1]
    spread = overall["tokens_per_trajectory"]
    assert last == (f"| **all** | {overall['sessions']:,} | {overall['steps']:,} | {overall['tool_calls']:,} | "
                    f"{overall['prompt']:,} | {overall['cached']:,} | {overall['completion']:,} | "
                    f"{overall['cost']:.4f} | {round(spread['median']):,} | {spread['p90']:,} | {spread['max']:,} |")
    assert re.match(r"Tokens per trajectory = prompt \+ completion", lines[-1])


def test_a_second_run_translates_nothing(store, monkeypatch):
    import agents

    env, _ = store
    first = run_main(env, ["stats", "--json"]).stdout

    def refuse(session, env):
        raise AssertionError("translated again")

    for name in agents.names():
        monkeypatch.setattr(agents.load(name), "translate", refuse)
    assert run_main(env, ["stats", "--json"]).stdout == first
