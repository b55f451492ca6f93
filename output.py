"""Markdown tables sized for an agent's context: one line per row, pipes escaped, long cells
cut with an ellipsis."""

from __future__ import annotations


def cell(value, limit: int = 0) -> str:
    text = " ".join(str(value if value is not None else "").split())
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("|", "\\|")


def table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
