"""A session as a transcript in markdown: what an agent greps and reads a step range of, beside
the session's card and document (`<date>_<agent>_<id>.transcript.md`), and what `trajectoriz
show ID --markdown` prints (the same bytes; `--steps A-B` and `--subagent K` print a part of it).

`memory_transcript(doc)` makes it from the session's ATIF document, already redacted: nothing
else enters it. One header line per step, `## N · source · YYYY-MM-DD HH:MM` (UTC; sub-agent S's
step N is `## S:N · sub-agent S · ...`), N being the step number the card, search and `show
--step` print. Below it: the agent's reasoning (`> ` lines); the user's and the agent's messages
whole; each tool call on one line saying what it did (`$ make test`, `edit src/a.py (-2 +5
lines)`, `read src/b.py`, `write docs/x.md (212 lines)`, `task: ...`), marked `✗` when it failed
or was refused,
with its output cut to its first and last lines, how many were left out and the jq path to the
whole; the user's answers to the agent's questions as the user's words; then each sub-agent.
No line is longer than LINE_CAP characters: an output's long line is cut (`… [+N chars]`), a
message's is wrapped, so that `rg -n` over the files never prints a multi-KB line.
"""

from __future__ import annotations

import datetime
import re

from atif.serialize import dumps_text, loads
from core.errors import UserError
from core.jsonlib import orjson
from rendering import cards

TRANSCRIPT_SUFFIX = ".transcript.md"
LINE_CAP = 400
INDENT = "    "  # of a tool's output and the user's answers, under its call
# (first, last) lines of a tool's output shown, by the call's kind; a failure shows ERROR_KEPT
KEPT = {"shell": (4, 2), "read": (0, 0), "search": (3, 1), "write": (2, 0), "edit": (2, 0), "task": (6, 2),
        "fetch": (3, 1), "plan": (1, 0), "other": (3, 1)}
ERROR_KEPT = (5, 4)
OUTPUT_CAP = 200  # characters of a line of a tool's output (the whole is at the jq path the cut names)
SHORT = 3  # lines of an output shown whatever its kind
NEWLINE = "\n"
SYSTEM_KEPT = (2, 0)  # of text the harness put in the conversation (context, reminders)
_STEPS = re.compile(r"^\s*(\d+)\s*(?:(-)\s*(\d+)?)?\s*$")
_EXIT = re.compile(r"^(?:Error: )?Exit code:? (-?\d+)|exited with (?:code|status) (-?\d+)", re.I | re.M)
_REFUSED = re.compile(r"doesn't want to proceed with this tool use|(?:rejected|denied|declined) by (?:the )?user|"
                      r"^rejected:|user (?:rejected|denied|declined)", re.I | re.M)
_ANSWERED = "User has answered your questions:"
_ANSWERED_END = "You can now continue with the user's answers in mind."
# what agents put before a command's output (the exit code is read before it is taken off): Codex's
# preamble, Claude's `Exit code N` line
_PREAMBLE = re.compile(r"(?:Chunk ID: [^\n]*\n)?(?:Wall time: [^\n]*\n)?(?:Process exited with code -?\d+\n|"
                       r"Exit code: -?\d+\n)(?:Wall time: [^\n]*\n)?(?:Original token count: \d+\n)?Output:\n|"
                       r"(?:Error: )?Exit code:? -?\d+\n")
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Limits:
    """How much a transcript cuts: lines over `cap` characters (0: none) and tool outputs to
    their first and last lines (`cut`)."""

    def __init__(self, cap: int = LINE_CAP):
        self.cap = max(cap, 80) if cap > 0 else 0  # (a line must hold a cut's note)
        self.cut = cap > 0


MEMORY = Limits()


def transcript_name(document_name: str) -> str:
    """The transcript's file name beside its document's (`<date>_<agent>_<id>.transcript.md`)."""
    stem = document_name[: -len(".atif.json")] if document_name.endswith(".atif.json") else document_name
    return stem + TRANSCRIPT_SUFFIX


def memory_transcript(doc: dict) -> bytes:
    """The transcript of a session's (redacted) ATIF document, as the mount and `export` serve
    it and `show ID --markdown` prints it."""
    return rendered(doc)[0].encode("utf-8", "surrogatepass")


