"""mini-swe-agent (SWE-agent/mini-swe-agent): one trajectory JSON per run, no session store.

Where: `${MSWEA_GLOBAL_CONFIG_DIR:-${XDG_CONFIG_HOME:-~/.config}/mini-swe-agent}`:
`last_mini_run.traj.json` (rewritten by every run without `-o`) and, by convention, runs saved
with `-o` under `trajectories/`. A file is `{info: {exit_status, submission, model_stats,
mini_version, config: {agent, model, environment}}, messages, trajectory_format}`.

Two message formats:
- `mini-swe-agent-1.1` (2.x): OpenAI chat messages; the assistant calls the `bash` tool
  (`tool_calls`), `tool` messages answer with `extra.returncode`; `extra.response` is the raw
  LiteLLM response (usage: `prompt_tokens` including cached ones, `prompt_tokens_details.
  cached_tokens`), `extra.cost` its cost, `extra.timestamp` the time; a final `exit` message.
- `mini-swe-agent-1` (1.x): the action is the fenced ```bash block of the assistant's text and
  the observation comes back as a user message `<returncode>N</returncode><output>…</output>`.

The first user message is the task rendered into `instance_template`; the task itself (what
the human typed) becomes the user step when the template lets it be cut out. Later user messages
are the harness's (observations, format errors, timeouts) and become system steps. A run keeps
no working directory unless its environment config names one (`environment.cwd`).

A copy of a run (`last_mini_run` saved again under `trajectories/`) is the same session: the id
is a hash of the task and of the first model response, so the catalog keeps one.
"""

from __future__ import annotations

import glob
import os
import re

from core import compiledre, storefs
from agents.base import (Session, absolute_path, as_dict, as_int, as_list, as_str, env_dir, epoch, iso,
                         join_result, json_arguments, one_line, read_json_document, text_of)
from atif.build import metrics, TrajectoryBuilder
from core.hashes import sha256
from redaction.redact import kinds_only

NAME = "mswea"
PREFIX = "ms"
ATIF_NAME = "mini-swe-agent"
VERSION = 2

FENCED_ACTION = compiledre.compile(r"```(?:bash|sh)\s*\n(.*?)\n```", re.DOTALL)
OBSERVATION = compiledre.compile(r"<returncode>\s*(-?\d+)\s*</returncode>\s*(?:<output>\n?(.*?)\n?</output>)?",
                                 re.DOTALL)


def config_dir(env) -> str:
    explicit = env.get("MSWEA_GLOBAL_CONFIG_DIR")
    if explicit:
        return explicit
    return os.path.join(env_dir(env, "XDG_CONFIG_HOME", ".config"), "mini-swe-agent")


def sources(env):
    """Saved runs first: when `last_mini_run` is a copy of one, the named file is listed."""
    root = glob.escape(config_dir(env))
    saved = sorted(storefs.glob(os.path.join(root, "trajectories", "**", "*.traj.json"), recursive=True))
    return saved + sorted(storefs.glob(os.path.join(root, "*.traj.json")))


# discovery ---------------------------------------------------------------------------------------
def scan(source: str, env) -> list[Session]:
    """The whole file is read: a single JSON document has no head to read, and the catalog
    scans a file again only when it changes."""
    data, _ = read_json_document(source)
    info = as_dict(data.get("info"))
    messages = [m for m in as_list(data.get("messages")) if isinstance(m, dict)]
    task = task_text(messages, info)
    first_reply = next((m for m in messages if m.get("role") == "assistant"), {})
    response = as_dict(as_dict(first_reply.get("extra")).get("response"))
    key = f"{kinds_only(task)}\x00{response.get('id')}\x00{as_dict(first_reply.get('extra')).get('timestamp')}"
    if not task and not response:
        key += f"\x00{source}"  # nothing identifies the run: one session per file
    return [Session(agent=NAME, native_id="run-" + sha256(key.encode()).hexdigest()[:16],
                    source=source, started=start_time(messages) or storefs.stat(source).st_mtime,
                    cwd=work_dir(info), title=one_line(task), model=model_name(info, messages),
                    extra={"format": as_str(data.get("trajectory_format")) or "unknown"})]


def work_dir(info: dict) -> str | None:
    cwd = as_str(as_dict(as_dict(info.get("config")).get("environment")).get("cwd"))
    return cwd if absolute_path(cwd) else None


def model_name(info: dict, messages: list) -> str | None:
    """The configured model (`openai/gpt-5`), else the model the first response names."""
    configured = as_str(as_dict(as_dict(info.get("config")).get("model")).get("model_name"))
    if configured:
        return configured
    return next((as_str(as_dict(as_dict(m.get("extra")).get("response")).get("model"))
                 for m in messages if as_dict(m.get("extra")).get("response")), None)


def start_time(messages: list) -> float | None:
    for message in messages:
        extra = as_dict(message.get("extra"))
        found = epoch(extra.get("timestamp")) or epoch(as_dict(extra.get("response")).get("created"))
        if found:
            return found
    return None


def task_text(messages: list, info: dict) -> str:
    """The task the human gave: the first user message with the instance template cut away
    (the template's text before `{{task}}` and after it up to its first placeholder)."""
    first = next((m for m in messages if m.get("role") == "user"), {})
    rendered = text_of(first.get("content"))
    template = as_str(as_dict(as_dict(info.get("config")).get("agent")).get("instance_template")) or ""
    match = re.search(r"\{\{\s*task\s*\}\}", template)
    if not match:
        return rendered
    before = template[: match.start()]
    after = re.split(r"\{\{|\{%", template[match.end():], maxsplit=1)[0]
    if "{{" in before or "{%" in before or not rendered.startswith(before):
        return rendered
    rest = rendered[len(before):]
    end = rest.find(after) if after else -1
    return rest[:end] if end >= 0 else rest


