"""A session's card: what it was about and what it did, in a page of markdown, built from its
document (the ATIF bytes every command serves), so that an agent reads two kilobytes before
deciding to open a document of hundreds.

`facts(doc)` gathers it: every request of the user (their own words, deduped, with the step
each was made at), the outcome (completed, interrupted, an API or auth error, no answer), the
commits made (from git's own output of `git commit` calls: hash, branch, subject; the files from
its `create/delete mode` and `--stat` lines, else from the `git add` calls before it), the files
written or edited (write and edit calls, and shell writes: `>`, heredocs, `tee`, `sed -i`, ...),
the commands run with their exit status and the first error line of each failure, the tokens
and models, and the first lines of the final answer. `render` makes the card of them, at most
CARD_LIMIT bytes (cut with a note). The mount and `export` serve the same bytes
(`<date>_<agent>_<id>.card.md` beside the document).

Step numbers are the document's `step_id`s, which are positions from 1: step N is
`.steps[N-1]` (`show --step N`, and `search --content` prints the same).
"""

from __future__ import annotations

import os

from agents import titles
from core import compiledre

CARD_SUFFIX = ".card.md"
CARD_LIMIT = 8 * 1024
TITLE_CHARS = 200
REQUESTS_KEPT = 4096  # characters of a session's requests its facts keep for the default search
REQUESTS_SHOWN, REQUEST_CHARS = 12, 240
COMMANDS_SHOWN, COMMAND_CHARS = 12, 120
FAILURES_SHOWN, ERROR_CHARS = 12, 160
FILES_SHOWN = 30
ANSWER_LINES, ANSWER_CHARS = 6, 600
OUTPUT_SCANNED = 64 * 1024  # of a tool's output, what is read for commits and errors

# `[main 1a2b3c4] subject`, `[main (root-commit) 1a2b3c4] subject`, `[detached HEAD 1a2b3c4] ...`
_COMMIT = compiledre.compile(r"^\[([^\]\n]{1,200}?) ([0-9a-f]{7,40})\] ([^\n]{0,300})$", 8)  # re.M
_COMMIT_FILE = compiledre.compile(
    r"^ (?:(?:create|delete) mode \d+ ([^\n]+)|rename ([^\n]+?) \(\d+%\)|([^\n|]+?)\s+\|\s+(?:\d+|Bin))", 8)
_EXIT = compiledre.compile(r"(?:^|\n)(?:Error: )?Exit code:? (-?\d+)|exit (?:code|status):? (-?\d+)", 2)  # re.I
_ERROR_LINE = compiledre.compile(
    r"error|fail|fatal|traceback|exception|not found|denied|cannot|can't|unable|invalid|no such|panic", 2)
_PROBLEM = compiledre.compile(
    r"api error|authenticat|unauthori[sz]ed|invalid api key|/login|credit balance|rate.?limit|quota|"
    r"overloaded|401|403|429|529", 2)
_INTERRUPT = compiledre.compile(r"interrupted|aborted|cancell?ed by the user|turn_aborted", 2)
_NO_PATH_ADD = ("-A", "--all", ".", "-u", "--update", ":/")


# facts -------------------------------------------------------------------------------------------
def facts(doc: dict) -> dict:
    """What a card says of a document (the `render`'s input; INDEX.md reads title, outcome,
    commits and files of it)."""
    trajectories = list(_trajectories(doc))
    requests = _requests(doc)
    extra = doc.get("extra") or {}
    native = next((extra[k] for k in ("native_title", "thread_name", "custom_title", "title") if extra.get(k)), None)
    commands = [c for path, t in trajectories for c in _commands(t, path)]
    title = titles.title_of(native, [text for _, text in requests])
    return {"title": _cut(" ".join(title.split()), TITLE_CHARS),
            "requests": _deduped(requests), "outcome": outcome(doc),
            "commits": [c for path, t in trajectories for c in _commits(t, path)],
            "files": _files(trajectories, extra.get("cwd")), "commands": commands,
            "models": _models(doc), "answer": _answer(doc)}


def request_text(found: dict) -> str:
    """The user's requests (`facts`), one a line, at most REQUESTS_KEPT characters: what the
    default search matches beside the title (documents.totals keeps it)."""
    return _cut("\n".join(text for _, text in found["requests"]), REQUESTS_KEPT)


def _trajectories(doc: dict, path: str = ""):
    """(sub-agent path or "", trajectory) of the document and each of its sub-agents."""
    yield path, doc
    for i, sub in enumerate(doc.get("subagent_trajectories") or (), 1):
        if isinstance(sub, dict):
            yield from _trajectories(sub, f"{path}.{i}" if path else str(i))


