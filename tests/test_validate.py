"""Our ATIF validator against Harbor's: the same verdict on valid examples and on every kind of
violation the spec lists, each reported at the right JSON path."""

import copy
import glob
import json
import os

import pytest

from atif.validate import validate
from helpers import FIXTURES, cli, harbor_errors

EXAMPLES = sorted(p for p in glob.glob(os.path.join(FIXTURES, "atif", "examples", "*", "*.json"))
                  if "trajectory" in os.path.basename(p) and "traces" not in p
                  and not os.path.basename(p).startswith("native."))

FULL = {
    "schema_version": "ATIF-v1.7",
    "session_id": "s-1",
    "agent": {"name": "a", "version": "1", "model_name": "m",
              "tool_definitions": [{"type": "function", "function": {"name": "bash"}}]},
    "steps": [
        {"step_id": 1, "timestamp": "2026-08-05T18:59:15.000Z", "source": "system", "message": "sys"},
        {"step_id": 2, "source": "user", "message": [{"type": "text", "text": "hi"},
                                                      {"type": "image", "source": {"media_type": "image/png", "path": "https://x/y.png"}}]},
        {"step_id": 3, "source": "agent", "model_name": "m", "message": "", "reasoning_content": "r",
         "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "ls"}}],
         "observation": {"results": [{"source_call_id": "c1", "content": "out", "extra": {"exit_code": 0}}]},
         "metrics": {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 1, "cost_usd": 0.1},
         "llm_call_count": 1},
        {"step_id": 4, "source": "system", "message": "compacted",
         "observation": {"results": [{"content": "summary", "subagent_trajectory_ref": [{"trajectory_id": "sub-1"}]}]},
         "extra": {"context_management": {"type": "compaction", "boundary": "replace"}}},
    ],
    "final_metrics": {"total_prompt_tokens": 10, "total_completion_tokens": 2, "total_steps": 4},
    "extra": {"k": "v"},
    "subagent_trajectories": [
        {"schema_version": "ATIF-v1.7", "trajectory_id": "sub-1", "agent": {"name": "a", "version": "1"},
         "steps": [{"step_id": 1, "source": "user", "message": "go"}]}],
}


def mutate(path, value):
    """FULL with the field at `path` (a list of keys/indices) set to `value` (or removed)."""
    doc = copy.deepcopy(FULL)
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is REMOVE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


REMOVE = object()

