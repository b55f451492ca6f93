"""The task store Cline and its fork Roo Code share (used by `agents/cline.py` and `agents/roo.py`).

A task is a directory `<storage>/tasks/<taskId>/` in the extension's VS Code global storage
(`<VS Code user dir>/globalStorage/<extension id>/`), holding:
- `api_conversation_history.json`: the conversation as sent to the model, a JSON array of
  Anthropic messages (`{role, content: str | [text | image | tool_use | tool_result | thinking]}`,
  newer releases add `ts`, `modelInfo` and `metrics.tokens {prompt, completion, cached}`);
- `ui_messages.json`: what the panel showed, `[{ts, type: say|ask, say|ask, text, ...}]`; each
  model request is a `say: api_req_started` whose text is JSON `{tokensIn, tokensOut,
  cacheWrites, cacheReads, cost}`;
- metadata: Cline's index is `<storage>/state/taskHistory.json` (`[{id, ts, task,
  cwdOnTaskInitialization, modelId, ...}]`), Roo writes `history_item.json` in the task
  directory (`{id, ts, task, workspace, parentTaskId, childIds, ...}`).

Translation follows the API history (what the model saw) when there is one; the UI messages
then only date the requests and give their token counts. A task with UI messages only (as
many real tasks are found) is translated from them: its first message is the first prompt
(`say: task`, or `say: text` in current releases), the first `api_req_started` request's
text names the working directory, `modelInfo.modelId` the model.

What a user message holds, block by block: the human's words arrive wrapped (`<task>`,
`<feedback>`, `<answer>`, `<user_message>`, `<user_input>`); the extension adds
`<environment_details>`, resumption notices, reminders and errors (system steps); tool results
are `tool_result` blocks (joined by id) or, with older and some current releases, text blocks
`[tool for 'arg'] Result: ...` that answer the previous assistant message's calls in order.
Releases that wrote tool calls as XML tags in the assistant's text (`<read_file>...`) leave
them in the text (the document says so in `extra.xml_tool_calls`); their results are kept as
observations of the step that asked for them.

Tokens: `metrics.tokens` is the whole prompt (its `prompt` includes cached tokens). The UI's
`tokensIn` excludes cache reads and writes (Cline adds them to get the context size), so a
step's `prompt_tokens` is `tokensIn + cacheWrites + cacheReads`.
"""

from __future__ import annotations

import os
import re

from agents import session_totals
from core import compiledre, storefs
from agents.base import (HEAD_BYTES, HEAD_MAX, Session, TooLarge, as_dict, as_int, as_list, as_str,
                         between, complete_items, epoch, home, iso, loads_native, one_line, open_binary,
                         read_whole)
from atif.build import image_part, metrics, plain_or_parts, text_part, TrajectoryBuilder
from atif.serialize import dumps_text, loads

API_HISTORY = "api_conversation_history.json"
UI_MESSAGES = "ui_messages.json"
TASK_METADATA = "task_metadata.json"
HISTORY_ITEM = "history_item.json"
TASK_FILES = (API_HISTORY, UI_MESSAGES, TASK_METADATA, HISTORY_ITEM)

# where VS Code and its forks keep user data (Linux, remote servers, macOS)
_CONFIG_APPS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
_SERVER_DIRS = (".vscode-server", ".vscode-server-insiders", ".cursor-server", ".windsurf-server")


def vscode_user_dirs(env) -> list[str]:
    base = home(env)
    config = env.get("XDG_CONFIG_HOME") or os.path.join(base, ".config")
    found = [os.path.join(config, app, "User") for app in _CONFIG_APPS]
    found += [os.path.join(base, server, "data", "User") for server in _SERVER_DIRS]
    found += [os.path.join(base, "Library", "Application Support", app, "User") for app in _CONFIG_APPS]
    return found


def task_dirs(storage: str) -> list[str]:
    """The task directories of one storage directory."""
    tasks = os.path.join(storage, "tasks")
    try:
        names = sorted(storefs.listdir(tasks))
    except OSError:
        return []
    return [os.path.join(tasks, n) for n in names
            if any(storefs.isfile(os.path.join(tasks, n, f)) for f in (API_HISTORY, UI_MESSAGES))]


