"""Qwen Code: `${QWEN_HOME:-$HOME/.qwen}/projects/<encoded cwd>/chats/<sessionId>.jsonl`
(and `chats/archive/`).

Records are Claude-style (`uuid`, `parentUuid`, `sessionId`, `timestamp`, `cwd`, `version`,
`type`: user | assistant | tool_result | system, with a `subtype` for special records) around
Gemini-style `message.parts`: `functionCall {id, name, args}` in assistant records,
`functionResponse {id, name, response}` in tool_result records, joined by id. Tokens are Gemini
`usageMetadata` on assistant records (the `ui_telemetry` records repeat them; they are not
counted again).

The records form a tree: a rewind starts a new branch from an earlier record. As Qwen Code's
own reader does, the conversation is the chain from the last record that is not a session
artifact back to the root through `parentUuid`; records on abandoned branches are left out
(and counted), and records sharing a uuid are fragments of one message, merged in order.
"""

from __future__ import annotations

import os

from agents.base import (JsonlReader, Session, absolute_path, as_dict, as_list, as_str, connected_leaf, epoch,
                         head_records, home, iso, listdir, one_line, outside_named_folder)
from agents.genai import (function_calls, function_responses, message_content, parts_of,
                          response_content, thought_text, usage_metrics, visible_text)
from atif.build import TrajectoryBuilder
from atif.serialize import dumps_text
from core import storefs

NAME = "qwen"
PREFIX = "qw"
SESSIONS_PER_PROJECT = True  # one id in two project folders: two sessions (catalog.discover)
ATIF_NAME = "qwen-code"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("qwen", "--resume", "{id}"), "resume_prompt": ("qwen", "--resume", "{id}", "{prompt}"),
       "start": ("qwen", "-i", "{prompt}"), "start_prompt": ("qwen", "{prompt}"), "checked": "0.24.4"}
VERSION = 2

ARTIFACT_SUBTYPES = ("session_artifact_event", "session_artifact_snapshot")
HARNESS_USER_SUBTYPES = ("notification", "cron", "goal_runtime")   # user records nobody typed
HOOK_CONTEXT = "<qwen:"


def qwen_dir(env) -> str:
    return env.get("QWEN_HOME") or os.path.join(home(env), ".qwen")


def sources(env):
    projects = os.path.join(qwen_dir(env), "projects")
    found = []
    for project in listdir(projects):
        chats = os.path.join(projects, project, "chats")
        for folder in (chats, os.path.join(chats, "archive")):
            found.extend(os.path.join(folder, name) for name in listdir(folder)
                         if name.endswith(".jsonl") and storefs.isfile(os.path.join(folder, name)))
    return found


def outside(source: str, scope, memo: dict) -> bool:
    """Whether the project folder holding a chat shows that none of its chats ran in the
    project: Qwen Code names it as Claude Code does (`outside_named_folder`)."""
    chats = os.path.dirname(source)
    if os.path.basename(chats) == "archive":
        chats = os.path.dirname(chats)
    return outside_named_folder(os.path.dirname(chats), scope, memo, lambda: _first_cwd(source))


def _first_cwd(source: str) -> str | None:
    """The directory a chat's head names first, as `scan` reads it."""
    try:
        return next((as_str(r.get("cwd")) for r in head_records(source, 64 * 1024)
                     if absolute_path(r.get("cwd"))), None)
    except Exception:  # unreadable: its folder's name decides
        return None


def scan(source: str, env) -> list[Session]:
    head = list(head_records(source))
    first = next((r for r in head if as_str(r.get("sessionId"))), {})
    native_id = as_str(first.get("sessionId")) or os.path.splitext(os.path.basename(source))[0]
    started = next((epoch(r.get("timestamp")) for r in head if epoch(r.get("timestamp"))), None)
    cwd = next((r["cwd"] for r in head if absolute_path(r.get("cwd"))), None)
    model = next((as_str(r.get("model")) for r in head if r.get("type") == "assistant" and as_str(r.get("model"))), None)
    title = next((t for t in map(_prompt_text, head) if t), "")
    extra = {"format": "jsonl"}
    if os.path.basename(os.path.dirname(source)) == "archive":
        extra["archived"] = True
    return [Session(agent=NAME, native_id=native_id, source=source, started=started, cwd=cwd,
                    title=one_line(title), model=model, extra=extra)]


def _parts(record: dict) -> list[dict]:
    return parts_of(as_dict(record.get("message")).get("parts"))


