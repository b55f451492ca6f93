"""Cline: the VS Code extension's tasks, and the Cline CLI's sessions.

- Extension (and the Go CLI of Cline 1.x/2.x, which keeps the same layout under
  `${CLINE_DIR:-~/.cline}/data`): `<storage>/tasks/<taskId>/`, read by `agents/cline_tasks.py`,
  where storage is `<VS Code user dir>/globalStorage/saoudrizwan.claude-dev`. The working
  directory is `cwdOnTaskInitialization` in `<storage>/state/taskHistory.json`, else the
  `# Current Working Directory (<path>)` of the first `<environment_details>`.
- CLI 3.x/4.x: `${CLINE_SESSION_DATA_DIR:-${CLINE_DATA_DIR:-${CLINE_DIR:-~/.cline}/data}/sessions}/
  <id>/<id>.json` (the manifest: `cwd`, `model`, `started_at`, `metadata.usage` ...) and
  `<id>.messages.json` (`{messages: [{id, role, content[], ts, modelInfo, metrics}]}`: Anthropic
  blocks, `tool_result.content` being the tool's result objects). Each assistant message's
  `metrics {inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens}` is its step's
  metrics; `inputTokens` is the whole prompt: in the live sample the cache reads are 75% of it,
  so they are included. The `sessions.db` next to it is only an index of these files.
"""

from __future__ import annotations

import os

from agents import cline_tasks
from agents.base import as_dict, as_int, as_str, epoch, home, iso, one_line, Session
from atif.build import metrics, TrajectoryBuilder
from core import storefs

NAME = "cline"
PREFIX = "cn"
ATIF_NAME = "cline"
# its command line, to resume a session or start one with a prompt (agents/base.py)
CLI = {"resume": ("cline", "--id", "{id}"), "start": ("cline", "{prompt}"), "checked": "3.0.65"}
VERSION = 2

EXTENSION_ID = "saoudrizwan.claude-dev"
MANIFEST_FORMAT = "cli-session"


def cline_dir(env) -> str:
    return env.get("CLINE_DIR") or os.path.join(home(env), ".cline")


def cli_sessions_dir(env) -> str:
    if env.get("CLINE_SESSION_DATA_DIR"):
        return env["CLINE_SESSION_DATA_DIR"]
    return os.path.join(env.get("CLINE_DATA_DIR") or os.path.join(cline_dir(env), "data"), "sessions")


def storages(env) -> list[str]:
    found = [os.path.join(user_dir, "globalStorage", EXTENSION_ID)
             for user_dir in cline_tasks.vscode_user_dirs(env)]
    return found + [env.get("CLINE_DATA_DIR") or os.path.join(cline_dir(env), "data")]


def sources(env):
    for storage in storages(env):
        yield from cline_tasks.task_dirs(storage)
    root = cli_sessions_dir(env)
    try:
        names = sorted(storefs.listdir(root))
    except OSError:
        return
    for name in names:
        manifest = os.path.join(root, name, f"{name}.json")
        if storefs.isfile(manifest):
            yield manifest


def is_manifest(source: str) -> bool:
    return source.endswith(".json") and storefs.isfile(source)


def messages_path(manifest_path: str, manifest: dict) -> str:
    """The messages file next to the manifest (the recorded absolute path may be another
    machine's), else the one the manifest names."""
    beside = manifest_path[: -len(".json")] + ".messages.json"
    if storefs.exists(beside):
        return beside
    return as_str(manifest.get("messages_path")) or beside


def dependencies(source: str, env) -> list[str]:
    if is_manifest(source):
        return [source, source[: -len(".json")] + ".messages.json"]
    return cline_tasks.task_dependencies(source)


def scan(source: str, env) -> list[Session]:
    if not is_manifest(source):
        return [cline_tasks.scan_task(NAME, source, "vscode-task")]
    manifest, problem = cline_tasks.read_json(source)
    if problem or not isinstance(manifest, dict):
        raise ValueError(problem or f"{source}: the manifest is not a JSON object")
    meta = as_dict(manifest.get("metadata"))
    session_id = as_str(manifest.get("session_id")) or os.path.basename(os.path.dirname(source))
    return [Session(
        agent=NAME, native_id=session_id, source=source,
        started=epoch(manifest.get("started_at") or manifest.get("created_at")),
        cwd=as_str(manifest.get("cwd")) or as_str(manifest.get("workspace_root")),
        title=one_line(prompt_words(as_str(manifest.get("prompt")) or as_str(meta.get("title")) or "")),
        model=as_str(manifest.get("model")), locator=session_id, extra={"format": MANIFEST_FORMAT})]


def prompt_words(prompt: str) -> str:
    """The human's words of a prompt the CLI recorded wrapped (`<user_input mode="act">`)."""
    found = cline_tasks.human_parts(prompt)
    return found[0][1] if found else prompt


def translate(session: Session, env) -> dict:
    if session.extra.get("format") != MANIFEST_FORMAT:
        return cline_tasks.translate_task(ATIF_NAME, session.source)
    return translate_cli(session)


def translate_cli(session: Session) -> dict:
    manifest, problem = cline_tasks.read_json(session.source)
    manifest = as_dict(manifest)
    builder = TrajectoryBuilder(ATIF_NAME, cli_version(manifest), as_str(manifest.get("model")),
                                session.native_id)
    if problem:
        builder.warn(problem)
    stored, messages_problem = cline_tasks.read_json(messages_path(session.source, manifest))
    if messages_problem:
        builder.warn(messages_problem)
    messages = as_dict(stored).get("messages")
    if not isinstance(messages, list):
        builder.warn("the messages file holds no message list")
        messages = []
    system_prompt = as_str(as_dict(stored).get("system_prompt"))
    if system_prompt:
        builder.system(system_prompt, iso(manifest.get("started_at")), extra={"kind": "system_prompt"})
    cline_tasks.HistoryTranslator(builder, cli_metrics, model=builder.model_name).run(messages)
    if manifest.get("provider"):
        builder.agent_extra["provider"] = manifest["provider"]
    builder.extra = manifest_extra(manifest)
    return builder.build()


def cli_version(manifest: dict) -> str | None:
    origin = as_dict(as_dict(manifest.get("metadata")).get("sessionHistoryOrigin"))
    return as_str(origin.get("version"))


def cli_metrics(index: int, message: dict):
    """(metrics, timestamp, model) of a CLI assistant message."""
    usage = as_dict(message.get("metrics"))
    extra = {}
    if as_int(usage.get("cacheWriteTokens")):
        extra["cache_write_tokens"] = as_int(usage["cacheWriteTokens"])
    cost = usage.get("cost")
    step_metrics = metrics(as_int(usage.get("inputTokens")), as_int(usage.get("outputTokens")),
                           as_int(usage.get("cacheReadTokens")),
                           cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
                           extra) if usage else None
    return step_metrics, iso(message.get("ts")), as_str(as_dict(message.get("modelInfo")).get("id"))


def manifest_extra(manifest: dict) -> dict:
    meta = as_dict(manifest.get("metadata"))
    wanted = (("cwd", as_str(manifest.get("cwd"))), ("workspace_root", as_str(manifest.get("workspace_root"))),
              ("status", as_str(manifest.get("status"))), ("exit_code", manifest.get("exit_code")),
              ("mode", as_str(meta.get("mode"))), ("git_branch", as_str(as_dict(meta.get("git")).get("branch"))),
              ("session_usage", meta.get("usage")))
    return {k: v for k, v in wanted if v is not None}