def rendered(doc: dict, limits: Limits = MEMORY) -> tuple[str, dict]:
    """The transcript's text and where each step's header is: step label (`14`, `2:3`) -> its
    line number (from 1)."""
    out = Lines(limits)
    out.extend(header(doc, limits))
    refs = _refs(doc)
    for step in _steps(doc):
        render_step(out, step, "", working_directory(doc), refs)
    for path, sub in _subagents(doc):
        out.extend(subagent_heading(path, sub))
        for step in _steps(sub):
            render_step(out, step, path, working_directory(sub, doc), refs)
    return out.text(), out.where


def step_lines(doc: dict) -> dict[str, int]:
    """Where each step's header is in the transcript: step label (`14`, `2:3`) -> its line
    number (from 1), so that `sed -n` reads around a step `search --content` found."""
    return rendered(doc)[1]


class Lines:
    """The transcript's lines (none holding a newline), each at most the cap, and the line of
    each step's header."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.lines: list[str] = []
        self.where: dict[str, int] = {}

    def add(self, line: str) -> None:
        self.lines.extend(cut_line(part, self.limits.cap) for part in line.split("\n"))

    def extend(self, lines) -> None:
        for line in lines:
            self.add(line)

    def wrapped(self, text: str, prefix: str = "") -> None:
        """Text kept whole: a line over the cap is wrapped, never cut."""
        for line in safe(text).split("\n"):
            self.lines.extend(prefix + part for part in wrap(line, self.limits.cap - len(prefix)))

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


# the parts of a document ---------------------------------------------------------------------
def _steps(trajectory: dict) -> list:
    return [s for s in _list(trajectory.get("steps")) if isinstance(s, dict)]


def _subagents(doc: dict, path: str = ""):
    """(path, trajectory) of each sub-agent, depth first: `1`, `1.1`, `2`."""
    for i, sub in enumerate(_list(doc.get("subagent_trajectories")), 1):
        if isinstance(sub, dict):
            here = f"{path}.{i}" if path else str(i)
            yield here, sub
            yield from _subagents(sub, here)


def _refs(doc: dict) -> dict:
    """trajectory_id -> sub-agent path, for the calls that started them."""
    return {sub["trajectory_id"]: path for path, sub in _subagents(doc) if isinstance(sub.get("trajectory_id"), str)}


def _dict(value) -> dict:
    """A field that should hold an object, as one (a pulled document is untrusted)."""
    return value if isinstance(value, dict) else {}


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _kind(call: dict) -> str:
    kind = _dict(call.get("extra")).get("kind")
    return kind if isinstance(kind, str) and kind in KEPT else "other"


def label(step_id, path: str) -> str:
    """A step's number as the card and search print it: `14`, sub-agent S's `S:14`."""
    return f"{path}:{step_id}" if path else str(step_id)


def content_text(content) -> str:
    """The text of a message or a tool result: a string, or content parts (images become a
    one-line placeholder naming their file)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part_text(part) for part in content)
    return dumps_text(content)


def part_text(part) -> str:
    if not isinstance(part, dict):
        return str(part)
    if part.get("type") == "image":
        source = _dict(part.get("source"))
        return f"[image {source.get('media_type', '')} {source.get('path', '')}]".replace("  ", " ")
    return part.get("text") if isinstance(part.get("text"), str) else ""


# lines ---------------------------------------------------------------------------------------------
def safe(text: str) -> str:
    """Text without the characters that drive a terminal (escape sequences that set its title,
    write its clipboard or clear it; a carriage return that hides a line's start): line ends
    become newlines, other controls U+FFFD. Tabs stay; the document keeps them all."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("\ufffd", text)



def cut_line(line: str, cap: int) -> str:
    """`line` at most `cap` characters (0: as it is), its cut saying how much was left out."""
    if not cap or len(line) <= cap:
        return line
    keep = cap - len(f"… [+{len(line):,} chars]")
    return line[:keep] + f"… [+{len(line) - keep:,} chars]"


def wrap(line: str, width: int) -> list[str]:
    """`line` as pieces of at most `width` characters, broken after a space where one is near."""
    if width <= 0 or len(line) <= width:
        return [line]
    pieces = []
    while len(line) > width:
        at = line.rfind(" ", width // 2, width)
        at = at + 1 if at > 0 else width
        pieces.append(line[:at])
        line = line[at:]
    return pieces + [line]


def when(timestamp) -> str:
    """A step's time as `YYYY-MM-DD HH:MM` (UTC when the record says its zone)."""
    if not isinstance(timestamp, str) or not timestamp:
        return ""
    try:
        moment = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return safe(timestamp[:25])
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M")


