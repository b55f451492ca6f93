"""Does trajectoriz read back what the agent just wrote? The checker behind `make conformance`.

It runs the project's own CLI on the fake $HOME the agent ran in (`list --all --json`, `list
--dir P`, `show ID`) and compares every session with what the scripted server served
(`server.Script.plan`): the prompt, each tool call with its arguments, each result (the failing
command marked as failed: `extra.is_error` or a non-zero `extra.exit_code`), the reasoning, the
final `SCENARIO-DONE` marker, sane token totals, and the project each session belongs to.

`check_document` is the per-document part (a pure function, unit-tested with broken documents);
`check_agent` adds discovery, grouping of continued prompts into one session, and scoping.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from atif.validate import validate  # noqa: E402
from conformance.server import prompt_text  # noqa: E402

LONG_OUTPUT_MIN = 1000   # characters a `seq 1 3000` result keeps at the least, truncated or not


@dataclass
class RunSpec:
    """One agent invocation: the scenario id, its project directory, the session it belongs to
    (a continued prompt shares the group of the prompt it continues), and its prompt."""
    sid: str
    directory: str
    group: str
    resume: bool = False
    prompt: str = ""

    def __post_init__(self):
        self.prompt = self.prompt or prompt_text(self.sid, self.directory)


@dataclass
class AgentResult:
    sessions: int = 0
    passed: int = 0
    failures: list = field(default_factory=list)   # "<session or scenario>: what is wrong"
    notes: list = field(default_factory=list)      # what the agent itself did not store


# one document ----------------------------------------------------------------------------------------
def message_text(message) -> str:
    if isinstance(message, str):
        return message
    if isinstance(message, list):
        return "\n".join(part.get("text", "") for part in message if isinstance(part, dict))
    return ""


def result_text(result: dict) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return message_text(content)
    return content if isinstance(content, str) else json.dumps(content)


def covers(actual, expected) -> bool:
    """`actual` holds every key of `expected` with an equal value (agents may add fields)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and covers(actual[k], v) for k, v in expected.items())
    return actual == expected


def failed(result: dict) -> bool:
    extra = result.get("extra") or {}
    code = extra.get("exit_code")
    return extra.get("is_error") is True or (isinstance(code, int) and not isinstance(code, bool) and code != 0)


@dataclass
class Verdict:
    """What is wrong with one document. `lost_reasoning` (reasoning texts it lacks) and
    `thin_results` ((problem, the result's content) for results lacking the expected output)
    may be the agent's doing rather than the translator's: the caller looks into the store."""
    problems: list = field(default_factory=list)
    lost_reasoning: list = field(default_factory=list)
    thin_results: list = field(default_factory=list)


def check_document(doc: dict, plans: dict, served_totals: dict) -> Verdict:
    """Check one document holding the scenarios `plans` (sid -> the server's plan for it, with
    the prompt). `served_totals` has the run's served "prompt" and "completion" sums."""
    verdict = Verdict()
    problems = verdict.problems
    errors, _warnings = validate(doc)
    problems += [f"invalid ATIF: {e}" for e in errors[:3]]
    for warning in (doc.get("extra") or {}).get("warnings") or []:
        problems.append(f"translator warning: {warning}")
    steps = doc.get("steps") or []
    calls = [(step, call) for step in steps for call in step.get("tool_calls") or []]
    results: dict = {}
    for step in steps:
        for result in (step.get("observation") or {}).get("results") or []:
            results.setdefault(result.get("source_call_id"), []).append(result)
    user_text = [message_text(s.get("message")) for s in steps if s.get("source") == "user"]
    agent_text = [message_text(s.get("message")) for s in steps if s.get("source") == "agent"]
    reasoning = "\n".join(s.get("reasoning_content") or "" for s in steps)
    used: set = set()
    for sid, plan in plans.items():
        if not any(plan["prompt"] in text for text in user_text):
            problems.append(f"{sid}: the prompt is not a user step")
        for index in sorted(plan["steps"], key=int):
            served = plan["steps"][index]
            if served["reasoning"] and served["reasoning"] not in reasoning:
                verdict.lost_reasoning.append(served["reasoning"])
            for call in served["calls"]:
                problems += check_call(sid, call, calls, results, used, verdict.thin_results)
        if not any(f"SCENARIO-DONE {sid}" in text for text in agent_text):
            problems.append(f"{sid}: the final answer (SCENARIO-DONE {sid}) is not an agent message")
    problems += check_tokens(doc, plans, served_totals)
    return verdict


