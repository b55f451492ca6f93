"""What a tool call does, in the same words for every agent: `extra.kind`, `extra.command` and
`extra.paths` beside the native `function_name` and `arguments` (which stay as recorded).

`kind` is one of KINDS, from a table per agent of its native tool names (a name the table does not
know is `other`). `command` is the command line of a `shell` call. `paths` are the files a call
reads, writes or edits, absolute (a relative one is resolved against the call's working directory,
else the session's): for a patch, every file it touches; for a `shell` call, the files its
redirections (`>`, `>>`), `tee`, `mv` and `cp` write. Arguments are untrusted: any shape is read
without failing, and what is taken from them is bounded.
"""

from __future__ import annotations

import os
import re
import shlex

from atif.build import parts_text
from core import compiledre

KINDS = ("shell", "read", "write", "edit", "search", "fetch", "task", "plan", "other")
MAX_PATHS = 64
MAX_TEXT = 1 << 20        # of a patch or a written text, what is read
MAX_COMMAND = 1 << 16     # of a command line, what is kept in `extra.command`
MAX_PARSED = 1 << 14      # of a command line, what is parsed for the files it writes
MAX_PATH = 4096

_CLAUDE = {"Bash": "shell", "Read": "read", "NotebookRead": "read", "Write": "write", "Edit": "edit",
           "MultiEdit": "edit", "NotebookEdit": "edit", "Glob": "search", "Grep": "search", "LS": "search",
           "WebFetch": "fetch", "WebSearch": "fetch", "Task": "task", "Agent": "task",
           "TodoWrite": "plan", "ExitPlanMode": "plan"}
_GEMINI = {"run_shell_command": "shell", "read_file": "read", "read_many_files": "read",
           "write_file": "write", "replace": "edit", "edit": "edit", "glob": "search",
           "search_file_content": "search", "grep_search": "search", "list_directory": "search",
           "web_fetch": "fetch", "google_web_search": "fetch", "web_search": "fetch", "task": "task",
           "todo_write": "plan", "write_todos": "plan", "exit_plan_mode": "plan"}
_CLINE = {"execute_command": "shell", "run_commands": "shell", "read_file": "read", "read_files": "read",
          "write_to_file": "write", "replace_in_file": "edit", "apply_diff": "edit", "apply_patch": "edit",
          "insert_content": "edit", "search_and_replace": "edit", "search_files": "search",
          "list_files": "search", "list_code_definition_names": "search", "codebase_search": "search",
          "browser_action": "fetch", "web_fetch": "fetch", "new_task": "task", "plan_mode_respond": "plan",
          "update_todo_list": "plan", "focus_chain": "plan"}
_OPENCODE = {"bash": "shell", "read": "read", "write": "write", "edit": "edit", "multiedit": "edit",
             "patch": "edit", "apply_patch": "edit", "glob": "search", "grep": "search", "list": "search",
             "codesearch": "search", "webfetch": "fetch", "websearch": "fetch", "task": "task",
             "todowrite": "plan", "todoread": "plan"}

