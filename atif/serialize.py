"""ATIF documents as bytes: 2-space indent, UTF-8 (non-ASCII kept), a final newline.

orjson does the work. It refuses a few things native data can hold (integers beyond 64 bits,
lone surrogates from a `\\ud800` escape), so the standard library's json takes over for those
documents, with the same layout. Both are imported where they are used: importing them costs more
than a warm `search` spends on anything else of the kind, and that command never needs them.
"""

from __future__ import annotations

MAX_DEPTH = 128


def dumps(doc: dict) -> bytes:
    """Serialize a document. Native values nested deeper than MAX_DEPTH levels (orjson stops at
    255, Python's recursion earlier) are replaced by a note saying so."""
    from core.jsonlib import orjson

    try:
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    except (TypeError, orjson.JSONEncodeError):
        import json

        try:
            text = json.dumps(doc, indent=2, ensure_ascii=False, default=str)
        except (RecursionError, ValueError):
            return dumps(limit_depth(doc, MAX_DEPTH))
        return text.encode("utf-8", "replace") + b"\n"


def dumps_text(value) -> str:
    """A native value as the JSON text a document shows where the agent recorded no text (a
    structured tool result, arguments in a transcript): `dumps` without the final newline."""
    return dumps(value).decode().strip()


def limit_depth(value, depth: int):
    """A copy of `value` in which containers more than `depth` levels down become a note."""
    if isinstance(value, dict):
        if depth <= 0:
            return "[object nested too deeply: omitted]"
        return {k: limit_depth(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth <= 0:
            return "[array nested too deeply: omitted]"
        return [limit_depth(v, depth - 1) for v in value]
    return value


def loads(data: bytes | str):
    """Parse JSON; orjson first, the standard library for what orjson rejects (lone surrogates).
    Every failure is a ValueError, nesting too deep to parse included."""
    from core.jsonlib import orjson

    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        import json

        try:
            return json.loads(data)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
