"""OpenHands V0, the GUI server before the software-agent-sdk: one folder per conversation in
`${OPENHANDS_PERSISTENCE_DIR:-~/.openhands}/sessions/<conversation id>/`, holding
`metadata.json` (`title`, `created_at`, `llm_model`, `selected_repository`, token totals) and
`events/<n>.json`, one event per file numbered from 0. openhands.py finds, orders, bounds and
reads these folders as it does V1's; the events' shape is what differs (`event_to_dict` of
openhands/events/serialization):

- an action, `{id, timestamp, source, message, action, args, tool_call_metadata?}`: `message`
  from the user (`args.content`, `args.image_urls`: what was typed) or from the agent (a reply
  without tool calls); `system` (the system prompt, `args.content`); any other action of the
  agent is one tool call of a model reply, its `tool_call_metadata {function_name,
  tool_call_id, model_response}` naming the reply (`id`, `model`, `usage`, and the call's
  `arguments` as the model gave them), the reply's text in `args.thought`;
- an observation, `{id, timestamp, source, cause, observation, content, extras, success?,
  tool_call_metadata?}`: a call's result, joined by its tool call id (`extras.metadata.
  exit_code` of a command, `error` a failure); `recall` (the workspace context the server
  added to a prompt) a system step; changes of the agent's state carry nothing.

A model reply's usage (`model_response.usage`) is OpenAI's: `prompt_tokens` count the cached
ones (`prompt_tokens_details.cached_tokens`).
"""

from __future__ import annotations

from agents.base import (as_dict, as_int, as_list, as_str, epoch, iso, join_result, json_arguments, one_line,
                         url_image)
from atif.build import TrajectoryBuilder, metrics, plain_or_parts, text_part

FORMAT = "v0"
METADATA = "metadata.json"
SILENT_ACTIONS = {"change_agent_state", "null", "recall"}  # a recall shows as its observation
SILENT_OBSERVATIONS = {"agent_state_changed", "null"}


def model_of(metadata: dict) -> str | None:
    return as_str(metadata.get("llm_model"))


def started(metadata: dict, first_event: dict) -> float | None:
    return epoch(metadata.get("created_at")) or epoch(first_event.get("timestamp"))


def prompt_of(event: dict) -> str | None:
    """What the human typed, when `event` is their message."""
    if event.get("action") == "message" and event.get("source") == "user":
        return one_line(as_str(as_dict(event.get("args")).get("content")) or "")
    return None


def user_content(args: dict):
    """A user message's text and images as an ATIF message."""
    text = as_str(args.get("content")) or ""
    images = [url_image(url) for url in as_list(args.get("image_urls")) if isinstance(url, str)]
    return plain_or_parts([text_part(text), *images]) if images else text


class Events:
    """V0 events to steps: one agent step per model reply (`model_response.id`)."""

    def __init__(self, builder: TrajectoryBuilder):
        self.builder = builder
        self.reply = None   # (model response id, agent step) of the reply being read

    def run(self, events) -> None:
        for event in events:
            when = iso(event.get("timestamp"))
            if "action" in event:
                self.action(event, as_str(event["action"]) or "", as_dict(event.get("args")), when)
            elif "observation" in event:
                self.reply = None
                self.observation(event, as_str(event["observation"]) or "", when)
            else:
                self.builder.warn("an event that is neither an action nor an observation was skipped")

    def action(self, event: dict, kind: str, args: dict, when) -> None:
        source = event.get("source")
        metadata = as_dict(event.get("tool_call_metadata"))
        if kind in SILENT_ACTIONS:
            return
        if metadata and source == "agent":
            self.tool_call(event, kind, args, metadata, when)
            return
        self.reply = None
        if kind == "message" and source == "user":
            self.builder.user(user_content(args), when)
        elif kind == "message" and source == "agent":
            self.builder.agent(as_str(args.get("content")) or "", when, model_name=self.builder.model_name,
                               llm_call_count=1)
        elif kind == "system":
            self.builder.system(as_str(args.get("content")) or "", when, extra={"kind": "system_prompt"})
        else:
            self.builder.system(as_str(event.get("message")) or kind, when, extra={"kind": f"action:{kind}"})

    def tool_call(self, event: dict, kind: str, args: dict, metadata: dict, when) -> None:
        response = as_dict(metadata.get("model_response"))
        response_id = as_str(response.get("id"))
        if self.reply is None or self.reply[0] != response_id or response_id is None:
            self.reply = (response_id, self.model_step(response, args, when))
        call_id = as_str(metadata.get("tool_call_id"))
        self.builder.tool_call(self.reply[1], call_id, as_str(metadata.get("function_name")) or kind,
                               self.arguments(response, call_id, args))

    def model_step(self, response: dict, args: dict, when):
        message = as_dict(as_dict(next(iter(as_list(response.get("choices"))), None)).get("message"))
        usage = as_dict(response.get("usage"))
        prompt = as_int(usage.get("prompt_tokens"))
        cached = as_int(as_dict(usage.get("prompt_tokens_details")).get("cached_tokens"))
        return self.builder.agent(
            as_str(args.get("thought")) or as_str(message.get("content")) or "", when,
            model_name=as_str(response.get("model")) or self.builder.model_name,
            reasoning=as_str(message.get("reasoning_content")) or None, llm_call_count=1,
            metrics=metrics(prompt, as_int(usage.get("completion_tokens")), cached) if prompt is not None else None)

    @staticmethod
    def arguments(response: dict, call_id: str | None, args: dict):
        """The call's arguments as the model gave them, else the action's own."""
        for choice in as_list(response.get("choices")):
            for call in as_list(as_dict(as_dict(choice).get("message")).get("tool_calls")):
                if as_dict(call).get("id") == call_id and "arguments" in as_dict(as_dict(call).get("function")):
                    return json_arguments(call["function"]["arguments"])
        return {k: v for k, v in args.items() if k not in ("thought", "security_risk")}

    def observation(self, event: dict, kind: str, when) -> None:
        if kind in SILENT_OBSERVATIONS:
            return
        content = as_str(event.get("content")) or ""
        call_id = as_str(as_dict(event.get("tool_call_metadata")).get("tool_call_id"))
        if kind == "recall" or not call_id:
            self.builder.system(content or as_str(event.get("message")) or kind, when,
                                extra={"kind": f"observation:{kind}"})
            return
        exit_code = as_int(as_dict(as_dict(event.get("extras")).get("metadata")).get("exit_code"))
        failed = kind in ("error", "user_rejected") or event.get("success") is False or (exit_code or 0) > 0
        extra = {k: v for k, v in {"is_error": failed or None, "exit_code": exit_code}.items() if v is not None}
        join_result(self.builder, call_id, content, when, extra, tool_name=kind)
