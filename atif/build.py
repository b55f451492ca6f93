"""Assemble ATIF v1.7 documents.

Translators never write dicts by hand: they feed a `TrajectoryBuilder` steps, tool calls and
results as they meet them in the native records, and `build()` returns a document whose keys are
in the spec's order, whose null fields are omitted, whose step ids run 1..n, and whose tool
results sit on the step that made the call (the one rule translators most often get wrong).
"""

from __future__ import annotations

from atif import SCHEMA_VERSION

IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def drop_none(**fields) -> dict:
    """The fields that are set, in the order given (the spec's order at every call site)."""
    return {k: v for k, v in fields.items() if v is not None}


def metrics(prompt=None, completion=None, cached=None, cost=None, extra=None) -> dict | None:
    """A step's `metrics` object, or None when the agent recorded nothing."""
    found = drop_none(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached,
                      cost_usd=cost, extra=extra or None)
    return found or None


def text_part(text: str) -> dict:
    return {"type": "text", "text": text}


def plain_or_parts(parts: list[dict], sep: str = "\n") -> str | list[dict]:
    """Content as ATIF prefers it: one string when every part is text, else the parts."""
    if all(p["type"] == "text" for p in parts):
        return sep.join(p["text"] for p in parts)
    return parts


def parts_text(content) -> str:
    """The text of a message or a tool result as documents hold it: a string, or its text parts
    joined by newlines (other parts and other types: none)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def image_part(media_type: str | None, data: str | bytes | None = None, url: str | None = None,
               label: str = "image") -> dict:
    """An image content part. ATIF stores images as files or URLs, never inline base64, so an
    inline image becomes a `trajectoriz://` URL naming its hash: the document says an image was
    there, of what type, without carrying megabytes of base64 into every grep."""
    if media_type not in IMAGE_MEDIA_TYPES:
        return text_part(f"[{label}: {media_type or 'unknown type'}]")
    if url is None:
        raw = data.encode() if isinstance(data, str) else (data or b"")
        import hashlib  # here: listings import this module, images are rare

        digest = hashlib.sha256(raw).hexdigest()[:16]
        url = f"trajectoriz://image/{digest}.{media_type.split('/')[1]}"
    return {"type": "image", "source": {"media_type": media_type, "path": url}}


def as_arguments(value) -> dict:
    """Tool-call arguments must be a JSON object; wrap anything else the way Harbor's converters do."""
    if isinstance(value, dict):
        return value
    if value is None:
        return {}
    if isinstance(value, str):
        return {"input": value}
    return {"value": value}


class _Step:
    __slots__ = ("source", "message", "timestamp", "model_name", "reasoning_effort", "reasoning",
                 "calls", "results", "metrics", "copied", "llm_calls", "extra")

    def to_dict(self, step_id: int) -> dict:
        observation = {"results": self.results} if self.results else None
        return drop_none(step_id=step_id, timestamp=self.timestamp, source=self.source,
                         model_name=self.model_name, reasoning_effort=self.reasoning_effort,
                         message=self.message, reasoning_content=self.reasoning or None,
                         tool_calls=self.calls or None, observation=observation,
                         metrics=self.metrics, is_copied_context=self.copied,
                         llm_call_count=self.llm_calls, extra=self.extra or None)


