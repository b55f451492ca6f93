"""ATIF documents as bytes: 2-space indent, UTF-8 (non-ASCII kept), a final newline.

orjson does the work. It refuses a few things native data can hold (integers beyond 64 bits,
lone surrogates from a `\\ud800` escape), so the standard library's json takes over for those
documents, with the same layout.
"""

from __future__ import annotations

import json

import orjson

_OPTIONS = orjson.OPT_INDENT_2


def dumps(doc: dict) -> bytes:
    try:
        return orjson.dumps(doc, option=_OPTIONS) + b"\n"
    except (TypeError, orjson.JSONEncodeError):
        text = json.dumps(doc, indent=2, ensure_ascii=False, default=str)
        return text.encode("utf-8", "replace") + b"\n"


def loads(data: bytes | str):
    """Parse JSON; orjson first, the standard library for what orjson rejects (lone surrogates)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