# the header ----------------------------------------------------------------------------------------
def header(doc: dict, limits: Limits) -> list[str]:
    extra = _dict(doc.get("extra"))
    agent = _dict(doc.get("agent"))
    steps = _steps(doc)
    subs = list(_subagents(doc))
    who = " ".join(str(v) for v in (agent.get("name"), agent.get("version")) if v and v != "unknown")
    if agent.get("model_name"):
        who += f", {agent['model_name']}"
    span = " to ".join(dict.fromkeys(t for t in (when(steps[0].get("timestamp")) if steps else "",
                                                    when(steps[-1].get("timestamp")) if steps else "") if t))
    facts = [f"{len(steps)} steps" + (f" and {len(subs)} sub-agent(s)" if subs else ""),
             f"{span} UTC" if span else ""]
    lines = [f"# {' '.join(title(doc).split()) or '(no request)'}", "",
             f"Transcript of session `{extra.get('short_id', doc.get('session_id', ''))}` ({safe(who)}): "
             + ", ".join(f for f in facts if f) + ".",
             f"Directory: `{safe(str(extra.get('cwd') or '(none recorded)'))}`",
             "Step N (`## N · ...`) is `.steps[N-1]` in the `.atif.json` of this file's name; sub-agent S's "
             "step N (`## S:N`) is `.subagent_trajectories[S-1].steps[N-1]`."]
    if limits.cut:
        lines.append(f"Tool outputs show their first and last lines and the jq path to the whole; "
                     f"lines are cut at {limits.cap} characters.")
    for warning in _list(extra.get("warnings")):
        lines.append(f"Warning: {safe(str(warning))}")
    return [safe(line) for line in lines] + [""]


def title(doc: dict) -> str:
    """The session's title as its card says it (cards.facts, without the rest of the facts)."""
    extra = _dict(doc.get("extra"))
    native = next((extra[k] for k in ("native_title", "thread_name", "custom_title", "title") if extra.get(k)), None)
    requests = [content_text(s.get("message")) for s in _steps(doc) if s.get("source") == "user"]
    from agents import titles

    return safe(titles.title_of(native, [r for r in requests if r.strip()]))


def subagent_heading(path: str, sub: dict) -> list[str]:
    agent = _dict(sub.get("agent")).get("name")
    return [f"# Sub-agent {path}: `{safe(str(sub.get('trajectory_id') or ''))}`"
            + (f" ({safe(str(agent))})" if agent else ""),
            "", f"Its step N (`## {path}:N`) is `{cards.jq_path(1, path)[:-len('.steps[0]')]}.steps[N-1]`.", ""]


# a step -------------------------------------------------------------------------------------------
def working_directory(*trajectories: dict) -> str | None:
    """The first directory the trajectories record (a sub-agent's, else its session's): paths
    inside it are shown relative to it."""
    for trajectory in trajectories:
        cwd = _dict(trajectory.get("extra")).get("cwd")
        if isinstance(cwd, str) and cwd:
            return cwd
    return None


def render_step(out: Lines, step: dict, path: str, cwd: str | None, refs: dict) -> None:
    name = label(step.get("step_id"), path)
    out.where[name] = len(out.lines) + 1
    out.add(step_heading(step, path))
    jq = cards.jq_path(step.get("step_id"), path)
    reasoning = step.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning.strip():
        out.wrapped(reasoning.strip("\n"), "> ")
    message = content_text(step.get("message"))
    if step.get("source") == "system" and message.strip():
        output(out, message, f"{jq}.message", SYSTEM_KEPT, "")
    elif message.strip():
        out.wrapped(message.strip("\n"))
    results = [r for r in _list(_dict(step.get("observation")).get("results")) if isinstance(r, dict)]
    done = set()
    for call in _list(step.get("tool_calls")):
        if isinstance(call, dict):
            own = [i for i, r in enumerate(results) if r.get("source_call_id") == call.get("tool_call_id")]
            done.update(own)
            render_call(out, call, [(i, results[i]) for i in own], jq, cwd, refs)
    for i, result in enumerate(results):
        if i not in done:
            render_call(out, None, [(i, result)], jq, cwd, refs)
    out.add("")


def step_heading(step: dict, path: str) -> str:
    source = str(step.get("source", ""))
    kind = _dict(step.get("extra")).get("kind")
    if kind and isinstance(kind, str):
        source += f" ({kind})"
    parts = [label(step.get("step_id"), path)] + ([f"sub-agent {path}"] if path else []) + [source]
    moment = when(step.get("timestamp"))
    if moment:
        parts.append(moment)
    if step.get("is_copied_context"):
        parts.append("copied context")
    return safe("## " + " · ".join(parts))