class TrajectoryBuilder:
    """Collects one session's steps; `build()` turns them into an ATIF document."""

    def __init__(self, agent_name: str, version: str | None = None, model_name: str | None = None,
                 session_id: str | None = None, trajectory_id: str | None = None):
        self.agent_name = agent_name
        self.version = version or "unknown"
        self.model_name = model_name
        self.session_id = session_id
        self.trajectory_id = trajectory_id
        self.agent_extra: dict = {}
        self.extra: dict = {}
        self.warnings: list[str] = []
        self.subagents: list[dict] = []
        self._steps: list[_Step] = []
        self._caller: dict[str, _Step] = {}

    # steps ---------------------------------------------------------------------------------
    def step(self, source: str, message="", timestamp: str | None = None, *, model_name=None,
             reasoning_effort=None, reasoning: str | None = None, metrics: dict | None = None,
             llm_call_count: int | None = None, copied: bool | None = None,
             extra: dict | None = None) -> _Step:
        if source != "agent" and (model_name or reasoning_effort or reasoning or metrics):
            raise ValueError(f"agent-only fields on a {source} step")
        s = _Step()
        s.source, s.message, s.timestamp = source, message if message is not None else "", timestamp
        s.model_name, s.reasoning_effort, s.reasoning = model_name, reasoning_effort, reasoning
        s.calls, s.results, s.metrics = [], [], metrics
        s.copied, s.llm_calls, s.extra = copied, llm_call_count, extra
        self._steps.append(s)
        return s

    def user(self, message, timestamp=None, extra=None) -> _Step:
        return self.step("user", message, timestamp, extra=extra)

    def system(self, message, timestamp=None, extra=None) -> _Step:
        return self.step("system", message, timestamp, extra=extra)

    def agent(self, message="", timestamp=None, **fields) -> _Step:
        return self.step("agent", message, timestamp, **fields)

    def discard(self, step: _Step) -> None:
        """Take back a step that turned out to hold nothing (no call or result is joined to it)."""
        if step.calls or step.results:
            raise ValueError("a step with calls or results is kept")
        self._steps.remove(step)

    @property
    def last_step(self) -> _Step | None:
        return self._steps[-1] if self._steps else None

    def step_count(self) -> int:
        return len(self._steps)

    def steps_since(self, count: int) -> list[_Step]:
        return self._steps[count:]

    # tool calls and their results ------------------------------------------------------------
    def tool_call(self, step: _Step, call_id: str | None, name: str, arguments, extra=None) -> str:
        """Record a call on an agent step. A call without a native id gets a synthetic one, so
        that its result can still be joined (`extra.synthetic_id` says so)."""
        if step.source != "agent":
            raise ValueError("tool calls belong on agent steps")
        if not call_id:
            call_id = f"call_{len(self._steps)}_{len(step.calls)}"
            extra = {**(extra or {}), "synthetic_id": True}
        step.calls.append(drop_none(tool_call_id=call_id, function_name=name or "unknown",
                                    arguments=as_arguments(arguments), extra=extra or None))
        self._caller.setdefault(call_id, step)
        return call_id

    def has_call(self, call_id: str) -> bool:
        return call_id in self._caller

    def tool_result(self, call_id: str, content, extra: dict | None = None, subagents=None) -> bool:
        """Attach a result to the step that made the call. False when no step made it."""
        step = self._caller.get(call_id)
        if step is None:
            return False
        step.results.append(drop_none(source_call_id=call_id, content=content,
                                      subagent_trajectory_ref=subagents, extra=extra or None))
        return True

    def attach_refs(self, call_id: str, refs: list[dict]) -> bool:
        """Reference sub-agent trajectories from the result of the call that spawned them."""
        step = self._caller.get(call_id)
        if step is None:
            return False
        for i, result in enumerate(step.results):
            if result.get("source_call_id") == call_id:
                step.results[i] = drop_none(
                    source_call_id=call_id, content=result.get("content"),
                    subagent_trajectory_ref=(result.get("subagent_trajectory_ref") or []) + refs,
                    extra=result.get("extra"))
                return True
        step.results.append(drop_none(source_call_id=call_id, subagent_trajectory_ref=refs))
        return True

    def all_calls(self):
        for step in self._steps:
            yield from step.calls

    def observe(self, step: _Step, content, extra: dict | None = None, subagents=None) -> None:
        """A result tied to no call (a system event's output, an orphaned tool result)."""
        step.results.append(drop_none(content=content, subagent_trajectory_ref=subagents,
                                      extra=extra or None))

    # sub-agents, warnings, metadata ----------------------------------------------------------
    def embed(self, subdoc: dict, trajectory_id: str) -> list[dict]:
        """Embed a sub-agent trajectory; returns the ref list for the spawning call's result."""
        subdoc = {"schema_version": subdoc.get("schema_version", SCHEMA_VERSION),
                  **{k: v for k, v in subdoc.items() if k != "schema_version"}}
        subdoc["trajectory_id"] = trajectory_id
        ordered = {k: subdoc[k] for k in _ROOT_ORDER if k in subdoc}
        self.subagents.append(ordered)
        return [drop_none(trajectory_id=trajectory_id, session_id=subdoc.get("session_id"))]

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    # the document ----------------------------------------------------------------------------
    def build(self) -> dict:
        if not self._steps:
            self.warn("no steps could be read from this session")
            self.system("(empty session: no messages were recorded)")
        steps = [s.to_dict(i) for i, s in enumerate(self._steps, 1)]
        agent = drop_none(name=self.agent_name, version=self.version, model_name=self.model_name,
                          extra=self.agent_extra or None)
        extra = dict(self.extra)
        if self.warnings:
            extra["warnings"] = self.warnings
        return drop_none(schema_version=SCHEMA_VERSION, session_id=self.session_id,
                         trajectory_id=self.trajectory_id, agent=agent, steps=steps,
                         final_metrics=final_metrics(steps, self.subagents), extra=extra or None,
                         subagent_trajectories=self.subagents or None)


def unreadable_database(agent_name: str, session_id: str, reason: str) -> dict:
    """The document of a session whose database could not be read: valid, and saying why."""
    builder = TrajectoryBuilder(agent_name, session_id=session_id)
    builder.warn(f"the database cannot be read: {reason}")
    return builder.build()


_ROOT_ORDER = ("schema_version", "session_id", "trajectory_id", "agent", "steps", "notes",
               "final_metrics", "continued_trajectory_ref", "extra", "subagent_trajectories")


def final_metrics(steps: list[dict], subagents: list[dict] = ()) -> dict:
    """Totals over the steps plus each embedded sub-agent's own totals (Harbor's rule: a
    trajectory's total includes the sub-agents it spawned). A total no step reports is omitted."""
    sums = {"prompt_tokens": None, "completion_tokens": None, "cached_tokens": None, "cost_usd": None}
    for step in steps:
        m = step.get("metrics")
        if m:
            for key in sums:
                value = m.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    sums[key] = (sums[key] or 0) + value
    for sub in subagents:
        fm = sub.get("final_metrics") or {}
        for key in sums:
            value = fm.get("total_" + key)
            if value is not None:
                sums[key] = (sums[key] or 0) + value
    if sums["cost_usd"] is not None:
        sums["cost_usd"] = round(sums["cost_usd"], 10)
    return drop_none(total_prompt_tokens=sums["prompt_tokens"],
                     total_completion_tokens=sums["completion_tokens"],
                     total_cached_tokens=sums["cached_tokens"], total_cost_usd=sums["cost_usd"],
                     total_steps=len(steps))