def jq_path(step_id, path: str = "") -> str:
    """The jq path of step `step_id` (a position from 1) of the trajectory at sub-agent `path`."""
    subs = "".join(f".subagent_trajectories[{int(n) - 1}]" for n in path.split(".") if n)
    index = step_id - 1 if isinstance(step_id, int) else "?"
    return f"{subs}.steps[{index}]"


def _text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(p.get("text", "") for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _requests(doc: dict) -> list[tuple[int, str]]:
    """(step, text) of every user step of the session itself, as typed."""
    return [(step.get("step_id"), _text(step.get("message"))) for step in doc.get("steps") or ()
            if isinstance(step, dict) and step.get("source") == "user" and _text(step.get("message")).strip()]


def _deduped(requests: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The requests that carry a task (their words), each text once, at its first step."""
    seen, found = set(), []
    for step, text in requests:
        words = " ".join(titles.task_text(text).split())
        if words and words not in seen:
            seen.add(words)
            found.append((step, words))
    return found


def outcome(doc: dict) -> str:
    """How the session ended: `completed` (the agent answered last), `interrupted`, `API or auth
    error: <its line>`, `no answer` (the user spoke last, or nothing was said), or `unreadable`."""
    if (doc.get("extra") or {}).get("error"):
        return "unreadable"
    for step in reversed(doc.get("steps") or ()):
        if not isinstance(step, dict):
            continue
        text = _text(step.get("message")).strip()
        kind = (step.get("extra") or {}).get("kind")
        if step.get("source") == "user":
            return "no answer" if not _INTERRUPT.search(text[:200]) else "interrupted"
        if kind == "api_error" or (step.get("source") == "system" and _PROBLEM.search(text[:300])) \
                or (step.get("source") == "agent" and text.startswith("API Error")):
            return f"API or auth error: {_first_line(text, ERROR_CHARS)}"
        if step.get("source") == "system" and _INTERRUPT.search(text[:200]):
            return "interrupted"
        if step.get("source") == "agent" and text:
            return "completed"
        if step.get("source") == "agent" and step.get("tool_calls"):
            return "interrupted"  # stopped while its tools ran
    return "no answer"


# commands ----------------------------------------------------------------------------------------
def _calls(trajectory: dict):
    """(step, call, its results' text, whether a result says it failed) of each tool call."""
    for step in trajectory.get("steps") or ():
        if not isinstance(step, dict):
            continue
        results = (step.get("observation") or {}).get("results") or ()
        for call in step.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            own = [r for r in results if isinstance(r, dict) and r.get("source_call_id") == call.get("tool_call_id")]
            text = "\n".join(_text(r.get("content"))[:OUTPUT_SCANNED] for r in own)
            yield step, call, text, own


def _commands(trajectory: dict, path: str) -> list[dict]:
    """Each shell command: its step, command line, exit status (a number when recorded, else
    `ok` or `failed`) and, for a failure, the first line of its output that reads as an error."""
    found = []
    for step, call, text, results in _calls(trajectory):
        extra = call.get("extra") or {}
        if extra.get("kind") != "shell" or not isinstance(extra.get("command"), str):
            continue
        status = _status(text, results)
        entry = {"step": step.get("step_id"), "path": path, "command": extra["command"], "status": status}
        if status not in ("ok", 0):
            entry["error"] = _error_line(text)
        found.append(entry)
    return found


def _status(text: str, results: list) -> int | str:
    for result in results:
        code = (result.get("extra") or {}).get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    match = _EXIT.search(text[:4096])
    if match:
        return int(match.group(1) or match.group(2))
    failed = any((r.get("extra") or {}).get("is_error") for r in results)
    return "failed" if failed else ("ok" if results else "no output")


def _error_line(text: str) -> str:
    """The first line of a failure's output that reads as an error (for a Python traceback, the
    exception it ends in), else its first line."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith(("Exit code", "Error: Exit code"))]
    at = next((i for i, line in enumerate(lines) if _ERROR_LINE.search(line)), 0)
    if lines and lines[at].startswith("Traceback (most recent call last)"):
        at = next((i for i in range(at + 1, len(lines)) if not lines[i][:1].isspace()), at)
    return _cut(lines[at].strip(), ERROR_CHARS) if lines else ""


# commits -----------------------------------------------------------------------------------------
def _commits(trajectory: dict, path: str) -> list[dict]:
    """The commits git reported making in the output of the session's shell calls, with the
    files it named (or those staged by `git add` with paths since the previous commit)."""
    found, staged = [], []
    for step, call, text, _ in _calls(trajectory):
        command = (call.get("extra") or {}).get("command")
        if not isinstance(command, str):
            continue
        staged += _added(command)
        if "commit" not in command:
            continue
        for match in _COMMIT.finditer(text):
            branch = match.group(1).replace(" (root-commit)", "")
            files = _committed_files(text[match.end():]) or staged
            found.append({"hash": match.group(2), "branch": branch, "subject": match.group(3).strip(),
                          "files": sorted(set(files)), "step": step.get("step_id"), "path": path})
            staged = []
    return found


def _committed_files(rest: str) -> list[str]:
    """The files git's commit output names: created, deleted, renamed, or in a `--stat` table."""
    files = []
    for line in rest.splitlines()[:200]:
        if line.startswith("["):
            break  # the next commit's output
        match = _COMMIT_FILE.match(line)
        if match:
            files.append(_renamed_to(next(g for g in match.groups() if g).strip()))
    return files


def _renamed_to(name: str) -> str:
    """The new name in git's rename notation: `a => b`, `dir/{a => b}/file`."""
    if " => " not in name:
        return name
    if "{" in name and "}" in name:
        head, rest = name.split("{", 1)
        inside, tail = rest.split("}", 1)
        return (head + inside.split(" => ", 1)[1] + tail).replace("//", "/")
    return name.split(" => ", 1)[1]


def _added(command: str) -> list[str]:
    """The paths `git add` names in a command line (none for `git add -A`, `.`, `-u`)."""
    found = []
    for part in command.replace("&&", ";").replace("||", ";").split(";"):
        words = part.split()
        if words[:2] == ["git", "add"] and not any(w in _NO_PATH_ADD for w in words[2:]):
            found += [w.strip("'\"") for w in words[2:] if not w.startswith("-")]
    return found


# files, models, answer ---------------------------------------------------------------------------
def _files(trajectories: list, cwd) -> list[dict]:
    """The files written or edited, each once, with the steps that did, relative to the
    working directory when inside it."""
    from rendering import toolkinds  # here: search prints jq paths (`jq_path`) without it

    steps: dict = {}
    for path, trajectory in trajectories:
        for write in toolkinds.writes(trajectory):
            for name in write["paths"]:
                steps.setdefault(relative(name, cwd), []).append(where_short(write["step"], path))
    return [{"path": name, "steps": sorted(set(at), key=at.index)} for name, at in steps.items()]


def where_short(step_id, path: str) -> str:
    return f"{path}:{step_id}" if path else str(step_id)


def relative(path: str, cwd) -> str:
    """`path` relative to the folder `cwd` when inside it, else as it is."""
    if isinstance(cwd, str) and cwd and path.startswith(cwd.rstrip(os.sep) + os.sep):
        return path[len(cwd.rstrip(os.sep)) + 1:]
    return path


def _models(doc: dict) -> list[str]:
    named = [(doc.get("agent") or {}).get("model_name")]
    named += [step.get("model_name") for step in doc.get("steps") or () if isinstance(step, dict)]
    models = [m for m in named if isinstance(m, str) and m]
    return sorted(set(models), key=models.index)


def _answer(doc: dict) -> tuple | None:
    """(step, first lines) of the agent's last message."""
    for step in reversed(doc.get("steps") or ()):
        if isinstance(step, dict) and step.get("source") == "agent" and _text(step.get("message")).strip():
            lines = [line.rstrip() for line in _text(step["message"]).strip().splitlines()]
            shown = "\n".join(lines[:ANSWER_LINES])
            return step.get("step_id"), _cut(shown, ANSWER_CHARS), len(lines) > ANSWER_LINES
    return None


def _first_line(text: str, limit: int) -> str:
    return _cut(next((line.strip() for line in text.splitlines() if line.strip()), ""), limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(text: str, limit: int) -> str:
    return _cut(" ".join(text.split()), limit).replace("`", "'")


# the card ----------------------------------------------------------------------------------------
def card_name(document_name: str) -> str:
    """The card's file name beside its document's (`<date>_<agent>_<id>.card.md`)."""
    return document_name[: -len(".atif.json")] + CARD_SUFFIX if document_name.endswith(".atif.json") \
        else document_name + CARD_SUFFIX


def render(doc: dict, found: dict | None = None) -> bytes:
    """The card of a document (`found`: its `facts`, when the caller has them), at most
    CARD_LIMIT bytes."""
    found = found if found is not None else facts(doc)
    sections = [_heading(doc, found), _requests_section(found), _commits_section(found),
                _files_section(found), _commands_section(found), _answer_section(found)]
    text = "\n".join(s for s in sections if s)
    return _bounded(text)


def _heading(doc: dict, found: dict) -> str:
    extra = doc.get("extra") or {}
    metrics = doc.get("final_metrics") or {}
    steps = doc.get("steps") or ()
    tokens = ", ".join(f"{name} {metrics[key]:,}" for key, name in
                       (("total_prompt_tokens", "prompt"), ("total_completion_tokens", "completion"),
                        ("total_cached_tokens", "cached")) if isinstance(metrics.get(key), int))
    cost = metrics.get("total_cost_usd")
    lines = [f"# {_one_line(found['title'] or '(no request)', TITLE_CHARS)}", "",
             f"- Session `{extra.get('short_id', '')}` ({(doc.get('agent') or {}).get('name', '')}), "
             f"{len(steps)} steps, in the `.atif.json` of this card's name: step N is `.steps[N-1]`, "
             f"sub-agent S's step N (`S:N`) `.subagent_trajectories[S-1].steps[N-1]`",
             f"- Started: {steps[0].get('timestamp', 'unknown') if steps and isinstance(steps[0], dict) else 'unknown'}",
             f"- Directory: `{extra.get('cwd') or '(none recorded)'}`",
             f"- Outcome: {found['outcome']}",
             f"- Model: {', '.join(found['models']) or 'not recorded'}",
             f"- Tokens: {tokens or 'not recorded'}" + (f"; cost ${cost:.2f}" if isinstance(cost, (int, float)) else "")]
    return "\n".join(lines) + "\n"


def _requests_section(found: dict) -> str:
    return _section("Requests", found["requests"], REQUESTS_SHOWN,
                    lambda request: f"- step {request[0]}: {_one_line(request[1], REQUEST_CHARS)}",
                    ": `jq -r '.steps[] | select(.source == \"user\") | .message' FILE`")


def _section(title: str, items: list, shown: int, line, hint: str = "") -> str:
    """A card's section: its title with the count, a line per item, the first `shown` of them,
    then how many more (and `hint`, where they are); none without items."""
    if not items:
        return ""
    lines = [line(item) for item in items[:shown]]
    if len(items) > shown:
        lines.append(f"- … {len(items) - shown} more{hint}")
    return f"## {title} ({len(items)})\n\n" + "\n".join(lines) + "\n"


def _commits_section(found: dict) -> str:
    commits = found["commits"]
    if not commits:
        return "## Commits\n\nNone reported by git in this session.\n"
    lines = []
    for c in commits:
        files = ", ".join(c["files"][:8]) + (f" (+{len(c['files']) - 8} more)" if len(c["files"]) > 8 else "")
        lines.append(f"- `{c['hash'][:10]}` on {_one_line(c['branch'], 60)}: {_one_line(c['subject'], 120)} "
                     f"({where_short(c['step'], c['path'])})" + (f" — {files}" if files else ""))
    return f"## Commits ({len(commits)})\n\n" + "\n".join(lines) + "\n"


def _files_section(found: dict) -> str:
    return _section("Files written or edited", found["files"], FILES_SHOWN,
                    lambda f: f"- {_one_line(f['path'], 160)} (step {', '.join(f['steps'][:6])}"
                              f"{', …' if len(f['steps']) > 6 else ''})")


def _commands_section(found: dict) -> str:
    commands = found["commands"]
    if not commands:
        return ""
    failed = [c for c in commands if c["status"] not in ("ok", 0, "no output")]
    lines = [f"{len(commands)} run, {len(failed)} failed.", ""]
    for c in failed[:FAILURES_SHOWN]:
        lines.append(f"- ✗ {where_short(c['step'], c['path'])} exit {c['status']}: `{_one_line(c['command'], COMMAND_CHARS)}`"
                     + (f" — {_one_line(c['error'], ERROR_CHARS)}" if c.get("error") else ""))
    if len(failed) > FAILURES_SHOWN:
        lines.append(f"- … {len(failed) - FAILURES_SHOWN} more failures")
    distinct, seen = [], set()
    for c in commands:
        if c["status"] in ("ok", 0, "no output") and c["command"] not in seen:
            seen.add(c["command"])
            distinct.append(c)
    for c in distinct[:COMMANDS_SHOWN]:
        lines.append(f"- ✓ {where_short(c['step'], c['path'])}: `{_one_line(c['command'], COMMAND_CHARS)}`")
    if len(distinct) > COMMANDS_SHOWN:
        lines.append(f"- … {len(distinct) - COMMANDS_SHOWN} more that succeeded")
    return "## Commands\n\n" + "\n".join(lines) + "\n"


def _answer_section(found: dict) -> str:
    answer = found["answer"]
    if not answer:
        return ""
    step, text, more = answer
    quoted = "\n".join("> " + line for line in text.splitlines())
    return f"## Final answer (step {step})\n\n{quoted}\n" + ("> …\n" if more else "")


def _bounded(text: str) -> bytes:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= CARD_LIMIT:
        return data
    note = f"\n… (card cut at {CARD_LIMIT // 1024} KB: the document has the rest)\n".encode()
    cut = data[: CARD_LIMIT - len(note)].decode("utf-8", "ignore")
    return cut[: cut.rfind("\n") + 1].encode("utf-8", "surrogatepass") + note