TABLES = {
    "aider": {},
    "amp": {"Bash": "shell", "Read": "read", "create_file": "write", "edit_file": "edit",
            "undo_edit": "edit", "format_file": "edit", "Grep": "search", "glob": "search",
            "list_directory": "search", "read_web_page": "fetch", "web_search": "fetch", "Task": "task",
            "todo_write": "plan", "todo_read": "plan"},
    "claude": _CLAUDE,
    "cline": _CLINE,
    "codex": {"exec_command": "shell", "shell": "shell", "local_shell": "shell", "shell_command": "shell",
              "container.exec": "shell", "apply_patch": "edit", "view_image": "read", "read_file": "read",
              "grep_files": "search", "list_dir": "search", "web_search": "fetch", "update_plan": "plan"},
    "copilot": {"bash": "shell", "powershell": "shell", "view": "read", "create": "write",
                "str_replace": "edit", "edit": "edit", "insert": "edit", "str_replace_editor": "edit",
                "apply_patch": "edit", "grep": "search", "glob": "search", "web_fetch": "fetch",
                "task": "task", "update_todo": "plan"},
    "continue": {"Bash": "shell", "Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "edit",
                 "List": "search", "Search": "search", "Fetch": "fetch", "Checklist": "plan",
                 "Subagent": "task", "run_terminal_command": "shell", "read_file": "read",
                 "create_new_file": "write", "edit_existing_file": "edit", "single_find_and_replace": "edit",
                 "grep_search": "search", "file_glob_search": "search", "ls": "search",
                 "fetch_url_content": "fetch", "search_web": "fetch"},
    "crush": {"bash": "shell", "view": "read", "write": "write", "edit": "edit", "multiedit": "edit",
              "grep": "search", "glob": "search", "ls": "search", "sourcegraph": "search", "fetch": "fetch",
              "agentic_fetch": "fetch", "download": "fetch", "agent": "task", "todos": "plan"},
    "cursor": {"Shell": "shell", "Bash": "shell", "run_terminal_cmd": "shell", "Read": "read",
               "read_file": "read", "Write": "write", "write": "write", "Edit": "edit", "edit_file": "edit",
               "search_replace": "edit", "StrReplace": "edit", "MultiEdit": "edit", "Grep": "search",
               "grep_search": "search", "Glob": "search", "codebase_search": "search", "file_search": "search",
               "list_dir": "search", "LS": "search", "web_search": "fetch", "Agent": "task", "Task": "task",
               "TodoWrite": "plan", "todo_write": "plan"},
    "droid": {"Execute": "shell", "Read": "read", "Create": "write", "Edit": "edit", "MultiEdit": "edit",
              "ApplyPatch": "edit", "Grep": "search", "Glob": "search", "LS": "search", "FetchUrl": "fetch",
              "WebSearch": "fetch", "Task": "task", "TodoWrite": "plan"},
    "gemini": _GEMINI,
    "gptme": {"shell": "shell", "tmux": "shell", "read": "read", "save": "write", "append": "edit",
              "patch": "edit", "morph": "edit", "browser": "fetch", "subagent": "task", "todo": "plan"},
    "goose": {"developer__shell": "shell", "shell": "shell", "developer__text_editor": "edit",
              "text_editor": "edit", "subagent__execute_task": "task", "dynamic_task__create_task": "task",
              "todo__write": "plan"},
    "hermes": {"terminal": "shell", "read_file": "read", "write_file": "write", "patch": "edit",
               "search_files": "search", "web_search": "fetch", "web_extract": "fetch",
               "delegate_task": "task", "todo": "plan"},
    "kilo": _OPENCODE,
    "kimi": {"Shell": "shell", "ReadFile": "read", "ReadMediaFile": "read", "WriteFile": "write",
             "StrReplaceFile": "edit", "Glob": "search", "Grep": "search", "SearchWeb": "fetch",
             "FetchURL": "fetch", "Task": "task", "SetTodoList": "plan"},
    "mswea": {"bash": "shell"},
    "omp": {"bash": "shell", "read": "read", "write": "write", "edit": "edit", "grep": "search",
            "find": "search", "ls": "search", "task": "task", "todo_write": "plan", "web_search": "fetch",
            "fetch": "fetch"},
    "opencode": _OPENCODE,
    "openhands": {"terminal": "shell", "execute_bash": "shell", "bash": "shell", "file_editor": "edit",
                  "str_replace_editor": "edit", "task_tracker": "plan", "browser": "fetch", "fetch": "fetch"},
    "pi": {"bash": "shell", "read": "read", "write": "write", "edit": "edit", "grep": "search",
           "find": "search", "ls": "search"},
    "qwen": _GEMINI,
    "roo": _CLINE,
}
# an editor tool whose `command` argument says what it does (Goose's, Copilot's str_replace_editor)
_EDITOR_COMMANDS = {"view": "read", "create": "write", "write": "write"}
_COMMAND_KEYS = ("command", "cmd", "commands", "script")
_PATH_KEYS = ("file_path", "filePath", "filepath", "path", "absolute_path", "notebook_path", "target_file", "file",
              "filename", "paths", "files", "file_paths")
