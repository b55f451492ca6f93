"""Totals a store keeps per session only (Goose's `accumulated_*` columns, Crush's `cost`).

Step metrics are the rule; when a store records usage only for the whole session there is
nothing to put on the steps, so the session's figures go to the document's `final_metrics`.
"""

from __future__ import annotations

from atif.build import drop_none

_KEYS = ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens", "total_cost_usd")


def apply(doc: dict, prompt=None, completion=None, cached=None, cost=None, *,
          includes_subagents: bool, extra: dict | None = None) -> None:
    """Set the session's own totals in `doc["final_metrics"]`.

    `includes_subagents`: the store's figure already counts the embedded sub-agents (Crush adds
    a task's cost to its parent's), so it replaces the computed total; otherwise it is added to
    what the builder summed from the embedded sub-agents (Harbor's rule: a total includes the
    sub-agents spawned). `final_metrics.extra.usage_source` then says the totals are not the
    sum of the step metrics."""
    final = dict(doc.get("final_metrics") or {})
    applied = False
    for key, value in zip(_KEYS, (prompt, completion, cached, cost)):
        if value is None:
            continue
        applied = True
        if includes_subagents or final.get(key) is None:
            final[key] = value
        else:
            final[key] = final[key] + value
    if final.get("total_cost_usd") is not None:
        final["total_cost_usd"] = round(final["total_cost_usd"], 10)
    merged_extra = {**(final.get("extra") or {}), **(extra or {})}
    if applied:  # as base.apply_session_totals: the totals are not the sum of the steps
        merged_extra["usage_source"] = "session totals"
    doc["final_metrics"] = drop_none(**{k: final.get(k) for k in _KEYS},
                                     total_steps=final.get("total_steps", len(doc.get("steps", []))),
                                     extra=merged_extra or None)
