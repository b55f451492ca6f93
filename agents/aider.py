"""Aider: `<project>/.aider.chat.history.md`, a Markdown transcript every run of aider appends to.

One session per run: each run starts with `# aider chat started at <local time>`. A run started
with `--restore-chat-history` (its banner says `Restored previous conversation history.`) sends
the earlier turns to the model again and continues that conversation: it belongs to the session
of the run before it, after that run's steps. In a run,
`#### ` lines are what was sent to the model as the user's message, plain lines are the model's
answer, and `> ` lines are aider's own output (its banner, confirmations, `Applied edit to x`,
`Tokens: ...`). There are no per-message timestamps and no tool calls: edits are applied from the
model's text, and aider reports them as `> ` lines.

`#### ` is not always the human: a slash command (`/ask X`) is logged, then its argument `X` again
as the message actually sent; architect mode logs the architect model's answer again as the
editor model's `#### ` input. Those repeats become `system` steps. The prompts the human typed
are in `.aider.input.history` (with timestamps), which dates the user steps.

Discovery: the file lives in the project, see `agents/projects.py` for where it is looked for.
The session id is a hash of the file's path and the run's index (runs are only appended).
"""

from __future__ import annotations

import os
import re
from collections import namedtuple

from agents import projects
from agents.base import epoch, FILE_LIMIT, iso, one_line, open_binary, Session, size_text, unique_files
from atif.build import metrics, TrajectoryBuilder
from core import compiledre
from core.hashes import sha256

NAME = "aider"
PREFIX = "ai"
STORES_IN_PROJECTS = True  # found through agents/projects.py
ATIF_NAME = "aider"
VERSION = 2

HISTORY_FILE = ".aider.chat.history.md"
INPUT_HISTORY_FILE = ".aider.input.history"
RUN_HEADER = "# aider chat started at "
SLASH_WITH_PROMPT = ("/ask", "/code", "/architect", "/context", "/help", "/ok")

_TOKENS = compiledre.compile(
    r"^Tokens: (?P<sent>[\d.,]+[kM]?) sent"
    r"(?:, (?P<write>[\d.,]+[kM]?) cache write)?"
    r"(?:, (?P<hit>[\d.,]+[kM]?) cache hit)?"
    r", (?P<received>[\d.,]+[kM]?) received\."
    r"(?: Cost: \$(?P<cost>[\d.,]+) message, \$(?P<session_cost>[\d.,]+) session\.)?")
_APPLIED = compiledre.compile(r"^Applied edit to (.+)$")


# discovery --------------------------------------------------------------------------------------
def sources(env, session_dirs=()):
    return unique_files(os.path.join(d, HISTORY_FILE) for d in projects.candidate_dirs(env, session_dirs))


def dependencies(source: str, env) -> list[str]:
    return [source, os.path.join(os.path.dirname(source), INPUT_HISTORY_FILE)]


def scan(source: str, env) -> list[Session]:
    """One session per run and the runs that restored it. Reads the file once, looking only at
    header, prompt and `> ` lines."""
    found = []
    for group in sessions_of(split_runs(read_text(source))):
        run, header = group[0]
        found.append(Session(
            agent=NAME, native_id=native_id(source, run.index), source=source,
            started=epoch(run.started), cwd=header.cwd or os.path.dirname(os.path.abspath(source)),
            title=one_line(next(filter(None, (first_prompt(r) for r, _ in group)), "")), model=header.model,
            locator=str(run.index), extra={"format": "markdown", "run": run.index}))
    return found


def sessions_of(runs: list["Run"]) -> list[list[tuple]]:
    """The runs grouped by session, each with its Header: a run that restored the chat history
    joins the session of the run before it."""
    groups: list[list[tuple]] = []
    for run in runs:
        header = run_header(run)
        if header.restored and groups:
            groups[-1].append((run, header))
        else:
            groups.append([(run, header)])
    return groups


def native_id(path: str, index: int) -> str:
    digest = sha256(f"{os.path.abspath(path)}#{index}".encode()).hexdigest()
    return f"aider-{digest[:24]}"


