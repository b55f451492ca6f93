"""Generated sessions in each agent's native format, for the property tests.

A session is drawn once, in the terms every agent shares (`Exchange`: a prompt and the model's
replies, each with text, reasoning, tool calls with or without a result, and token usage), with
`Noise` to mix in: lines that are not JSON, JSON that is not an object, records of unknown
kinds, records of the agent's own kinds whose fields hold values of any type, an incomplete last
line. Each `write_<agent>` then lays it out as that agent's store under a $HOME, the way the
agent writes it (record shapes from the live stores in tests/fixtures/samples/live and the
samples the agent's own tests use).

Noise never holds a tool call: the number of calls generated is the number a document must hold.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field

from hypothesis import strategies as st

from helpers import copy_database
from homes import live_store
from mutations import settle_sqlite

SESSION_ID = "0b5e5510-0000-4000-8000-00000000abcd"
CWD = "/work/generated"
T0 = 1_790_000_000.0


# the shared model --------------------------------------------------------------------------------
@dataclass
class Call:
    id: str
    name: str
    arguments: dict
    output: str | None      # None: no result was recorded (the session stopped before it)
    error: bool


@dataclass
class Reply:
    text: str
    reasoning: str
    calls: list[Call]
    usage: tuple[int, int, int] | None   # (input tokens, cached among them, output tokens)


@dataclass
class Exchange:
    prompt: str
    replies: list[Reply]


@dataclass
class Noise:
    position: int           # where among the records (taken modulo their number)
    kind: str               # "garbage", "not_object", "unknown", "wrong_types", "cut_last_line"
    value: object = None    # the value put into a field (wrong_types)
    key: str = ""           # which field (wrong_types)


@dataclass
class Generated:
    exchanges: list[Exchange]
    noise: list[Noise] = field(default_factory=list)

    def calls(self) -> list[Call]:
        return [c for e in self.exchanges for r in e.replies for c in r.calls]


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
                           | TEXT, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6)
NOISE_KINDS = ("garbage", "not_object", "unknown", "wrong_types", "cut_last_line")


@st.composite
def generated(draw, noise: bool = True) -> Generated:
    counter = iter(range(10_000))
    prefix = draw(st.sampled_from(["call_", "toolu_", "c-", "fc_"]))

    def call() -> Call:
        output = draw(st.none() | TEXT)
        return Call(f"{prefix}{next(counter)}", draw(st.sampled_from(["bash", "read_file", "edit", "Task x"])),
                    draw(st.dictionaries(st.sampled_from(["command", "path", "n"]), TEXT | st.integers(), max_size=2)),
                    output, draw(st.booleans()) if output is not None else False)

    def reply() -> Reply:
        calls = [call() for _ in range(draw(st.integers(0, 3)))]
        usage = draw(st.none() | st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**5))
                     .map(lambda u: (u[0] + u[1], u[1], u[2])))
        return Reply(draw(TEXT), draw(st.sampled_from(["", "think first"]) | TEXT), calls, usage)

    exchanges = [Exchange(draw(TEXT.filter(str.strip) | st.just("fix the bug")),
                          [reply() for _ in range(draw(st.integers(1, 3)))])
                 for _ in range(draw(st.integers(1, 3)))]
    found = Generated(exchanges)
    if noise:
        found.noise = draw(st.lists(st.builds(Noise, st.integers(0, 50), st.sampled_from(NOISE_KINDS),
                                              JSON_VALUES, st.sampled_from(["type", "message", "content", "role",
                                                                            "timestamp", "uuid", "id", "payload",
                                                                            "data", "parts"])),
                                    max_size=3))
    return found


# laying out JSONL ---------------------------------------------------------------------------------
def stamp(n: int) -> str:
    from agents.base import iso

    return iso(T0 + n)


def jsonl(records: list, noise: list[Noise], prompt_record) -> bytes:
    """The records as JSONL with the noise mixed in. `prompt_record(text, previous)` is a record
    of the agent's own prompt kind following record `previous` (in formats that chain records,
    its parent): wrong_types puts a value of any type into one of its fields."""
    lines = [(json.dumps(r), r) for r in records]
    tail = b""
    for number, item in enumerate(sorted(noise, key=lambda n: n.position)):
        where = 1 + item.position % max(1, len(lines))   # never before the first record: it often identifies the session
        previous = lines[where - 1][1] or {}
        if item.kind == "garbage":
            lines.insert(where, ('{"type": "user", "message": {oops', None))
        elif item.kind == "not_object":
            lines.insert(where, (json.dumps([1, "two", None]), None))
        elif item.kind == "unknown":
            lines.insert(where, (json.dumps({"type": "from-the-future", "role": "oracle", "payload": {"x": 1}}), None))
        elif item.kind == "wrong_types":
            record = prompt_record(f"noise {number}", previous)
            record[item.key] = item.value
            lines.insert(where, (json.dumps(record), record))
        elif item.kind == "cut_last_line":
            tail = json.dumps(prompt_record("cut off", lines[-1][1] or {}))[:-7].encode()
    return "".join(line + "\n" for line, _ in lines).encode() + tail


def write(home: str, relative: str, data: bytes) -> str:
    path = os.path.join(home, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def call_ids(session: Generated) -> set:
    return {c.id for c in session.calls()}


# Anthropic-style content blocks (Claude, Droid) ------------------------------------------------------
def anthropic_blocks(reply: Reply) -> list[dict]:
    blocks = [{"type": "thinking", "thinking": reply.reasoning, "signature": "x"}] if reply.reasoning else []
    if reply.text or not reply.calls:
        blocks.append({"type": "text", "text": reply.text})
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in reply.calls]
    return blocks


def anthropic_results(reply: Reply) -> list[dict]:
    return [{"type": "tool_result", "tool_use_id": c.id, "content": c.output, "is_error": c.error}
            for c in reply.calls if c.output is not None]


def write_claude(home: str, session: Generated) -> None:
    records: list = []

    def add(kind: str, message: dict) -> dict:
        record = {"type": kind, "uuid": f"u{len(records)}", "parentUuid": f"u{len(records) - 1}" if records else None,
                  "isSidechain": False, "sessionId": SESSION_ID, "cwd": CWD, "version": "2.1.0",
                  "timestamp": stamp(len(records)), "message": message}
        records.append(record)
        return record

    for e, exchange in enumerate(session.exchanges):
        add("user", {"role": "user", "content": exchange.prompt})
        for n, reply in enumerate(exchange.replies):
            usage = None
            if reply.usage:
                prompt, cached, output = reply.usage
                usage = {"input_tokens": prompt - cached, "cache_read_input_tokens": cached,
                         "cache_creation_input_tokens": 0, "output_tokens": output}
            for block in anthropic_blocks(reply):  # streamed: one record per block, usage repeated
                message = {"id": f"msg_{e}_{n}", "type": "message", "role": "assistant", "model": "claude-x",
                           "content": [block]}
                add("assistant", {**message, "usage": usage} if usage else message)
            if anthropic_results(reply):
                add("user", {"role": "user", "content": anthropic_results(reply)})

    def prompt(text, previous):
        return {"type": "user", "uuid": f"n-{text}", "parentUuid": previous.get("uuid"), "sessionId": SESSION_ID,
                "timestamp": stamp(0), "message": {"role": "user", "content": text}}

    write(home, f".claude/projects/-work-generated/{SESSION_ID}.jsonl", jsonl(records, session.noise, prompt))


def write_droid(home: str, session: Generated) -> None:
    records: list = [{"type": "session_start", "id": SESSION_ID, "title": "generated", "cwd": CWD, "version": 2}]

    def add(role: str, content) -> None:
        records.append({"type": "message", "id": f"m{len(records)}", "parentId": f"m{len(records) - 1}",
                        "timestamp": stamp(len(records)), "message": {"role": role, "content": content}})

    for exchange in session.exchanges:
        add("user", [{"type": "text", "text": exchange.prompt}])
        for reply in exchange.replies:
            add("assistant", anthropic_blocks(reply))
            if anthropic_results(reply):
                add("user", anthropic_results(reply))
    folder = ".factory/sessions/-work-generated"
    usage = [r.usage for e in session.exchanges for r in e.replies if r.usage]
    settings = {"model": "claude-x"}
    if usage:
        settings["tokenUsage"] = {"inputTokens": sum(u[0] - u[1] for u in usage), "cacheReadTokens": sum(u[1] for u in usage),
                                  "outputTokens": sum(u[2] for u in usage)}
    write(home, f"{folder}/{SESSION_ID}.settings.json", json.dumps(settings).encode())

    def prompt(text, previous):
        return {"type": "message", "id": f"n-{text}", "parentId": previous.get("id"), "timestamp": stamp(0),
                "message": {"role": "user", "content": [{"type": "text", "text": text}]}}

    write(home, f"{folder}/{SESSION_ID}.jsonl", jsonl(records, session.noise, prompt))


def write_amp(home: str, session: Generated) -> None:
    messages = []
    for exchange in session.exchanges:
        messages.append({"role": "user", "content": [{"type": "text", "text": exchange.prompt}]})
        for reply in exchange.replies:
            content = [dict(b, complete=True) if b["type"] == "tool_use" else b for b in anthropic_blocks(reply)]
            message = {"role": "assistant", "content": content}
            if reply.usage:
                prompt, cached, output = reply.usage
                message["usage"] = {"model": "claude-x", "inputTokens": prompt - cached, "cacheReadInputTokens": cached,
                                    "cacheCreationInputTokens": 0, "totalInputTokens": prompt, "outputTokens": output}
            messages.append(message)
            results = [{"type": "tool_result", "toolUseID": c.id,
                        "run": ({"status": "error", "error": {"message": c.output}} if c.error
                                else {"status": "done", "result": {"output": c.output}})}
                       for c in reply.calls if c.output is not None]
            if results:
                messages.append({"role": "user", "content": results})
    for item in session.noise:  # a thread is one JSON document: the noise goes into its messages
        where = item.position % (len(messages) + 1)
        if item.kind == "wrong_types":
            messages.insert(where, {"role": "user", "content": [{"type": "text", "text": "noise"}], item.key: item.value})
        elif item.kind in ("unknown", "not_object"):
            messages.insert(where, {"role": "oracle", "content": item.value} if item.kind == "unknown" else [1, "two"])
    thread = {"v": 1, "id": "T-" + SESSION_ID, "created": int(T0 * 1000), "title": "generated", "messages": messages,
              "env": {"initial": {"trees": [{"uri": "file://" + CWD}]}}}
    write(home, f".local/share/amp/threads/T-{SESSION_ID}.json", json.dumps(thread).encode())


# Gemini and Qwen (Google GenAI parts) --------------------------------------------------------------
def write_gemini(home: str, session: Generated) -> None:
    records: list = [{"sessionId": SESSION_ID, "projectHash": "0" * 64, "startTime": stamp(0),
                      "lastUpdated": stamp(0), "kind": "main"}]
    for exchange in session.exchanges:
        records.append({"id": f"m{len(records)}", "timestamp": stamp(len(records)), "type": "user",
                        "content": [{"text": exchange.prompt}]})
        for reply in exchange.replies:
            record = {"id": f"m{len(records)}", "timestamp": stamp(len(records)), "type": "gemini",
                      "content": reply.text, "model": "gemini-x"}
            if reply.reasoning:
                record["thoughts"] = [{"subject": "plan", "description": reply.reasoning, "timestamp": stamp(0)}]
            if reply.usage:
                prompt, cached, output = reply.usage
                record["tokens"] = {"input": prompt, "output": output, "cached": cached, "thoughts": 0, "tool": 0,
                                    "total": prompt + output}
            if reply.calls:
                record["toolCalls"] = [
                    {"id": c.id, "name": c.name, "args": c.arguments, "timestamp": stamp(len(records)),
                     "status": "cancelled" if c.output is None else ("error" if c.error else "success"),
                     "result": [] if c.output is None else [{"functionResponse": {
                         "id": c.id, "name": c.name, "response": {"error" if c.error else "output": c.output}}}]}
                    for c in reply.calls]
            records.append(record)

    def prompt(text, previous):
        return {"id": f"n-{text}", "timestamp": stamp(0), "type": "user", "content": [{"text": text}]}

    write(home, ".gemini/tmp/generated/chats/session-2026-01-01T00-00-0b5e5510.jsonl",
          jsonl(records, session.noise, prompt))


def write_qwen(home: str, session: Generated) -> None:
    records: list = []

    def add(kind: str, message: dict, **extra) -> None:
        records.append({"uuid": f"u{len(records)}", "parentUuid": f"u{len(records) - 1}" if records else None,
                        "sessionId": SESSION_ID, "timestamp": stamp(len(records)), "type": kind, "cwd": CWD,
                        "version": "0.24.4", "message": message, **extra})

    for exchange in session.exchanges:
        add("user", {"role": "user", "parts": [{"text": exchange.prompt}]})
        for reply in exchange.replies:
            parts = [{"text": reply.reasoning, "thought": True}] if reply.reasoning else []
            parts += [{"text": reply.text}] if reply.text or not reply.calls else []
            parts += [{"functionCall": {"id": c.id, "name": c.name, "args": c.arguments}} for c in reply.calls]
            extra = {"model": "qwen-x"}
            if reply.usage:
                prompt, cached, output = reply.usage
                extra["usageMetadata"] = {"promptTokenCount": prompt, "cachedContentTokenCount": cached,
                                          "candidatesTokenCount": output, "thoughtsTokenCount": 0,
                                          "totalTokenCount": prompt + output}
            add("assistant", {"role": "model", "parts": parts}, **extra)
            for c in reply.calls:
                if c.output is not None:
                    add("tool_result", {"role": "user", "parts": [{"functionResponse": {
                        "id": c.id, "name": c.name, "response": {"error" if c.error else "output": c.output}}}]},
                        toolCallResult={"callId": c.id, "status": "error" if c.error else "success"})

    def prompt(text, previous):
        return {"uuid": f"n-{text}", "parentUuid": previous.get("uuid"), "sessionId": SESSION_ID, "timestamp": stamp(0),
                "type": "user", "message": {"role": "user", "parts": [{"text": text}]}}

    write(home, f".qwen/projects/-work-generated/chats/{SESSION_ID}.jsonl", jsonl(records, session.noise, prompt))


# pi, oh-my-pi, Copilot, Codex, Kimi -------------------------------------------------------------------
def write_pi(home: str, session: Generated, folder: str = ".pi/agent/sessions", fork: bool = False) -> None:
    """A pi session; with `fork`, as oh-my-pi writes it (a title record first, the model change
    naming `model`)."""
    records: list = [{"type": "session", "version": 3, "id": SESSION_ID, "timestamp": stamp(0), "cwd": CWD}]
    if fork:
        records.insert(0, {"type": "title", "v": 1, "title": "generated", "updatedAt": stamp(0), "pad": " " * 40})
        records.append({"type": "model_change", "id": "e2", "parentId": None, "timestamp": stamp(1),
                        "model": "p/pi-x"})

    def add(message: dict) -> None:
        records.append({"type": "message", "id": f"e{len(records)}",
                        "parentId": f"e{len(records) - 1}" if len(records) > 1 else None,
                        "timestamp": stamp(len(records)), "message": message})

    for exchange in session.exchanges:
        add({"role": "user", "content": [{"type": "text", "text": exchange.prompt}]})
        for reply in exchange.replies:
            content = [{"type": "thinking", "thinking": reply.reasoning}] if reply.reasoning else []
            content += [{"type": "text", "text": reply.text}] if reply.text or not reply.calls else []
            content += [{"type": "toolCall", "id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.calls]
            message = {"role": "assistant", "content": content, "model": "pi-x", "provider": "p"}
            if reply.usage:
                prompt, cached, output = reply.usage
                message["usage"] = {"input": prompt - cached, "cacheRead": cached, "cacheWrite": 0, "output": output,
                                    "totalTokens": prompt + output}
            add(message)
            for c in reply.calls:
                if c.output is not None:
                    add({"role": "toolResult", "toolCallId": c.id, "toolName": c.name,
                         "content": [{"type": "text", "text": c.output}], "isError": c.error})

    def prompt(text, previous):
        return {"type": "message", "id": f"n-{text}", "parentId": previous.get("id"), "timestamp": stamp(0),
                "message": {"role": "user", "content": [{"type": "text", "text": text}]}}

    write(home, f"{folder}/--work-generated--/2026-01-01T00-00-00-000Z_{SESSION_ID}.jsonl",
          jsonl(records, session.noise, prompt))


def write_omp(home: str, session: Generated) -> None:
    write_pi(home, session, ".omp/agent/sessions", fork=True)


def write_copilot(home: str, session: Generated) -> None:
    records: list = []

    def event(kind: str, **data) -> None:
        records.append({"type": kind, "data": data, "id": f"e{len(records)}", "timestamp": stamp(len(records)),
                        "parentId": f"e{len(records) - 1}" if records else None})

    event("session.start", sessionId=SESSION_ID, copilotVersion="1.0.102", selectedModel="gpt-x",
          startTime=stamp(0), context={"cwd": CWD})
    for e, exchange in enumerate(session.exchanges):
        event("user.message", content=exchange.prompt)
        for n, reply in enumerate(exchange.replies):
            if reply.reasoning:
                event("assistant.reasoning", reasoningId=f"r{e}.{n}", content=reply.reasoning)
            fields = {"outputTokens": reply.usage[2]} if reply.usage else {}
            event("assistant.message", messageId=f"m{e}.{n}", content=reply.text,
                  toolRequests=[{"toolCallId": c.id, "name": c.name, "arguments": c.arguments} for c in reply.calls],
                  **fields)
            for c in reply.calls:
                if c.output is not None:
                    event("tool.execution_complete", toolCallId=c.id, success=not c.error, result={"content": c.output})

    def prompt(text, previous):
        return {"type": "user.message", "data": {"content": text}, "id": f"n-{text}", "timestamp": stamp(0),
                "parentId": previous.get("id")}

    write(home, f".copilot/session-state/{SESSION_ID}/events.jsonl", jsonl(records, session.noise, prompt))


def write_codex(home: str, session: Generated) -> None:
    records: list = []
    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0,
             "total_tokens": 0}

    def add(kind: str, payload: dict) -> None:
        records.append({"timestamp": stamp(len(records)), "type": kind, "payload": payload})

    add("session_meta", {"id": SESSION_ID, "timestamp": stamp(0), "cwd": CWD, "originator": "codex_cli_rs",
                         "cli_version": "0.171.0", "source": "cli", "model_provider": "openai"})
    for exchange in session.exchanges:
        add("turn_context", {"cwd": CWD, "model": "gpt-x", "approval_policy": "never", "summary": "auto"})
        add("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": exchange.prompt}]})
        add("event_msg", {"type": "user_message", "message": exchange.prompt, "kind": "plain"})
        for reply in exchange.replies:
            if reply.reasoning:
                add("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": reply.reasoning}]})
            if reply.text or not reply.calls:
                add("response_item", {"type": "message", "role": "assistant",
                                      "content": [{"type": "output_text", "text": reply.text}]})
            for c in reply.calls:
                add("response_item", {"type": "function_call", "name": c.name, "arguments": json.dumps(c.arguments),
                                      "call_id": c.id})
            if reply.usage:
                prompt, cached, output = reply.usage
                last = {"input_tokens": prompt, "cached_input_tokens": cached, "output_tokens": output,
                        "reasoning_output_tokens": 0, "total_tokens": prompt + output}
                total = {k: total[k] + last[k] for k in total}
                add("event_msg", {"type": "token_count", "info": {"total_token_usage": dict(total),
                                                                  "last_token_usage": last}})
            for c in reply.calls:
                if c.output is not None:
                    add("response_item", {"type": "function_call_output", "call_id": c.id, "output": c.output})

    def prompt(text, previous):
        return {"timestamp": stamp(0), "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}}

    write(home, f".codex/sessions/2026/01/01/rollout-2026-01-01T00-00-00-{SESSION_ID}.jsonl",
          jsonl(records, session.noise, prompt))


def write_kimi(home: str, session: Generated) -> None:
    """The context log (`sessions/<md5(work dir)>/<id>.jsonl`: OpenAI-style messages and the
    `_usage` token counts), with kimi.json naming the work directory."""
    records: list = [{"role": "_system_prompt", "content": "You are Kimi."}]
    for exchange in session.exchanges:
        records.append({"role": "user", "content": exchange.prompt})
        for reply in exchange.replies:
            content = [{"type": "think", "think": reply.reasoning}] if reply.reasoning else []
            content.append({"type": "text", "text": reply.text})
            message = {"role": "assistant", "content": content}
            if reply.calls:
                message["tool_calls"] = [{"type": "function", "id": c.id,
                                          "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                                         for c in reply.calls]
            if reply.usage:
                records.append({"role": "_usage", "token_count": reply.usage[0] + reply.usage[2]})
            records.append(message)
            for c in reply.calls:
                if c.output is not None:
                    records.append({"role": "tool", "content": [{"type": "text", "text": c.output}],
                                    "tool_call_id": c.id})
    digest = hashlib.md5(CWD.encode()).hexdigest()
    write(home, ".kimi/kimi.json", json.dumps({"work_dirs": [{"path": CWD, "kaos": "local"}]}).encode())
    write(home, f".kimi/sessions/{digest}/{SESSION_ID}.jsonl",
          jsonl(records, session.noise, lambda text, previous: {"role": "user", "content": text}))


# gptme: a conversation folder ---------------------------------------------------------------------
def write_gptme(home: str, session: Generated) -> None:
    """A gptme conversation in the `tool` format: each reply's calls as `@name(id): {json}` lines
    after its text, their results `system` messages naming the call, a failure's return code."""
    records: list = [{"role": "system", "content": "You are gptme.", "timestamp": stamp(0), "pinned": True,
                      "hide": True}]
    for exchange in session.exchanges:
        records.append({"role": "user", "content": exchange.prompt, "timestamp": stamp(len(records))})
        for reply in exchange.replies:
            lines = [reply.text] + [f"@{c.name}({c.id}): {json.dumps(c.arguments)}" for c in reply.calls]
            meta = {"model": "local/x"}
            if reply.usage:
                prompt, cached, output = reply.usage
                meta["usage"] = {"input_tokens": prompt - cached, "cache_read_tokens": cached, "output_tokens": output}
            records.append({"role": "assistant", "content": "\n".join(lines), "timestamp": stamp(len(records)),
                            "metadata": meta})
            records += [{"role": "system", "content": c.output + ("\n\nReturn code: 1\n" if c.error else ""),
                         "timestamp": stamp(len(records)), "call_id": c.id, "metadata": {"tool": c.name}}
                        for c in reply.calls if c.output is not None]
    folder = ".local/share/gptme/logs/2026-01-01-generated"
    write(home, f"{folder}/config.toml", f'[chat]\nmodel = "local/x"\ntool_format = "tool"\nworkspace = "{CWD}"\n'.encode())
    write(home, f"{folder}/conversation.jsonl", jsonl(records, session.noise, lambda text, previous: {
        "role": "user", "content": text, "timestamp": stamp(0)}))