def render_call(out: Lines, call: dict | None, results: list, jq: str, cwd, refs: dict) -> None:
    """A tool call on one line (or a result no call claims), then its results."""
    kind = _kind(call) if call else "other"
    line = "- " + (describe(call, cwd) if call else "result")
    failed = [status(r) for _, r in results]
    marks = [m for m in failed if m]
    if marks:
        line += " → ✗ " + ", ".join(dict.fromkeys(marks))
    kept = ERROR_KEPT if marks else KEPT.get(kind, KEPT["other"])
    texts = [content_text(r.get("content")) for _, r in results]
    counted = (out.limits.cut and kept == (0, 0) and not (call and question_list(call))
               and any(lines_in(t.strip("\n")) > SHORT for t in texts))
    if counted and any(t.strip() for t in texts):  # a read: how long, and where, in the call's line
        suffix = " · " + ", ".join(f"{lines_in(t.strip(NEWLINE))} lines at {jq}.observation.results[{i}].content"
                                   for (i, _), t in zip(results, texts) if t.strip())
        out.add(cut_line(safe(line), max(80, out.limits.cap - len(suffix))) + suffix)
    else:
        out.add(safe(line))
    if call is not None and kind == "plan":
        plan_lines(out, call)
    for (i, result), text in zip(results, texts):
        if call is not None and answered(out, call, text):
            pass
        elif text.strip() and not counted:
            if kind == "shell":
                text = _PREAMBLE.sub("", text[:200], count=1) + text[200:]
            output(out, text, f"{jq}.observation.results[{i}].content", kept, INDENT)
        for ref in _list(result.get("subagent_trajectory_ref")):
            if isinstance(ref, dict):
                found = refs.get(ref.get("trajectory_id")) if isinstance(ref.get("trajectory_id"), str) else None
                where = f"`# Sub-agent {found}` below, steps `{found}:N`" if found else "not embedded in this document"
                out.add(safe(f"{INDENT}→ sub-agent `{ref.get('trajectory_id') or ref.get('session_id')}`: {where}"))


def output(out: Lines, text: str, jq: str, kept: tuple, indent: str) -> None:
    """A text cut to its first and last lines (when the limits cut), with how many were left
    out and the jq path to the whole. Only the lines shown are copied: an output of hundreds
    of megabytes costs a scan for its line ends."""
    text = text.strip("\n")
    total, (first, last) = lines_in(text), kept
    width = min(out.limits.cap, OUTPUT_CAP) - len(indent) if out.limits.cap else 0
    if not (out.limits.cut and total > first + last + 1):
        out.extend(safe(indent + cut_line(line, width)) for line in text.split("\n"))
        return
    head_end = _nth(text, "\n", first) if first else 0
    tail_start = _nth_from_end(text, "\n", last) if last else len(text)
    shown = (text[:head_end].split("\n") if first else []) + [None] + (text[tail_start:].split("\n") if last else [])
    for line in shown:
        out.add(f"{indent}… {total - first - last} lines left out: {jq}" if line is None
                else safe(indent + cut_line(line, width)))


def lines_in(text: str) -> int:
    return text.count("\n") + 1 if text else 0


def _nth(text: str, mark: str, n: int) -> int:
    """Where the n-th `mark` of `text` is (n >= 1, and there are as many)."""
    at = -1
    for _ in range(n):
        at = text.find(mark, at + 1)
    return at


def _nth_from_end(text: str, mark: str, n: int) -> int:
    """Just after the n-th `mark` from the end of `text`."""
    at = len(text)
    for _ in range(n):
        at = text.rfind(mark, 0, at)
    return at + 1


def status(result: dict) -> str:
    """`refused`, `exit N`, `error`, or "" for a result that says it did its work."""
    extra = _dict(result.get("extra"))
    head = content_text(result.get("content"))[:600]
    if extra.get("rejected_by") or _REFUSED.search(head):
        return "refused"
    code = extra.get("exit_code")
    if not (isinstance(code, int) and not isinstance(code, bool)):
        found = _EXIT.search(head)
        code = int(found.group(1) or found.group(2)) if found else None
    if code:
        return f"exit {code}"
    return "error" if extra.get("is_error") else ""


