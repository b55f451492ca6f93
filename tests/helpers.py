"""Shared test helpers: fake homes and the CLI, the three validators, golden files, proof that a
store was only read, native records, and what a document holds.

The native side of a count is computed by each agent's own test, straight from its records;
this module only counts the document side."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SAMPLES = os.path.join(FIXTURES, "samples")
LIVE = os.path.join(SAMPLES, "live")
SCHEMA = os.path.join(FIXTURES, "atif", "atif-v1.7.schema.json")
GOLDEN = os.path.join(ROOT, "tests", "golden")


# programs the tests run ------------------------------------------------------------------------
PACKAGES = {"rg": "ripgrep", "dd": "coreutils", "man": "man-db"}  # Debian's name, where it differs
NOT_INSTALLED = "not installed (Debian: apt install"


def needs(*programs: str):
    """Skip a test that runs one of `programs` when it is not installed, saying which and how to
    install it: `make test` on a fresh machine reports what it could not check instead of
    failing. .ci/run installs them all, so in CI these tests run."""
    missing = sorted(p for p in programs if shutil.which(p) is None)
    install = " ".join(PACKAGES.get(p, p) for p in missing)
    return pytest.mark.skipif(bool(missing), reason=f"{', '.join(missing)} {NOT_INSTALLED} {install})")


# homes and the command line ----------------------------------------------------------------------
def base_env(tmp_path, home: str | None = None) -> dict:
    """An environment whose $HOME and caches are the test's own."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TZ": "UTC", "LANG": "C.UTF-8",
           "HOME": home or str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    os.makedirs(env["HOME"], exist_ok=True)
    return env


def live_claude_in(env: dict, projects) -> None:
    """The live Claude store copied into env's $HOME, its sessions recorded in `projects`
    (its /tmp/agents/ rewritten there)."""
    target = os.path.join(env["HOME"], ".claude")
    shutil.copytree(os.path.join(LIVE, "claude-2.1.332", ".claude"), target)
    for folder, _, files in os.walk(target):
        for name in files:
            path = os.path.join(folder, name)
            text = open(path, encoding="utf-8").read().replace("/tmp/agents/", f"{projects}/")
            open(path, "w", encoding="utf-8").write(text)


def copy_into(home: str, source: str, target: str) -> str:
    """Copy a fixture file or folder to `home/target`; returns the copy's path."""
    destination = os.path.join(home, target)
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    if os.path.isdir(source):
        shutil.copytree(source, destination, dirs_exist_ok=True)
    else:
        shutil.copy2(source, destination)
    return destination


def copy_database(source: str, target: str) -> None:
    """Copy a SQLite database with the side files it has (-wal, -shm): copied while a writer
    holds it open, the WAL stays un-checkpointed, as a running agent leaves it."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(source + suffix):
            shutil.copy2(source + suffix, target + suffix)

def live_copy(tmp_path, live_home: str) -> str:
    """A copy of a live store's $HOME that a test may change."""
    home = str(tmp_path / "live")
    shutil.copytree(live_home, home)
    return home