# reading the transcript ---------------------------------------------------------------------------
class Run:
    """One run of aider in the history: its lines after the header."""

    def __init__(self, index: int, started: str | None):
        self.index = index
        self.started = started   # the header's local time, as written
        self.lines: list[str] = []


class Block(namedtuple("Block", "kind lines")):
    """Lines of one kind: "prompt" (####), "output" (>), "answer" (plain)."""
    __slots__ = ()

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


def read_head(path: str) -> tuple[bytes, bool]:
    """The file's first FILE_LIMIT bytes (a history appended to for years may be larger than
    what is worth holding), and whether they are all of it."""
    with open_binary(path) as handle:
        data = handle.read(FILE_LIMIT)
        return data, not handle.read(1)


def read_text(path: str) -> str:
    return read_head(path)[0].decode("utf-8", "replace")


def read_checked(path: str) -> tuple[str, str | None, str | None]:
    """The text, a warning when it is not valid UTF-8, and one when its end is cut: it does not
    end with a newline (aider ends every write with one), or the file goes on past FILE_LIMIT."""
    data, whole = read_head(path)
    cut = None
    if not whole:
        cut = f"the file is over {size_text(FILE_LIMIT)}: only its first {size_text(FILE_LIMIT)} were read"
    elif data and not data.endswith(b"\n"):
        cut = ("the file does not end with a newline: the last line of this run may be cut "
               "(truncated, or still being written)")
    try:
        return data.decode("utf-8"), None, cut
    except UnicodeDecodeError as exc:
        problem = (f"the file is not valid UTF-8 (first bad byte at offset {exc.start}); "
                   "undecodable bytes were replaced")
        return data.decode("utf-8", "replace"), problem, cut


def split_runs(text: str) -> list[Run]:
    """The runs in file order. Lines before the first header (a file started by an old aider, or
    cut) form a run without a start time when they hold anything."""
    runs = [Run(0, None)]
    for line in text.splitlines():
        if line.startswith(RUN_HEADER):
            runs.append(Run(len(runs), line[len(RUN_HEADER):].strip()))
        else:
            runs[-1].lines.append(line)
    if not any(line.strip() for line in runs[0].lines):
        runs.pop(0)
        for run in runs:
            run.index -= 1
    return runs


def line_kind(line: str) -> str:
    if line.startswith("####"):
        return "prompt"
    if line.startswith(">"):
        return "output"
    return "answer" if line.strip() else "blank"


def line_body(line: str, kind: str) -> str:
    """The text of a line without its marker, and without the two spaces aider appends to
    `#### ` and `> ` lines (Markdown line breaks)."""
    if kind == "prompt":
        return line[5:].rstrip() if line.startswith("#### ") else line[4:].rstrip()
    if kind == "output":
        return line[2:].rstrip() if line.startswith("> ") else line[1:].rstrip()
    return line


def line_kinds(lines: list[str]) -> list[str]:
    """The kind of each line. `#### ` lines inside an answer (an answer line before them and
    right after them) are a Markdown heading of the model's, not a prompt: aider writes a blank
    line after a prompt, and a prompt never continues an answer."""
    kinds = [line_kind(line) for line in lines]
    previous = None   # the kind of the last non-blank line
    i = 0
    while i < len(kinds):
        if kinds[i] != "prompt":
            previous = kinds[i] if kinds[i] != "blank" else previous
            i += 1
            continue
        end = i
        while end < len(kinds) and kinds[end] == "prompt":
            end += 1
        if previous == "answer" and end < len(kinds) and kinds[end] == "answer":
            kinds[i:end] = ["answer"] * (end - i)
        previous = kinds[i]
        i = end
    return kinds


def blocks(run: Run) -> list[Block]:
    """Consecutive lines of one kind. A blank line ends a prompt or an output block; inside an
    answer it is kept (an answer ends at the next prompt or output line)."""
    found: list[Block] = []
    current: Block | None = None    # the block a next line of the same kind extends
    for line, kind in zip(run.lines, line_kinds(run.lines)):
        if kind == "blank":
            if current and current.kind == "answer":
                current.lines.append("")
            else:
                current = None
        elif current and current.kind == kind:
            current.lines.append(line_body(line, kind))
        else:
            current = Block(kind, [line_body(line, kind)])
            found.append(current)
    for block in found:
        while block.lines and not block.lines[-1].strip():
            block.lines.pop()
    return found