# translation -------------------------------------------------------------------------------------
def translate(session: Session, env) -> dict:
    data, problems = read_json_document(session.source)
    info = as_dict(data.get("info"))
    messages = as_list(data.get("messages"))
    objects = [m for m in messages if isinstance(m, dict)]
    builder = TrajectoryBuilder(ATIF_NAME, version=as_str(info.get("mini_version")),
                                session_id=session.native_id, model_name=model_name(info, objects))
    for problem in problems:
        builder.warn(problem)
    _Translator(builder, task_text(objects, info)).run(messages)
    stats = as_dict(info.get("model_stats"))
    builder.extra.update({k: v for k, v in {
        "format": as_str(data.get("trajectory_format")), "exit_status": info.get("exit_status"),
        "submission": info.get("submission") or None, "api_calls": stats.get("api_calls"),
        "instance_cost": stats.get("instance_cost")}.items() if v is not None})
    return builder.build()


class _Translator:
    def __init__(self, builder: TrajectoryBuilder, task: str):
        self.builder = builder
        self.task = task
        self.seen_task = False
        self.pending_action: str | None = None  # format 1: the call awaiting its observation

    def run(self, messages: list) -> None:
        for index, message in enumerate(messages):
            if not isinstance(message, dict):
                self.builder.warn(f"message {index} is not an object; skipped")
                continue
            role = message.get("role")
            handler = getattr(self, f"on_{role}", None)
            if handler is None:
                self.builder.warn(f"message with unknown role {role!r} skipped")
            else:
                stamp = as_dict(message.get("extra")).get("timestamp") or message.get("timestamp")
                handler(message, iso(stamp))

    def on_system(self, message, when):
        self.builder.system(text_of(message.get("content")), when, extra={"kind": "system_prompt"})

    def on_user(self, message, when):
        content = text_of(message.get("content"))
        if not self.seen_task:
            self.seen_task = True
            cut = self.task != content
            self.builder.user(self.task, when, extra={"kind": "task", "rendered_from": "instance_template"}
                              if cut else None)
            return
        observation = OBSERVATION.search(content) if self.pending_action else None
        if observation:
            code = int(observation.group(1))
            extra = {"exit_code": code, **({"is_error": True} if code != 0 else {})}
            self.builder.tool_result(self.pending_action, content, extra=extra)
            self.pending_action = None
            return
        self.builder.system(content, when, extra={"kind": "harness_message"})

    def on_assistant(self, message, when):
        extra = as_dict(message.get("extra"))
        response = as_dict(extra.get("response"))
        text = text_of(message.get("content"))
        model = as_str(response.get("model")) or self.builder.model_name
        step = self.builder.agent(text, when, model_name=model,
                                  reasoning=as_str(message.get("reasoning_content")),
                                  metrics=usage_metrics(response.get("usage"), extra.get("cost")),
                                  llm_call_count=1)
        calls = [c for c in as_list(message.get("tool_calls")) if isinstance(c, dict)]
        for call in calls:
            function = as_dict(call.get("function"))
            self.builder.tool_call(step, as_str(call.get("id")), as_str(function.get("name")) or "",
                                   json_arguments(function.get("arguments")))
        actions = FENCED_ACTION.findall(text) if not calls else []
        if len(actions) == 1:  # mini-swe-agent 1 runs exactly one block, else asks again
            self.pending_action = self.builder.tool_call(step, None, "bash", {"command": actions[0]})

    def on_tool(self, message, when):
        found = result_extra(as_dict(message.get("extra")))
        call_id = as_str(message.get("tool_call_id")) or ""
        content = text_of(message.get("content"))
        join_result(self.builder, call_id, content, when, found)

    def on_exit(self, message, when):
        extra = as_dict(message.get("extra"))
        status = as_str(extra.get("exit_status")) or "exit"
        body = text_of(message.get("content")) or f"(run ended: {status})"
        found = {"kind": "exit", "exit_status": status, "submission": extra.get("submission")}
        self.builder.system(body, when, extra={k: v for k, v in found.items() if v})


def result_extra(extra: dict) -> dict:
    """Exit code and failure of a `tool` message (`extra.returncode`, `extra.exception_info`)."""
    code = as_int(extra.get("returncode"))
    exception = as_str(extra.get("exception_info")) or None
    found = {"exit_code": code, "is_error": True if code not in (None, 0) or exception else None,
             "exception": exception}
    return {k: v for k, v in found.items() if v is not None}


def usage_metrics(usage, cost) -> dict | None:
    usage = as_dict(usage)
    prompt = as_int(usage.get("prompt_tokens"))
    if prompt is None:
        return None
    cached = as_int(as_dict(usage.get("prompt_tokens_details")).get("cached_tokens"))
    reasoning = as_int(as_dict(usage.get("completion_tokens_details")).get("reasoning_tokens"))
    writes = as_int(usage.get("cache_creation_input_tokens"))
    cost = cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    return metrics(prompt=prompt, completion=as_int(usage.get("completion_tokens")), cached=cached,
                   cost=cost, extra={k: v for k, v in {"reasoning_tokens": reasoning,
                                                       "cache_write_tokens": writes}.items() if v})
