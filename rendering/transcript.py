"""`trajectoriz show ID --markdown`: a session as a transcript an agent (or a person) reads
top to bottom, a slice at a time for long sessions (`--steps A-B`), sub-agents on request
(`--subagent K`).

Every step shows its number, source and time, its message, its reasoning, its tool calls with
their arguments and their results. Arguments, results and system text (what the harness
injected) longer than a limit are cut, and the cut says how long they really are: the full text
is one `jq` away in the ATIF document.
"""

from __future__ import annotations

import re

from atif.serialize import dumps_text
from core.errors import UserError
from core.output import cell
from discovery import catalog

_STEPS = re.compile(r"^\s*(\d+)\s*(?:(-)\s*(\d+)?)?\s*$")


# selecting a part of a document ---------------------------------------------------------------------
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
        source = part.get("source") or {}
        return f"[image {source.get('media_type', '')} {source.get('path', '')}]".replace("  ", " ")
    return part.get("text") if isinstance(part.get("text"), str) else ""


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


# rendering ------------------------------------------------------------------------------------------
def render(session, doc: dict, part: str | None, steps: str | None, max_chars: int) -> str:
    """The markdown transcript of `doc` (or of its sub-agent `part`), steps `steps` only."""
    trajectory = subagent(doc, part) if part else doc
    all_steps = trajectory.get("steps") or []
    first, last = step_range(steps, len(all_steps))
    lines = header(session, doc, trajectory, part, first, last)
    refs = {sub.get("trajectory_id"): f"{part + '.' if part else ''}{i}"
            for i, sub in enumerate(trajectory.get("subagent_trajectories") or [], 1)}
    for step in all_steps[first - 1: last]:
        lines += render_step(step, session.short_id, refs, max_chars)
    lines += footer(session.short_id, part, first, last, len(all_steps))
    return terminal_safe("\n".join(lines) + "\n")


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """The transcript without the characters that drive a terminal (escape sequences that set
    its title, write its clipboard or clear it; a carriage return that hides a line's start):
    line ends become newlines, other controls U+FFFD. Tabs stay; the document keeps them all."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("\ufffd", text)


def header(session, doc: dict, trajectory: dict, part: str | None, first: int, last: int) -> list[str]:
    agent = trajectory.get("agent") or doc.get("agent") or {}
    title = f"# Session `{session.short_id}` — {session.agent}"
    if part:
        title = (f"# Sub-agent {part} (`{trajectory.get('trajectory_id', '')}`) of session "
                 f"`{session.short_id}` — {session.agent}")
    total = len(trajectory.get("steps") or [])
    shown = f"{total} (showing {first}–{last})" if (first, last) != (1, total) else str(total)
    shown += f"; step N is `{'.subagent_trajectories[K-1]' if part else ''}.steps[N-1]` in the document"
    title_text = (doc.get("extra") or {}).get("title")  # redacted, unlike session.title
    facts = [("First message", cell(title_text, 200)),
             ("Agent", " ".join(str(v) for v in (agent.get("name"), agent.get("version"))
                                if v and v != "unknown")
              + (f", model {agent['model_name']}" if agent.get("model_name") else "")),
             ("Project", session.cwd), ("Started", _started(session)), ("Steps", shown),
             ("Tokens", tokens_line(trajectory.get("final_metrics") or {})),
             ("File", f"`{catalog.file_name(session)}`"),
             ("Sub-agents", subagents_line(trajectory, session.short_id, part))]
    lines = [title, ""] + [f"- {name}: {value}" for name, value in facts if value]
    for warning in (trajectory.get("extra") or {}).get("warnings") or []:
        lines.append(f"- Warning: {cell(warning, 300)}")
    return lines + [""]


def _started(session) -> str | None:
    moment = catalog.local_time(session)
    return None if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def tokens_line(fm: dict) -> str | None:
    parts = []
    if fm.get("total_prompt_tokens") is not None:
        cached = fm.get("total_cached_tokens")
        parts.append(f"{fm['total_prompt_tokens']:,} prompt" +
                     (f" ({cached:,} cached)" if cached is not None else ""))
    if fm.get("total_completion_tokens") is not None:
        parts.append(f"{fm['total_completion_tokens']:,} completion")
    if fm.get("total_cost_usd") is not None:
        parts.append(f"${fm['total_cost_usd']:.4f}")
    return ", ".join(parts) or None


def subagents_line(trajectory: dict, short_id: str, part: str | None) -> str | None:
    subs = trajectory.get("subagent_trajectories") or []
    if not subs:
        return None
    prefix = f"{part}." if part else ""
    return (f"{len(subs)}, read one with `trajectoriz show {short_id} --markdown --subagent "
            f"{prefix}K` (K = 1..{len(subs)})")


def render_step(step: dict, short_id: str, refs: dict, max_chars: int) -> list[str]:
    lines = ["## " + " · ".join(step_heading(step)), ""]
    if step.get("reasoning_content"):
        lines += ["**Reasoning**", ""]
        lines += ["> " + line if line else ">" for line in step["reasoning_content"].splitlines()]
        lines.append("")
    message = content_text(step.get("message"))
    if message.strip() and step.get("source") == "system":
        lines += fenced(message, max_chars)  # harness text (context dumps, reminders): cut like outputs
    elif message.strip():
        lines += [message, ""]
    for call in step.get("tool_calls") or []:
        arguments = dumps_text(call.get("arguments") or {})
        lines += [f"**Tool call** `{call.get('function_name')}` (`{call.get('tool_call_id')}`)", ""]
        lines += fenced(arguments, max_chars, "json")
    for result in (step.get("observation") or {}).get("results") or []:
        lines += render_result(result, short_id, refs, max_chars)
    return lines


def step_heading(step: dict) -> list[str]:
    extra = step.get("extra") or {}
    source = step.get("source", "")
    if extra.get("kind"):
        source += f" ({extra['kind']})"
    parts = [f"Step {step.get('step_id')}", source]
    if step.get("timestamp"):
        parts.append(step["timestamp"])
    if step.get("model_name"):
        parts.append(step["model_name"])
    if step.get("is_copied_context"):
        parts.append("copied context")
    return parts


def render_result(result: dict, short_id: str, refs: dict, max_chars: int) -> list[str]:
    extra = result.get("extra") or {}
    what = f"**Result** of `{result['source_call_id']}`" if result.get("source_call_id") else "**Output**"
    if extra.get("is_error"):
        what += " (error" + (f", exit code {extra['exit_code']}" if "exit_code" in extra else "") + ")"
    lines = []
    text = content_text(result.get("content"))
    if text or not result.get("subagent_trajectory_ref"):
        lines += [what, ""] + fenced(text, max_chars)
    for ref in result.get("subagent_trajectory_ref") or []:
        path = refs.get(ref.get("trajectory_id"))
        where = f": `trajectoriz show {short_id} --markdown --subagent {path}`" if path else ""
        lines += [f"→ sub-agent `{ref.get('trajectory_id') or ref.get('session_id')}`{where}", ""]
    return lines


def fenced(text: str, max_chars: int, language: str = "") -> list[str]:
    """A code block that no backtick run in `text` can close early; cut past `max_chars`
    (0 = never), saying how long the text really is."""
    note = None
    if max_chars and len(text) > max_chars:
        note = f"_(cut: the first {max_chars:,} of {len(text):,} characters)_"
        text = text[:max_chars]
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    lines = [fence + language, text, fence]
    return lines + ([note, ""] if note else [""])


def footer(short_id: str, part: str | None, first: int, last: int, total: int) -> list[str]:
    if last >= total:
        return []
    width = last - first + 1
    following = f"{last + 1}-{min(total, last + width)}"
    which = f" --subagent {part}" if part else ""
    return [f"_Steps {first}–{last} of {total}. Next: `trajectoriz show {short_id} --markdown"
            f"{which} --steps {following}`_"]


# the transcript beside each document in memory/ ------------------------------------------------------
MEMORY_CUT = 400  # characters of a tool's arguments or output, at most


def memory_transcript(doc: dict) -> bytes:
    """The session's transcript as memory/ serves it (`<date>_<agent>_<id>.transcript.md`), made
    from its redacted document alone: every step, outputs and arguments cut."""
    short_id = (doc.get("extra") or {}).get("short_id") or ""
    lines = [f"# Transcript of session `{short_id}`", ""]
    for step in doc.get("steps") or []:
        if isinstance(step, dict):
            lines += render_step(step, short_id, {}, MEMORY_CUT)
    return terminal_safe("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