# run metadata (the banner) -------------------------------------------------------------------------
class Header:
    """What a run's banner says."""

    def __init__(self):
        self.version: str | None = None
        self.model: str | None = None
        self.weak_model: str | None = None
        self.cwd: str | None = None
        self.git_dir: str | None = None
        self.restored = False


def run_header(run: Run) -> Header:
    header = Header()
    for line in run.lines:
        if not line.startswith(">"):
            continue
        body = line_body(line, "output")
        if body.startswith("Aider v") and header.version is None:
            header.version = body[len("Aider v"):].split()[0] if len(body) > 7 else None
        elif body.startswith(("Model: ", "Main model: ")) and header.model is None:
            header.model = body.split(": ", 1)[1].split(" with ", 1)[0].strip() or None
        elif body.startswith("Weak model: "):
            header.weak_model = body.split(": ", 1)[1].strip() or None
        elif body.startswith("Cur working dir: "):
            header.cwd = body.split(": ", 1)[1].strip() or None
        elif body.startswith("Git working dir: "):
            header.git_dir = body.split(": ", 1)[1].strip() or None
        elif body.startswith("Restored previous conversation history"):
            header.restored = True
    return header


def first_prompt(run: Run) -> str:
    for block in blocks(run):
        if block.kind == "prompt":
            return block.text
    return ""


