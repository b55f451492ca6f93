"""`trajectoriz stats`: how much work the recorded sessions hold, per agent and overall.

Every number comes from the documents the mount serves: steps, tool calls and each session's
`final_metrics` (tokens and cost, sub-agents included), read from the facts cache so that only
sessions that changed since the last run are translated again (on every core).

Tokens per trajectory are a session's prompt + completion tokens (cached tokens are part of the
prompt tokens); their median, p90 (nearest rank) and max are over the sessions that recorded
token counts, since some agents record none.
"""

from __future__ import annotations

import math
import statistics


from commands.basics import write
from commands.search import scoped
from core.output import table
from rendering import documents

SUMS = ("steps", "tool_calls", "prompt", "completion", "cached", "cost")


def run_stats(args, env) -> int:
    from core.jsonlib import orjson

    sessions, project = scoped(args, env)
    facts = documents.Facts(env)
    try:
        found = facts.of_all(sessions)
    finally:
        facts.save()
    groups: dict = {}
    for session, totals in zip(sessions, found):
        groups.setdefault(session.agent, []).append(totals)
    report = {agent: summarize(rows) for agent, rows in sorted(groups.items())}
    overall = summarize(found)
    where = "every project" if project is None else project
    if args.json:
        write(orjson.dumps({"scope": where, "agents": report, "overall": overall}) + b"\n")
    else:
        write(markdown(where, report, overall))
    return 0


def summarize(rows: list[dict]) -> dict:
    """Sums over sessions (None where no session recorded the number) and the distribution of
    tokens per trajectory."""
    sums = {"sessions": len(rows)}
    for key in SUMS:
        values = [row[key] for row in rows if row.get(key) is not None]
        sums[key] = sum(values) if values else None
    if sums["cost"] is not None:
        sums["cost"] = round(sums["cost"], 6)
    tokens = sorted(tokens_of(row) for row in rows if tokens_of(row) is not None)
    sums["with_tokens"] = len(tokens)
    sums["tokens_per_trajectory"] = {
        "median": statistics.median(tokens) if tokens else None,
        "p90": tokens[math.ceil(0.9 * len(tokens)) - 1] if tokens else None,
        "max": tokens[-1] if tokens else None}
    return sums


def tokens_of(row: dict) -> int | None:
    if row.get("prompt") is None and row.get("completion") is None:
        return None
    return (row.get("prompt") or 0) + (row.get("completion") or 0)


def markdown(where: str, report: dict, overall: dict) -> str:
    headers = ["Agent", "Sessions", "Steps", "Tool calls", "Prompt tokens", "Cached tokens",
               "Completion tokens", "Cost (USD)", "Tokens/trajectory median", "p90", "max"]
    rows = [line(agent, sums) for agent, sums in report.items()] + [line("**all**", overall)]
    return (f"## Stats: {where} — {overall['sessions']} session(s)\n\n{table(headers, rows)}\n\n"
            f"Tokens per trajectory = prompt + completion tokens of a session, its sub-agents "
            f"included, over the {overall['with_tokens']} session(s) that recorded tokens. Cached "
            f"tokens are part of the prompt tokens; tool calls include the sub-agents'.\n")


def line(name: str, sums: dict) -> list[str]:
    spread = sums["tokens_per_trajectory"]
    cost = sums["cost"]
    cost = "–" if cost is None else f"{cost:,.2f}" if cost >= 1 else f"{cost:.4f}"
    return [name, number(sums["sessions"]), number(sums["steps"]), number(sums["tool_calls"]),
            number(sums["prompt"]), number(sums["cached"]), number(sums["completion"]), cost,
            number(spread["median"]), number(spread["p90"]), number(spread["max"])]


def number(value) -> str:
    return "–" if value is None else f"{round(value):,}"