def _typed_parts(record: dict) -> tuple[list[dict], list[dict]]:
    """A user message's parts: what the user sent, and the context hooks appended to it."""
    typed, injected = [], []
    for part in _parts(record):
        text = part.get("text")
        (injected if isinstance(text, str) and text.startswith(HOOK_CONTEXT) else typed).append(part)
    return typed, injected


def _prompt_text(record: dict) -> str:
    if record.get("type") != "user" or record.get("subtype") in HARNESS_USER_SUBTYPES:
        return ""
    return visible_text(_typed_parts(record)[0])


# the active branch -------------------------------------------------------------------------------
def _is_artifact(record: dict) -> bool:
    return record.get("type") == "system" and record.get("subtype") in ARTIFACT_SUBTYPES


def active_branch(records: list[dict], builder: TrajectoryBuilder) -> list[dict]:
    """The records of the conversation as Qwen Code resumes it, fragments merged."""
    keyed = [r for r in records if as_str(r.get("uuid"))]
    if not keyed or not any("parentUuid" in r for r in keyed):
        return _merge_fragments(records)   # no tree recorded: the file order is the conversation
    fragments: dict[str, list[dict]] = {}
    for record in keyed:
        fragments.setdefault(record["uuid"], []).append(record)
    leaf = connected_leaf(keyed, "uuid", "parentUuid", eligible=lambda r: not _is_artifact(r))
    chain, seen = [], set()
    current = leaf["uuid"] if leaf else None
    while current and current not in seen:
        seen.add(current)
        if current not in fragments:
            builder.warn(f"record {current!r} is named as a parent but missing: the records before "
                         "it could not be placed on the conversation")
            break
        chain.append(current)
        current = as_str(fragments[current][0].get("parentUuid"))
    abandoned = sum(1 for uuid, group in fragments.items()
                    if uuid not in seen and not _is_artifact(group[0]))
    if abandoned:
        builder.extra["records_on_abandoned_branches"] = abandoned
    return [message for uuid in reversed(chain) for message in _merge(fragments[uuid])]


def _merge_fragments(records: list[dict]) -> list[dict]:
    groups: dict = {}
    for index, record in enumerate(records):
        groups.setdefault(as_str(record.get("uuid")) or index, []).append(record)
    return [message for group in groups.values() for message in _merge(group)]


def _merge(group: list[dict]) -> list[dict]:
    """The messages of the records sharing a uuid: fragments of one message, unless their
    types differ (damaged or hand-edited files), when each type stays a message of its own."""
    by_type: dict = {}
    for record in group:
        by_type.setdefault(as_str(record.get("type")), []).append(record)
    return [_merge_message(fragments) for fragments in by_type.values()]


def _merge_message(group: list[dict]) -> dict:
    """One message from its fragments: parts in order, the last usage, the first tool result
    metadata and model."""
    merged = dict(group[0])
    if len(group) == 1:
        return merged
    parts = [p for record in group for p in _parts(record)]
    merged["message"] = {**as_dict(group[0].get("message")), "parts": parts}
    for record in group[1:]:
        if record.get("usageMetadata"):
            merged["usageMetadata"] = record["usageMetadata"]
        for key in ("toolCallResult", "model"):
            if not merged.get(key) and record.get(key):
                merged[key] = record[key]
    return merged