_WORKDIR_KEYS = ("workdir", "cwd", "working_directory", "directory", "dir_path")
_PATCH_KEYS = ("input", "patch", "diff", "patchText", "patch_text")
_PATCH_FILE = compiledre.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$|^\+\+\+ (?:b/)?(.+)$",
                                 re.M)
_APPLY_PATCH_FILE = compiledre.compile(r"^\*\*\* (?:(?:Add|Update) File|Move to): (.+)$", re.M)
_REDIRECTS = (">", ">>", ">|", "&>", "&>>")
_OPERATOR = set("|&;<>()")
_WRITERS = ("tee", "mv", "cp", "sed")
_UNQUOTED = str.maketrans("", "", "'\"\\")  # what shlex removes from a word: quotes, backslashes
_NULL_DEVICES = ("nul", "nul:", "con", "con:")  # Windows' /dev/null (cmd's `> nul`), its console
_SHELL_WRAPPERS = ("bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/bin/zsh")


_FOLDED = {agent: {name.lower(): kind for name, kind in table.items()} for agent, table in TABLES.items()}


def kind_of(agent: str, name, arguments) -> str:
    """The kind of a tool by its name in the agent's table (else its name in any case: `bash`
    for `Bash`), else `other`."""
    if not isinstance(name, str):
        return "other"
    kind = TABLES.get(agent, {}).get(name) or _FOLDED.get(agent, {}).get(name.lower(), "other")
    command = arguments.get("command") if isinstance(arguments, dict) else None
    if kind == "edit" and "editor" in name and isinstance(command, str):
        kind = _EDITOR_COMMANDS.get(command, "edit")
    return kind


def annotate(doc: dict, agent: str, cwd: str | None) -> None:
    """Add kind, command and paths to every tool call of a document and of its sub-agents, and
    the absolute paths of Aider's applied edits to the steps that report them. A write, edit
    or shell call whose result says it was refused (or, for a write or an edit, that it failed)
    wrote nothing: its files are its `attempted_paths`, and `refused` or `failed` says why."""
    for step in doc.get("steps") or ():
        results = (step.get("observation") or {}).get("results") or ()
        for call in step.get("tool_calls") or ():
            found = meaning(agent, call, cwd)
            if found.get("paths") and found["kind"] in WRITING:
                outcome = write_outcome(found["kind"], [r for r in results if isinstance(r, dict)
                                                         and r.get("source_call_id") == call.get("tool_call_id")])
                if outcome:
                    found["attempted_paths"] = found.pop("paths")
                    found[outcome] = True
            call["extra"] = {**(call.get("extra") or {}), **found}
        edits = (step.get("extra") or {}).get("applied_edits")
        if isinstance(edits, list):
            step["extra"]["paths"] = absolute([e for e in edits if isinstance(e, str)], cwd)
    for sub in doc.get("subagent_trajectories") or ():
        annotate(sub, agent, cwd)


def meaning(agent: str, call: dict, cwd: str | None) -> dict:
    arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
    kind = kind_of(agent, call.get("function_name"), arguments)
    base = _workdir(arguments, cwd)
    found = {"kind": kind}
    if kind == "shell":
        command = command_of(arguments)
        if command is not None:
            found["command"] = command
            found["paths"] = absolute(shell_writes(command), base)
    elif kind in ("read", "write", "edit"):
        found["paths"] = absolute(_argument_paths(arguments) + patch_paths(arguments), base)
    if not found.get("paths"):
        found.pop("paths", None)
    return found