def cli(*args: str, env: dict, cwd: str | None = None, timeout: float = 120,
        stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Run `trajectoriz.py` as a user would, in its own process."""
    return subprocess.run([sys.executable, os.path.join(ROOT, "trajectoriz.py"), *args],
                          env=env, cwd=cwd or env["HOME"], capture_output=True, timeout=timeout,
                          input=stdin)


def run_main(env: dict, args, cwd: str | None = None) -> subprocess.CompletedProcess:
    """`trajectoriz ARGS` run in this process (the tests make many calls; a fresh interpreter
    for each costs more than the call): the same environment, working directory, output and
    exit status a user gets, without the start-up."""
    import trajectoriz

    out, err = io.BytesIO(), io.BytesIO()
    saved = os.environ, sys.stdout, sys.stderr, os.getcwd()
    streams = [io.TextIOWrapper(out, encoding="utf-8", write_through=True),
               io.TextIOWrapper(err, encoding="utf-8", write_through=True)]
    sys.stdout, sys.stderr = streams
    os.environ = env  # main() hands os.environ to the command
    os.chdir(cwd or env["HOME"])
    try:
        code = trajectoriz.main(list(args))
    except SystemExit as exc:  # argparse refusing the arguments
        code = exc.code
    finally:
        os.environ, sys.stdout, sys.stderr = saved[:3]
        os.chdir(saved[3])
    result = subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())
    streams.clear()  # closing a wrapper closes its buffer: only once the output is read
    return result


def assert_clear(result: subprocess.CompletedProcess) -> None:
    """A command succeeded (for search, exit 1 is a success that found nothing), or said what
    is wrong on one line and exited non-zero: never a traceback, never a wall of text."""
    stderr = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    found_nothing = result.returncode == 1 and "search" in result.args and not stderr
    if result.returncode != 0 and not found_nothing:
        assert len(stderr.strip().splitlines()) == 1, stderr


# valid documents and golden files ----------------------------------------------------------------
def schema_validator():
    jsonschema = pytest.importorskip("jsonschema")
    with open(SCHEMA) as handle:
        return jsonschema.Draft202012Validator(json.load(handle))


def harbor_errors(doc: dict) -> list[str]:
    """Harbor's own verdict on a document (its validator is the reference)."""
    from harbor.utils.trajectory_validator import TrajectoryValidator

    validator = TrajectoryValidator()
    validator.validate(doc, validate_images=False)
    return validator.get_errors()


def assert_valid(doc: dict) -> None:
    """A produced document passes our validator, the JSON Schema and Harbor's validator."""
    from atif.validate import validate

    errors, _ = validate(doc)
    assert errors == [], errors
    schema_errors = [e.message for e in schema_validator().iter_errors(doc)]
    assert schema_errors == [], schema_errors[:5]
    assert harbor_errors(doc) == []


def assert_golden(doc: dict, agent: str, name: str) -> None:
    """`doc` equals `tests/golden/<agent>/<name>.atif.json` byte for byte. With UPDATE_GOLDEN=1
    in the environment the file is (re)written instead: read it through before committing it."""
    from atif.serialize import dumps, loads

    path = os.path.join(GOLDEN, agent, f"{name}.atif.json")
    data = dumps(doc)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    assert os.path.exists(path), f"{path} is missing: write it with UPDATE_GOLDEN=1, then read it through"
    with open(path, "rb") as handle:
        expected = handle.read()
    assert doc == loads(expected), f"{path} differs (UPDATE_GOLDEN=1 rewrites it)"
    assert data == expected, f"{path} differs in its bytes (UPDATE_GOLDEN=1 rewrites it)"


# stores are only read; damaged copies -------------------------------------------------------------
def tree_digest(*roots: str, skip: str | None = None) -> dict:
    """path -> (size, mtime, content hash) of every file under `roots` (side files of SQLite
    included): equal before and after means nothing was written, created or removed. A FIFO or
    a dangling link has no content to read; an unreadable file is known by its size and mtime.
    `skip` names a folder to leave out (trajectoriz's own cache, when it lies under a root)."""
    found = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if os.path.join(folder, d) != skip]
            for name in files:
                path = os.path.join(folder, name)
                if os.path.isfile(path):
                    st = os.stat(path)
                    found[path] = (st.st_size, st.st_mtime_ns, _content_hash(path))
    return found


