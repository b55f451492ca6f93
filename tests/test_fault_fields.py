"""The fault corpus, field by field: every agent's store with a value of the wrong type in each
field its translator reads (one field at a time), with ids removed, and with ids made identical
(tests/mutations.py generates the damage by walking the native records).

For every case: discovery and translation raise nothing (a failure document is the last resort,
not the plan: a translator that raises on a wrong type is a bug), every document passes
`validate`, and no file of the store changes. On a sample of the cases the CLI runs too: each
command succeeds, or says what is wrong on one line and exits non-zero, never a traceback.

Bounded for CI: at most FIELD_LIMIT mutations per agent (the fields sampled evenly when a store
has more) and the CLI on every CLI_EVERY-th case.
"""

from __future__ import annotations

import json
import os

import pytest

import agents
from atif.validate import validate
from helpers import assert_clear
from homes import agent_homes, by_agent
from mutations import Pristine, field_mutation, field_mutations, id_mutations, native_files
from stores import run_main

FIELD_LIMIT = 400
CLI_EVERY = 100
HOMES = agent_homes()
BLOB = b"\x00\xffblob"

# (agent, field, value): cases the sweep found raising, kept whatever the sampling picks.
REGRESSIONS = [
    ("claude", "[type=user].uuid", {"key": "value"}),
    ("claude", "[type=attachment].parentUuid", {"key": "value"}),
    ("claude", "[type=assistant].type", {"key": "value"}),
    ("claude", "[type=assistant].message[type=message].content[*][type=tool_use].type", 1.5),
    ("droid", "[type=session_start].type", ["item"]),
    ("droid", "[type=message].message[role=assistant].role", ["item"]),
    ("codex", "[type=event_msg].payload[type=task_started].type", {"key": "value"}),
    ("codex", "[type=response_item].payload[type=message].type", ["item"]),
    ("copilot", "[type=session.shutdown].type", ["item"]),
    ("pi", "[type=model_change].type", {"key": "value"}),
    ("qwen", "[type=assistant].type", {"key": "value"}),
    ("goose", "sessions.model_config_json", 12345),
    ("hermes", "sessions.id", BLOB),
    ("opencode", "session.id", None),
    ("opencode", "session.version", BLOB),
    ("opencode", "message.data", BLOB),
    ("opencode", "part.data[type=text].text", 12345),
]


def translate_every_session(module, env) -> int:
    """Scan and translate every session of the agent, straight through the module (so that an
    exception is seen, not turned into a failure document); returns how many there were."""
    count = 0
    for source in module.sources(env):
        for session in module.scan(source, env):
            doc = module.translate(session, env)
            errors, _ = validate(doc)
            assert errors == [], errors[:3]
            count += 1
    return count


def file_stats(root: str) -> dict:
    """(size, mtime) of every file under root: a read that wrote, created or removed a file
    changes it."""
    found = {}
    for folder, _, names in os.walk(root):
        if os.path.basename(folder) == "cache" or "/cache/" in folder:
            continue
        for name in names:
            st = os.stat(os.path.join(folder, name))
            found[os.path.join(folder, name)] = (st.st_size, st.st_mtime_ns)
    return found


def cli_survives(env, out: str) -> None:
    cwd = env.get("PWD")
    for args in (["list", "--all", "--json"], ["export", "--all", "--out", out],
                 ["search", "--content", "--json", "a"], ["stats", "--all"]):
        assert_clear(run_main(env, args, cwd=cwd))
    listed = run_main(env, ["list", "--all", "--json"], cwd=cwd)
    for line in listed.stdout.splitlines()[:3]:
        assert_clear(run_main(env, ["show", json.loads(line)["id"]], cwd=cwd))


def run_cases(home, tmp_path, make_mutations) -> int:
    (tmp_path / "store").mkdir()
    env = home.build(tmp_path / "store")
    module = agents.load(home.agent)
    assert translate_every_session(module, env) > 0, "the undamaged store translates to nothing"
    root = str(tmp_path / "store")
    pristine = Pristine(native_files(root))
    cases = make_mutations(root)
    for number, mutation in enumerate(cases):
        mutation.apply()
        before = file_stats(root)
        try:
            translate_every_session(module, env)
        except Exception as exc:
            raise AssertionError(f"{home.agent}: {mutation.field} in "
                                 f"{os.path.relpath(mutation.file, root)}: {type(exc).__name__}: {exc}") from exc
        if number % CLI_EVERY == 0:
            cli_survives(env, str(tmp_path / "out"))
        assert file_stats(root) == before, f"{mutation.field}: a store file changed"
        pristine.restore(mutation.file)
    return len(cases)


@pytest.mark.parametrize("agent,field,value", REGRESSIONS, ids=lambda v: str(v)[:40])
def test_wrong_type_regressions(agent, field, value, tmp_path):
    env = by_agent(agent).build(tmp_path)
    field_mutation(str(tmp_path), field, value).apply()
    assert translate_every_session(agents.load(agent), env) > 0


@pytest.mark.parametrize("home", HOMES, ids=lambda h: h.agent)
def test_wrong_types_in_every_field(home, tmp_path):
    if home.agent == "aider":
        pytest.skip("Aider's store is Markdown: it has no typed fields (test_faults damages its text)")
    count = run_cases(home, tmp_path, lambda root: field_mutations(root, limit=FIELD_LIMIT))
    assert count >= 100, f"only {count} cases: the walk missed the store's fields"


@pytest.mark.parametrize("home", HOMES, ids=lambda h: h.agent)
def test_missing_and_duplicated_ids(home, tmp_path):
    if home.agent == "aider":
        pytest.skip("Aider's store is Markdown: its sessions have no ids (runs are numbered)")
    count = run_cases(home, tmp_path, id_mutations)
    assert count >= 4, f"only {count} cases: no id field was found"