# OpenHands: a file per event ----------------------------------------------------------------------
def write_openhands(home: str, session: Generated) -> None:
    """A conversation folder: base_state.json with one token usage per model call, and one event
    file per event (the noise as event files of its own)."""
    folder = os.path.join(home, ".openhands", "conversations", SESSION_ID.replace("-", ""))
    events: list = [{"kind": "SystemPromptEvent", "source": "agent", "system_prompt": {"type": "text", "text": "sys"}}]
    usages: list = []
    for e, exchange in enumerate(session.exchanges):
        events.append({"kind": "MessageEvent", "source": "user",
                       "llm_message": {"role": "user", "content": [{"type": "text", "text": exchange.prompt}]}})
        for n, reply in enumerate(exchange.replies):
            response = f"resp-{e}-{n}"
            if reply.usage:
                prompt, cached, output = reply.usage
                usages.append({"model": "openai/x", "prompt_tokens": prompt, "completion_tokens": output,
                               "cache_read_tokens": cached, "response_id": response})
            thought = [{"type": "text", "text": reply.text}]
            if not reply.calls:
                events.append({"kind": "MessageEvent", "source": "agent", "llm_response_id": response,
                               "llm_message": {"role": "assistant", "content": thought,
                                               "reasoning_content": reply.reasoning or None}})
            for i, c in enumerate(reply.calls):
                events.append({"kind": "ActionEvent", "source": "agent", "llm_response_id": response,
                               "thought": thought if i == 0 else [], "tool_name": c.name, "tool_call_id": c.id,
                               "reasoning_content": reply.reasoning if i == 0 and reply.reasoning else None,
                               "tool_call": {"id": c.id, "name": c.name, "arguments": json.dumps(c.arguments)}})
            events += [{"kind": "ObservationEvent", "source": "environment", "tool_name": c.name, "tool_call_id": c.id,
                        "observation": {"content": [{"type": "text", "text": c.output}], "is_error": c.error}}
                       for c in reply.calls if c.output is not None]
    raw = [json.dumps(event) for event in events]
    for item in sorted(session.noise, key=lambda n: n.position):
        where = 1 + item.position % len(raw)
        if item.kind == "wrong_types":
            raw.insert(where, json.dumps({"kind": "MessageEvent", "source": "user", item.key: item.value,
                                          "llm_message": {"role": "user", "content": [{"type": "text", "text": "noise"}]}}))
        else:
            raw.insert(where, {"garbage": '{"kind": "MessageEvent", oops', "not_object": json.dumps([1, "two", None]),
                               "unknown": json.dumps({"kind": "FromTheFuture", "payload": {"x": 1}}),
                               "cut_last_line": '{"kind": "MessageEvent", "source": "us'}[item.kind])
    for number, text in enumerate(raw):
        event_id = f"00000000-0000-4000-8000-{number:012d}"
        write(folder, f"events/event-{number:05d}-{event_id}.json", text.encode())
    state = {"id": SESSION_ID, "workspace": {"working_dir": CWD, "kind": "LocalWorkspace"},
             "agent": {"llm": {"model": "openai/x"}}, "execution_status": "finished",
             "stats": {"usage_to_metrics": {"agent": {"token_usages": usages}}}}
    write(folder, "base_state.json", json.dumps(state).encode())


