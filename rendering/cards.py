"""A session's card: what it was about and what it did, in a page of markdown, built from its
document (the ATIF bytes every command serves), so that an agent reads a few hundred characters
before deciding to open a document of hundreds of kilobytes.

`facts(doc)` gathers it: every request of the user (their own words, each time they were typed,
with its step) and their decisions (answers to an agent's questions, plans approved or
rejected), the outcome (completed, interrupted, an API or auth error, answered then a request
left unanswered, no answer), the branches and modes the agent recorded, the commits made (from
git's own output of `git commit` calls: hash, branch, subject, git's count, the files its lines
name with those staged before it), the files written or edited (write and edit calls, and shell
writes: `>`, heredocs, `tee`, `sed -i`, ...; those outside the directory apart, those a refused
or failed call only attempted apart), the commands run with their exit status and the first
error line of each failure, the models, the first step's and last step's times, and the start
of the final answer. `render` makes the card of them, at most CARD_LIMIT bytes (cut with a
note), then the related sessions (`related`, from other sessions' facts). The mount and
`export` serve the same bytes (`<date>_<agent>_<id>.card.md` beside the document).

Step numbers are the document's `step_id`s, which are positions from 1: step N is
`.steps[N-1]` (`show --step N`, and `search --content` prints the same).
"""

from __future__ import annotations

import datetime
import json
import os
import shlex

from agents import titles
from atif.build import parts_text
from core import compiledre

CARD_SUFFIX = ".card.md"
CARD_LIMIT = 8 * 1024
TITLE_CHARS = 200
HEADING_CHARS = 120  # of the title, atop the card
REQUESTS_KEPT = 4096  # characters of a session's requests its facts keep for the default search
REQUESTS_SHOWN, REQUEST_CHARS = 8, 90
SHARED_START = 30  # characters a request shares with the one before it: shown from where they differ
COMMAND_CHARS = 60
FAILURES_SHOWN, ERROR_CHARS = 5, 100
COMMITS_SHOWN, COMMIT_FILES = 10, 8
FILES_SHOWN = 10
ANSWER_LINES, ANSWER_CHARS = 2, 200
RELATED_HOURS, RELATED_SHOWN = 6, 3  # sessions this close in time that share a file or a branch
TRUNKS = {"main", "master", "trunk", "develop", "dev"}  # a branch every session may run on: no tie
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
_AGENT_COMMIT = compiledre.compile(r"Commit ([0-9a-f]{7,40}) ([^\n]{1,300})")  # Aider's, first in its output
_CHANGED = compiledre.compile(r"^ (\d+) files? changed(?:, (\d+) insertions?\(\+\))?(?:, (\d+) deletions?\(-\))?")