def _content_hash(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except PermissionError:
        return None


def assert_damaged_database_is_reported(module, db: str, bad: str, env) -> None:
    """The sessions of database `db`, read from a copy cut to a third (`bad`), still translate
    to valid documents with a warning; and bytes that are no database make `scan` raise."""
    from agents.sqlite_ro import StoreError

    sessions = module.scan(db, env)
    with open(db, "rb") as handle:
        data = handle.read()
    with open(bad, "wb") as handle:
        handle.write(data[: len(data) // 3])
    for session in sessions:
        session.source = bad
        doc = module.translate(session, env)
        assert_valid(doc)
        assert doc["extra"]["warnings"]
    with open(bad, "wb") as handle:
        handle.write(b"not a database at all" * 10)
    with pytest.raises(StoreError):
        module.scan(bad, env)

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


# native records ----------------------------------------------------------------------------------
def read_jsonl(path) -> list[dict]:
    """The JSON objects of a JSONL file, in order; lines that hold no JSON object are skipped."""
    found = []
    with open(path, "rb") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                found.append(record)
    return found


def write_jsonl(path, records: list) -> str:
    """`records` as a JSONL file at `path` (its folder created); returns the path."""
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    return str(path)


# translating a store, and what a document holds -------------------------------------------------
def scan_all(module, env) -> list:
    """Every session the agent module discovers under `env`."""
    return [session for source in module.sources(env) for session in module.scan(source, env)]


def translate_all(module, env) -> list[tuple]:
    """(session, document) for every session the module discovers, each document validated."""
    found = []
    for session in scan_all(module, env):
        doc = module.translate(session, env)
        assert_valid(doc)
        found.append((session, doc))
    return found


def translate_file(module, path: str, env) -> dict:
    """The validated document of the one session of a native file."""
    [session] = module.scan(path, env)
    doc = module.translate(session, env)
    assert_valid(doc)
    return doc


def all_steps(doc: dict):
    """The steps of a document and of its embedded sub-agents."""
    yield from doc["steps"]
    for sub in doc.get("subagent_trajectories") or []:
        yield from all_steps(sub)


def doc_counts(doc: dict, with_subagents: bool = False) -> dict:
    """User steps, tool calls and tool results joined to their call, of a document's own steps
    (and of its embedded sub-agents' with `with_subagents`). A bare sub-agent reference, with no
    content, is no result of the store's."""
    steps = list(all_steps(doc)) if with_subagents else doc["steps"]
    return {"user": sum(1 for s in steps if s["source"] == "user"),
            "calls": sum(len(s.get("tool_calls") or []) for s in steps),
            "results": sum(1 for s in steps for r in (s.get("observation") or {}).get("results", [])
                           if r.get("source_call_id") and "content" in r)}


def totals(doc: dict) -> tuple:
    """(prompt, completion, cached) token totals of `final_metrics`, None where absent."""
    final = doc.get("final_metrics") or {}
    return (final.get("total_prompt_tokens"), final.get("total_completion_tokens"),
            final.get("total_cached_tokens"))


def scoped_ids(env, project: str, agent: str) -> set:
    """Native ids of the agent's sessions that belong to `project`, as `list --dir` sees them."""
    from discovery import catalog

    found = catalog.discover(env, names=[agent], use_cache=False)
    return {s.native_id for s in catalog.Scope(project).filter(found.sessions)}


# the scenarios of the live stores ----------------------------------------------------------------
@dataclass
class Run:
    """One run of a live store's SCENARIO.md: the prompt, where it was stored, and what the
    tools returned."""
    name: str
    cwd: str = ""
    prompt: str = ""
    stores: list = field(default_factory=list)
    tool_outputs: list = field(default_factory=list)
    calls: list = field(default_factory=list)     # (tool name, arguments) the fake model asked for


def scenario_runs(live_home: str) -> list[Run]:
    with open(os.path.join(live_home, "SCENARIO.md"), encoding="utf-8") as handle:
        text = handle.read()
    return [_scenario_run(chunk) for chunk in re.split(r"^### Run \d+: ", text, flags=re.M)[1:]]


def _scenario_run(chunk: str) -> Run:
    run = Run(chunk.split("\n", 1)[0].strip())
    run.cwd = re.search(r"project dir \(cwd\): `([^`]+)`", chunk).group(1)
    run.prompt = json.loads(re.search(r"user prompt \(JSON string\): (\".*\")\s*$", chunk, re.M).group(1))
    run.stores = re.findall(r"`([^`]+)`", re.search(r"store files containing this prompt: (.*)", chunk).group(1))
    run.calls = [(name, json.loads(arguments)) for name, arguments
                 in re.findall(r"tool call `([^`]+)` with arguments `(.*)`$", chunk, re.M)]
    outputs = chunk.split("Tool outputs as the agent sent them back", 1)[-1]
    for block in re.findall(r"^\d+\. ```\n(.*?)\n```", outputs, re.M | re.S):
        try:  # Gemini's outputs are quoted as the functionResponse it sent back
            block = json.loads(block)["functionResponse"]["response"]["output"]
        except (ValueError, KeyError, TypeError):
            pass
        run.tool_outputs.append(block.strip())
    return run


def scenario_sessions(module, env, live_home: str) -> list[tuple]:
    """(session, its runs) for every store file the runs of `live_home`'s SCENARIO.md wrote,
    discovered in `env`, whose $HOME is a copy of `live_home`."""
    found = {s.source: s for s in scan_all(module, env)}
    runs = scenario_runs(live_home)
    return [(found[os.path.join(env["HOME"], store)], [r for r in runs if r.stores[0] == store])
            for store in sorted({r.stores[0] for r in runs})]


def assert_holds_runs(doc: dict, session, runs: list[Run]) -> None:
    """A live session's document holds its runs: the prompts, the tool outputs as the agent sent
    them back, one final answer with the SCENARIO-DONE marker per run, and the runs' cwd."""
    assert [s["message"] for s in doc["steps"] if s["source"] == "user"] == [r.prompt for r in runs]
    outputs = [r["content"].strip() for s in doc["steps"] for r in s.get("observation", {}).get("results", [])]
    assert outputs == [o for r in runs for o in r.tool_outputs]
    finals = [s["message"] for s in doc["steps"] if s["source"] == "agent" and not s.get("tool_calls")]
    assert len(finals) == len(runs) and all("SCENARIO-DONE" in f for f in finals)
    assert {session.cwd} == {r.cwd for r in runs}


def assert_scoped_as_the_scenario(agent: str, env, live_home: str) -> None:
    """In each of the two projects of `live_home`'s SCENARIO.md, `list --dir` finds exactly the
    store files of the runs made there (`env`'s $HOME is a copy of `live_home`)."""
    from discovery import catalog

    found = catalog.discover(env, [agent], use_cache=False).sessions
    runs = scenario_runs(live_home)
    for project in (f"/tmp/agents/proj-{agent}", f"/tmp/agents/proj-{agent}-other"):
        expected = {os.path.join(env["HOME"], r.stores[0]) for r in runs if r.cwd == project}
        assert {s.source for s in catalog.Scope(project).filter(found)} == expected


# the conformance scenario, as the newer live stores' SCENARIO.md states it ------------------------
def scripted_runs(live_home: str, agent: str) -> dict[str, str]:
    """scenario id -> project directory of the runs a live store recorded with the conformance
    harness (SCENARIO.md: "sessions `A-1` (then a continuation of it, `A-1b`, ...), `A-2` in
    `P`, and `A-3` in `P-other`"): the first session and its continuation ran where the second
    did."""
    with open(os.path.join(live_home, "SCENARIO.md"), encoding="utf-8") as handle:
        text = handle.read().split("Each prompt", 1)[0]
    placed = dict(re.findall(rf"`({re.escape(agent)}-\d+)` in `(/\S+?)`", text))
    first = [sid for sid in re.findall(rf"`({re.escape(agent)}-1b?)`", text)]
    return {**{sid: placed[f"{agent}-2"] for sid in first}, **placed}


def assert_scripted_steps(doc: dict, sid: str, directory: str, reasoning: bool, parallel: bool = True) -> None:
    """The document holds every step the scripted model played for run `sid`
    (conformance/server.py): the prompt as a user step, the note written, read back, a failing
    command marked failed, a long output, two calls of one model reply (with `parallel`: the
    script plays them to agents that run them), the final answer, and (with `reasoning`) the
    reasoning of each reply."""
    from conformance.server import prompt_text

    steps = doc["steps"]
    start = next(i for i, s in enumerate(steps) if s["source"] == "user" and s["message"] == prompt_text(sid, directory))
    end = next((i for i in range(start + 1, len(steps)) if steps[i]["source"] == "user"), len(steps))
    turn = steps[start + 1:end]
    results = {r["source_call_id"]: r for s in turn for r in (s.get("observation") or {}).get("results", [])}

    def result_of(needle: str) -> dict:
        step = next(s for s in turn for c in s.get("tool_calls") or [] if needle in json.dumps(c["arguments"]))
        call = next(c for c in step["tool_calls"] if needle in json.dumps(c["arguments"]))
        return results[call["tool_call_id"]]

    def failed(result: dict) -> bool:
        extra = result.get("extra") or {}
        return extra.get("is_error") is True or extra.get("exit_code") not in (None, 0)

    def text(result: dict) -> str:
        return result["content"] if isinstance(result["content"], str) else json.dumps(result["content"])

    assert not failed(result_of(f"echo hello-{sid} > note.txt"))
    assert any(f"hello-{sid}" in text(r) and "note.txt" in json.dumps(c["arguments"]) and not failed(r)
               for s in turn for c in s.get("tool_calls") or [] for r in [results[c["tool_call_id"]]]
               if "echo" not in json.dumps(c["arguments"]))
    assert failed(result_of(f"ls missing-{sid}"))
    assert "3000" in text(result_of("seq 1 3000"))
    if parallel:
        pair = next(s for s in turn if len(s.get("tool_calls") or []) == 2)
        assert [f"par-{x}-{sid}" in text(results[c["tool_call_id"]]) for x, c in zip("ab", pair["tool_calls"])] == [True] * 2
    assert any(s["source"] == "agent" and f"SCENARIO-DONE {sid}" in s["message"] for s in turn)
    if reasoning:
        thoughts = "\n".join(s.get("reasoning_content") or "" for s in turn)
        assert all(f"THINK-{n}-{sid}:" in thoughts for n in range(6)), thoughts
