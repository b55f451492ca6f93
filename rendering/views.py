"""What memory/ (and an export) shows beside each session's document: its card (cards.py) and its
transcript (transcript.memory_transcript), each made from the redacted document alone.

Each view is kept on disk as a side file of the document cache (doccache.SUFFIXES), under the
stamp of the document it was made from, so that a warm read of every card or a warm `grep -r`
makes nothing again; its size is kept with the document's facts (`card_size`,
`transcript_size`), so that a `stat` neither reads nor makes it.
"""

from __future__ import annotations

from rendering import cards, doccache, documents, transcript

KINDS = ("card", "transcript")
NAME_SUFFIX = {"card": cards.CARD_SUFFIX, "transcript": ".transcript.md"}
SIZE_FACT = {"card": "card_size", "transcript": "transcript_size"}
_SIDE = {"card": ".card", "transcript": ".transcript"}  # in the document cache


def name_of(document_name: str, kind: str) -> str:
    """`<date>_<agent>_<id>.card.md` / `.transcript.md` beside `<date>_<agent>_<id>.atif.json`."""
    return document_name[: -len(".atif.json")] + NAME_SUFFIX[kind]


def made(kind: str, doc: dict, found: dict | None = None) -> bytes:
    """The view of a document (`found`: its `cards.facts`, when the caller has them)."""
    return cards.render(doc, found) if kind == "card" else transcript.memory_transcript(doc)


def kept(env, session, stamp: list, kind: str) -> bytes | None:
    """The view made from the document of `stamp` (documents.cache_stamp), when kept."""
    return doccache.get(env, documents.cache_key(session), session.short_id, stamp, _SIDE[kind])


def keep(env, session, stamp: list, kind: str, data: bytes) -> None:
    doccache.put(env, documents.cache_key(session), session.short_id, stamp, data, _SIDE[kind])


def made_and_kept(env, session, stamp: list, doc: dict, found: dict | None = None) -> dict:
    """Every view of the document of `stamp`, kept; their sizes, as facts name them."""
    sizes = {}
    for kind in KINDS:
        data = made(kind, doc, found)
        keep(env, session, stamp, kind, data)
        sizes[SIZE_FACT[kind]] = len(data)
    return sizes


def fresh_totals(session, env) -> dict:
    """`documents.fresh_totals` with the views made and kept on the way (the mount's workers'
    job): the sizes of the views join the facts."""
    stamp = documents.cache_stamp(session, env)
    doc, data = documents.document(session, env)
    found = cards.facts(doc)  # once, for the facts and the card
    return {**documents.totals(doc, data, stamp, found), **made_and_kept(env, session, stamp, doc, found)}
