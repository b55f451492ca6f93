"""The conformance model server (conformance/server.py), driven by a stdlib HTTP client in each
API shape the agents use: Anthropic Messages, OpenAI Chat Completions and Responses, Gemini;
streamed and not. Each answer is parsed the way a client would, and must carry the scenario
step the conversation is at, with the tool the request offers and that tool's own arguments."""

import json
import urllib.error
import urllib.request

import pytest

from conformance.server import AUX_TEXT, ModelServer, Script, prompt_text

DIR = "/tmp/proj"
PROMPT = prompt_text("t-1", DIR)
CLAUDE_TOOLS = [{"name": "Bash", "input_schema": {"type": "object", "required": ["command"],
                                                  "properties": {"command": {"type": "string"},
                                                                 "description": {"type": "string"}}}},
                {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]


@pytest.fixture
def server():
    script = Script()
    running = ModelServer(script).start()
    yield running
    running.stop()


def post(server, path: str, body: dict) -> tuple[str, bytes]:
    request = urllib.request.Request(server.url + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers.get("Content-Type"), response.read()


def sse(data: bytes) -> list[tuple[str | None, dict]]:
    events = []
    for block in data.decode().split("\n\n"):
        name, payload = None, None
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and line[6:] != "[DONE]":
                payload = json.loads(line[6:])
        if payload is not None:
            events.append((name, payload))
    return events


def test_binds_to_the_loopback_only(server):
    assert server.server_address[0] == "127.0.0.1"


def test_anthropic_first_step_is_the_shell_call_with_the_tools_own_schema(server):
    body = {"model": "m", "max_tokens": 100, "tools": CLAUDE_TOOLS, "thinking": {"type": "enabled"},
            "messages": [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]}
    _, data = post(server, "/v1/messages", body)
    message = json.loads(data)
    kinds = [block["type"] for block in message["content"]]
    assert kinds == ["thinking", "text", "tool_use"]
    call = message["content"][2]
    assert call["name"] == "Bash" and call["id"].startswith("toolu_")
    assert call["input"] == {"command": "echo hello-t-1 > note.txt && ls", "description": "Write hello-t-1 into note.txt"}
    assert message["stop_reason"] == "tool_use"
    assert message["usage"]["input_tokens"] + message["usage"]["cache_read_input_tokens"] == 1000
    assert server.script.plan["t-1"]["steps"][0]["calls"][0]["arguments"] == call["input"]


def test_anthropic_stream_reassembles_to_the_read_call(server):
    history = [{"role": "user", "content": PROMPT},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Bash", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]}]
    content_type, data = post(server, "/v1/messages", {"model": "m", "tools": CLAUDE_TOOLS, "stream": True,
                                                       "messages": history})
    assert content_type == "text/event-stream"
    events = sse(data)
    assert [name for name, _ in events][0] == "message_start" and events[-1][0] == "message_stop"
    assert all(name == payload["type"] for name, payload in events)
    partial = "".join(p["delta"].get("partial_json", "") for n, p in events if n == "content_block_delta")
    assert json.loads(partial) == {"file_path": f"{DIR}/note.txt"}
    assert not any(p["content_block"]["type"] == "thinking" for n, p in events if n == "content_block_start")


def chat_history(turns: int) -> list:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": PROMPT}]
    for n in range(turns):
        messages += [{"role": "assistant", "content": None,
                      "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{n}", "content": "ok"}]
    return messages


CHAT_TOOLS = [{"type": "function", "function": {"name": "run_commands", "parameters": {
    "type": "object", "required": ["commands", "mode"],
    "properties": {"commands": {"type": "array", "items": {"type": "string"}},
                   "mode": {"type": "string", "enum": ["sync", "async"]}}}}},
              {"type": "function", "function": {"name": "read_files", "parameters": {
                  "type": "object", "properties": {"files": {"type": "array", "items": {
                      "type": "object", "properties": {"path": {"type": "string"}}}}}}}}]


def test_chat_completions_steps_follow_the_history(server):
    def ask(turns: int, stream: bool = False):
        _, data = post(server, "/v1/chat/completions", {"model": "m", "tools": CHAT_TOOLS, "stream": stream,
                                                        "messages": chat_history(turns)})
        return data

    fail = json.loads(ask(2))["choices"][0]
    assert fail["finish_reason"] == "tool_calls"
    [call] = fail["message"]["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"commands": ["ls missing-t-1"], "mode": "sync"}
    read = json.loads(ask(1))["choices"][0]["message"]["tool_calls"][0]["function"]
    assert json.loads(read["arguments"]) == {"files": [{"path": f"{DIR}/note.txt"}]}
    chunks = [payload for _, payload in sse(ask(4, stream=True))]
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks if c["choices"][0]["delta"].get("tool_calls")]
    assert [json.loads(c["function"]["arguments"])["commands"] for c in calls] == [["echo par-a-t-1"], ["echo par-b-t-1"]]
    assert [c["index"] for c in calls] == [0, 1]
    assert chunks[-1]["usage"]["prompt_tokens"] == 1000 and chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    final = json.loads(ask(5))["choices"][0]
    assert final["finish_reason"] == "stop" and "tool_calls" not in final["message"]
    assert final["message"]["content"] == f'SCENARIO-DONE t-1: note.txt in {DIR} contains "hello-t-1".'


def test_responses_stream_ends_with_the_completed_response(server):
    body = {"model": "m", "stream": True, "reasoning": {"effort": "medium"},
            "tools": [{"type": "function", "name": "exec_command",
                       "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
                      {"type": "function", "name": "view_image",
                       "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}],
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": PROMPT}]},
                      {"type": "reasoning", "summary": []},
                      {"type": "function_call", "call_id": "a", "name": "exec_command", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": "a", "output": "ok"}]}
    events = sse(post(server, "/v1/responses", body)[1])
    assert events[0][0] == "response.created" and events[-1][0] == "response.completed"
    output = events[-1][1]["response"]["output"]
    assert [item["type"] for item in output] == ["reasoning", "message", "function_call"]
    assert json.loads(output[2]["arguments"]) == {"cmd": "cat note.txt"}   # no read tool: the shell reads
    assert output[0]["summary"][0]["text"].startswith("THINK-1-t-1")
    done = [p["item"]["type"] for n, p in events if n == "response.output_item.done"]
    assert done == ["reasoning", "message", "function_call"]


def test_gemini_stream_and_whole_answers(server):
    tools = [{"functionDeclarations": [
        {"name": "run_shell_command", "parameters": {"type": "OBJECT", "required": ["command"],
                                                     "properties": {"command": {"type": "STRING"},
                                                                    "dir_path": {"type": "STRING"}}}}]}]
    body = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}], "tools": tools,
            "generationConfig": {"thinkingConfig": {"includeThoughts": True}}}
    events = sse(post(server, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body)[1])
    parts = events[0][1]["candidates"][0]["content"]["parts"]
    assert parts[0]["thought"] is True
    assert parts[-1]["functionCall"] == {"name": "run_shell_command",
                                         "args": {"command": "echo hello-t-1 > note.txt && ls"}}
    whole = json.loads(post(server, "/v1beta/models/gemini-x:generateContent", body)[1])
    assert whole["usageMetadata"]["promptTokenCount"] == 1000
    assert whole["candidates"][0]["content"]["parts"][-1]["functionCall"]["name"] == "run_shell_command"


def test_auxiliary_requests_get_text_or_the_json_they_ask_for(server):
    titled = json.loads(post(server, "/v1/chat/completions", {"model": "m", "messages": [
        {"role": "user", "content": f"Generate a title for: {PROMPT}"}]})[1])
    assert titled["choices"][0]["message"]["content"] == AUX_TEXT
    schema = {"type": "OBJECT", "required": ["next_speaker", "reasoning"],
              "properties": {"next_speaker": {"type": "STRING", "enum": ["user", "model"]},
                             "reasoning": {"type": "STRING"}}}
    routed = json.loads(post(server, "/v1beta/models/flash:generateContent", {
        "contents": [{"role": "user", "parts": [{"text": "who speaks next?"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseSchema": schema}})[1])
    answer = json.loads(routed["candidates"][0]["content"]["parts"][0]["text"])
    assert answer == {"next_speaker": "user", "reasoning": AUX_TEXT}
    assert server.script.plan == {} and len(server.script.served) == 2


def test_token_counts_model_lists_and_unknown_paths(server):
    assert json.loads(post(server, "/v1/messages/count_tokens", {"messages": []})[1]) == {"input_tokens": 1000}
    assert json.loads(post(server, "/v1beta/models/x:countTokens", {})[1]) == {"totalTokens": 1000}
    with urllib.request.urlopen(server.url + "/v1/models", timeout=10) as response:
        listing = json.loads(response.read())
    assert "fake-model" in [m["id"] for m in listing["data"]]
    with pytest.raises(urllib.error.HTTPError) as error:
        post(server, "/v1/nothing", {})
    assert error.value.code == 404


def test_without_parallel_calls_and_with_a_finish_command():
    script = Script(parallel=False, finish_command="echo DONE")
    assert script.steps() == ["write", "read", "fail", "long", "final"]
    running = ModelServer(script).start()
    try:
        _, data = post(running, "/v1/chat/completions", {"model": "m", "tools": CHAT_TOOLS[:1],
                                                         "messages": chat_history(4)})
    finally:
        running.stop()
    message = json.loads(data)["choices"][0]["message"]
    assert message["content"].startswith("SCENARIO-DONE t-1")
    assert json.loads(message["tool_calls"][0]["function"]["arguments"])["commands"] == ["echo DONE"]