def task_dependencies(task_dir: str) -> list[str]:
    """The task's files and its sub-tasks' (embedded in its document). The storage's
    `taskHistory.json` is left out on purpose: it changes with every new task, and would
    invalidate every task's cached scan and document."""
    found = [os.path.join(task_dir, name) for name in TASK_FILES]
    for child in child_task_ids(task_item(task_dir), task_dir):
        found += [os.path.join(os.path.dirname(task_dir), child, name) for name in TASK_FILES]
    return found


# reading ------------------------------------------------------------------------------------------
def read_json(path: str):
    """(parsed value or None, problem or None). A file over FILE_LIMIT is not read."""
    try:
        data = read_whole(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{os.path.basename(path)}: cannot read: {exc.strerror or exc}"
    except TooLarge as exc:
        return None, str(exc)
    try:
        return loads_native(data), None
    except ValueError as exc:
        return None, f"{os.path.basename(path)} is not valid JSON ({str(exc)[:80]}); it may be truncated"


_INDEX_MEMO: dict = {}


def history_index(storage: str) -> dict:
    """Cline's `state/taskHistory.json` by task id, read once per change of the file."""
    path = os.path.join(storage, "state", "taskHistory.json")
    try:
        st = storefs.stat(path)
    except OSError:
        return {}
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _INDEX_MEMO:
        items, _ = read_json(path)
        _INDEX_MEMO.clear()
        _INDEX_MEMO[key] = {str(i.get("id")): i for i in as_list(items) if isinstance(i, dict)}
    return _INDEX_MEMO[key]


def task_item(task_dir: str) -> dict:
    """What is known about a task without reading its conversation: Roo's `history_item.json`,
    else Cline's history index entry."""
    item, _ = read_json(os.path.join(task_dir, HISTORY_ITEM))
    if isinstance(item, dict):
        return item
    storage = os.path.dirname(os.path.dirname(task_dir))
    return history_index(storage).get(os.path.basename(task_dir), {})


_CWD = compiledre.compile(rb"# Current Working Directory \(((?:[^)\\\n]|\\.)*)\)")


def head_search(path: str, find, found=lambda value: value is not None):
    """What `find(head)` finds in the head of a task file: in its first HEAD_BYTES, else, when
    `found` says it was not found and the file goes on, in its first HEAD_MAX bytes (a first
    message that holds images or pasted files before its environment details)."""
    value = None
    for limit in (HEAD_BYTES, HEAD_MAX):
        try:
            with open_binary(path) as handle:
                data = handle.read(limit)
        except OSError:
            return value
        value = find(data)
        if found(value) or len(data) < limit:
            return value
    return value


def json_string(raw: bytes) -> str:
    """A JSON string's body (as found in the raw file) decoded."""
    try:
        return loads(b'"' + raw + b'"')
    except ValueError:
        return raw.decode("utf-8", "replace")


def head_cwd(task_dir: str) -> str | None:
    found = head_search(os.path.join(task_dir, API_HISTORY), _CWD.search)
    if not found:
        return None
    return json_string(found.group(1)).strip() or None


def head_title(task_dir: str) -> str:
    """The task's first prompt, from the head of the API history."""
    found = head_search(os.path.join(task_dir, API_HISTORY), lambda head: between(head, b"<task>", b"</task>"))
    return json_string(found).strip() if found is not None else ""


def ui_head(task_dir: str) -> list[dict]:
    """The complete UI messages at the head of `ui_messages.json`, as far as its first model
    request (whose text names the working directory), looked for as `head_search` does."""
    def messages(head: bytes) -> list[dict]:
        text = head.decode("utf-8", "replace")
        start = text.find("[")
        return [m for m in complete_items(text, start + 1) if isinstance(m, dict)] if start >= 0 else []

    return head_search(os.path.join(task_dir, UI_MESSAGES), messages,
                       lambda found: any(ui_kind(m) == "api_req_started" for m in found)) or []


def ui_opening(task_dir: str) -> tuple[str, str | None, str | None]:
    """(first prompt, working directory, model) of a task, from the head of its UI messages."""
    messages = ui_head(task_dir)
    prompt = as_dict(opening_prompt(messages))
    return as_str(prompt.get("text")) or "", ui_cwd(messages), ui_model(messages)


def item_cwd(item: dict) -> str | None:
    return as_str(item.get("cwdOnTaskInitialization")) or as_str(item.get("workspace")) or None


def scan_task(agent: str, task_dir: str, format_name: str) -> Session:
    task_id = os.path.basename(task_dir)
    item = task_item(task_dir)
    started = epoch(item.get("ts")) or (epoch(int(task_id)) if task_id.isdigit() else None)
    if started is None:
        started = min((storefs.stat(p).st_mtime for p in task_dependencies(task_dir) if storefs.exists(p)),
                      default=None)
    extra = {"format": format_name}
    if as_str(item.get("parentTaskId")):
        extra["parent_task"] = item["parentTaskId"]
    cwd = item_cwd(item) or head_cwd(task_dir)
    title = as_str(item.get("task")) or head_title(task_dir)
    model = as_str(item.get("modelId"))
    if not (cwd and title and model):  # a task without history entry, or with UI messages only
        ui_title, ui_dir, ui_model_id = ui_opening(task_dir)
        cwd, title, model = cwd or ui_dir, title or ui_title, model or ui_model_id
    return Session(agent=agent, native_id=task_id, source=task_dir, started=started, cwd=cwd,
                   title=one_line(title), model=model, locator=task_id, extra=extra)


# user text: who wrote it ----------------------------------------------------------------------------
_RESULT = compiledre.compile(r"^\[([A-Za-z0-9_\-:.]+)(?: for (?:'[^\n]*?'|\"[^\n]*?\"))?\] Result:")
_HUMAN_OPENING = compiledre.compile(r"<(task|feedback|answer|user_message|user_input)(?: [^>]{0,1024})?>")
_SYSTEM_PREFIXES = (
    ("<environment_details>", "environment_details"),
    ("[TASK RESUMPTION]", "task_resumption"),
    ("[ERROR]", "harness_error"),
    ("# task_progress", "task_progress_reminder"),
    ("# TODO LIST UPDATE REQUIRED", "task_progress_reminder"),
    ("Files attached by the user", "attached_files"),
    ("<file_content", "attached_files"),
    ("The user has provided feedback on the results", "notice"),
    ("(The user did not provide a new message", "notice"),
    ("[Response interrupted", "notice"),
)


def human_parts(text: str) -> list[tuple[str, str]]:
    """(tag, words) for each span of the human's own words in a text block (`<task>…</task>`,
    ...), found in linear time: a tag whose closing is missing is not looked for again."""
    found, position, unclosed = [], 0, set()
    while opening := _HUMAN_OPENING.search(text, position):
        tag = opening.group(1)
        end = -1 if tag in unclosed else text.find(f"</{tag}>", opening.end())
        if end < 0:
            unclosed.add(tag)
            position = opening.start() + 1
            continue
        found.append((tag, text[opening.end():end].strip()))
        position = end + len(tag) + 3
    return found


def system_kind(text: str) -> str | None:
    stripped = text.lstrip()
    for prefix, kind in _SYSTEM_PREFIXES:
        if stripped.startswith(prefix):
            return kind
    return None


def result_tool(text: str) -> str | None:
    found = _RESULT.match(text.lstrip())
    return found.group(1) if found else None


def same_tool(result_name: str, call_name: str) -> bool:
    """`[subagents] Result:` answers a `use_subagents` call: names match up to a prefix."""
    return result_name == call_name or call_name.endswith(result_name) or result_name.endswith(call_name)


# the API history --------------------------------------------------------------------------------
class HistoryTranslator:
    """Anthropic-style messages (the API history, or the CLI store's messages) into steps.

    `step_metrics(index, message)` gives an assistant message's metrics and timestamp from
    wherever the store keeps them; `subtasks` are (task id, document) of sub-tasks, referenced
    from the `new_task` calls' results in order."""

    def __init__(self, builder: TrajectoryBuilder, step_metrics, subtasks=(), model=None):
        self.builder = builder
        self.step_metrics = step_metrics
        self.subtasks = list(subtasks)
        self.model = model
        self.pending: list[tuple[str, str]] = []     # calls of the last agent step not answered
        self.calling_step = None                      # the step that made them
        self.last_result = None   # the result a following unmarked text block continues
        self.xml_tools = False
        self.first_model = None

    def run(self, messages: list) -> None:
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
                self.builder.warn(f"message {index} is not a user or assistant message; skipped")
                continue
            blocks = message.get("content")
            blocks = [{"type": "text", "text": blocks}] if isinstance(blocks, str) else as_list(blocks)
            blocks = [b for b in blocks if isinstance(b, dict)]
            if message["role"] == "assistant":
                self.assistant(index, message, blocks)
            else:
                self.user(message, blocks)
        self.finish()

    # assistant -------------------------------------------------------------------------------
    def assistant(self, index: int, message: dict, blocks: list[dict]) -> None:
        step_metrics, when, model = self.step_metrics(index, message)
        self.first_model = self.first_model or model
        texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
        thinking = [as_str(b.get("thinking")) or as_str(b.get("text")) or "" for b in blocks
                    if b.get("type") in ("thinking", "reasoning")]
        step = self.builder.agent("\n\n".join(texts), when, model_name=model or self.model,
                                  reasoning="\n\n".join(t for t in thinking if t) or None,
                                  metrics=step_metrics, llm_call_count=1)
        self.pending, self.calling_step = [], step
        for block in blocks:
            if block.get("type") == "tool_use":
                name = as_str(block.get("name")) or "unknown"
                call_id = self.builder.tool_call(step, as_str(block.get("id")), name, block.get("input"))
                self.pending.append((call_id, name))
            elif block.get("type") == "redacted_thinking":
                step.extra = {**(step.extra or {}), "redacted_thinking": True}
        if any(re.search(r"<(read_file|write_to_file|execute_command|replace_in_file|attempt_completion"
                         r"|ask_followup_question|list_files|search_files)>", t) for t in texts):
            self.xml_tools = True

    # user ------------------------------------------------------------------------------------
    def user(self, message: dict, blocks: list[dict]) -> None:
        when = iso(message.get("ts"))
        last_user, self.last_result = None, None
        for block in blocks:
            kind = block.get("type")
            if kind == "tool_result":
                self.native_result(block)
            elif kind == "image":
                last_user = self.image(block, last_user, when)
                self.last_result = None
            elif kind == "text" and isinstance(block.get("text"), str):
                last_user = self.text(block["text"], when) or last_user

    def native_result(self, block: dict) -> None:
        call_id = as_str(block.get("tool_use_id")) or ""
        content = result_content(block.get("content"))
        extra = {"is_error": True} if block.get("is_error") or failed_items(block.get("content")) else None
        name = next((n for c, n in self.pending if c == call_id), None)
        self.pending = [(c, n) for c, n in self.pending if c != call_id]
        refs = self.subtask_refs(name or "")
        if not self.builder.tool_result(call_id, content, extra, refs):
            self.orphan(content, {"orphan_call_id": call_id, **(extra or {})}, refs)
        elif name is not None:  # answered a call of the last agent step
            self.last_result = self.calling_step.results[-1]

    def text(self, text: str, when):
        """Returns the user step made, if any (images that follow belong to it)."""
        tool = result_tool(text)
        if tool:
            self.text_result(tool, text)
            return self.human(text, when, via=tool)
        kind = system_kind(text)
        if kind:
            self.builder.system(text, when, extra={"kind": kind})
            self.last_result = None
            return None
        made = self.human(text, when)
        if made is None and self.last_result is not None and isinstance(self.last_result.get("content"), str):
            self.last_result["content"] += "\n\n" + text  # more of the result (a command's output)
            return None
        self.last_result = None
        return made or self.builder.user(text, when)

    def human(self, text: str, when, via: str | None = None):
        """User steps for the human's words found in `text` (the last one is returned)."""
        made = None
        for tag, words in human_parts(text):
            if words:
                extra = {"tag": tag, "via_tool": via} if via else {"tag": tag}
                made = self.builder.user(words, when, extra=extra)
        return made

    def text_result(self, tool: str, text: str) -> None:
        """A `[tool] Result:` text answers the first unanswered call of that tool."""
        match = next((p for p in self.pending if same_tool(tool, p[1])), None) or \
            (self.pending[0] if self.pending else None)
        refs = self.subtask_refs(match[1] if match else tool)
        if match:
            self.pending.remove(match)
            self.builder.tool_result(match[0], text, {"joined_by": "order", **command_failure(text)}, refs)
            self.last_result = self.calling_step.results[-1]
        else:
            self.orphan(text, {"tool": tool}, refs)

    def orphan(self, content, extra: dict, refs) -> None:
        step = self.builder.last_step or self.builder.system("")
        self.builder.observe(step, content, extra, refs)
        self.last_result = step.results[-1]

    def image(self, block: dict, last_user, when):
        source = as_dict(block.get("source"))
        part = image_part(as_str(source.get("media_type")), as_str(source.get("data")),
                          url=as_str(source.get("url")))
        if last_user is not None:
            message = last_user.message
            last_user.message = ([text_part(message)] if isinstance(message, str) else message) + [part]
            return last_user
        return self.builder.user([part], when)

    # sub-tasks ---------------------------------------------------------------------------------
    def subtask_refs(self, tool_name: str):
        if tool_name == "new_task" and self.subtasks:
            task_id, doc = self.subtasks.pop(0)
            return self.builder.embed(doc, f"task-{task_id}")
        return None

    def finish(self) -> None:
        while self.subtasks:
            task_id, doc = self.subtasks.pop(0)
            step = self.builder.system(f"sub-task {task_id}", extra={"kind": "subtask"})
            self.builder.observe(step, None, subagents=self.builder.embed(doc, f"task-{task_id}"))


_EXIT = compiledre.compile(r"Command failed with exit code (-?\d+)")


def command_failure(text: str) -> dict:
    found = _EXIT.search(text[:2000])
    return {"is_error": True, "exit_code": int(found.group(1))} if found else {}


def result_content(content):
    """A tool result's content: Anthropic blocks (text, images), or the CLI's result objects."""
    if isinstance(content, str):
        return content
    items = [c for c in as_list(content) if isinstance(c, dict)]
    if items and all(c.get("type") in ("text", "image") for c in items):
        parts = [text_part(c.get("text") or "") if c.get("type") == "text" else
                 image_part(as_str(as_dict(c.get("source")).get("media_type")),
                            as_str(as_dict(c.get("source")).get("data"))) for c in items]
        return plain_or_parts(parts)
    return dumps_text(content) if content is not None else ""


def failed_items(content) -> bool:
    items = [c for c in as_list(content) if isinstance(c, dict) and "success" in c]
    return bool(items) and any(c.get("success") is False for c in items)


# UI messages ------------------------------------------------------------------------------------
def api_request(message: dict) -> dict:
    """The JSON of an `api_req_started` message."""
    try:
        return as_dict(loads_native(message.get("text") or "{}"))
    except ValueError:
        return {}


def cache_split(record: dict, tokens_in) -> tuple:
    """(prompt tokens, cache reads, cache writes) from Cline's `tokensIn`, which leaves out the
    cache: the prompt is all three. A count the record does not hold stays unknown."""
    writes, reads = as_int(record.get("cacheWrites")), as_int(record.get("cacheReads"))
    prompt = None if tokens_in is None else tokens_in + (writes or 0) + (reads or 0)
    return prompt, reads, writes


def ui_metrics(request: dict) -> dict | None:
    tokens_in, tokens_out = as_int(request.get("tokensIn")), as_int(request.get("tokensOut"))
    prompt, reads, writes = cache_split(request, tokens_in)
    cost = request.get("cost")
    cost = cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    if tokens_in is None and tokens_out is None and cost is None:
        return None
    extra = {"tokens_in": tokens_in}
    if writes:
        extra["cache_write_tokens"] = writes
    return metrics(prompt, tokens_out, reads, cost, extra)


def ui_kind(message: dict) -> str:
    return as_str(message.get("say") if message.get("type") == "say" else message.get("ask")) or ""


def opening_prompt(ui_messages: list) -> dict | None:
    """The message holding the task's first prompt: the first one, as the panel takes it, when
    it is a `say: task` or, as current Cline releases write it, a `say: text` (which is otherwise
    the model's)."""
    first = next((m for m in ui_messages if isinstance(m, dict)), None)
    return first if first and first.get("type") == "say" and ui_kind(first) in ("task", "text") else None


_CWD_TEXT = compiledre.compile(r"# Current Working Directory \(([^)\n]*)\)")


def ui_cwd(ui_messages: list) -> str | None:
    """The working directory the first model request names (`# Current Working Directory (...)`
    in its environment details)."""
    request = next((m for m in ui_messages if isinstance(m, dict) and ui_kind(m) == "api_req_started"), None)
    found = _CWD_TEXT.search(as_str(api_request(request).get("request")) or "") if request else None
    if found is None:
        return None
    return found.group(1).strip() or None


def ui_model(ui_messages: list) -> str | None:
    """The model of the first UI message that names one (`modelInfo.modelId`)."""
    return next((as_str(as_dict(m.get("modelInfo")).get("modelId")) for m in ui_messages
                 if isinstance(m, dict) and as_str(as_dict(m.get("modelInfo")).get("modelId"))), None)


class UiIndex:
    """The UI's record of each model request, keyed by the API history index of the assistant
    message that answered it. A request is made after the user message at
    `conversationHistoryIndex + 1` is added, so its answer sits at `conversationHistoryIndex + 2`."""

    def __init__(self, ui_messages: list):
        self.requests: dict[int, dict] = {}
        for message in ui_messages:
            if isinstance(message, dict) and ui_kind(message) == "api_req_started":
                index = as_int(message.get("conversationHistoryIndex"))
                if index is not None:
                    self.requests[index + 2] = message
        self.model = ui_model(ui_messages)

    def lookup(self, index: int, message: dict):
        """(metrics, timestamp, model) of the assistant message at `index`."""
        tokens = as_dict(as_dict(message.get("metrics")).get("tokens"))
        model = as_str(as_dict(message.get("modelInfo")).get("modelId"))
        request = self.requests.get(index)
        when = iso(message.get("ts")) or (iso(request.get("ts")) if request else None)
        if tokens:
            cost = as_dict(message.get("metrics")).get("cost")
            return (metrics(as_int(tokens.get("prompt")), as_int(tokens.get("completion")),
                            as_int(tokens.get("cached")), cost if isinstance(cost, (int, float)) else None),
                    when, model)
        if request:
            return ui_metrics(api_request(request)), when, model or as_str(
                as_dict(request.get("modelInfo")).get("modelId"))
        return None, when, model


class UiTranslator:
    """A task known only from its UI messages: a step per request, the human's messages, the
    tools as the panel showed them (their input; only commands show an output)."""

    SKIPPED = ("checkpoint_created", "task_progress", "api_req_finished", "deleted_api_reqs",
               "shell_integration_warning", "api_req_retried", "info")
    AGENT_TEXT = ("text", "completion_result", "followup", "plan_mode_respond")

    def __init__(self, builder: TrajectoryBuilder):
        self.builder = builder
        self.step = None
        self.command = None             # (step, call id) of the last command, for its output
        self.output = None              # the result holding that command's output so far
        self.skipped = 0

    def run(self, ui_messages: list) -> None:
        opening = opening_prompt(ui_messages)
        for message in ui_messages:
            if not isinstance(message, dict):
                continue
            kind, text, when = ui_kind(message), as_str(message.get("text")) or "", iso(message.get("ts"))
            if message is opening or kind in ("task", "user_feedback", "user_feedback_diff"):
                self.user(text, message, when)
            elif kind == "api_req_started":
                self.request(message, when)
            elif kind in self.AGENT_TEXT:
                if text:
                    self.agent_text(text, when)
            elif kind == "reasoning":
                step = self.agent(when)
                step.reasoning = "\n\n".join(t for t in (step.reasoning, text) if t)
            elif kind in ("tool", "command", "use_mcp_server"):
                self.tool(kind, text, when)
            elif kind == "command_output":
                self.command_output(text)
            elif kind in self.SKIPPED:
                self.skipped += 1
            elif text or kind:
                self.builder.system(text or f"[{kind}]", when, extra={"kind": kind or "ui_message"})
        if self.skipped:
            self.builder.extra["ui_messages_not_shown"] = self.skipped

    def user(self, text: str, message: dict, when) -> None:
        images = [image_part(data_url_type(i), i.split(",", 1)[-1]) for i in as_list(message.get("images"))
                  if isinstance(i, str)]
        self.builder.user([text_part(text), *images] if images else text, when)
        self.step = None

    def request(self, message: dict, when) -> None:
        self.step = self.builder.agent("", when, llm_call_count=1, metrics=ui_metrics(api_request(message)),
                                       model_name=as_str(as_dict(message.get("modelInfo")).get("modelId")))

    def agent(self, when):
        if self.step is None:
            self.step = self.builder.agent("", when, llm_call_count=1)
        return self.step

    def agent_text(self, text: str, when) -> None:
        step = self.agent(when)
        if not step.message.endswith(text):  # the panel repeats a text it re-rendered
            step.message = "\n\n".join(t for t in (step.message, text) if t)

    def tool(self, kind: str, text: str, when) -> None:
        step = self.agent(when)
        if kind == "command":
            self.command = (step, self.builder.tool_call(step, None, "execute_command", {"command": text}))
            self.output = None
            return
        try:
            arguments = loads_native(text) if text else {}
        except ValueError:
            arguments = {"input": text}
        name = as_str(as_dict(arguments).get("tool")) or kind
        self.builder.tool_call(step, None, name, arguments)

    def command_output(self, text: str) -> None:
        """The output of the last command; the panel may show it in several pieces."""
        if self.output is not None:
            self.output["content"] += text
        elif self.command is not None:
            step, call_id = self.command
            self.builder.tool_result(call_id, text)
            self.output = step.results[-1]
        else:
            self.builder.warn("a command output follows no command; kept as a system step")
            self.builder.system(text, extra={"kind": "command_output"})


def data_url_type(url: str) -> str | None:
    return url[5:url.index(";")] if url.startswith("data:") and ";" in url else None


# a whole task -----------------------------------------------------------------------------------
def read_array(path: str) -> tuple[list | None, str | None]:
    """A JSON array file, or as many of its leading elements as are complete when it is cut."""
    value, problem = read_json(path)
    if problem is None or not problem.endswith("truncated"):
        return (value if isinstance(value, list) else None), problem
    text = read_whole(path).decode("utf-8", "replace")
    start = text.find("[")
    items = complete_items(text, start + 1) if start >= 0 else []
    return items, f"{problem}: the first {len(items)} complete entries were read"


def child_task_ids(item: dict, task_dir: str) -> list[str]:
    tasks = os.path.dirname(task_dir)
    return [str(c) for c in as_list(item.get("childIds"))
            if storefs.isdir(os.path.join(tasks, str(c)))]


def translate_task(agent_name: str, task_dir: str, depth: int = 0) -> dict:
    task_id = os.path.basename(task_dir)
    item = task_item(task_dir)
    history, history_problem = read_array(os.path.join(task_dir, API_HISTORY))
    ui, ui_problem = read_array(os.path.join(task_dir, UI_MESSAGES))
    builder = TrajectoryBuilder(agent_name, model_name=as_str(item.get("modelId")), session_id=task_id)
    for problem in (history_problem, ui_problem):
        if problem:
            builder.warn(problem)
    subtasks = [] if depth > 8 else [(c, translate_task(agent_name, os.path.join(os.path.dirname(task_dir), c),
                                                        depth + 1)) for c in child_task_ids(item, task_dir)]
    if history is not None:
        index = UiIndex(ui or [])
        translator = HistoryTranslator(builder, index.lookup, subtasks, builder.model_name or index.model)
        translator.run(history)
        builder.model_name = builder.model_name or index.model or translator.first_model
        if translator.xml_tools:
            builder.extra["xml_tool_calls"] = ("tool calls are XML tags in the assistant's text; "
                                               "their results are observations without a call id")
    elif ui is not None:
        UiTranslator(builder).run(ui)
        builder.model_name = builder.model_name or ui_model(ui)
        HistoryTranslator(builder, None, subtasks).finish()
        builder.extra["translated_from"] = "ui_messages.json (no API history)"
    builder.extra.update(task_extra(item))
    doc = builder.build()
    item_totals(doc, item)
    return doc


def task_extra(item: dict) -> dict:
    wanted = (("cwd", item_cwd(item)), ("parent_task_id", as_str(item.get("parentTaskId"))),
              ("mode", as_str(item.get("mode"))))
    return {k: v for k, v in wanted if v is not None}


def item_totals(doc: dict, item: dict) -> None:
    """The history entry's totals, when no request recorded its own (same units as the UI's:
    `tokensIn` without the cache)."""
    tokens_in, tokens_out = as_int(item.get("tokensIn")), as_int(item.get("tokensOut"))
    prompt, reads, _ = cache_split(item, tokens_in)
    cost = item.get("totalCost")
    cost = cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    if tokens_in is None and tokens_out is None and cost is None:
        return
    session_totals.apply(doc, prompt, tokens_out, reads, cost, includes_subagents=False,
                         extra={"source": "the task's history entry: no request recorded its usage"})
