"""Markdown tables sized for an agent's context: one line per row, pipes escaped, long cells
cut with an ellipsis."""

from __future__ import annotations


from core import compiledre

_SURROGATE = compiledre.compile("[\ud800-\udfff]")
_CONTROL = compiledre.compile("[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Text that encodes as UTF-8: lone surrogates (from a file name that is not UTF-8) become
    U+FFFD."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # a lone surrogate fails (and is rare): faster than a regex pass
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


def cell(value, limit: int = 0) -> str:
    """A table cell: one line, valid text, no control characters (a first message holding a
    terminal escape sequence must not drive the user's terminal), `|` escaped."""
    text = value if type(value) is str else str(value if value is not None else "")
    if not (text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "):
        text = " ".join(printable(text).split())  # (a listing's first messages are one line already)
        text = _CONTROL.sub("\ufffd", text) if not text.isprintable() else text
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("|", "\\|")


def cut_at_word(text: str, limit: int) -> str:
    """`text` of at most `limit` characters: cut, when longer, after its last whole word that
    fits (mid-word only for a word longer than half the limit), and marked with `…`."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space >= limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"


def table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def human_bytes(count: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count} B"