def command_of(arguments: dict) -> str | None:
    """The command line: a string, a list of commands (one a line), or an argv (`bash -lc X` is X)."""
    for key in _COMMAND_KEYS:
        value = arguments.get(key)
        if isinstance(value, str):
            return value[:MAX_COMMAND]
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if key == "commands":
                return "\n".join(value)[:MAX_COMMAND]
            if len(value) == 3 and value[0] in _SHELL_WRAPPERS and value[1] in ("-c", "-lc"):
                return value[2][:MAX_COMMAND]
            return shlex.join(value[:MAX_PATHS])[:MAX_COMMAND]
    return None


# what a tool's result says when nothing was done: the user refused it (Claude Code, Codex,
# Gemini CLI, Cline...), or the tool failed before writing
_REFUSED = compiledre.compile(
    r"doesn't want to proceed with this tool use|tool use was rejected|was NOT written|user rejected|"
    r"user denied|denied by the user|declined by the user|rejected by the user|user refused|"
    r"operation was cancell?ed by the user", re.I)
_REFUSED_FIRST = compiledre.compile(
    r"(?:error:\s*)?(?:the user doesn't want to proceed|user (?:rejected|denied|refused|declined)|"
    r"exec command rejected|(?:the )?(?:tool call|tool use|command|operation) (?:was )?(?:rejected|denied|"
    r"declined|cancell?ed) by (?:the )?user)", re.I)
_FAILED = compiledre.compile(
    r"^\s*(?:error|failed|failure)\b|verification failed|no such file|permission denied|"
    r"string to replace not found|old_string not found|could not (?:find|apply|write)|"
    r"file has not been read yet|file has been modified since", re.I)


def write_outcome(kind: str, results: list) -> str | None:
    """`refused` when a call's result says the user refused it, `failed` when the result of a
    write or an edit says it failed (an error flagged, or its text); else None (it wrote)."""
    text = "\n".join(parts_text(r.get("content"))[:2048] for r in results)
    if _REFUSED_FIRST.match(text.lstrip()) or (kind != "shell" and _REFUSED.search(text[:400])):
        return "refused"  # said first (a command's output may quote the words), or by a write's short result
    if kind == "shell" or not results:
        return None  # a command that failed may have written before it did
    flagged = any((r.get("extra") or {}).get("is_error") for r in results)
    codes = [(r.get("extra") or {}).get("exit_code") for r in results]
    if flagged or any(isinstance(c, int) and not isinstance(c, bool) and c != 0 for c in codes) \
            or _FAILED.search(text[:300]):
        return "failed"
    return None


def shell_writes(command: str) -> list[str]:
    """The files a command line writes: the targets of `>` and `>>`, the files of `tee`, the
    destination of `mv`, `git mv` and `cp`, the files `sed -i` edits (unparsable quoting: none),
    the files an `apply_patch` (Codex's patch tool, run as a command) adds or updates."""
    command = command[:MAX_PARSED]
    if "*** Begin Patch" in command and "apply_patch" in command:  # Codex's patch tool run as a command
        return [m.group(1).strip() for m in _APPLY_PATCH_FILE.finditer(command)]
    if ">" not in command and not any(word in command.translate(_UNQUOTED) for word in _WRITERS):
        return []  # most commands: no redirection, and no writer even once its quotes are gone
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    found, previous, words = [], "", []
    for token in tokens + [";"]:
        operator = set(token) <= _OPERATOR
        if previous in _REDIRECTS and not operator and not token.startswith("&"):
            found.append(token)
        elif operator:
            if token in _REDIRECTS and words and words[-1].isdigit():
                words.pop()  # the descriptor of `2>`
            if token not in _REDIRECTS:
                found += _written_by(words)
                words = []
        else:
            words.append(token)
        previous = token
    folders = {w.rstrip("/") for w in _made_folders(tokens)}
    return [p for p in found if not p.startswith("/dev/") and p.lower() not in _NULL_DEVICES and is_file_path(p)
            and p.rstrip("/") not in folders]