# the input history: what the human typed, with timestamps ------------------------------------------
def input_history(path: str) -> list[tuple[float | None, str]]:
    """Entries of `.aider.input.history` (prompt_toolkit format: `# <time>` then `+<line>`s)."""
    try:
        text = read_text(path)
    except OSError:
        return []
    entries: list[tuple[float | None, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# "):
            entries.append((epoch(line[2:].strip()), []))
        elif line.startswith("+") and entries:
            entries[-1][1].append(line[1:])
    return [(ts, "\n".join(lines)) for ts, lines in entries]


class TypedPrompts:
    """Matches the prompts of a run to the input history, in order, for their timestamps."""

    def __init__(self, entries, start: float | None, end: float | None):
        self.pending = [(ts, text.strip()) for ts, text in entries
                        if ts is not None and (start is None or ts >= start)
                        and (end is None or ts < end)]

    def timestamp(self, text: str) -> float | None:
        wanted = text.strip()
        for i, (ts, typed) in enumerate(self.pending):
            if typed == wanted:
                del self.pending[i]
                return ts
        return None


# translation --------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    text, encoding_problem, cut = read_checked(session.source)
    runs = split_runs(text)
    index = int(session.locator or 0)
    group = next((g for g in sessions_of(runs) if g[0][0].index == index), None)
    if group is None:
        builder = TrajectoryBuilder(ATIF_NAME, session_id=session.native_id)
        builder.warn(f"run {index} is no longer in {session.source} (the file was rewritten)")
        return builder.build()
    run, header = group[0]
    following = next((r for r in runs if r.index == group[-1][0].index + 1), None)
    builder = TrajectoryBuilder(ATIF_NAME, header.version, header.model, session.native_id)
    if header.weak_model:
        builder.agent_extra["weak_model"] = header.weak_model
    typed = TypedPrompts(input_history(dependencies(session.source, env)[1]),
                         epoch(run.started), epoch(following.started) if following else None)
    for each, each_header in group:
        Translator(builder, each_header, typed, iso(each.started), each.index if each is not run else None
                   ).run(blocks(each))
    builder.extra = run_extra(group)
    if encoding_problem:
        builder.warn(encoding_problem)
    if cut and following is None:
        builder.warn(cut)
    if any(each.started is None for each, _ in group):
        builder.warn("this run has no `# aider chat started at` header: its start time is unknown")
    return builder.build()


def run_extra(group: list[tuple]) -> dict:
    (run, header), later = group[0], [each.index for each, _ in group[1:]]
    extra = {"run": run.index, "started_at_local": run.started, "git_working_dir": header.git_dir,
             "restored_chat_history": header.restored or None, "restored_by_runs": later or None}
    return {k: v for k, v in extra.items() if v is not None}


class Translator:
    """One run's blocks as steps; `restoring` is the index of a run that restored the session's
    chat history (its banner then opens its part of the session)."""

    def __init__(self, builder: TrajectoryBuilder, header: Header, typed: TypedPrompts,
                 started: str | None, restoring: int | None = None):
        self.builder = builder
        self.header = header
        self.typed = typed
        self.started = started
        self.restoring = restoring
        self.banner = True          # the run's first output is its banner
        self.previous_prompt = ""   # the last prompt block, for `/ask X` then `X`
        self.last_answer = ""       # the last answer, for architect hand-offs
        self.measured = True        # the last agent step already has its Tokens line

    def run(self, found: list[Block]) -> None:
        for block in found:
            getattr(self, block.kind)(block)

    def prompt(self, block: Block) -> None:
        self.banner = False
        text = block.text
        kind = self.repeat_kind(text)
        if kind:
            self.builder.system(text, extra={"kind": kind})
        else:
            self.builder.user(text, iso(self.typed.timestamp(text)))
        self.previous_prompt = text

    def repeat_kind(self, text: str) -> str | None:
        previous = self.previous_prompt
        command, _, argument = previous.partition(" ")
        if command in SLASH_WITH_PROMPT and argument.strip() and argument.strip() == text.strip():
            return "command_prompt"
        if self.last_answer and text.strip() == self.last_answer.strip():
            return "architect_handoff"
        return None

    def answer(self, block: Block) -> None:
        self.banner = False
        self.builder.agent(block.text, model_name=self.header.model, llm_call_count=1)
        self.last_answer = block.text
        self.previous_prompt = ""
        self.measured = False

    def output(self, block: Block) -> None:
        kept, edits = [], []
        for line in block.lines:
            found = _TOKENS.match(line)
            if found:
                self.record_tokens(found, line)
                continue
            applied = _APPLIED.match(line)
            if applied:
                edits.append(applied.group(1).strip())
            kept.append(line)
        if not kept:
            return
        first, self.banner = self.banner, False
        extra = {"kind": "run_header" if first else "aider_output"}
        if first and self.restoring is not None:
            extra = {"kind": "restored_run_header", "run": self.restoring}
        if edits:
            extra["applied_edits"] = edits
        self.builder.system("\n".join(kept), self.started if first else None, extra=extra)

    def record_tokens(self, found: re.Match, line: str) -> None:
        """A `Tokens:` line reports the inference just shown; with no answer before it (a failed
        reply), it is an inference of its own."""
        values = {k: parse_count(found.group(k)) for k in ("sent", "write", "hit", "received")}
        extra = {"tokens_line": line}
        if values["write"]:
            extra["cache_write_tokens"] = values["write"]
        if any(found.group(k) and found.group(k)[-1] in "kM" for k in ("sent", "write", "hit", "received")):
            extra["rounded"] = True
        cost = parse_amount(found.group("cost"))
        step_metrics = metrics(values["sent"], values["received"], values["hit"], cost, extra)
        last = self.builder.last_step
        if self.measured or last is None or last.source != "agent":
            last = self.builder.agent("", model_name=self.header.model, llm_call_count=1)
        last.metrics = step_metrics
        self.measured = True


def parse_count(text: str | None) -> int | None:
    """`738`, `1.6k`, `24k`, `1.2M` as aider prints token counts (abbreviated ones are rounded)."""
    if not text:
        return None
    text = text.replace(",", "")
    scale = {"k": 1_000, "M": 1_000_000}.get(text[-1], 1)
    number = text[:-1] if scale != 1 else text
    try:
        return int(round(float(number) * scale))
    except (ValueError, OverflowError):  # hundreds of digits read as inf
        return None


def parse_amount(text: str | None) -> float | None:
    try:
        amount = float(text.replace(",", "")) if text else None
    except ValueError:
        return None
    return amount if amount is None or amount < float("inf") else None