# whole-file JSON and SQLite stores ------------------------------------------------------------------
def write_continue(home: str, session: Generated) -> None:
    """A Continue session document: history items, reasoning as `thinking` messages, the calls'
    results in each reply's toolCallStates; the noise goes into the history."""
    history: list = []
    for exchange in session.exchanges:
        history.append({"message": {"role": "user", "content": exchange.prompt}, "contextItems": []})
        for reply in exchange.replies:
            if reply.reasoning:
                history.append({"message": {"role": "thinking", "content": reply.reasoning}, "contextItems": []})
            message = {"role": "assistant", "content": reply.text}
            if reply.calls:
                message["toolCalls"] = [{"id": c.id, "type": "function",
                                         "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                                        for c in reply.calls]
            if reply.usage:
                prompt, cached, output = reply.usage
                message["usage"] = {"prompt_tokens": prompt, "completion_tokens": output,
                                    "prompt_tokens_details": {"cached_tokens": cached}, "model": "x"}
            states = [{"toolCallId": c.id, "status": "generated" if c.output is None else
                       "errored" if c.error else "done", "parsedArgs": c.arguments,
                       "output": [] if c.output is None else [{"content": c.output, "name": "Tool Result"}]}
                      for c in reply.calls]
            history.append({"message": message, "contextItems": [], "toolCallStates": states})
    for item in session.noise:
        where = item.position % (len(history) + 1)
        if item.kind == "wrong_types":
            history.insert(where, {"message": {"role": "user", "content": "noise"}, item.key: item.value})
        elif item.kind in ("unknown", "not_object"):
            history.insert(where, {"message": {"role": "oracle", "content": item.value}} if item.kind == "unknown"
                           else [1, "two"])
    doc = {"sessionId": SESSION_ID, "title": "generated", "workspaceDirectory": CWD, "history": history}
    write(home, f".continue/sessions/{SESSION_ID}.json", json.dumps(doc).encode())


def write_mswea(home: str, session: Generated) -> None:
    """A mini-swe-agent trajectory (format 2): OpenAI-style messages with tool calls."""
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    for exchange in session.exchanges:
        messages.append({"role": "user", "content": exchange.prompt})
        for reply in exchange.replies:
            message = {"role": "assistant", "content": reply.text}
            if reply.calls:
                message["tool_calls"] = [{"id": c.id, "type": "function",
                                          "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                                         for c in reply.calls]
            if reply.usage:
                prompt, cached, output = reply.usage
                message["extra"] = {"response": {"usage": {"prompt_tokens": prompt, "completion_tokens": output,
                                                           "prompt_tokens_details": {"cached_tokens": cached}}}}
            messages.append(message)
            messages += [{"role": "tool", "tool_call_id": c.id, "content": c.output}
                         for c in reply.calls if c.output is not None]
    for item in session.noise:
        if item.kind in ("unknown", "wrong_types"):
            messages.insert(1 + item.position % len(messages),
                            {"role": "oracle", "content": item.value} if item.kind == "unknown"
                            else {"role": "user", "content": "noise", item.key: item.value})
    doc = {"trajectory_format": "mini-swe-agent-1.1", "messages": messages,
           "info": {"mini_version": "2.4.6", "exit_status": "Submitted", "config": {"model": {"model_name": "gpt-x"}}}}
    write(home, ".config/mini-swe-agent/trajectories/generated.traj.json", json.dumps(doc).encode())


_TEMPLATES: dict = {}


def emptied_copy(home: str, agent: str, database: str, tables: list[str], keep: str) -> sqlite3.Connection:
    """The agent's live database, its rows deleted but the first of table `keep` (whose columns
    then need no guessing), copied into `home`. The emptied database is made once per agent."""
    if agent not in _TEMPLATES:
        folder = tempfile.mkdtemp(prefix=f"template-{agent}-")
        atexit.register(shutil.rmtree, folder, True)
        template = os.path.join(folder, os.path.basename(database))
        copy_database(os.path.join(live_store(agent), database), template)
        settle_sqlite(template)
        connection = sqlite3.connect(template)
        for table in tables:
            connection.execute(f"DELETE FROM {table}")
        connection.execute(f"DELETE FROM {keep} WHERE rowid != (SELECT min(rowid) FROM {keep})")
        connection.commit()
        connection.execute("VACUUM")
        connection.close()
        _TEMPLATES[agent] = template
    path = os.path.join(home, database)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shutil.copy2(_TEMPLATES[agent], path)
    return sqlite3.connect(path)


def write_opencode(home: str, session: Generated, agent: str = "opencode",
                   database: str = ".local/share/opencode/opencode.db") -> None:
    db = emptied_copy(home, agent, database, ["message", "part"], "session")
    db.execute("UPDATE session SET id = ?, parent_id = NULL, directory = ?", (SESSION_ID, CWD))
    clock = iter(range(10**6))

    def add(table: str, row_id: str, data: dict, message_id: str = "") -> None:
        when = int(T0 * 1000) + next(clock)
        if table == "message":
            db.execute("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?)",
                       (row_id, SESSION_ID, when, when, json.dumps(data)))
        else:
            db.execute("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
                       "VALUES (?,?,?,?,?,?)", (row_id, message_id, SESSION_ID, when, when,
                                                data if isinstance(data, str) else json.dumps(data)))

    for e, exchange in enumerate(session.exchanges):
        user = f"msg_{e:03d}_u"
        add("message", user, {"role": "user", "time": {"created": 0}})
        add("part", f"prt_{e:03d}_u", {"type": "text", "text": exchange.prompt}, user)
        for n, reply in enumerate(exchange.replies):
            mid = f"msg_{e:03d}_{n}"
            data = {"role": "assistant", "parentID": user, "modelID": "m", "providerID": "p", "path": {"cwd": CWD}}
            if reply.usage:
                prompt, cached, output = reply.usage
                data["tokens"] = {"input": prompt - cached, "output": output, "reasoning": 0,
                                  "cache": {"read": cached, "write": 0}}
            add("message", mid, data)
            if reply.reasoning:
                add("part", f"{mid}_r", {"type": "reasoning", "text": reply.reasoning}, mid)
            add("part", f"{mid}_t", {"type": "text", "text": reply.text}, mid)
            for k, c in enumerate(reply.calls):
                state = ({"status": "running", "input": c.arguments} if c.output is None else
                         {"status": "error" if c.error else "completed", "input": c.arguments,
                          ("error" if c.error else "output"): c.output})
                add("part", f"{mid}_c{k}", {"type": "tool", "tool": c.name, "callID": c.id, "state": state}, mid)
    for k, item in enumerate(session.noise):
        mid = f"msg_{item.position % 10:03d}_u"
        if item.kind == "garbage":
            add("part", f"prt_zz{k}", "{not json", mid)
        elif item.kind in ("unknown", "not_object"):
            add("part", f"prt_zz{k}", {"type": "from-the-future"} if item.kind == "unknown" else [1, 2], mid)
        elif item.kind == "wrong_types":
            add("part", f"prt_zz{k}", {"type": "text", "text": "noise", item.key: item.value}, mid)
    db.commit()
    db.close()


def write_kilo(home: str, session: Generated) -> None:
    write_opencode(home, session, "kilo", ".local/share/kilo/kilo.db")


def write_hermes(home: str, session: Generated) -> None:
    db = emptied_copy(home, "hermes", ".hermes/state.db", ["messages"], "sessions")
    db.execute("UPDATE sessions SET id = ?, parent_session_id = NULL, cwd = ?", (SESSION_ID, CWD))
    usage = [r.usage for e in session.exchanges for r in e.replies if r.usage]
    db.execute("UPDATE sessions SET input_tokens = ?, cache_read_tokens = ?, output_tokens = ?",
               (sum(u[0] - u[1] for u in usage), sum(u[1] for u in usage), sum(u[2] for u in usage)))
    clock = iter(range(10**6))

    def add(role: str, content, **columns) -> None:
        names = ["session_id", "role", "content", "timestamp", *columns]
        db.execute(f"INSERT INTO messages ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                   (SESSION_ID, role, content, T0 + next(clock), *columns.values()))

    for exchange in session.exchanges:
        add("user", exchange.prompt)
        for reply in exchange.replies:
            calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                     for c in reply.calls]
            add("assistant", reply.text, tool_calls=json.dumps(calls) if calls else None,
                reasoning=reply.reasoning or None)
            for c in reply.calls:
                if c.output is not None:
                    add("tool", json.dumps({"output": c.output, "exit_code": 1 if c.error else 0}),
                        tool_call_id=c.id, tool_name=c.name)
    for item in session.noise:
        if item.kind == "unknown":
            add("oracle", json.dumps(item.value))
        elif item.kind == "wrong_types":
            add("user", json.dumps(item.value) if isinstance(item.value, (dict, list)) else item.value)
    db.commit()
    db.close()


def anthropic_messages(session: Generated, with_metrics) -> list[dict]:
    """The session as Anthropic messages (Cline, Roo), `with_metrics(reply)` adding each
    assistant message's token fields."""
    messages = []
    for exchange in session.exchanges:
        messages.append({"role": "user", "content": [{"type": "text", "text": f"<task>{exchange.prompt}</task>"}]})
        for reply in exchange.replies:
            messages.append({"role": "assistant", "content": anthropic_blocks(reply), **with_metrics(reply)})
            if anthropic_results(reply):
                messages.append({"role": "user", "content": anthropic_results(reply)})
    for item in session.noise:
        where = 1 + item.position % len(messages)
        if item.kind == "wrong_types":
            messages.insert(where, {"role": "user", "content": [{"type": "text", "text": "noise"}], item.key: item.value})
        elif item.kind == "unknown":
            messages.insert(where, {"role": "oracle", "content": item.value})
    return messages


def write_cline(home: str, session: Generated) -> None:
    """A Cline CLI session: the manifest and `<id>.messages.json`."""
    def with_metrics(reply):
        if not reply.usage:
            return {}
        prompt, cached, output = reply.usage
        return {"metrics": {"inputTokens": prompt, "cacheReadTokens": cached, "cacheWriteTokens": 0,
                            "outputTokens": output}}

    messages = [dict(m, id=f"m{n}", ts=int(T0 * 1000) + n) for n, m in enumerate(anthropic_messages(session, with_metrics))]
    folder = f".cline/data/sessions/{SESSION_ID}"
    manifest = {"version": 1, "session_id": SESSION_ID, "source": "cli", "started_at": stamp(0), "cwd": CWD,
                "model": "cline-x", "prompt": session.exchanges[0].prompt}
    write(home, f"{folder}/{SESSION_ID}.json", json.dumps(manifest).encode())
    write(home, f"{folder}/{SESSION_ID}.messages.json",
          json.dumps({"version": 1, "sessionId": SESSION_ID, "messages": messages}).encode())


def write_roo(home: str, session: Generated) -> None:
    """A Roo Code task folder: the API history (with `metrics.tokens`) and history_item.json."""
    def with_metrics(reply):
        if not reply.usage:
            return {}
        prompt, cached, output = reply.usage
        return {"metrics": {"tokens": {"prompt": prompt, "cached": cached, "completion": output}}}

    task = "1790000000000"
    folder = f".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/{task}"
    item = {"id": task, "ts": int(T0 * 1000), "task": session.exchanges[0].prompt, "workspace": CWD}
    write(home, f"{folder}/history_item.json", json.dumps(item).encode())
    write(home, f"{folder}/api_conversation_history.json",
          json.dumps(anthropic_messages(session, with_metrics)).encode())


def write_goose(home: str, session: Generated) -> None:
    """Goose's sessions.db (schema from tests/test_agent_goose.py): one session, its messages
    as Goose content lists (text, thinking, toolRequest, toolResponse)."""
    import test_agent_goose

    path = os.path.join(home, ".local/share/goose/sessions/sessions.db")
    os.makedirs(os.path.dirname(path))
    db = sqlite3.connect(path)
    db.executescript(test_agent_goose.SCHEMA_V5)
    db.execute("INSERT INTO sessions (id, name, session_type, working_dir, created_at, model_config_json)"
               " VALUES (?,?,?,?,?,?)", (SESSION_ID, "generated", "user", CWD, "2026-01-01 10:00:00",
                                         json.dumps({"model_name": "goose-x"})))
    clock = iter(range(10**6))

    def add(role: str, content, metadata=None) -> None:
        n = next(clock)
        db.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json, message_id)"
                   " VALUES (?,?,?,?,?,?)", (SESSION_ID, role, content if isinstance(content, str) else json.dumps(content),
                                             int(T0) + n, json.dumps(metadata) if metadata else None, f"g{n}"))

    for exchange in session.exchanges:
        add("user", [{"type": "text", "text": exchange.prompt}])
        for reply in exchange.replies:
            content = [{"type": "thinking", "thinking": reply.reasoning, "signature": ""}] if reply.reasoning else []
            content += [{"type": "text", "text": reply.text}] if reply.text or not reply.calls else []
            content += [test_agent_goose.request(c.id, c.name, c.arguments) for c in reply.calls]
            metadata = None
            if reply.usage:
                prompt, cached, output = reply.usage
                metadata = {"usage": {"inputTokens": prompt, "cacheReadTokens": cached, "outputTokens": output}}
            add("assistant", content, metadata)
            results = [test_agent_goose.response(c.id, error=c.output) if c.error else
                       test_agent_goose.response(c.id, [{"type": "text", "text": c.output}])
                       for c in reply.calls if c.output is not None]
            if results:
                add("user", results)
    for item in session.noise:
        if item.kind == "garbage":
            add("user", "{not json")
        elif item.kind == "unknown":
            add("oracle", [{"type": "from-the-future"}])
        elif item.kind == "wrong_types":
            add("user", [{"type": "text", "text": "noise", item.key: item.value}])
    db.commit()
    db.close()


def write_crush(home: str, session: Generated) -> None:
    """Crush's `.crush/crush.db` in the project (schema from tests/test_agent_crush.py); the
    project is found from $PWD, which the caller sets to CRUSH_PROJECT under the root."""
    import test_agent_crush as crush

    path = os.path.join(os.path.dirname(home), "proj-crush", ".crush", "crush.db")
    os.makedirs(os.path.dirname(path))
    db = sqlite3.connect(path)
    db.executescript(crush.INITIAL_MIGRATION + crush.LATER_MIGRATIONS)
    usage = [r.usage for e in session.exchanges for r in e.replies if r.usage]
    db.execute("INSERT INTO sessions (id, parent_session_id, title, prompt_tokens, completion_tokens, cost, created_at,"
               " updated_at) VALUES (?,?,?,?,?,?,?,?)",
               (SESSION_ID, None, "generated", sum(u[0] for u in usage), sum(u[2] for u in usage), 0.0, int(T0), int(T0)))
    clock = iter(range(10**6))

    def add(role: str, parts, model=None) -> None:
        n = next(clock)
        db.execute("INSERT INTO messages (id, session_id, role, parts, model, provider, created_at, updated_at)"
                   " VALUES (?,?,?,?,?,?,?,?)", (f"m{n:05d}", SESSION_ID, role,
                                                 parts if isinstance(parts, str) else json.dumps(parts),
                                                 model, "p" if model else None, int(T0) + n, int(T0) + n))

    for exchange in session.exchanges:
        add("user", [crush.part("text", text=exchange.prompt), crush.finish("stop", int(T0))])
        for reply in exchange.replies:
            parts = [crush.part("reasoning", thinking=reply.reasoning, signature="")] if reply.reasoning else []
            parts += [crush.part("text", text=reply.text)] if reply.text or not reply.calls else []
            parts += [crush.call(c.id, c.name, c.arguments) for c in reply.calls]
            add("assistant", parts + [crush.finish("tool_use" if reply.calls else "end_turn", int(T0))], "crush-x")
            results = [crush.result(c.id, c.name, c.output, c.error) for c in reply.calls if c.output is not None]
            if results:
                add("tool", results)
    for item in session.noise:
        if item.kind == "garbage":
            add("user", "{not json")
        elif item.kind == "unknown":
            add("oracle", [crush.part("from-the-future")])
        elif item.kind == "wrong_types":
            add("user", [{"type": "text", "data": {"text": "noise", item.key: item.value}}])
    db.commit()
    db.close()


WRITERS = {"claude": write_claude, "droid": write_droid, "amp": write_amp, "gemini": write_gemini,
           "qwen": write_qwen, "pi": write_pi, "copilot": write_copilot, "codex": write_codex,
           "kimi": write_kimi, "mswea": write_mswea, "opencode": write_opencode, "kilo": write_kilo,
           "hermes": write_hermes, "cline": write_cline, "roo": write_roo, "goose": write_goose,
           "crush": write_crush, "omp": write_omp, "openhands": write_openhands, "continue": write_continue,
           "gptme": write_gptme}