def check_call(sid: str, call: dict, calls: list, results: dict, used: set, thin: list) -> list[str]:
    """Problems of one served call; a result without the expected output goes to `thin`."""
    label = f"{sid}: {call['kind']} call {call['name']}"
    match = next((c for s, c in calls if id(c) not in used and same_tool(c.get("function_name"), call["name"])
                  and covers(c.get("arguments"), call["arguments"])), None)
    if match is None:
        return [f"{label}{json.dumps(call['arguments'])} is missing"]
    used.add(id(match))
    if call["kind"] == "finish":   # the agent's own way to stop: its result says nothing
        return []
    found = results.get(match.get("tool_call_id")) or []
    if not found:
        return [f"{label} has no result"]
    result = found[0]
    text = result_text(result)
    if call["kind"] == "fail":
        return [] if failed(result) else [f"{label}: the failing command's result is not marked failed "
                                           f"(extra: {json.dumps(result.get('extra') or {})})"]
    if failed(result):
        return [f"{label}: a successful command's result is marked failed"]
    if call.get("expect") and call["expect"] not in text:
        thin.append((f"{label}: the result lacks {call['expect']!r} ({text[:80]!r})", text))
    elif call["kind"] == "long" and len(text) < LONG_OUTPUT_MIN:
        thin.append((f"{label}: the long output kept only {len(text)} characters", text))
    return []


def same_tool(stored, served: str) -> bool:
    """A stored call names the tool the server called, or without its `_` prefix (oh-my-pi
    offers `_bash` and `_read` and stores `bash` and `read`)."""
    return stored in (served, served.lstrip("_"))


def check_tokens(doc: dict, plans: dict, served_totals: dict) -> list[str]:
    """Totals present, consistent, at least the completions of the turns this session holds and
    at most what the server served to the whole run (more would be double counting)."""
    fm = doc.get("final_metrics") or {}
    prompt, completion = fm.get("total_prompt_tokens"), fm.get("total_completion_tokens")
    cached = fm.get("total_cached_tokens") or 0
    floor = sum(step.get("completion", 0) for plan in plans.values() for step in plan["steps"].values())
    problems = []
    if not prompt or not completion:
        return [f"token totals missing (final_metrics: {json.dumps(fm)})"]
    if cached > prompt:
        problems.append(f"cached tokens {cached} exceed prompt tokens {prompt}")
    if completion < floor:
        problems.append(f"completion tokens {completion} < the {floor} served for this session's scenario turns")
    if prompt > served_totals["prompt"] or completion > served_totals["completion"]:
        problems.append(f"token totals {prompt}/{completion} exceed what the server served "
                        f"({served_totals['prompt']}/{served_totals['completion']}): counted twice")
    for step in doc.get("steps") or []:
        m = step.get("metrics") or {}
        if (m.get("cached_tokens") or 0) > (m.get("prompt_tokens") or 0) > 0:
            problems.append(f"step {step.get('step_id')}: cached tokens exceed prompt tokens")
            break
    return problems


# one agent ---------------------------------------------------------------------------------------------
def trajectoriz(command: list, env: dict, *args: str) -> bytes:
    done = subprocess.run(command + list(args), env=env, cwd=env["HOME"], capture_output=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"trajectoriz {' '.join(args)} exited {done.returncode}: "
                           f"{done.stderr.decode(errors='replace').strip()[-300:]}")
    return done.stdout


def listing(command: list, env: dict, agent: str, *where: str) -> list[dict]:
    out = trajectoriz(command, env, "list", "--agent", agent, "--json", *where)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def store_holds(home: str, text: str) -> bool:
    """Whether any file under the fake $HOME holds `text` (raw bytes: JSON, SQLite pages)."""
    needle = text.encode()
    for folder, _dirs, files in os.walk(home):
        if os.path.basename(folder) == "trajectoriz":   # our own cache
            continue
        for name in files:
            try:
                with open(os.path.join(folder, name), "rb") as handle:
                    if needle in handle.read():
                        return True
            except OSError:
                continue
    return False


