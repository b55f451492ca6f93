"""The searchable text of a document, kept next to it in the document cache, so that a repeated
`search --content` with words reads flat text instead of parsing documents.

The first content search of a document writes it: each step's text as `search.Query.locate`
sees it (its fields lower-cased one by one, in UTF-8, joined by FIELD_END), each followed by
STEP_END; the steps an agent wrote for itself (`search.own_step`: its prompt, instructions,
injected context) after the others, so that a search counts them apart. A header says how long
each part is (a truncated file is told from a whole one), then holds the document's facts
(`documents.totals` without the stamp), decoded only when the caller has not got them already.
`search.Query.count` counts matching steps where they lie, without decoding (a UTF-8 string is
in another exactly when its bytes are). Loading one needs no parser. Every failure to read one
is a miss: the document is searched instead, and the text written again.
"""

from __future__ import annotations

import marshal
import struct

SEARCH_TEXT = ".search"  # the document cache's suffix for a document's searchable text
SEARCH_TEXT_MAGIC = b"tzst4"  # tzst3: no own steps apart, fields joined by "\n", facts decoded first
STEP_END = b"\xff"  # never in UTF-8: no word is found across two steps' texts
FIELD_END = b"\xfe"  # never in UTF-8 either: a phrase is found inside one field
_SIZES = struct.Struct("<3I")  # the lengths of the facts, of the steps and of the own steps
_HEAD = len(SEARCH_TEXT_MAGIC) + _SIZES.size


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def lowered_text(fields: list[tuple[str, str]]) -> bytes:
    """A step's text as `search.Query.locate` matches words in it, in UTF-8: each field
    lower-cased on its own (str.lower's final sigma depends on what follows)."""
    return FIELD_END.join(utf8(text.lower()) for _, text in fields)


def pack_search_text(steps: bytes, facts: dict, own: bytes = b"") -> bytes:
    """What a repeated word search needs of a document, flat: a header giving the lengths of
    the facts (`documents.totals` without the stamp), of `steps` and of `own` (the `steps_text`
    of the other steps, then of the agent's own ones), then those three."""
    packed = marshal.dumps(facts)
    return SEARCH_TEXT_MAGIC + _SIZES.pack(len(packed), len(steps), len(own)) + packed + steps + own


def steps_text(lowered: list[bytes]) -> bytes:
    """Steps' `lowered_text`s, each followed by STEP_END, as `search.Query.count` reads them."""
    return b"".join(text + STEP_END for text in lowered)


def search_text_count(data: bytes, query) -> tuple[int, int, bytes] | None:
    """(matching steps, matching own steps left out, the facts packed by marshal) from a packed
    search text (`facts` decodes them); None when it is not one whole (a miss: the document is
    searched instead). With `query.system`, own steps are counted with the others."""
    parts = _parts(data)
    if parts is None:
        return None
    begin, middle = parts
    found = query.count(data, begin, middle)
    mine = query.count(data, middle, len(data)) if middle < len(data) else 0
    return (found + mine, 0, data[_HEAD:begin]) if query.system else (found, mine, data[_HEAD:begin])


def _parts(data: bytes) -> tuple[int, int] | None:
    """Where a packed search text's steps begin and its own steps begin (they end with it);
    None when it is not one whole."""
    if not data.startswith(SEARCH_TEXT_MAGIC) or len(data) < _HEAD:
        return None
    packed, steps, own = _SIZES.unpack_from(data, len(SEARCH_TEXT_MAGIC))
    begin = _HEAD + packed
    middle = begin + steps
    if middle + own != len(data) or not all(not size or data[end - 1] == STEP_END[0]
                                             for size, end in ((steps, middle), (own, len(data)))):
        return None
    return begin, middle


def matching_steps(data: bytes, query) -> tuple[set, set]:
    """Which steps of a whole packed search text match a word query: the positions (from 0)
    among the document's other steps, and among its own steps (none without `query.system`),
    in `search.document_steps`' order, so that only those are looked at in the document."""
    begin, middle = _parts(data)
    sections = [(begin, middle)] + ([(middle, len(data))] if query.system else [])
    found = [{n for n, step in enumerate(data[start:end].split(STEP_END)[:-1]) if query.holds(step)}
             for start, end in sections]
    return found[0], found[1] if len(found) > 1 else set()


def facts(packed: bytes) -> dict | None:
    """The facts `search_text_count` handed back, decoded; None when they are not a dict."""
    try:
        found = marshal.loads(packed)
    except (EOFError, ValueError, TypeError):
        return None
    return found if isinstance(found, dict) else None


def stored_search_text(session, env, kept_as: list, query, base: str | None = None) -> tuple[tuple, bytes] | None:
    """`search_text_count`'s answer and the search text, None when it is not kept whole.
    `base`: the cache folder (`cache.cache_dir`), when the caller has it."""
    from rendering import doccache, documents

    data = doccache.get(env, documents.cache_key(session), session.short_id, kept_as, SEARCH_TEXT, base)
    found = search_text_count(data, query) if data is not None else None
    return (found, data) if found is not None else None


def store_search_text(session, env, kept_as: list, steps: list, facts: dict, query) -> tuple[bytes, bytes] | None:
    """Keep a document's search text next to it, unless it is there already (a regex search
    does not read it); the `steps_text` of its steps and of its own steps when it was made.
    `steps`: `search.document_steps`."""
    from rendering import doccache, documents

    key = documents.cache_key(session)
    if query.pattern is not None and doccache.has(env, key, session.short_id, kept_as, SEARCH_TEXT):
        return None
    texts = split_texts(steps)
    own_facts = {name: value for name, value in facts.items() if name != "stamp"}
    doccache.put(env, key, session.short_id, kept_as, pack_search_text(texts[0], own_facts, texts[1]), SEARCH_TEXT)
    return texts


def split_texts(steps: list) -> tuple[bytes, bytes]:
    """The `steps_text` of a document's other steps, and of its own steps."""
    return (steps_text([lowered_text(fields) for _, _, fields, own in steps if not own]),
            steps_text([lowered_text(fields) for _, _, fields, own in steps if own]))
