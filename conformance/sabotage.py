"""trajectoriz with a deliberately broken translator, to see the conformance run fail.

    python conformance/sabotage.py KIND trajectoriz-arguments...
    CONFORMANCE_SABOTAGE=KIND make conformance AGENTS=claude

Every agent's `translate` is wrapped so that its documents lose something a format change
typically loses:
- `errors`: failed tool results are no longer marked (`extra.is_error`, `extra.exit_code` dropped);
- `arguments`: tool calls lose their arguments;
- `final`: the last agent message is emptied;
- `tokens`: every step's metrics are counted twice.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import agents  # noqa: E402


def drop_errors(doc: dict) -> None:
    for step in doc["steps"]:
        for result in (step.get("observation") or {}).get("results") or []:
            extra = result.get("extra") or {}
            extra.pop("is_error", None)
            extra.pop("exit_code", None)


def drop_arguments(doc: dict) -> None:
    for step in doc["steps"]:
        for call in step.get("tool_calls") or []:
            call["arguments"] = {}


def drop_final(doc: dict) -> None:
    agent_steps = [s for s in doc["steps"] if s["source"] == "agent"]
    if agent_steps:
        agent_steps[-1]["message"] = ""


def double_tokens(doc: dict) -> None:
    for step in doc["steps"]:
        for key, value in (step.get("metrics") or {}).items():
            if isinstance(value, int):
                step["metrics"][key] = value * 2
    for key, value in (doc.get("final_metrics") or {}).items():
        if isinstance(value, int) and key != "total_steps":
            doc["final_metrics"][key] = value * 2


KINDS = {"errors": drop_errors, "arguments": drop_arguments, "final": drop_final, "tokens": double_tokens}


def sabotage(kind: str) -> None:
    damage = KINDS[kind]
    for module in agents.modules():
        def translate(session, env, _original=module.translate):
            doc = _original(session, env)
            damage(doc)
            return doc
        module.translate = translate


if __name__ == "__main__":
    sabotage(sys.argv[1])
    os.chdir(os.getcwd())
    import trajectoriz

    raise SystemExit(trajectoriz.main(sys.argv[2:]))