def check_agent(agent: str, env: dict, runs: list[RunSpec], plan: dict, served: list,
                command: list) -> AgentResult:
    result = AgentResult()
    try:
        rows = listing(command, env, agent, "--all")
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        result.failures.append(str(exc))
        return result
    result.sessions = len(rows)
    totals = {"prompt": sum(s["prompt"] for s in served), "completion": sum(s["completion"] for s in served)}
    by_sid = {run.sid: run for run in runs}
    placed: dict = {}
    for row in rows:
        try:
            doc = json.loads(trajectoriz(command, env, "show", row["id"]))
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
            result.failures.append(f"{row['id']}: show failed: {exc}")
            continue
        problems = check_session(row, doc, by_sid, plan, totals, placed, env["HOME"], result.notes)
        result.failures += [f"{row['id']} {p}" for p in problems]
        result.passed += not problems
    result.failures += check_grouping(runs, placed, plan)
    result.failures += check_scoping(command, env, agent, runs, placed)
    return result


def check_session(row, doc, by_sid, plan, totals, placed, home, notes) -> list[str]:
    users = "\n".join(message_text(s.get("message")) for s in doc.get("steps") or [] if s.get("source") == "user")
    sids = [sid for sid, run in by_sid.items() if run.prompt in users]
    if not sids:
        return ["holds no scenario prompt"]
    for sid in sids:
        placed.setdefault(sid, []).append(row)
    missing = [sid for sid in sids if sid not in plan]
    if missing:
        return [f"the server never served {', '.join(missing)}: the agent did not run the scenario"]
    plans = {sid: dict(plan[sid], prompt=by_sid[sid].prompt) for sid in sids}
    verdict = check_document(doc, plans, totals)
    problems, found_notes = judge_losses(home, verdict, row["agent"])
    notes += [note for note in found_notes if note not in notes]
    expected_cwd = {os.path.realpath(by_sid[sid].directory) for sid in sids}
    if len(expected_cwd) == 1 and os.path.realpath(row.get("cwd") or "") not in expected_cwd:
        problems.append(f"cwd {row.get('cwd')!r}, expected {expected_cwd.pop()!r}")
    return problems


def judge_losses(home: str, verdict: Verdict, agent: str) -> tuple[list[str], list[str]]:
    """The document's problems, plus its losses that the store shows are the translator's:
    reasoning the store holds, a thin result whose content is not what the agent stored (a
    result copied verbatim from the store is the agent's loss: a note, not a failure)."""
    problems, notes = list(verdict.problems), []
    for text in verdict.lost_reasoning:
        if store_holds(home, text):
            problems.append(f"reasoning {text!r} is in the store but not in the document")
        else:
            notes.append(f"{agent} does not store reasoning")
    for problem, content in verdict.thin_results:
        if content.strip() and (store_holds(home, content) or store_holds(home, json.dumps(content)[1:-1])):
            notes.append(f"{agent} itself stored it so: {problem}")
        else:
            problems.append(problem)
    return problems, list(dict.fromkeys(notes))


def check_grouping(runs: list[RunSpec], placed: dict, plan: dict) -> list[str]:
    """Every prompt the agent ran is in exactly one session, continued prompts in their first
    prompt's session."""
    problems = []
    for run in runs:
        rows = placed.get(run.sid, [])
        if run.sid not in plan:
            problems.append(f"{run.sid}: the agent never asked the server for this scenario")
        elif len(rows) != 1:
            problems.append(f"{run.sid}: the prompt is in {len(rows)} sessions, expected 1")
    first = {}
    for run in runs:
        rows = placed.get(run.sid) or []
        if len(rows) != 1:
            continue
        if run.group in first and first[run.group] != rows[0]["id"]:
            problems.append(f"{run.sid}: continued prompt is in session {rows[0]['id']}, "
                            f"not in {first[run.group]} with the prompt it continues")
        first.setdefault(run.group, rows[0]["id"])
    return problems


def check_scoping(command: list, env: dict, agent: str, runs: list[RunSpec], placed: dict) -> list[str]:
    """`list --dir P` of each project lists exactly the sessions whose prompts ran there."""
    problems = []
    for directory in sorted({run.directory for run in runs}):
        expected = {row["id"] for run in runs if run.directory == directory for row in placed.get(run.sid, [])}
        try:
            listed = {row["id"] for row in listing(command, env, agent, "--dir", directory)}
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            return [str(exc)]
        if listed != expected:
            problems.append(f"list --dir {os.path.basename(directory)} gives {sorted(listed)}, "
                            f"expected {sorted(expected)}")
    return problems