# steps -------------------------------------------------------------------------------------------
class _Translation:
    def __init__(self, builder: TrajectoryBuilder):
        self.builder = builder
        self.skipped: dict[str, int] = {}
        self.cwds: list[str] = []

    def record(self, record: dict) -> None:
        cwd = as_str(record.get("cwd"))
        if cwd and cwd not in self.cwds:
            self.cwds.append(cwd)
        kind, subtype = record.get("type"), as_str(record.get("subtype"))
        at = iso(record.get("timestamp"))
        if kind == "user" and subtype in HARNESS_USER_SUBTYPES:
            self.builder.system(message_content(_parts(record)), at, extra={"kind": subtype})
        elif kind == "user":
            self.user(record, at)
        elif kind == "assistant":
            self.agent(record, at)
        elif kind == "tool_result":
            self.results(record, at)
        elif kind == "system":
            self.system(record, subtype, at)
        else:
            self.skip(str(kind))

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def user(self, record: dict, at) -> None:
        typed, injected = _typed_parts(record)
        content = message_content(typed)
        if content:
            extra = {"kind": record["subtype"]} if as_str(record.get("subtype")) else None
            self.builder.user(content, at, extra=extra)
        for part in injected:
            self.builder.system(part["text"], at, extra={"kind": "hook_context"})
        for response in function_responses(typed):
            self.result(response, as_dict(record.get("toolCallResult")), at)

    def agent(self, record: dict, at) -> None:
        parts = _parts(record)
        usage = as_dict(record.get("usageMetadata"))
        step = self.builder.agent(
            visible_text(parts), at, model_name=as_str(record.get("model")),
            reasoning=thought_text(parts) or None, llm_call_count=1,
            metrics=usage_metrics(usage.get("promptTokenCount"), usage.get("candidatesTokenCount"),
                                  usage.get("cachedContentTokenCount"), usage.get("thoughtsTokenCount"),
                                  usage.get("toolUsePromptTokenCount"), usage.get("totalTokenCount")))
        for call in function_calls(parts):
            self.builder.tool_call(step, as_str(call.get("id")), as_str(call.get("name")), call.get("args"))

    def results(self, record: dict, at) -> None:
        for response in function_responses(_parts(record)):
            self.result(response, as_dict(record.get("toolCallResult")), at)

    def result(self, response: dict, meta: dict, at) -> None:
        content, is_error = response_content(response)
        if as_str(meta.get("callId")) not in (None, response.get("id")):
            meta = {}   # the record's metadata describes another call
        status = as_str(meta.get("status"))
        extra = {}
        if is_error or status == "error":
            extra["is_error"] = True
        if status and status != "success":
            extra["status"] = status
        exit_code = as_dict(meta.get("resultDisplay")).get("exitCode")
        if isinstance(exit_code, int) and not isinstance(exit_code, bool):
            extra["exit_code"] = exit_code
        cid = as_str(response.get("id"))
        if not (cid and self.builder.tool_result(cid, content, extra=extra)):
            step = self.builder.system(f"result of {as_str(response.get('name')) or 'a tool'} with no "
                                       "matching call", at, extra={"kind": "orphan_tool_result"})
            self.builder.observe(step, content, extra=extra)

    def system(self, record: dict, subtype: str | None, at) -> None:
        payload = as_dict(record.get("systemPayload"))
        if subtype == "chat_compression":
            self.compression(payload, at)
        elif subtype == "slash_command" and payload.get("phase") == "invocation":
            if not payload.get("sentToModel") and as_str(payload.get("rawCommand")):
                self.builder.user(payload["rawCommand"], at, extra={"kind": "slash_command"})
        elif subtype == "slash_command" and payload.get("phase") == "result":
            output = "\n".join(_item_text(i) for i in as_list(payload.get("outputHistoryItems")))
            self.builder.system(output, at, extra={"kind": "slash_command_output",
                                                   "command": as_str(payload.get("rawCommand"))})
        elif subtype == "custom_title" and as_str(payload.get("customTitle")):
            self.builder.extra["title"] = payload["customTitle"]
        else:
            self.skip(f"system/{subtype or 'none'}")

    def compression(self, payload: dict, at) -> None:
        history = [h for h in as_list(payload.get("compressedHistory")) if isinstance(h, dict)]
        summary = visible_text(parts_of(history[0].get("parts"))) if history else ""
        info = as_dict(payload.get("info"))
        step = self.builder.system("The chat history was compressed; the model continues from this "
                                   "summary.", at, extra={
                                       "kind": "chat_compression", "info": info or None,
                                       "context_management": {"type": "compaction", "boundary": "replace"}})
        self.builder.observe(step, summary)


def _item_text(item) -> str:
    if isinstance(item, dict) and as_str(item.get("text")):
        return item["text"]
    return dumps_text(item)


def translate(session: Session, env) -> dict:
    reader = JsonlReader(session.source)
    records = list(reader)
    first = next((r for r in records if as_str(r.get("version"))), {})
    builder = TrajectoryBuilder(ATIF_NAME, version=as_str(first.get("version")), session_id=session.native_id)
    for problem in reader.problems():
        builder.warn(problem)
    translation = _Translation(builder)
    branch = active_branch(records, builder)
    for record in branch:
        translation.record(record)
    builder.model_name = next((as_str(r.get("model")) for r in branch
                               if r.get("type") == "assistant" and as_str(r.get("model"))), None)
    builder.extra["format"] = "jsonl"
    if translation.skipped:
        builder.extra["skipped_records"] = translation.skipped
    if len(translation.cwds) > 1:
        builder.extra["cwds"] = translation.cwds
    git_branch = next((as_str(r.get("gitBranch")) for r in branch if as_str(r.get("gitBranch"))), None)
    if git_branch:
        builder.extra["git_branch"] = git_branch
    return builder.build()