# what a call did, in a line -----------------------------------------------------------------------
def describe(call: dict, cwd) -> str:
    extra = _dict(call.get("extra"))
    kind = _kind(call)
    name = str(call.get("function_name") or "tool")
    arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
    named = _list(extra.get("paths")) or _list(extra.get("attempted_paths"))  # a refused write's are attempted
    paths = ", ".join(cards.relative(p, cwd) for p in named if isinstance(p, str))
    if question_list(call):
        return "ask the user: " + " · ".join(" ".join(q.split()) for q in question_list(call))
    if kind == "shell" and isinstance(extra.get("command"), str):
        return "$ " + first_line(extra["command"])
    if kind == "read":
        return f"read {paths or compact(arguments)}" + _range(arguments)
    if kind == "write":
        written = _first_string(arguments, ("content", "contents", "file_text", "text", "fileContent"))
        return f"write {paths or compact(arguments)}" + (f" ({_count(written)} lines)" if written is not None else "")
    if kind == "edit":
        return f"edit {paths or compact(arguments)}" + _change(arguments)
    if kind == "task":
        what = _first_string(arguments, ("description", "prompt", "task", "message", "goal", "instructions"))
        agent = _first_string(arguments, ("subagent_type", "agent", "agent_type", "mode"))
        return f"task: {first_line(what or compact(arguments))}" + (f" ({agent})" if agent else "")
    if kind in ("search", "fetch"):
        what = _first_string(arguments, ("pattern", "query", "regex", "glob", "url", "q", "search", "command"))
        where = _first_string(arguments, ("path", "dir_path", "directory", "include", "glob"))
        if what is not None:
            inside = f" in {cards.relative(where, cwd)}" if where and where != what else ""
            return f"{name} {first_line(what)!r}{inside}"
    if kind == "plan":
        return f"plan ({name})"
    return f"{name} {compact(arguments)}".rstrip()


def first_line(text: str) -> str:
    lines = text.strip().split("\n")
    return lines[0] + (f" ⏎ (+{len(lines) - 1} lines)" if len(lines) > 1 else "")


def compact(arguments) -> str:
    """Arguments as JSON on one line."""
    if not arguments:
        return ""
    try:
        return orjson.dumps(arguments).decode()
    except TypeError:  # (an integer orjson cannot hold: the document's own form)
        return " ".join(dumps_text(arguments).split())


def _first_string(arguments: dict, keys: tuple) -> str | None:
    return next((arguments[k] for k in keys if isinstance(arguments.get(k), str) and arguments[k]), None)


def _count(text: str) -> int:
    return len(text.splitlines())


def _range(arguments: dict) -> str:
    start = next((arguments[k] for k in ("offset", "start_line", "line") if isinstance(arguments.get(k), int)), None)
    count = next((arguments[k] for k in ("limit", "lines") if isinstance(arguments.get(k), int)), None)
    view = arguments.get("view_range")
    if isinstance(view, list) and len(view) == 2 and all(isinstance(v, int) for v in view):
        return f" (lines {view[0]}-{view[1]})"
    if start is not None or count is not None:
        return f" (from line {start or 1}" + (f", {count} lines)" if count is not None else ")")
    return ""


def _change(arguments: dict) -> str:
    """`(-R +A lines)` of an edit whose old and new text, or patch, the call holds."""
    patch = _first_string(arguments, ("patch", "input", "diff", "patchText", "patch_text"))
    if patch is not None:
        lines = patch.splitlines()
        added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
        return f" (-{removed} +{added} lines)" if added or removed else ""  # (not a diff: Cline's blocks)
    edits = [e for e in _list(arguments.get("edits")) if isinstance(e, dict)] or [arguments]
    old = [_first_string(e, ("old_string", "old_str", "oldText", "old_text", "oldString", "search")) for e in edits]
    new = [_first_string(e, ("new_string", "new_str", "newText", "new_text", "newString", "replace")) for e in edits]
    if all(v is None for v in old + new):
        return ""
    return f" (-{sum(_count(v or '') for v in old)} +{sum(_count(v or '') for v in new)} lines)"


def plan_lines(out: Lines, call: dict) -> None:
    """A plan call's items, one a line, or its plan's text whole (the design the user approved)."""
    arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
    text = _first_string(arguments, ("plan", "explanation"))
    if text is not None:
        out.wrapped(text.strip("\n"), INDENT)
    items = next((arguments[k] for k in ("todos", "plan", "items", "tasks") if isinstance(arguments.get(k), list)), [])
    for item in items:
        if isinstance(item, dict):
            words = _first_string(item, ("content", "step", "text", "title", "description")) or compact(item)
            state = _first_string(item, ("status", "state")) or ""
            out.add(safe(f"{INDENT}[{state}] {' '.join(words.split())}"))