# facts -------------------------------------------------------------------------------------------
def facts(doc: dict) -> dict:
    """What a card says of a document (the `render`'s input; INDEX.md reads title, outcome,
    commits, files and branches of it)."""
    trajectories = list(_trajectories(doc))
    requests = _requests(doc)
    extra = doc.get("extra") or {}
    native = next((extra[k] for k in ("native_title", "thread_name", "custom_title", "title") if extra.get(k)), None)
    commands = [c for path, t in trajectories for c in _commands(t, path)]
    title = titles.title_of(native, [text for _, text in requests])
    files, outside, attempted = _files(trajectories, extra.get("cwd"))
    return {"title": _cut(" ".join(title.split()), TITLE_CHARS),
            "requests": _asked(requests, decisions(doc)), "outcome": outcome(doc),
            "commits": [c for path, t in trajectories for c in _commits(t, path)],
            "files": files, "outside": outside, "attempted": attempted, "commands": commands,
            "branches": branches(doc), "modes": modes(doc), "span": span(doc),
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


def _requests(doc: dict) -> list[tuple[int, str]]:
    """(step, text) of every user step of the session itself, as typed."""
    return [(step.get("step_id"), parts_text(step.get("message"))) for step in doc.get("steps") or ()
            if isinstance(step, dict) and step.get("source") == "user" and parts_text(step.get("message")).strip()]


def _asked(requests: list[tuple[int, str]], decided: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Every request that carries a task (its words), each time it was typed, and the user's
    decisions (answers to the agent's questions, plan approvals), in step order."""
    found = [(step, words) for step, text in requests
             for words in [" ".join((titles.task_text(text) or _command_with_words(text)).split())] if words]
    return sorted(found + decided, key=lambda r: r[0] if isinstance(r[0], int) else 0)


def _command_with_words(text: str) -> str:
    """A slash command that carries its task in its words (Aider's `/ask how ...`, `/architect
    ...`), whole; "" for one without (`/commit`, `/init`)."""
    match = _WORDY_COMMAND.fullmatch(text.strip()[:REQUESTS_KEPT])
    return match.group(0) if match else ""


# the user's decisions: answers to an agent's questions, plans approved or rejected --------------
_QUESTION_TOOLS = ("request_user_input", "askuserquestion", "ask_user_question", "ask_followup_question",
                   "ask_user", "askuser", "question")
_PLAN_TOOLS = ("exitplanmode", "exit_plan_mode", "plan_mode_respond")
_CLAUDE_ANSWER = compiledre.compile(r'"([^"\n]{1,400})"="([^"\n]{0,400})"')
_WORDY_COMMAND = compiledre.compile(r"/[\w:.-]+\s+\S+\s+\S.*", 16)  # re.S: a command and two words or more
_ANSWER_TAG = compiledre.compile(r"<answer>\s*([^<]{1,2000}?)\s*</answer>")
_APPROVED = compiledre.compile(r"^(?:User has approved|Exited plan mode|Plan approved)", 2)


def decisions(doc: dict) -> list[tuple[int, str]]:
    """(step, what the user decided) for each answer the user gave to an agent's question
    (Codex's `request_user_input`, Claude Code's `AskUserQuestion`, ...) and each plan approved
    or rejected (`ExitPlanMode`), as the tools' results record them."""
    from rendering import toolkinds  # here: search prints jq paths (`jq_path`) without it

    found = []
    for step, call, text, results in _calls(doc):
        name = str(call.get("function_name") or "").lower()
        if name in _QUESTION_TOOLS:
            answer = _answers(text, _questions(call.get("arguments")))
            if answer:
                found.append((step.get("step_id"), f"[answer] {_one_line(answer, REQUEST_CHARS)}"))
        elif name in _PLAN_TOOLS and results:
            if _APPROVED.search(text.lstrip()):
                found.append((step.get("step_id"), "[plan approved]"))
            elif toolkinds.write_outcome("shell", results) == "refused":
                said = text.split("the user said:", 1)[1] if "the user said:" in text else ""
                found.append((step.get("step_id"), "[plan rejected]" + (f" {_one_line(said, REQUEST_CHARS)}" if said.strip() else "")))
    return found


def _questions(arguments) -> dict:
    """id -> question text of a question tool's `questions` argument (Codex's ids)."""
    questions = arguments.get("questions") if isinstance(arguments, dict) else None
    return {q["id"]: q["question"] for q in questions or () if isinstance(q, dict) and isinstance(q.get("id"), str)
            and isinstance(q.get("question"), str)} if isinstance(questions, list) else {}


def _answers(text: str, asked: dict | None = None) -> str:
    """The answers of a question tool's result: Codex's `{"answers": {id: {"answers": [...]}}}`,
    Claude Code's (and opencode's) `User has answered your questions: "Q"="A"`, `<answer>A</answer>`;
    else none (`request_user_input is unavailable in Default mode` is no answer)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            answers = json.loads(stripped).get("answers")
        except (ValueError, AttributeError):
            answers = None
        if isinstance(answers, dict):
            said = []
            for key, value in answers.items():
                picked = value.get("answers") if isinstance(value, dict) else value
                picked = [str(a) for a in picked if isinstance(a, (str, int, float))] if isinstance(picked, list) \
                    else [str(picked)] if isinstance(picked, (str, int, float)) else []
                said.append(f"{(asked or {}).get(key, key)} → {', '.join(picked)}")
            return "; ".join(said)
    if "answered your questions" in stripped[:200]:
        pairs = _CLAUDE_ANSWER.findall(stripped)
        if pairs:
            return "; ".join(f"{q} → {a}" for q, a in pairs)
    tagged = _ANSWER_TAG.search(stripped)  # Cline's and Roo's `<answer>...</answer>`
    return tagged.group(1).strip() if tagged else ""  # else no answer the tool's own text says


def branches(doc: dict) -> list[str]:
    """The git branches the session ran on, as its agent recorded them (Claude Code's
    `gitBranch` of each line, Codex's `git.branch` of its meta, Copilot's, Qwen's, Cline's ...)."""
    extra = doc.get("extra") or {}
    agent = (doc.get("agent") or {}).get("extra") or {}
    named = list(extra.get("git_branches") or ()) if isinstance(extra.get("git_branches"), list) else []
    named += [extra.get("git_branch"), extra.get("branch"), (agent.get("git") or {}).get("branch")
              if isinstance(agent.get("git"), dict) else None,
              (extra.get("git") or {}).get("branch") if isinstance(extra.get("git"), dict) else None]
    found = [b.strip()[:200] for b in named if isinstance(b, str) and b.strip() and b.strip() != "HEAD"]
    return sorted(set(found), key=found.index)


def modes(doc: dict) -> list[str]:
    """The modes the session ran in as its agent recorded them (Claude Code's `permissionMode`,
    Codex's collaboration mode, Cline's plan or act: plan, default, acceptEdits ...), in order."""
    extra = doc.get("extra") or {}
    named = extra.get("modes") if isinstance(extra.get("modes"), list) else []
    found = [m[:40] for m in [*named, extra.get("mode")] if isinstance(m, str) and m]
    return sorted(set(found), key=found.index)


def span(doc: dict) -> list | None:
    """[first, last] step times of the session, in epoch seconds (for sessions close in time)."""
    times = [_epoch(step.get("timestamp")) for step in doc.get("steps") or () if isinstance(step, dict)]
    times = [t for t in times if t is not None]
    return [min(times), max(times)] if times else None


def _epoch(stamp) -> float | None:
    if not isinstance(stamp, str) or not stamp[:4].isdigit():
        return None
    try:
        moment = datetime.datetime.fromisoformat(stamp[:32].replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def outcome(doc: dict) -> str:
    """How the session ended: `completed` (the agent answered last), `interrupted`, `API or auth
    error: <its line>`, `answered, then a request left unanswered (step N)` (the user spoke last
    after an answer), `no answer` (nothing was answered), or `unreadable`."""
    if (doc.get("extra") or {}).get("error"):
        return "unreadable"
    steps = [s for s in doc.get("steps") or () if isinstance(s, dict)]
    said_after = False  # whether the tool itself printed something after (Aider's `/commit`)
    for at in range(len(steps) - 1, -1, -1):
        step = steps[at]
        text = parts_text(step.get("message")).strip()
        kind = (step.get("extra") or {}).get("kind")
        if step.get("source") == "user":
            if _INTERRUPT.search(text[:200]):
                return "interrupted"
            if said_after and text.startswith("/"):
                return "completed"  # a command the tool ran and answered itself
            answered = any(s.get("source") == "agent" and parts_text(s.get("message")).strip() for s in steps[:at])
            return f"answered, then a request left unanswered (step {step.get('step_id')})" if answered \
                else "no answer"
        if kind == "api_error" or (step.get("source") == "system" and _PROBLEM.search(text[:300])) \
                or (step.get("source") == "agent" and text.startswith("API Error")):
            return f"API or auth error: {_first_line(text, ERROR_CHARS)}"
        if step.get("source") == "system" and _INTERRUPT.search(text[:200]):
            return "interrupted"
        if step.get("source") == "agent" and text:
            return "completed"
        if step.get("source") == "agent" and step.get("tool_calls"):
            return "interrupted"  # stopped while its tools ran
        said_after = said_after or (step.get("source") == "system" and bool(text))
    return "no answer"


# commands ----------------------------------------------------------------------------------------
def _calls(trajectory: dict):
    """(step, call, its results' text, its results) of each tool call."""
    for step in trajectory.get("steps") or ():
        if not isinstance(step, dict):
            continue
        results = (step.get("observation") or {}).get("results") or ()
        for call in step.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            own = [r for r in results if isinstance(r, dict) and r.get("source_call_id") == call.get("tool_call_id")]
            text = "\n".join(parts_text(r.get("content"))[:OUTPUT_SCANNED] for r in own)
            yield step, call, text, own


def _commands(trajectory: dict, path: str) -> list[dict]:
    """Each shell command: its step, command line, exit status (a number when recorded, else
    `ok` or `failed`) and, for a failure, the first line of its output that reads as an error."""
    found = []
    for step, call, text, results in _calls(trajectory):
        extra = call.get("extra") or {}
        if extra.get("kind") != "shell" or not isinstance(extra.get("command"), str):
            continue
        status = "refused" if extra.get("refused") else _status(text, results)
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
    """The commits git reported making in the output of the session's shell calls: hash,
    branch, subject, git's own count (`N files changed, X insertions(+), Y deletions(-)`), and
    the files it named (created, deleted, renamed, `--stat` lines) with those staged since the
    previous commit (`git add` with paths; `git add -A`, `.`, `-u` or `commit -a`: the files the
    session wrote meanwhile); and those the agent made itself (Aider's `Commit <hash> <subject>`),
    with the files it wrote since the previous one."""
    from rendering import toolkinds  # here: search prints jq paths (`jq_path`) without it

    found, staged, written, everything = [], [], [], False
    cwd = trajectory_cwd(trajectory)
    for step in trajectory.get("steps") or ():
        if not isinstance(step, dict):
            continue
        for _, call, text, _ in _calls({"steps": [step]}):
            extra = call.get("extra") or {}
            written += [relative(p, cwd) for p in extra.get("paths") or () if extra.get("kind") in toolkinds.WRITING]
            command = extra.get("command")
            if not isinstance(command, str):
                continue
            added, all_of_it = _added(command)
            staged += added
            everything = everything or all_of_it or _commits_all(command)
            if "commit" not in command:
                continue
            for match in _COMMIT.finditer(text):
                branch = match.group(1).replace(" (root-commit)", "")
                named, counts = _committed_files(text[match.end():])
                files = _in_order(named + staged)
                if everything and (counts is None or len(files) < counts[0]):
                    guessed = _in_order(files + written)  # what the session wrote, staged with the rest
                    files = guessed if counts is None or len(guessed) <= counts[0] else files
                found.append({"hash": match.group(2), "branch": branch, "subject": match.group(3).strip(),
                              "files": files, "changed": counts, "step": step.get("step_id"), "path": path})
                staged, written, everything = [], [], False
        edits = (step.get("extra") or {}).get("paths")
        if step.get("source") == "system" and isinstance(edits, list):  # Aider's applied edits
            written += [relative(p, cwd) for p in edits if isinstance(p, str)]
        made = _AGENT_COMMIT.match(parts_text(step.get("message"))) if step.get("source") == "system" else None
        if made:
            found.append({"hash": made.group(1), "branch": "", "subject": made.group(2).strip(),
                          "files": _in_order(written), "changed": None, "step": step.get("step_id"), "path": path})
            staged, written, everything = [], [], False
    return found


def trajectory_cwd(trajectory: dict):
    return (trajectory.get("extra") or {}).get("cwd")


def _in_order(names: list[str]) -> list[str]:
    found = [n for n in names if n]
    return sorted(set(found), key=found.index)


def _committed_files(rest: str) -> tuple[list[str], list | None]:
    """The files git's commit output names (created, deleted, renamed, in a `--stat` table) and
    its count line as [files, insertions, deletions]."""
    files, counts = [], None
    for line in rest.splitlines()[:400]:
        if line.startswith("["):
            break  # the next commit's output
        changed = _CHANGED.match(line)
        if changed and counts is None:
            counts = [int(changed.group(1)), int(changed.group(2) or 0), int(changed.group(3) or 0)]
            continue
        match = _COMMIT_FILE.match(line)
        if match:
            files.append(_renamed_to(next(g for g in match.groups() if g).strip()))
    return files, counts


def _renamed_to(name: str) -> str:
    """The new name in git's rename notation: `a => b`, `dir/{a => b}/file`."""
    if " => " not in name:
        return name
    if "{" in name and "}" in name:
        head, rest = name.split("{", 1)
        inside, tail = rest.split("}", 1)
        return (head + inside.split(" => ", 1)[1] + tail).replace("//", "/")
    return name.split(" => ", 1)[1]


def _added(command: str) -> tuple[list[str], bool]:
    """The paths `git add` names in a command line (its words, not its redirections, variables
    or globs), and whether one stages everything (`git add -A`, `.`, `-u`)."""
    from rendering import toolkinds

    lexer = shlex.shlex(command[:toolkinds.MAX_PARSED], posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    found, everything, words = [], False, []
    for token in tokens + [";"]:
        if not set(token) <= set("|&;<>()"):
            words.append(token)
        elif ">" in token or "<" in token:
            words.append("\0")  # what follows is a redirection's target
        else:
            start = _git_verb(words)
            if start is not None and words[start] == "add":
                rest = words[start + 1:]
                rest = rest[:rest.index("\0")] if "\0" in rest else rest
                if any(w in _NO_PATH_ADD for w in rest):
                    everything = True
                else:
                    found += [w for w in rest if not w.startswith("-") and not w.isdigit() and toolkinds.is_file_path(w)]
            words = []
    return found, everything


def _git_verb(words: list[str]) -> int | None:
    """The position of git's sub-command in a simple command (`git -C dir add ...`), or None."""
    if not words or words[0] != "git":
        return None
    at = 1
    while at < len(words) and words[at].startswith("-"):
        at += 2 if words[at] in ("-C", "-c", "--git-dir", "--work-tree") else 1
    return at if at < len(words) else None


def _commits_all(command: str) -> bool:
    """Whether a command line commits every tracked change (`git commit -a`, `-am`)."""
    return any(w.startswith("-") and not w.startswith("--") and "a" in w or w == "--all"
               for part in command.split("git commit")[1:] for w in part.split("&&")[0].split()[:8])


# files, models, answer ---------------------------------------------------------------------------
def _files(trajectories: list, cwd) -> tuple[list[dict], list[dict], list[dict]]:
    """The files written or edited, each once, with the steps that did: those inside the
    working directory (relative to it), those outside it (a plan under ~/.claude/plans/), and
    those only attempted (the user refused, or the tool failed)."""
    from rendering import toolkinds  # here: search prints jq paths (`jq_path`) without it

    steps: dict = {}
    for path, trajectory in trajectories:
        for write in toolkinds.writes(trajectory):
            for name in write["paths"]:
                steps.setdefault(relative(name, cwd), []).append(where_short(write["step"], path))
    attempted: dict = {}
    for path, trajectory in trajectories:
        for step, call, _, _ in _calls(trajectory):
            extra = call.get("extra") or {}
            for name in extra.get("attempted_paths") or ():
                name = relative(os.path.normpath(name), cwd)
                if name not in steps:
                    attempted.setdefault(name, []).append(where_short(step.get("step_id"), path))
    listed = [{"path": name, "steps": sorted(set(at), key=at.index)} for name, at in steps.items()]
    inside = [f for f in listed if not os.path.isabs(f["path"])]
    outside = [f for f in listed if os.path.isabs(f["path"])]
    return inside, outside, [{"path": n, "steps": at} for n, at in attempted.items()]


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
        if isinstance(step, dict) and step.get("source") == "agent" and parts_text(step.get("message")).strip():
            lines = [line.rstrip() for line in parts_text(step["message"]).strip().splitlines() if line.strip()]
            shown = "\n".join(lines[:ANSWER_LINES])
            return step.get("step_id"), _cut(shown, ANSWER_CHARS), len(lines) > ANSWER_LINES or len(shown) > ANSWER_CHARS
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


def render(doc: dict, found: dict | None = None, related: str = "") -> bytes:
    """The card of a document (`found`: its `facts`, when the caller has them), at most
    CARD_LIMIT bytes; `related`: its `related` section (other sessions' facts), added last."""
    found = found if found is not None else facts(doc)
    sections = [_heading(doc, found), _requests_section(found), _commits_section(found),
                _files_section(found), _commands_section(found), _answer_section(found)]
    text = "\n".join(s for s in sections if s)
    return _bounded(text) + related.encode("utf-8", "surrogatepass")


def _heading(doc: dict, found: dict) -> str:
    """The title, then one line of facts: id, agent, start, steps, outcome, branches, modes,
    models, and the directory."""
    extra = doc.get("extra") or {}
    steps = doc.get("steps") or ()
    started = steps[0].get("timestamp") if steps and isinstance(steps[0], dict) else None
    when = started[:16].replace("T", " ") if isinstance(started, str) else "unknown"
    facts_line = [f"`{extra.get('short_id', '')}` {(doc.get('agent') or {}).get('name', '')}", when,
                  f"{len(steps)} steps", f"outcome: {found['outcome']}"]
    if found.get("branches"):
        facts_line.append("branch: " + ", ".join(_one_line(b, 60) for b in found["branches"][:4]))
    modes = found.get("modes") or []
    modes = [] if modes == ["default"] else modes  # the mode every session starts in, alone, says nothing
    if modes:
        facts_line.append("mode: " + ", ".join(modes[:4]))
    commands = found["commands"]
    if commands:
        failed = sum(1 for c in commands if c["status"] not in ("ok", 0, "no output"))
        facts_line.append(f"{len(commands)} commands, {failed} failed")
    return f"# {_one_line(found['title'] or '(no request)', HEADING_CHARS)}\n" + " · ".join(facts_line) + "\n"


def _requests_section(found: dict) -> str:
    title = " ".join(found["title"].split()).removesuffix("…")

    before = [""]

    def line(request) -> str:
        words = " ".join(request[1].split())
        shared, before[0] = _shared_start(words, before[0]), words
        if title and words.startswith(title):
            said = "(the title)" + (" …" if len(words) > len(title) else "")
        elif shared == len(words):
            said = "(the same again)"
        elif shared >= SHARED_START:  # a template typed again: what differs says which
            said = "(as above) …" + _one_line(words[shared:], REQUEST_CHARS)
        else:
            said = _one_line(words, REQUEST_CHARS)
        return f"- {request[0]}: {said}"
    return _section("Requests", found["requests"], REQUESTS_SHOWN, line,
                    ": `jq -r '.steps[] | select(.source == \"user\") | .message' FILE`")


def _shared_start(text: str, other: str) -> int:
    """How many characters `text` shares with `other` from the start, back to a word's start."""
    n = len(os.path.commonprefix([text, other]))
    if n == len(text) or n < SHARED_START:
        return 0 if n < SHARED_START else n
    return text.rfind(" ", 0, n) + 1


def _section(title: str, items: list, shown: int, line, hint: str = "") -> str:
    """A card's section: its title with the count, a line per item, the first `shown` of them,
    then how many more (and `hint`, where they are); none without items."""
    if not items:
        return ""
    lines = [line(item) for item in items[:shown]]
    if len(items) > shown:
        lines.append(f"- … {len(items) - shown} more{hint}")
    return f"## {title} ({len(items)})\n" + "\n".join(lines) + "\n"


def _commits_section(found: dict) -> str:
    return _section("Commits", found["commits"], COMMITS_SHOWN, _commit_line)


def _commit_line(c: dict) -> str:
    """`hash` on branch: subject (step) — git's count, then the files named (K of N when git
    counted more than are named)."""
    changed = c.get("changed")
    files = c["files"]
    count = (f"{changed[0]} file{'s' if changed[0] != 1 else ''} changed, +{changed[1]} -{changed[2]}"
             if changed else "")
    if changed and len(files) < changed[0]:
        count += f"; {len(files)} of {changed[0]} named"
    names = ", ".join(files[:COMMIT_FILES]) + (f" (+{len(files) - COMMIT_FILES} more)" if len(files) > COMMIT_FILES else "")
    tail = "; ".join(t for t in (count, names) if t)
    return (f"- `{c['hash'][:10]}`{' on ' + _one_line(c['branch'], 60) if c['branch'] else ''}: {_one_line(c['subject'], 100)} "
            f"({where_short(c['step'], c['path'])})" + (f" — {tail}" if tail else ""))


def _files_section(found: dict) -> str:
    inside, outside, attempted = found["files"], found.get("outside") or [], found.get("attempted") or []
    if not (inside or outside or attempted):
        return ""
    lines = _file_lines(inside, FILES_SHOWN)
    if outside:
        lines.append("- outside the directory: " + ", ".join(_file_lines(outside, 4, bare=True)))
    if attempted:
        lines.append("- attempted, not written (refused or failed): " + ", ".join(_file_lines(attempted, 6, bare=True)))
    return f"## Files written or edited ({len(inside)})\n" + "\n".join(lines) + "\n"


def _file_lines(files: list, shown: int, bare: bool = False) -> list[str]:
    """The first `shown` files, those of one folder on one line (`dir/: a.py (3), b.py (4, …)`;
    `bare`: whole paths, on one line), each with the steps that wrote it; then how many more."""
    groups: dict = {}
    for f in files[:shown]:
        folder, name = os.path.split(f["path"]) if not bare else ("", f["path"])
        groups.setdefault(folder, []).append(f"{name} ({', '.join(f['steps'][:2])}{', …' if len(f['steps']) > 2 else ''})")
    lines = [f"{'' if bare else '- '}{_one_line((folder + '/: ' if folder else '') + ', '.join(names), 300)}"
             for folder, names in groups.items()]
    if len(files) > shown:
        lines.append(f"{'' if bare else '- '}… {len(files) - shown} more")
    return lines


def _commands_section(found: dict) -> str:
    commands = found["commands"]
    if not commands:
        return ""
    failed = [c for c in commands if c["status"] not in ("ok", 0, "no output")]
    lines = []
    for c in failed[:FAILURES_SHOWN]:
        lines.append(f"- ✗ {where_short(c['step'], c['path'])} exit {c['status']}: `{_one_line(c['command'], COMMAND_CHARS)}`"
                     + (f" — {_one_line(c['error'], ERROR_CHARS)}" if c.get("error") else ""))
    if len(failed) > FAILURES_SHOWN:
        lines.append(f"- … {len(failed) - FAILURES_SHOWN} more failures")
    return f"## Failed commands ({len(failed)} of {len(commands)})\n" + "\n".join(lines) + "\n" if failed else ""


def _answer_section(found: dict) -> str:
    answer = found["answer"]
    if not answer:
        return ""
    step, text, more = answer
    quoted = "\n".join("> " + line for line in text.splitlines())
    return f"## Final answer (step {step})\n{quoted}" + (" …\n" if more else "\n")


def _bounded(text: str) -> bytes:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= CARD_LIMIT:
        return data
    note = f"\n… (card cut at {CARD_LIMIT // 1024} KB: the document has the rest)\n".encode()
    cut = data[: CARD_LIMIT - len(note)].decode("utf-8", "ignore")
    return cut[: cut.rfind("\n") + 1].encode("utf-8", "surrogatepass") + note


# sessions that belong together -------------------------------------------------------------------
def related(own: dict, others: list[tuple[str, dict]], cwd=None) -> str:
    """The card's last section: the other sessions of the project (`others`: (file name, facts)
    of each) that changed one of the same files or ran on the same branch (other than a trunk,
    TRUNKS) within RELATED_HOURS of this one (`own`: its facts), nearest in time first; "" when
    none. Made of facts only, so that the mount and `export` agree on it without rendering."""
    span_own = own.get("span") if isinstance(own.get("span"), list) else None
    if not span_own:
        return ""
    files = set(_strings(own.get("files")))
    mine = set(_strings(own.get("branches")))
    found = []
    for name, other in others:
        span_other = other.get("span") if isinstance(other, dict) and isinstance(other.get("span"), list) else None
        if not span_other or other is own:
            continue
        gap = max(span_other[0] - span_own[1], span_own[0] - span_other[1], 0)
        if gap > RELATED_HOURS * 3600:
            continue
        shared = sorted(files & set(_strings(other.get("files"))))
        branch = sorted((mine - TRUNKS) & set(_strings(other.get("branches"))))
        if not shared and not branch:
            continue
        why = []
        if shared:
            named = ", ".join(relative(p, cwd) for p in shared[:3]) + (f" +{len(shared) - 3}" if len(shared) > 3 else "")
            why.append(f"same files: {named}")
        if branch:
            why.append(f"same branch: {', '.join(branch[:2])}")
        why.append(_when(span_other[0] - span_own[0]))
        found.append((not shared, gap, span_other[0], name, "; ".join(why)))
    if not found:
        return ""
    found.sort(key=lambda f: f[:4])  # those that changed the same files first, then the nearest in time
    lines = [f"- {_one_line(name.removesuffix('.atif.json').rsplit('_', 1)[-1], 60)}: {_one_line(why, 200)}"
             for *_, name, why in found[:RELATED_SHOWN]]
    if len(found) > RELATED_SHOWN:
        lines.append(f"- … {len(found) - RELATED_SHOWN} more")
    return f"\n## Related sessions ({len(found)})\n" + "\n".join(lines) + "\n"


def _strings(value) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _when(seconds: float) -> str:
    hours = abs(seconds) / 3600
    amount = f"{round(hours)} h" if hours >= 1 else f"{max(1, round(abs(seconds) / 60))} min"
    return "same time" if abs(seconds) < 60 else f"{amount} {'later' if seconds > 0 else 'earlier'}"
