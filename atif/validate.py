"""Check a document against every rule of ATIF v1.7 (spec §5-§6), reporting each violation with
the JSON path where it occurs.

It accepts documents labelled v1.0 to v1.7, as Harbor does, with the two relaxations older
documents need: a v1.0/v1.1 `subagent_trajectory_ref` may be a single object, and a ref before
v1.7 may name only a `session_id`. Unlike Harbor it coerces nothing: `"step_id": "2"` is an
error here, because a document that needs coercing is a bug in whoever wrote it.
"""

from __future__ import annotations

import os
from datetime import datetime

VERSIONS = tuple(f"ATIF-v1.{minor}" for minor in range(8))
SOURCES = ("system", "user", "agent")
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")
MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")

ROOT_KEYS = ("schema_version", "session_id", "trajectory_id", "agent", "steps", "notes",
             "final_metrics", "continued_trajectory_ref", "extra", "subagent_trajectories")
AGENT_KEYS = ("name", "version", "model_name", "tool_definitions", "extra")
STEP_KEYS = ("step_id", "timestamp", "source", "model_name", "reasoning_effort", "message",
             "reasoning_content", "tool_calls", "observation", "metrics", "is_copied_context",
             "llm_call_count", "extra")
CALL_KEYS = ("tool_call_id", "function_name", "arguments", "extra")
RESULT_KEYS = ("source_call_id", "content", "subagent_trajectory_ref", "extra")
REF_KEYS = ("trajectory_id", "session_id", "trajectory_path", "extra")
PART_KEYS = ("type", "text", "source")
METRIC_KEYS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd",
               "prompt_token_ids", "completion_token_ids", "logprobs", "extra")
