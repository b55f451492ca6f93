"""The searchable text of a document, kept next to it in the document cache, so that a repeated
`search --content` with words reads flat text instead of parsing documents.

The first content search of a document writes it: each step's text as `search.Query.locate`
sees it (its fields joined, lower-cased, in UTF-8), each followed by STEP_END, after a header
holding the document's facts (`documents.totals` without the stamp) and the text's length, so
that a truncated file is told from a whole one. `search.Query.count` counts matching steps
where they lie, without decoding (a UTF-8 string is in another exactly when its bytes are).
The search texts of the bench corpus are 40% of its documents' bytes; loading one needs no
parser. Every failure to read one is a miss: the document is searched instead, and the text
written again.
"""

from __future__ import annotations

import marshal

SEARCH_TEXT = ".search"  # the document cache's suffix for a document's searchable text
SEARCH_TEXT_MAGIC = b"tzst3"  # tzst2: facts without a title, outcome, commits (issue 30)
STEP_END = b"\xff"  # never in UTF-8: no word is found across two steps' texts


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def lowered_text(fields: list[tuple[str, str]]) -> bytes:
    """A step's text as `search.Query.locate` matches words in it, in UTF-8."""
    return utf8("\n".join(text for _, text in fields).lower())


def pack_search_text(steps: bytes, facts: dict) -> bytes:
    """What a repeated word search needs of a document, flat: the document's facts
    (`documents.totals` without the stamp) in a header that says how long the rest is (so that
    a truncated file is told from a whole one), then `steps_text`, searched where it lies."""
    head = marshal.dumps((facts, len(steps)))
    return SEARCH_TEXT_MAGIC + len(head).to_bytes(4, "little") + head + steps


def steps_text(lowered: list[bytes]) -> bytes:
    """Steps' `lowered_text`s, each followed by STEP_END, as `search.Query.count` reads them."""
    return b"".join(text + STEP_END for text in lowered)


def search_text_count(data: bytes, query) -> tuple[int, dict] | None:
    """(matching steps, facts) from a packed search text; None when it is not one whole (a
    miss: the document is searched instead)."""
    start = len(SEARCH_TEXT_MAGIC) + 4
    if not data.startswith(SEARCH_TEXT_MAGIC):
        return None
    length = int.from_bytes(data[len(SEARCH_TEXT_MAGIC):start], "little")
    try:
        facts, size = marshal.loads(data[start:start + length])
    except (EOFError, ValueError, TypeError):
        return None
    begin = start + length
    if not (isinstance(facts, dict) and size == len(data) - begin and (not size or data.endswith(STEP_END))):
        return None
    return query.count(data, begin), facts


def stored_search_text(session, env, kept_as: list, query) -> tuple[int, dict] | None:
    from rendering import doccache, documents

    data = doccache.get(env, documents.cache_key(session), session.short_id, kept_as, SEARCH_TEXT)
    return search_text_count(data, query) if data is not None else None


def store_search_text(session, env, kept_as: list, steps: list, facts: dict, query) -> bytes | None:
    """Keep a document's search text next to it, unless it is there already (a regex search
    does not read it); its `steps_text` when it was made."""
    from rendering import doccache, documents

    key = documents.cache_key(session)
    if query.pattern is not None and doccache.has(env, key, session.short_id, kept_as, SEARCH_TEXT):
        return None
    text = steps_text([lowered_text(fields) for _, _, fields in steps])
    own = {name: value for name, value in facts.items() if name != "stamp"}
    doccache.put(env, key, session.short_id, kept_as, pack_search_text(text, own), SEARCH_TEXT)
    return text