def is_file_path(word: str) -> bool:
    """Whether a word of a command line names a file as written: not an unexpanded variable
    (`$f`, `${OUT}`), a command substitution, a glob or a brace list, and not a folder (`x/`,
    `.`, `..`)."""
    return bool(word) and not any(c in word for c in "$`*?[{") and not word.endswith("/") \
        and word.rsplit("/", 1)[-1] not in (".", "..", "~")


def _made_folders(tokens: list[str]) -> list[str]:
    """The folders `mkdir` makes in a command line: a path written there is a folder."""
    found, making = [], False
    for token in tokens:
        if set(token) <= _OPERATOR:
            making = False
        elif making:
            if not token.startswith("-"):
                found.append(token)
        else:
            making = token == "mkdir"
    return found


def _written_by(words: list[str]) -> list[str]:
    if words[:2] == ["git", "mv"]:
        words = words[1:]
    arguments = [w for w in words[1:] if not w.startswith("-")]
    if words[:1] == ["tee"]:
        return arguments
    recursive = any(w.startswith("-") and not w.startswith("--") and ("r" in w or "R" in w or "a" in w)
                    or w in ("--recursive", "--archive", "-t") or w.startswith("--target-directory")
                    for w in words[1:])
    if words[:1] in (["mv"], ["cp"]) and len(arguments) >= 2:
        if recursive or len(arguments) > 2:  # a folder copied, or files copied into a folder
            return []
        return arguments[-1:]
    if words[:1] == ["sed"]:
        return _edited_by_sed(words[1:])
    return []


def _edited_by_sed(arguments: list[str]) -> list[str]:
    """The files `sed -i` edits in place: its operands after the script (the first operand,
    unless `-e` or `-f` gave it)."""
    in_place = any(w == "--in-place" or w.startswith("--in-place=") or (w.startswith("-") and not w.startswith("--")
                                                                         and "i" in w[1:]) for w in arguments)
    if not in_place:
        return []
    operands, scripted, skip = [], False, False
    for word in arguments:
        if skip:
            skip = False
        elif word in ("-e", "-f", "--expression", "--file"):
            scripted = skip = True
        elif word.startswith(("--expression=", "--file=")):
            scripted = True
        elif not word.startswith("-"):
            operands.append(word)
    return operands if scripted else operands[1:]


def patch_paths(arguments: dict) -> list[str]:
    """The files a patch names: `*** Add/Update/Delete File:` and `*** Move to:` headers
    (apply_patch), `+++ b/x` headers (unified diffs)."""
    found = []
    for key in _PATCH_KEYS:
        text = arguments.get(key)
        if isinstance(text, str):
            for match in _PATCH_FILE.finditer(text[:MAX_TEXT]):
                path = next(g for g in match.groups() if g).strip()
                if path != "/dev/null":
                    found.append(path)
    return found


def _argument_paths(arguments: dict) -> list[str]:
    found = []
    for key in _PATH_KEYS:
        value = arguments.get(key)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                item = item.get("path") or item.get("file_path")
            if isinstance(item, str) and item:
                found.append(item)
    return found


def _workdir(arguments: dict, cwd: str | None) -> str | None:
    for key in _WORKDIR_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return os.path.join(cwd, value) if cwd else value
    return cwd


def absolute(paths: list[str], base: str | None) -> list[str]:
    """Each path once, in order, made absolute against `base` when it can be. Not normalized:
    the text stays as recorded, so that redaction finds in it what it finds elsewhere."""
    found = []
    for path in paths[:MAX_PATHS]:
        if "\0" in path or len(path) > MAX_PATH:
            continue
        if not os.path.isabs(path) and base and os.path.isabs(base):
            path = os.path.join(base, path)
        if path not in found:
            found.append(path)
    return found