FINAL_KEYS = ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens",
              "total_cost_usd", "total_steps", "extra")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_int,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def _type_name(v) -> str:
    if v is None:
        return "null"
    for name in ("boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](v):
            return name
    return type(v).__name__


class _Checker:
    def __init__(self, base_dir: str | None):
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.base_dir = base_dir
        self.minor = 7

    def error(self, path: str, message: str) -> None:
        self.errors.append(f"{path}: {message}")

    # generic field checks ---------------------------------------------------------------------
    def object(self, obj, path: str, keys: tuple, required: tuple = ()) -> bool:
        if not isinstance(obj, dict):
            self.error(path, f"expected object, got {_type_name(obj)}")
            return False
        for key in obj:
            if key not in keys:
                self.error(f"{path}.{key}", "unexpected field (not part of ATIF schema)")
        for key in required:
            if obj.get(key) is None:
                self.error(f"{path}.{key}", "required field is missing")
        return True

    def typed(self, obj: dict, key: str, path: str, kind: str) -> bool:
        """True when the field is present, non-null and of the given type."""
        value = obj.get(key)
        if value is None:
            return False
        if not _TYPES[kind](value):
            self.error(f"{path}.{key}", f"expected {kind}, got {_type_name(value)}")
            return False
        return True

    def array_of(self, obj: dict, key: str, path: str, kind: str) -> None:
        if self.typed(obj, key, path, "array"):
            for i, item in enumerate(obj[key]):
                if not _TYPES[kind](item):
                    self.error(f"{path}.{key}[{i}]", f"expected {kind}, got {_type_name(item)}")

    # the document -----------------------------------------------------------------------------
    def trajectory(self, doc, path: str, embedded: bool = False) -> None:
        if not self.object(doc, path, ROOT_KEYS, ("agent", "steps")):
            return
        version = doc.get("schema_version")
        if version is not None and version not in VERSIONS:
            self.error(f"{path}.schema_version",
                       f"expected one of ATIF-v1.0 ... ATIF-v1.7, got {version!r}")
        elif version is not None:
            self.minor = int(version.rsplit(".", 1)[1])
        for key in ("session_id", "trajectory_id", "notes", "continued_trajectory_ref"):
            self.typed(doc, key, path, "string")
        self.typed(doc, "extra", path, "object")
        if "agent" in doc and doc["agent"] is not None:
            self.agent(doc["agent"], f"{path}.agent")
        if doc.get("final_metrics") is not None:
            self.final_metrics(doc["final_metrics"], f"{path}.final_metrics")
        steps = doc.get("steps")
        if steps is not None:
            if not isinstance(steps, list):
                self.error(f"{path}.steps", f"expected array, got {_type_name(steps)}")
            elif not steps:
                self.error(f"{path}.steps", "must hold at least 1 step")
            else:
                for i, step in enumerate(steps):
                    self.step(step, f"{path}.steps[{i}]", i + 1)
        self.subagents(doc, path)

    def subagents(self, doc: dict, path: str) -> None:
        subs = doc.get("subagent_trajectories")
        if subs is None:
            return
        if not isinstance(subs, list):
            self.error(f"{path}.subagent_trajectories", f"expected array, got {_type_name(subs)}")
            return
        seen = set()
        minor = self.minor
        for i, sub in enumerate(subs):
            sub_path = f"{path}.subagent_trajectories[{i}]"
            self.trajectory(sub, sub_path, embedded=True)
            self.minor = minor
            if not isinstance(sub, dict):
                continue
            tid = sub.get("trajectory_id")
            if tid is None:
                self.error(f"{sub_path}.trajectory_id", "required for embedded subagents")
            elif tid in seen:
                self.error(f"{sub_path}.trajectory_id",
                           f"{tid!r} is not unique within subagent_trajectories")
            seen.add(tid)
        self.dangling_refs(doc, seen, path)

    def dangling_refs(self, doc: dict, embedded_ids: set, path: str) -> None:
        for i, step in enumerate(doc.get("steps") or []):
            results = ((step or {}).get("observation") or {}).get("results") if isinstance(step, dict) else None
            for j, result in enumerate(results or []):
                refs = result.get("subagent_trajectory_ref") if isinstance(result, dict) else None
                for ref in refs if isinstance(refs, list) else []:
                    tid = ref.get("trajectory_id") if isinstance(ref, dict) else None
                    if tid is not None and tid not in embedded_ids and not ref.get("trajectory_path"):
                        self.warnings.append(f"{path}.steps[{i}].observation.results[{j}]: "
                                             f"trajectory_id {tid!r} names no embedded subagent")

    def agent(self, agent, path: str) -> None:
        if not self.object(agent, path, AGENT_KEYS, ("name", "version")):
            return
        for key in ("name", "version", "model_name"):
            self.typed(agent, key, path, "string")
        self.array_of(agent, "tool_definitions", path, "object")
        self.typed(agent, "extra", path, "object")

    def final_metrics(self, fm, path: str) -> None:
        if not self.object(fm, path, FINAL_KEYS):
            return
        for key in ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens",
                    "total_steps"):
            self.typed(fm, key, path, "integer")
        if _is_int(fm.get("total_steps")) and fm["total_steps"] < 0:
            self.error(f"{path}.total_steps", "must be >= 0")
        self.typed(fm, "total_cost_usd", path, "number")
        self.typed(fm, "extra", path, "object")

    def step(self, step, path: str, expected_id: int) -> None:
        if not self.object(step, path, STEP_KEYS, ("step_id", "source", "message")):
            return
        step_id = step.get("step_id")
        if self.typed(step, "step_id", path, "integer"):
            if step_id < 1:
                self.error(f"{path}.step_id", "must be >= 1")
            elif step_id != expected_id:
                self.error(f"{path}.step_id",
                           f"expected {expected_id} (sequential from 1), got {step_id}")
        source = step.get("source")
        if source is not None and source not in SOURCES:
            self.error(f"{path}.source", f"expected 'system', 'user' or 'agent', got {source!r}")
        self.timestamp(step, path)
        for key in ("model_name", "reasoning_content"):
            self.typed(step, key, path, "string")
        effort = step.get("reasoning_effort")
        if effort is not None and not (isinstance(effort, str) or _is_number(effort)):
            self.error(f"{path}.reasoning_effort", f"expected string or number, got {_type_name(effort)}")
        if "message" in step and step["message"] is not None:
            self.content(step["message"], f"{path}.message")
        self.typed(step, "is_copied_context", path, "boolean")
        if self.typed(step, "llm_call_count", path, "integer") and step["llm_call_count"] < 0:
            self.error(f"{path}.llm_call_count", "must be >= 0")
        self.typed(step, "extra", path, "object")
        if source in ("system", "user"):
            for key in AGENT_ONLY:
                if step.get(key) is not None:
                    self.error(f"{path}.{key}",
                               f"only applicable when source is 'agent', but source is '{source}'")
        if source == "agent" and step.get("llm_call_count") == 0:
            for key in ("metrics", "reasoning_content"):
                if step.get(key) is not None:
                    self.error(f"{path}.{key}", "must be absent when llm_call_count is 0 "
                                                "(deterministic dispatch on an agent step)")
        call_ids = self.tool_calls(step, path)
        if step.get("metrics") is not None:
            self.metrics(step["metrics"], f"{path}.metrics")
        if step.get("observation") is not None:
            self.observation(step["observation"], f"{path}.observation", call_ids, expected_id)

    def timestamp(self, step: dict, path: str) -> None:
        if not self.typed(step, "timestamp", path, "string"):
            return
        try:
            datetime.fromisoformat(step["timestamp"].replace("Z", "+00:00"))
        except ValueError:
            self.error(f"{path}.timestamp", f"invalid ISO 8601 timestamp: {step['timestamp']!r}")

    def tool_calls(self, step: dict, path: str) -> set | None:
        calls = step.get("tool_calls")
        if calls is None:
            return set()
        if not isinstance(calls, list):
            self.error(f"{path}.tool_calls", f"expected array, got {_type_name(calls)}")
            return None
        ids = set()
        for i, call in enumerate(calls):
            call_path = f"{path}.tool_calls[{i}]"
            if not self.object(call, call_path, CALL_KEYS, ("tool_call_id", "function_name", "arguments")):
                continue
            if self.typed(call, "tool_call_id", call_path, "string"):
                if call["tool_call_id"] in ids:
                    self.warnings.append(f"{call_path}.tool_call_id: duplicate id "
                                         f"{call['tool_call_id']!r} in this step")
                ids.add(call["tool_call_id"])
            self.typed(call, "function_name", call_path, "string")
            self.typed(call, "arguments", call_path, "object")
            self.typed(call, "extra", call_path, "object")
        return ids

    def metrics(self, m, path: str) -> None:
        if not self.object(m, path, METRIC_KEYS):
            return
        for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
            self.typed(m, key, path, "integer")
        self.typed(m, "cost_usd", path, "number")
        self.array_of(m, "prompt_token_ids", path, "integer")
        self.array_of(m, "completion_token_ids", path, "integer")
        self.array_of(m, "logprobs", path, "number")
        self.typed(m, "extra", path, "object")

    def observation(self, obs, path: str, call_ids: set | None, step_id: int) -> None:
        if not self.object(obs, path, ("results",), ("results",)):
            return
        if not self.typed(obs, "results", path, "array"):
            return
        for i, result in enumerate(obs["results"]):
            result_path = f"{path}.results[{i}]"
            if not self.object(result, result_path, RESULT_KEYS):
                continue
            if self.typed(result, "source_call_id", result_path, "string") and call_ids is not None:
                if result["source_call_id"] not in call_ids:
                    self.error(f"{result_path}.source_call_id",
                               f"references {result['source_call_id']!r}, which is not among "
                               f"step {step_id}'s tool_calls")
            if result.get("content") is not None:
                self.content(result["content"], f"{result_path}.content")
            self.typed(result, "extra", result_path, "object")
            self.refs(result, result_path)

    def refs(self, result: dict, path: str) -> None:
        refs = result.get("subagent_trajectory_ref")
        if refs is None:
            return
        if isinstance(refs, dict) and self.minor <= 1:
            refs = [refs]  # v1.0 and v1.1 wrote a single object
        elif not isinstance(refs, list):
            self.error(f"{path}.subagent_trajectory_ref", f"expected array, got {_type_name(refs)}")
            return
        for i, ref in enumerate(refs):
            ref_path = f"{path}.subagent_trajectory_ref[{i}]"
            if not self.object(ref, ref_path, REF_KEYS):
                continue
            for key in ("trajectory_id", "session_id", "trajectory_path"):
                self.typed(ref, key, ref_path, "string")
            self.typed(ref, "extra", ref_path, "object")
            resolvable = ref.get("trajectory_id") is not None or ref.get("trajectory_path") is not None
            if not resolvable and not (self.minor <= 6 and ref.get("session_id") is not None):
                self.error(ref_path, "must be resolvable: set trajectory_id (embedded) "
                                     "or trajectory_path (file)")

    def content(self, value, path: str) -> None:
        if isinstance(value, str):
            return
        if not isinstance(value, list):
            self.error(path, f"expected string or array of content parts, got {_type_name(value)}")
            return
        for i, part in enumerate(value):
            part_path = f"{path}[{i}]"
            if not self.object(part, part_path, PART_KEYS, ("type",)):
                continue
            kind = part.get("type")
            if kind == "text":
                if not self.typed(part, "text", part_path, "string") and part.get("text") is None:
                    self.error(f"{part_path}.text", "required when type is 'text'")
                if part.get("source") is not None:
                    self.error(f"{part_path}.source", "must be absent when type is 'text'")
            elif kind == "image":
                if part.get("text") is not None:
                    self.error(f"{part_path}.text", "must be absent when type is 'image'")
                self.image(part.get("source"), f"{part_path}.source")
            elif kind is not None:
                self.error(f"{part_path}.type", f"expected 'text' or 'image', got {kind!r}")

    def image(self, source, path: str) -> None:
        if source is None:
            self.error(path, "required when type is 'image'")
            return
        if not self.object(source, path, ("media_type", "path"), ("media_type", "path")):
            return
        media = source.get("media_type")
        if media is not None and media not in MEDIA_TYPES:
            self.error(f"{path}.media_type", f"expected one of {', '.join(MEDIA_TYPES)}, got {media!r}")
        if self.typed(source, "path", path, "string") and self.base_dir is not None:
            target = source["path"]
            if "://" not in target and not os.path.exists(os.path.join(self.base_dir, target)):
                self.error(f"{path}.path", f"referenced image file does not exist: {target}")


def validate(doc, base_dir: str | None = None) -> tuple[list[str], list[str]]:
    """(errors, warnings) for a parsed document. `base_dir` turns on the image-file check for
    relative paths, as Harbor does when it validates a file."""
    checker = _Checker(base_dir)
    if not isinstance(doc, dict):
        return [f"$: expected a JSON object, got {_type_name(doc)}"], []
    checker.trajectory(doc, "$")
    return checker.errors, checker.warnings
