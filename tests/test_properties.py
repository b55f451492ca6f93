"""Property-based tests: every translator on generated sessions (tests/native_sessions.py), valid
shapes mixed with malformed ones.

For every generated session: translating raises nothing; the document passes our validator
(and Harbor's, on every HARBOR_EVERY-th example); step ids run 1..n in it and in every embedded
sub-agent; every `source_call_id` names a call of its own step; the document holds exactly as
many tool calls as distinct calls were generated; `final_metrics` totals are the sums of the
step metrics plus the sub-agents' totals (unless the store records usage per session only,
which `final_metrics.extra.usage_source` says).

Bounded for CI: MAX_EXAMPLES examples per agent, derandomized (the same examples every run), no
deadline per example (a loaded machine must not fail a test), the whole file well under a
minute. To hunt for new failures: PROPERTY_EXAMPLES=500 pytest tests/test_properties.py draws
that many fresh random examples per agent.
"""

from __future__ import annotations

import itertools
import os
import pathlib
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings

import agents
from atif.validate import validate
from helpers import base_env, harbor_errors
from native_sessions import WRITERS, Generated, generated

MAX_EXAMPLES = int(os.environ.get("PROPERTY_EXAMPLES", "60"))
HARBOR_EVERY = 10
SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                    derandomize=not os.environ.get("PROPERTY_EXAMPLES"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_examples = itertools.count()


def translate(agent: str, session: Generated) -> list[dict]:
    """Lay the session out as the agent's store in a fresh $HOME and translate what is found."""
    module = agents.load(agent)
    with tempfile.TemporaryDirectory() as root:
        env = base_env(pathlib.Path(root))
        env["PWD"] = os.path.join(root, "proj-crush")  # where a project's own store is looked for (Crush)
        os.makedirs(env["PWD"])
        WRITERS[agent](env["HOME"], session)
        return [module.translate(s, env) for source in module.sources(env) for s in module.scan(source, env)]


def trajectories(doc: dict):
    yield doc
    for sub in doc.get("subagent_trajectories") or []:
        yield from trajectories(sub)


def check_step_ids_and_results(doc: dict) -> None:
    for trajectory in trajectories(doc):
        steps = trajectory["steps"]
        assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
        for step in steps:
            own = {c["tool_call_id"] for c in step.get("tool_calls") or []}
            for result in (step.get("observation") or {}).get("results", []):
                if "source_call_id" in result:
                    assert result["source_call_id"] in own, (step["step_id"], result["source_call_id"], own)


METRICS = (("prompt_tokens", "total_prompt_tokens"), ("completion_tokens", "total_completion_tokens"),
           ("cached_tokens", "total_cached_tokens"), ("cost_usd", "total_cost_usd"))


def check_final_metrics(doc: dict) -> None:
    for trajectory in trajectories(doc):
        final = trajectory.get("final_metrics") or {}
        if (final.get("extra") or {}).get("usage_source"):
            continue  # session-level totals, by design not the steps' sum
        for step_key, total_key in METRICS:
            values = [s["metrics"][step_key] for s in trajectory["steps"] if step_key in (s.get("metrics") or {})]
            values += [sub["final_metrics"][total_key] for sub in trajectory.get("subagent_trajectories") or []
                       if total_key in (sub.get("final_metrics") or {})]
            if values:
                assert final.get(total_key) == pytest.approx(sum(values)), total_key
            else:
                assert total_key not in final, total_key
        assert final.get("total_steps") == len(trajectory["steps"])


def tool_calls(doc: dict) -> set:
    return {c["tool_call_id"] for t in trajectories(doc) for s in t["steps"] for c in s.get("tool_calls") or []}


def check(agent: str, session: Generated) -> None:
    docs = translate(agent, session)
    assert len(docs) == 1, f"{len(docs)} sessions found"
    (doc,) = docs
    errors, _ = validate(doc)
    assert errors == [], errors[:3]
    if next(_examples) % HARBOR_EVERY == 0:
        assert harbor_errors(doc) == []
    check_step_ids_and_results(doc)
    check_final_metrics(doc)
    assert tool_calls(doc) == {c.id for c in session.calls()}
    assert sum(len(s.get("tool_calls") or []) for t in trajectories(doc) for s in t["steps"]) == len(session.calls())


@pytest.mark.parametrize("agent", sorted(WRITERS))
def test_translation_properties(agent):
    @SETTINGS
    @given(generated())
    def run(session):
        check(agent, session)

    run()


def test_every_agent_with_a_record_format_has_a_generator():
    """The agents left out read stores no generator writes yet; each is named with why."""
    without = {
        "aider": "a Markdown transcript without tool calls",
        "cursor": "protobuf blobs in its chat store",
    }
    assert set(agents.names()) - set(WRITERS) == set(without)