def markdown_table(agents=None) -> str:
    """The mapping as a Markdown table, one row per agent (README), or per agent of `agents`
    (the guide beside their sessions)."""
    rows = ["| agent | native tool names, by kind |", "|---|---|"]
    for agent, table in sorted(TABLES.items()):
        if agents is not None and agent not in agents:
            continue
        by_kind = {kind: sorted(n for n, k in table.items() if k == kind) for kind in KINDS}
        cell = " · ".join(f"{kind}: {', '.join(names)}" for kind, names in by_kind.items() if names)
        rows.append(f"| {agent} | {cell or '(no tool calls: applied edits are writes, on their step)'} |")
    return "\n".join(rows) + "\n"


# what a session wrote (blame) -------------------------------------------------------------------
WRITING = ("write", "edit", "shell")
DIFF_LINES = 12
_NEW_KEYS = ("content", "contents", "file_text", "text", "fileContent", "new_string", "new_str", "newText",
             "new_text", "newString", "replace", "insert_text")
_OLD_KEYS = ("old_string", "old_str", "oldText", "old_text", "oldString", "search")


def writes(doc: dict) -> list[dict]:
    """Each step's writes in a document (its own steps, not its sub-agents'): the step, the
    tool and its kind, the files (normalized), the text written, and the new and old text
    that `short_diff` shows."""
    found, answer = [], ""
    for step in doc.get("steps") or ():
        for call in step.get("tool_calls") or ():
            extra = call.get("extra") or {}
            if extra.get("kind") in WRITING and extra.get("paths"):
                found.append(_write(step, call.get("function_name"), extra["kind"], extra["paths"],
                                    *_change(call)))
        paths = (step.get("extra") or {}).get("paths")
        if step.get("source") == "system" and paths:  # Aider's applied edits: its last answer's text
            found.append(_write(step, "(applied edit)", "write", paths, answer, "", answer))
        if step.get("source") == "agent" and isinstance(step.get("message"), str):
            answer = step["message"]
    return found


def _write(step: dict, tool, kind: str, paths: list, new: str, old: str, text: str) -> dict:
    return {"step": step.get("step_id"), "tool": tool if isinstance(tool, str) else "unknown", "kind": kind,
            "paths": [os.path.normpath(p) for p in paths], "text": text[:MAX_TEXT], "new": new, "old": old}


def _change(call: dict) -> tuple[str, str, str]:
    """(new text, old text, all the text written) of a writing call."""
    arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
    if (call.get("extra") or {}).get("kind") == "shell":
        command = call["extra"].get("command") or ""
        return "$ " + command, "", command
    edits = [e for e in arguments.get("edits") or () if isinstance(e, dict)] or [arguments]
    new = "\n".join(v for e in edits for v in _strings(e, _NEW_KEYS))
    old = "\n".join(v for e in edits for v in _strings(e, _OLD_KEYS))
    patch = next((t for t in _strings(arguments, _PATCH_KEYS) if _PATCH_FILE.search(t[:MAX_TEXT])), "")
    if patch:
        added = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
        return patch, "", "\n".join(added)
    return new, old, new


def _strings(arguments: dict, keys: tuple) -> list[str]:
    return [arguments[k] for k in keys if isinstance(arguments.get(k), str)]


def short_diff(old: str, new: str) -> str:
    """The change as at most DIFF_LINES lines: removed lines `-`, added `+` (a patch as it is)."""
    if new.startswith(("*** Begin Patch", "--- ", "$ ")):
        lines = new.splitlines()
    else:
        lines = [f"-{line}" for line in old.splitlines()] + [f"+{line}" for line in new.splitlines()]
    cut = [line[:200] for line in lines[:DIFF_LINES]]
    if len(lines) > DIFF_LINES:
        cut.append(f"… {len(lines) - DIFF_LINES} more line(s)")
    return "\n".join(cut)