# (mutation, the JSON path our validator must name)
INVALID = [
    ((["schema_version"], "ATIF-v1.8"), "$.schema_version"),
    ((["schema_version"], "1.7"), "$.schema_version"),
    ((["agent"], REMOVE), "$.agent"),
    ((["agent", "version"], REMOVE), "$.agent.version"),
    ((["steps"], []), "$.steps"),
    ((["steps", 0, "step_id"], 2), "$.steps[0].step_id"),
    ((["steps", 1, "step_id"], 0), "$.steps[1].step_id"),
    ((["steps", 0, "source"], "bot"), "$.steps[0].source"),
    ((["steps", 0, "message"], REMOVE), "$.steps[0].message"),
    ((["steps", 0, "timestamp"], ""), "$.steps[0].timestamp"),
    ((["steps", 0, "timestamp"], "not-a-date"), "$.steps[0].timestamp"),
    ((["steps", 1, "metrics"], {}), "$.steps[1].metrics"),
    ((["steps", 1, "tool_calls"], []), "$.steps[1].tool_calls"),
    ((["steps", 0, "reasoning_content"], "x"), "$.steps[0].reasoning_content"),
    ((["steps", 2, "tool_calls", 0, "arguments"], "ls"), "$.steps[2].tool_calls[0].arguments"),
    ((["steps", 2, "tool_calls", 0, "function_name"], REMOVE), "$.steps[2].tool_calls[0].function_name"),
    ((["steps", 2, "observation", "results", 0, "source_call_id"], "nope"),
     "$.steps[2].observation.results[0].source_call_id"),
    ((["steps", 2, "metrics", "reward"], 1), "$.steps[2].metrics.reward"),
    ((["steps", 2, "metrics", "prompt_tokens"], 2.5), "$.steps[2].metrics.prompt_tokens"),
    ((["steps", 2, "llm_call_count"], 0), "$.steps[2].metrics"),
    ((["steps", 2, "llm_call_count"], -1), "$.steps[2].llm_call_count"),
    ((["steps", 1, "message", 0, "source"], {"media_type": "image/png", "path": "p"}),
     "$.steps[1].message[0].source"),
    ((["steps", 1, "message", 1, "source", "media_type"], "image/bmp"),
     "$.steps[1].message[1].source.media_type"),
    ((["steps", 1, "message", 0, "type"], "audio"), "$.steps[1].message[0].type"),
    ((["steps", 3, "observation", "results", 0, "subagent_trajectory_ref"], [{"session_id": "s"}]),
     "$.steps[3].observation.results[0].subagent_trajectory_ref[0]"),
    ((["subagent_trajectories", 0, "trajectory_id"], REMOVE), "$.subagent_trajectories[0].trajectory_id"),
    ((["subagent_trajectories", 0, "steps", 0, "step_id"], 3), "$.subagent_trajectories[0].steps[0].step_id"),
    ((["session_id"], 123), "$.session_id"),
    ((["final_metrics", "total_steps"], -1), "$.final_metrics.total_steps"),
    ((["extra"], "text"), "$.extra"),
    ((["notes_typo"], "x"), "$.notes_typo"),
]


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_published_examples_are_valid_for_both(path):
    with open(path) as handle:
        doc = json.load(handle)
    errors, _ = validate(doc)
    assert errors == []
    assert harbor_errors(doc) == []


def test_full_document_is_valid_for_both():
    assert validate(FULL) == ([], [])
    assert harbor_errors(FULL) == []


@pytest.mark.parametrize("mutation,where", INVALID, ids=[w for _, w in INVALID])
def test_each_violation_is_rejected_by_both_at_its_path(mutation, where):
    doc = mutate(*mutation)
    errors, _ = validate(doc)
    assert errors, "our validator accepted it"
    assert any(e.startswith(where + ":") or e.startswith(where + ".") for e in errors), errors
    assert harbor_errors(doc), "Harbor accepted it: the case does not test a real rule"


def test_duplicate_embedded_trajectory_ids_are_rejected_by_both():
    doc = copy.deepcopy(FULL)
    doc["subagent_trajectories"].append(copy.deepcopy(doc["subagent_trajectories"][0]))
    errors, _ = validate(doc)
    assert any("not unique" in e for e in errors)
    assert harbor_errors(doc)


@pytest.mark.parametrize("version", [f"ATIF-v1.{m}" for m in range(8)])
def test_every_published_version_is_accepted(version):
    assert validate({**FULL, "schema_version": version})[0] == []


def test_older_ref_forms_are_accepted_for_their_versions():
    single = mutate(["steps", 3, "observation", "results", 0, "subagent_trajectory_ref"],
                    {"session_id": "child"})
    assert validate({**single, "schema_version": "ATIF-v1.0"})[0] == []
    assert validate(single)[0] != []
    by_session = mutate(["steps", 3, "observation", "results", 0, "subagent_trajectory_ref"],
                        [{"session_id": "child"}])
    assert validate({**by_session, "schema_version": "ATIF-v1.6"})[0] == []


def test_cli_reports_paths_and_exit_codes(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(FULL))
    bad.write_text(json.dumps(mutate(["steps", 0, "source"], "bot")))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    ok = cli("validate", str(good), env=env)
    assert ok.returncode == 0 and b"valid ATIF-v1.7" in ok.stdout
    failed = cli("validate", str(good), str(bad), env=env)
    assert failed.returncode == 1
    assert f"{bad}: $.steps[0].source: expected".encode() in failed.stdout
    missing = cli("validate", str(tmp_path / "none.json"), env=env)
    assert missing.returncode == 1 and b"cannot read" in missing.stderr
    assert b"Traceback" not in missing.stderr