# questions the agent asked the user ----------------------------------------------------------------
def question_list(call: dict) -> list[str]:
    """The questions of a call that asks the user (Claude's AskUserQuestion, Codex's
    request_user_input), else []."""
    if call.get("function_name") not in ("AskUserQuestion", "request_user_input"):
        return []
    arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
    return [q["question"] for q in _list(arguments.get("questions"))
            if isinstance(q, dict) and isinstance(q.get("question"), str)]


def answered(out: Lines, call: dict, text: str) -> bool:
    """The user's answers to a question call, as the user's words (`user answered: ...`);
    False when the result holds none."""
    if not question_list(call):
        return False
    if text.startswith(_ANSWERED):
        words = text[len(_ANSWERED):].strip()
        if words.endswith(_ANSWERED_END):
            words = words[: -len(_ANSWERED_END)].strip()
        out.wrapped("user answered: " + words, INDENT)
        return True
    try:
        answers = loads(text.encode()).get("answers")
    except (ValueError, AttributeError):
        return False
    if not isinstance(answers, dict):
        return False
    asked = {q["id"]: q.get("question") for q in _list(_dict(call.get("arguments")).get("questions"))
             if isinstance(q, dict) and isinstance(q.get("id"), str)}
    for key, value in answers.items():
        chosen = value.get("answers") if isinstance(value, dict) else value
        words = " / ".join(str(v) for v in chosen) if isinstance(chosen, list) else str(chosen)
        out.wrapped(f"user answered: {asked.get(key) or key} → {words}", INDENT)
    return True


# show --markdown -----------------------------------------------------------------------------------
def step_range(text: str | None, count: int) -> tuple[int, int]:
    """`A-B`, `A-` (to the end) or `A`, as 1-based inclusive bounds within 1..count. An end past
    the last step is cut to it, so an agent can page with a fixed width."""
    if text is None:
        return 1, count
    found = _STEPS.match(text)
    if not found:
        raise UserError(f"--steps {text!r}: expected A-B, A- or A (step numbers, 1-based)")
    first = int(found[1])
    last = count if found[2] and not found[3] else int(found[3] or found[1])
    if not 1 <= first <= count:
        raise UserError(f"this trajectory has steps 1..{count}, not {first}")
    if last < first:
        raise UserError(f"--steps {text!r}: the range ends before it starts")
    return first, min(last, count)


def subagent(doc: dict, path: str) -> dict:
    """The embedded sub-agent trajectory at `path`: its 1-based position (`2`), a position
    inside a sub-agent (`2.1`), or its trajectory_id."""
    found = doc
    for part in path.split("."):
        subs = found.get("subagent_trajectories") or []
        if part.isdigit() and 1 <= int(part) <= len(subs):
            found = subs[int(part) - 1]
        else:
            named = [s for s in subs if s.get("trajectory_id") == part]
            if not named:
                raise UserError(f"--subagent {path}: no such sub-agent (this trajectory has "
                                f"{len(subs)}: 1..{len(subs)} or their trajectory_id)")
            found = named[0]
    return found


def subagent_path(doc: dict, part: str) -> str:
    """The position path (`2.1`) of the sub-agent `part` names (a path or a trajectory_id)."""
    target = subagent(doc, part)
    return next(path for path, sub in _subagents(doc) if sub is target)


def render(doc: dict, part: str | None, steps: str | None, cap: int) -> str:
    """`show --markdown`: the whole transcript (the mount's bytes, with the default cap), or its
    header and the steps `steps` of the session or of its sub-agent `part`, then the command
    that shows the next ones."""
    limits = Limits(cap)
    if part is None and steps is None:
        return rendered(doc, limits)[0]
    path = subagent_path(doc, part) if part else ""
    trajectory = subagent(doc, part) if part else doc
    all_steps = _steps(trajectory)
    first, last = step_range(steps, len(all_steps))
    out = Lines(limits)
    out.extend(header(doc, limits))
    if path:
        out.extend(subagent_heading(path, trajectory))
    refs = _refs(doc)
    for step in all_steps[first - 1: last]:
        render_step(out, step, path, working_directory(trajectory, doc), refs)
    if last < len(all_steps):
        width = last - first + 1
        which = f" --subagent {path}" if path else ""
        out.add(f"_Steps {first}–{last} of {len(all_steps)}. Next: `trajectoriz show "
                f"{_dict(doc.get('extra')).get('short_id', '')} --markdown{which} --steps "
                f"{last + 1}-{min(len(all_steps), last + width)}`_")
    return out.text()
