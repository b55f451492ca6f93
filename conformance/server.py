"""A scripted model server for the conformance runs (stdlib only, binds 127.0.0.1 only).

It speaks enough of four model APIs for a real agent CLI to run a whole session against it:
Anthropic Messages (`/v1/messages`), OpenAI Chat Completions (`/chat/completions`), OpenAI
Responses (`/responses`) and Gemini (`:generateContent`, `:streamGenerateContent`), streamed
(SSE) or not, plus what agents call beside the model (model lists, token counts).

The model is a script, not a model. A request whose conversation holds a user prompt
`SCENARIO <id> in <dir>: ...` gets the next step of that scenario, counted from the assistant
turns with tool calls after the prompt (so continued sessions and retries land on the right
step, without any state): write a note with the shell, read it back (the agent's read tool, or
`cat` through the shell when it has none), a command that fails, one with a long output, two
calls in one turn (when the agent makes parallel calls), and a final answer carrying
`SCENARIO-DONE <id>`. Each tool call uses the tool the request offers, with the arguments its own
schema names. Any other request (titles, summaries, routing, quota checks) gets a short text, or
a JSON object shaped by the schema it asks for.

Everything served is recorded in `Script.plan` (scenario id -> the steps served: text,
reasoning, tool calls with their arguments) and `Script.served` (token usage per request): the
checker compares the agent's sessions with that, so expectations never drift from what the
server said.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROMPT_RE = re.compile(r"SCENARIO (\S+) in (/\S+?):")
SHELL_TOOLS = ("Bash", "bash", "run_shell_command", "exec_command", "shell", "Shell", "terminal",
               "run_commands", "execute_command", "run_terminal_cmd", "shell_command")
READ_TOOLS = ("Read", "read", "read_file", "view", "ReadFile", "read_files", "View")
COMMAND_KEYS = ("command", "cmd", "commands", "script")
PATH_KEYS = ("file_path", "filePath", "filepath", "path", "absolute_path", "filename", "file")
# per-request token usage the server reports: prompt (cache reads included), cache reads, output
PROMPT_TOKENS, CACHED_TOKENS, OUTPUT_TOKENS = 1000, 100, 20
AUX_TEXT = "Conformance scenario"


def prompt_text(sid: str, directory: str) -> str:
    return (f"SCENARIO {sid} in {directory}: run a shell command that writes hello-{sid} into note.txt, "
            "then read note.txt back, then follow the scripted steps, and tell me what note.txt says.")


# the script ----------------------------------------------------------------------------------------
@dataclass
class Call:
    id: str
    name: str
    arguments: dict
    kind: str            # write | read | fail | long | parallel | finish
    expect: str = ""     # text the tool's result must hold


@dataclass
class Reply:
    text: str = ""
    reasoning: str = ""
    calls: list = field(default_factory=list)
    json_text: str = ""  # structured output requested by an auxiliary call


@dataclass
class Message:
    role: str            # user | assistant | tool
    text: str = ""
    calls: int = 0


@dataclass
class Request:
    """What any of the four APIs asked, in one shape."""
    api: str
    model: str
    messages: list
    tools: dict          # name -> JSON schema of its arguments
    stream: bool
    wants_reasoning: bool
    schema: dict | None = None   # a structured (JSON) answer was requested


class Script:
    """The scenario: which reply a request gets, and a record of every reply served."""

    def __init__(self, parallel: bool = True, finish_command: str | None = None):
        self.parallel = parallel
        self.finish_command = finish_command
        self.plan: dict = {}      # sid -> {"dir", "steps": {index: {...}}}
        self.served: list = []    # one entry per model reply: {"sid", "step", "usage"}
        self.lock = threading.Lock()

    def steps(self) -> list[str]:
        kinds = ["write", "read", "fail", "long"]
        if self.parallel:
            kinds.append("parallel")
        return kinds + ["final"]

    def reply(self, request: Request) -> Reply:
        found = scenario_of(request.messages)
        if found is None or not request.tools:
            return self._record(None, None, auxiliary(request))
        sid, directory, done = found
        kinds = self.steps()
        index = min(done, len(kinds) - 1)
        reply = self._step(sid, directory, kinds[index], index, request)
        with self.lock:
            entry = self.plan.setdefault(sid, {"dir": directory, "steps": {}})
            entry["steps"][index] = {"kind": kinds[index], "text": reply.text,
                                     "reasoning": reply.reasoning, "completion": OUTPUT_TOKENS,
                                     "calls": [vars(c) for c in reply.calls]}
        return self._record(sid, index, reply)

    def _record(self, sid, index, reply: Reply) -> Reply:
        with self.lock:
            self.served.append({"sid": sid, "step": index, "prompt": PROMPT_TOKENS,
                                "cached": CACHED_TOKENS, "completion": OUTPUT_TOKENS})
        return reply

    def _step(self, sid: str, directory: str, kind: str, index: int, request: Request) -> Reply:
        reasoning = f"THINK-{index}-{sid}: plan the {kind} step." if request.wants_reasoning else ""
        shell = pick_tool(request.tools, SHELL_TOOLS, COMMAND_KEYS)

        def run(command: str, purpose: str, call_kind: str, n: int = 0, expect: str = "") -> Call:
            name = shell or ""
            return Call(call_id(sid, index, n, request.api), name,
                        shell_arguments(request.tools.get(name, {}), command, purpose), call_kind, expect)

        if kind == "write":
            return Reply(f"I'll create note.txt for scenario {sid} with a shell command.", reasoning,
                         [run(f"echo hello-{sid} > note.txt && ls", f"Write hello-{sid} into note.txt", "write",
                              expect="note.txt")])
        if kind == "read":
            reader = pick_tool(request.tools, READ_TOOLS)   # by name: other tools take paths too
            path = f"{directory}/note.txt"
            call = (Call(call_id(sid, index, 0, request.api), reader,
                         read_arguments(request.tools[reader], path), "read", f"hello-{sid}")
                    if reader else run("cat note.txt", "Read note.txt", "read", expect=f"hello-{sid}"))
            return Reply("Now I'll read note.txt back to verify its content.", reasoning, [call])
        if kind == "fail":
            return Reply("Next, a command that is expected to fail.", reasoning,
                         [run(f"ls missing-{sid}", "List a directory that does not exist", "fail")])
        if kind == "long":
            return Reply("Now a command with a long output.", reasoning,
                         [run("seq 1 3000", "Print three thousand lines", "long")])
        if kind == "parallel":
            return Reply("Two commands at once.", reasoning,
                         [run(f"echo par-a-{sid}", "Print the first marker", "parallel", 0, f"par-a-{sid}"),
                          run(f"echo par-b-{sid}", "Print the second marker", "parallel", 1, f"par-b-{sid}")])
        final = f"SCENARIO-DONE {sid}: note.txt in {directory} contains \"hello-{sid}\"."
        if self.finish_command:   # agents that end a task through their shell tool
            return Reply(final, reasoning, [run(self.finish_command, "Finish the task", "finish")])
        return Reply(final, reasoning)


def scenario_of(messages: list) -> tuple[str, str, int] | None:
    """(id, dir, assistant turns with tool calls since) for the last scenario prompt."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.role != "user":
            continue
        match = PROMPT_RE.search(message.text)
        if match:
            done = sum(1 for m in messages[position + 1:] if m.role == "assistant" and m.calls)
            return match.group(1), match.group(2), done
    return None


