"""A session's title: what it was about, in a few words.

The agent's own title when it recorded one that says something (Claude's ai-title or
custom-title, Codex's thread name, opencode's, Kilo's, Crush's, Goose's, ...), else the first
request of the user that carries a task. Real sessions often open with none: `.`, `hi`, a slash
command (`/init`, `/context`) and its output, or the IDE's context (`<ide_opened_file>The user
opened ...`) before the user's own words; `task_text` takes what carries none out and keeps
the words that follow it.
"""

from __future__ import annotations

from core import compiledre

# Context an IDE or a harness puts before what the user typed, whole blocks: left out.
_CONTEXT = compiledre.compile(
    r"<(ide_[a-z_]+|system-reminder|local-command-caveat|command-message|command-name|command-args"
    r"|local-command-stdout|local-command-stderr)>")
TEXT_READ = 256 * 1024  # of a request, what is read for its task
# What stands for a pasted image or text: no words of the user's.
_PLACEHOLDER = compiledre.compile(r"\[(?:Image|Pasted text|image)[^\]\n]{0,200}\]")
_SLASH_COMMAND = compiledre.compile(r"/[\w:.-]+(?:\s.*)?", 16)
# Openings that carry no task however they end: an interruption, a command's output, a caveat.
_NO_TASK_OPENINGS = ("[Request interrupted by user", "Caveat: The messages below", "<task-notification>",
                     "<bash-stdout>", "<bash-stderr>", "<user-prompt-submit-hook>", "Stop hook feedback:")
# Whole requests that ask for nothing (lower-cased, without punctuation around them).
_NO_TASK = {"hi", "hello", "hey", "yo", "ok", "okay", "k", "thanks", "thank you", "thx", "continue",
            "go", "go on", "proceed", "resume", "yes", "y", "no", "n", "test", "ping", "hello there",
            "good morning", "你好", "您好", "继续", "好", "好的", "嗨", "谢谢", "hallo", "bonjour", "hola"}
# Titles agents give a session before they know what it is about.
_DEFAULT_TITLES = ("untitled", "new session", "new chat", "new conversation", "(unreadable session)")


def task_text(text: str) -> str:
    """The words of a user's request that carry a task, "" when it carries none."""
    if not isinstance(text, str):
        return ""
    words = text[:TEXT_READ]
    if "<" in words:  # (most requests hold no tag nor placeholder: no pattern is run over them)
        words = _without_context(words)
    if "[" in words:
        words = _PLACEHOLDER.sub(" ", words)
    words = words.strip()
    if not words or words.startswith(_NO_TASK_OPENINGS) or _SLASH_COMMAND.fullmatch(words):
        return ""
    bare = words.strip(" \t\n.!?,;:~…。！？，").lower()
    if bare in _NO_TASK or not any(c.isalnum() for c in bare):
        return ""
    return words


def _without_context(text: str) -> str:
    """The text without its context blocks (`_CONTEXT` to its closing tag); from a block that
    does not close, as it is. Linear: each block's end is looked for once, from its start."""
    kept, at = [], 0
    while (opening := _CONTEXT.search(text, at)) is not None:
        closing = f"</{opening.group(1)}>"
        end = text.find(closing, opening.end())
        if end < 0:
            break
        kept.append(text[at:opening.start()])
        at = end + len(closing)
    kept.append(text[at:])
    return " ".join(kept)


def native_title(title, requests: list[str]) -> str:
    """An agent's own title of a session, "" when it says nothing: missing, a default
    (`Untitled Session`, `New session - <date>`), or the start of one of the user's requests cut
    short (what some agents store as a title until they have one)."""
    if not isinstance(title, str):
        return ""
    title = " ".join(title.split())
    lowered = title.lower()
    if not title or any(lowered.startswith(default) for default in _DEFAULT_TITLES):
        return ""
    start = title.rstrip(".…").rstrip()
    said = [" ".join(text.split()) for request in requests for text in (request, task_text(request))
            if isinstance(text, str)]
    return "" if any(text.startswith(start) for text in said) else title


def title_of(native, requests: list[str]) -> str:
    """The agent's own title when it says something, else the first request that carries a
    task (its words only), else the first request as it is."""
    found = native_title(native, requests)
    if found:
        return found
    for request in requests:
        task = task_text(request)
        if task:
            return task
    return next((r for r in requests if isinstance(r, str) and r.strip()), "")