def call_id(sid: str, index: int, n: int, api: str) -> str:
    digest = hashlib.sha1(f"{sid}/{index}/{n}".encode()).hexdigest()[:20]
    return f"toolu_{digest}" if api == "anthropic" else f"call_{digest}"


def pick_tool(tools: dict, names: tuple, keys: tuple = ()) -> str | None:
    """The first of `names` the request offers (also as `_<name>`: oh-my-pi prefixes its tools
    so); else any tool whose schema has one of `keys`."""
    for name in names:
        for offered in (name, "_" + name):
            if offered in tools:
                return offered
    for name, schema in tools.items():
        if any(key in (schema.get("properties") or {}) for key in keys):
            return name
    return None


def shell_arguments(schema: dict, command: str, purpose: str) -> dict:
    props = schema.get("properties") or {}
    arguments: dict = {}
    for key in COMMAND_KEYS:
        if key in props:
            if props[key].get("type") == "array":
                arguments[key] = [command] if key == "commands" else ["bash", "-lc", command]
            else:
                arguments[key] = command
            break
    else:
        arguments["command"] = command
    if "description" in props:
        arguments["description"] = purpose
    return fill_required(schema, arguments)


def read_arguments(schema: dict, path: str) -> dict:
    props = schema.get("properties") or {}
    arguments: dict = {}
    for key in PATH_KEYS:
        if key in props:
            arguments[key] = path
            break
    else:
        if "files" in props:
            items = props["files"].get("items") or {}
            arguments["files"] = [{"path": path}] if items.get("type") == "object" else [path]
        elif "command" in props:   # a view/edit tool with sub-commands
            arguments.update(command="view", path=path)
    return fill_required(schema, arguments)


def fill_required(schema: dict, arguments: dict) -> dict:
    """Values for the required properties the scenario does not name (their default, their
    first allowed value, or an empty value of their type)."""
    props = schema.get("properties") or {}
    for key in schema.get("required") or []:
        if key not in arguments and key in props:
            arguments[key] = example_value(props[key])
    return arguments


def example_value(schema: dict):
    if not isinstance(schema, dict):
        return ""
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for combined in ("anyOf", "oneOf"):
        if schema.get(combined):
            return example_value(schema[combined][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    kind = (kind or "string").lower()
    if kind == "object":
        return fill_required(schema, {})
    return {"array": [], "boolean": False, "integer": 0, "number": 0, "null": None}.get(kind, AUX_TEXT)


def auxiliary(request: Request) -> Reply:
    if request.schema is not None:
        return Reply(json_text=json.dumps(example_value({"type": "object", **request.schema})
                                          if request.schema else {"title": AUX_TEXT}))
    return Reply(AUX_TEXT)


# request parsing ------------------------------------------------------------------------------------
def text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(part) for part in content)
    if isinstance(content, dict):
        if content.get("type") in ("tool_result", "function_call_output"):
            return ""
        return text_of(content.get("text") or content.get("content") or "")
    return ""


def parse_anthropic(body: dict) -> Request:
    messages = []
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        calls = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use")
        texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        messages.append(Message(message.get("role", "user"), "\n".join(texts), calls))
    tools = {t["name"]: t.get("input_schema") or {} for t in body.get("tools") or [] if t.get("name")}
    output = (body.get("output_config") or {}).get("format") or body.get("output_format") or {}
    schema = output.get("schema") if output.get("type") == "json_schema" else None
    return Request("anthropic", body.get("model", ""), messages, tools, bool(body.get("stream")),
                   (body.get("thinking") or {}).get("type") in ("enabled", "adaptive"), schema)


def parse_chat(body: dict) -> Request:
    messages = []
    for message in body.get("messages") or []:
        role = message.get("role", "user")
        role = "assistant" if role == "assistant" else "tool" if role in ("tool", "function") else \
            "user" if role == "user" else "system"
        messages.append(Message(role, text_of(message.get("content")), len(message.get("tool_calls") or [])))
    tools = {}
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        if function.get("name"):
            tools[function["name"]] = function.get("parameters") or {}
    fmt = body.get("response_format") or {}
    schema = None
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema") or {}
    elif fmt.get("type") == "json_object":
        schema = {}
    wants = bool(body.get("reasoning_effort") or body.get("thinking") or body.get("reasoning"))
    return Request("chat", body.get("model", ""), messages, tools, bool(body.get("stream")), wants, schema)


def parse_responses(body: dict) -> Request:
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    messages: list = []
    for item in items or []:
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role", "user")
            if role == "assistant":
                messages.append(Message("assistant", text_of(item.get("content"))))
            else:
                messages.append(Message("user" if role == "user" else "system", text_of(item.get("content"))))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            if not messages or messages[-1].role != "assistant":
                messages.append(Message("assistant"))
            messages[-1].calls += 1
        elif kind.endswith("_output"):
            messages.append(Message("tool"))
        elif kind == "reasoning" and (not messages or messages[-1].role != "assistant"):
            messages.append(Message("assistant"))
    tools = {t["name"]: t.get("parameters") or {} for t in body.get("tools") or []
             if t.get("type") == "function" and t.get("name")}
    fmt = (body.get("text") or {}).get("format") or {}
    schema = fmt.get("schema") if fmt.get("type") == "json_schema" else None
    return Request("responses", body.get("model", ""), messages, tools, bool(body.get("stream")),
                   bool(body.get("reasoning")), schema)


def parse_gemini(body: dict, model: str, stream: bool) -> Request:
    messages = []
    for content in body.get("contents") or []:
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        calls = sum(1 for p in parts if "functionCall" in p)
        text = "\n".join(p.get("text", "") for p in parts if "text" in p and not p.get("thought"))
        role = "assistant" if content.get("role") == "model" else "user"
        if role == "user" and any("functionResponse" in p for p in parts) and not text:
            role = "tool"
        messages.append(Message(role, text, calls))
    tools = {}
    for tool in body.get("tools") or []:
        for decl in tool.get("functionDeclarations") or []:
            tools[decl["name"]] = decl.get("parametersJsonSchema") or lower_types(decl.get("parameters") or {})
    config = body.get("generationConfig") or {}
    schema = None
    if config.get("responseMimeType") == "application/json":
        schema = config.get("responseJsonSchema") or lower_types(config.get("responseSchema") or {})
    wants = bool((config.get("thinkingConfig") or {}).get("includeThoughts"))
    return Request("gemini", model, messages, tools, stream, wants, schema)


def lower_types(schema):
    """Gemini's OpenAPI-style schemas spell types in capitals (`STRING`)."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else lower_types(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [lower_types(v) for v in schema]
    return schema


# responses ------------------------------------------------------------------------------------------
def anthropic_message(reply: Reply, model: str) -> dict:
    content = []
    if reply.reasoning:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": "c2lnbmF0dXJl"})
    if reply.text or reply.json_text:
        content.append({"type": "text", "text": reply.text or reply.json_text})
    for call in reply.calls:
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
    return {"id": new_id("msg_"), "type": "message",
            "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if reply.calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": PROMPT_TOKENS - CACHED_TOKENS, "output_tokens": OUTPUT_TOKENS,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": CACHED_TOKENS}}


def anthropic_events(reply: Reply, model: str):
    message = anthropic_message(reply, model)
    start = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        empty = {"thinking": {"type": "thinking", "thinking": "", "signature": ""},
                 "text": {"type": "text", "text": ""},
                 "tool_use": dict(block, input={})}[kind]
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}
        if kind == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                      {"type": "signature_delta", "signature": block["signature"]}]
        elif kind == "text":
            deltas = [{"type": "text_delta", "text": block["text"]}]
        else:
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": OUTPUT_TOKENS}}
    yield "message_stop", {"type": "message_stop"}


def new_id(prefix: str) -> str:
    """A fresh response id: agents join usage records and streamed pieces by it."""
    return prefix + uuid.uuid4().hex[:24]


def chat_usage() -> dict:
    return {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": OUTPUT_TOKENS,
            "total_tokens": PROMPT_TOKENS + OUTPUT_TOKENS,
            "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS},
            "completion_tokens_details": {"reasoning_tokens": 0}}


def chat_tool_calls(reply: Reply) -> list:
    return [{"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments)}} for c in reply.calls]


def chat_completion(reply: Reply, model: str) -> dict:
    message = {"role": "assistant", "content": reply.text or reply.json_text or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.calls:
        message["tool_calls"] = chat_tool_calls(reply)
    return {"id": new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message,
                                         "finish_reason": "tool_calls" if reply.calls else "stop"}],
            "usage": chat_usage()}


def chat_chunks(reply: Reply, model: str):
    response_id = new_id("chatcmpl-")

    def chunk(delta: dict, finish=None, **more) -> dict:
        return {"id": response_id, "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **more}

    yield None, chunk({"role": "assistant", "content": ""})
    if reply.reasoning:
        yield None, chunk({"reasoning_content": reply.reasoning})
    if reply.text or reply.json_text:
        yield None, chunk({"content": reply.text or reply.json_text})
    for index, call in enumerate(chat_tool_calls(reply)):
        yield None, chunk({"tool_calls": [dict(call, index=index)]})
    yield None, chunk({}, "tool_calls" if reply.calls else "stop", usage=chat_usage())


def responses_output(reply: Reply) -> list:
    output = []
    if reply.reasoning:
        output.append({"type": "reasoning", "id": "rs_conformance", "encrypted_content": None,
                       "summary": [{"type": "summary_text", "text": reply.reasoning}]})
    if reply.text or reply.json_text:
        output.append({"type": "message", "id": "msg_conformance", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": reply.text or reply.json_text,
                                    "annotations": []}]})
    for call in reply.calls:
        output.append({"type": "function_call", "id": "fc_" + call.id[5:], "call_id": call.id,
                       "name": call.name, "arguments": json.dumps(call.arguments), "status": "completed"})
    return output


def responses_object(reply: Reply, model: str, status: str = "completed", response_id: str = "") -> dict:
    return {"id": response_id or new_id("resp_"), "object": "response", "created_at": int(time.time()), "model": model,
            "status": status, "output": responses_output(reply) if status == "completed" else [],
            "usage": {"input_tokens": PROMPT_TOKENS, "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
                      "output_tokens": OUTPUT_TOKENS, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": PROMPT_TOKENS + OUTPUT_TOKENS}}


def responses_events(reply: Reply, model: str):
    response_id = new_id("resp_")
    yield "response.created", {"type": "response.created",
                               "response": responses_object(reply, model, "in_progress", response_id)}
    for index, item in enumerate(responses_output(reply)):
        yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                             "item": item}
        if item["type"] == "reasoning":
            yield "response.reasoning_summary_text.delta", {
                "type": "response.reasoning_summary_text.delta", "item_id": item["id"], "output_index": index,
                "summary_index": 0, "delta": item["summary"][0]["text"]}
        elif item["type"] == "message":
            yield "response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                 "output_index": index, "content_index": 0,
                                                 "delta": item["content"][0]["text"]}
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                            "item": item}
    yield "response.completed", {"type": "response.completed",
                                 "response": responses_object(reply, model, response_id=response_id)}


def gemini_response(reply: Reply, model: str) -> dict:
    parts = []
    if reply.reasoning:
        parts.append({"text": reply.reasoning, "thought": True})
    if reply.text or reply.json_text:
        parts.append({"text": reply.text or reply.json_text})
    for call in reply.calls:
        parts.append({"functionCall": {"name": call.name, "args": call.arguments}})
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": PROMPT_TOKENS, "candidatesTokenCount": OUTPUT_TOKENS,
                              "cachedContentTokenCount": CACHED_TOKENS,
                              "totalTokenCount": PROMPT_TOKENS + OUTPUT_TOKENS},
            "modelVersion": model, "responseId": new_id("")}


def model_list(path: str) -> dict:
    names = ["fake-model", "claude-fake-model", "gemini-2.5-pro", "gpt-5-codex"]
    return {"object": "list", "has_more": False,
            "data": [{"id": n, "object": "model", "type": "model", "display_name": n, "owned_by": "conformance",
                      "created": 0, "created_at": "2026-01-01T00:00:00Z"} for n in names],
            "models": [{"name": f"models/{n}", "displayName": n, "inputTokenLimit": 128000,
                        "outputTokenLimit": 8192,
                        "supportedGenerationMethods": ["generateContent", "countTokens"]} for n in names]}


# HTTP -----------------------------------------------------------------------------------------------
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "ModelServer"

    def log_message(self, *args) -> None:   # the request log file says it all
        pass

    def do_GET(self) -> None:
        self.server.log_request_line("GET", self.path, None)
        path = self.path.split("?", 1)[0]
        if path.rstrip("/").endswith("/models") or path.rstrip("/") == "/models":
            self.send_json(model_list(path))
        else:
            self.send_json({"error": {"message": f"not found: {path}", "type": "not_found_error"}}, 404)

    def do_POST(self) -> None:
        body = self.read_body()
        path = self.path.split("?", 1)[0]
        self.server.log_request_line("POST", self.path, body)
        if body is None:
            self.send_json({"error": {"message": "body is not JSON"}}, 400)
            return
        if path.endswith("/count_tokens"):
            self.send_json({"input_tokens": PROMPT_TOKENS})
        elif path.endswith(":countTokens"):
            self.send_json({"totalTokens": PROMPT_TOKENS})
        elif path.endswith("/messages"):
            self.answer(parse_anthropic(body), anthropic_message, anthropic_events)
        elif path.endswith("/chat/completions"):
            self.answer(parse_chat(body), chat_completion, chat_chunks)
        elif path.endswith("/responses"):
            self.answer(parse_responses(body), responses_object, responses_events)
        elif ":generateContent" in path or ":streamGenerateContent" in path:
            model = path.rsplit("/", 1)[-1].split(":", 1)[0]
            request = parse_gemini(body, model, ":streamGenerateContent" in path)
            self.answer(request, gemini_response, lambda r, m: iter([(None, gemini_response(r, m))]))
        else:
            self.send_json({"error": {"message": f"not found: {path}", "type": "not_found_error"}}, 404)

    def read_body(self) -> dict | None:
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            data = gzip.decompress(data)
        try:
            return json.loads(data or b"{}")
        except ValueError:
            return None

    def answer(self, request: Request, whole, events) -> None:
        reply = self.server.script.reply(request)
        if not request.stream:
            self.send_json(whole(reply, request.model))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events(reply, request.model):
            prefix = f"event: {name}\n" if name else ""
            self.wfile.write(f"{prefix}data: {json.dumps(data)}\n\n".encode())
        if request.api == "chat":
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def send_json(self, data: dict, status: int = 200) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class ModelServer(ThreadingHTTPServer):
    """The server on 127.0.0.1 (an ephemeral port unless one is given); `log` is an open text
    file that receives one JSON line per request, or None."""
    daemon_threads = True

    def __init__(self, script: Script, port: int = 0, log=None):
        super().__init__(("127.0.0.1", port), Handler)
        self.script = script
        self.log = log
        self.log_lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def log_request_line(self, method: str, path: str, body) -> None:
        if self.log is not None:
            with self.log_lock:
                self.log.write(json.dumps({"time": time.time(), "method": method, "path": path,
                                           "body": body}) + "\n")
                self.log.flush()

    def start(self) -> "ModelServer":
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Serve the conformance scenario on 127.0.0.1 until interrupted.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-parallel", action="store_true", help="never two tool calls in one turn")
    parser.add_argument("--finish-command", help="end with this shell command (mini-swe-agent)")
    args = parser.parse_args(argv)
    server = ModelServer(Script(not args.no_parallel, args.finish_command), args.port)
    print(server.url, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
