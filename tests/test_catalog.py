"""Short ids: derived from the agent's own id, stable, and lengthened only where two would
collide; `find` resolves every form of id a user may paste."""

import pytest

from agents.base import Session
from core.errors import UserError
from discovery import catalog


def sessions_with_digests(monkeypatch, digests: dict) -> list[Session]:
    made = [Session(agent="claude", native_id=name, source=f"/s/{name}.jsonl") for name in digests]
    monkeypatch.setattr(catalog, "full_hash", lambda s: digests[s.native_id])
    return made


def test_ids_are_eight_hex_digits_of_the_hash_and_stable():
    first = [Session(agent="claude", native_id="348a3463-5332-480a-8329-09f4fe2cc499", source="/x")]
    again = [Session(agent="claude", native_id="348a3463-5332-480a-8329-09f4fe2cc499", source="/y")]
    catalog.assign_short_ids(first)
    catalog.assign_short_ids(again)
    assert first[0].short_id == again[0].short_id == "cl-" + catalog.full_hash(first[0])[:8]


def test_only_colliding_ids_are_lengthened(monkeypatch):
    found = sessions_with_digests(monkeypatch, {
        "a": "abcdef01" + "1111" + "0" * 52,
        "b": "abcdef01" + "1111" + "1" * 52,   # shares 12 digits with a
        "c": "abcdef01" + "2222" + "0" * 52,   # shares 8 with a and b
        "d": "12345678" + "0" * 56,
    })
    catalog.assign_short_ids(found)
    assert [s.short_id for s in found] == ["cl-abcdef0111110000", "cl-abcdef0111111111",
                                           "cl-abcdef012222", "cl-12345678"]


def test_find_accepts_short_ids_longer_prefixes_file_names_and_native_ids(monkeypatch):
    found = sessions_with_digests(monkeypatch, {"0a1b2c3d-native": "feedface" + "9" * 56})
    catalog.assign_short_ids(found)
    (session,) = found
    session.started = 1_780_000_000
    listing = catalog.Catalog(found)
    for ident in ("cl-feedface", "cl-feedface99", catalog.file_name(session), "0a1b2c3d-native", "0a1b"):
        assert catalog.find(listing, ident) is session
    with pytest.raises(UserError, match="no session with id"):
        catalog.find(listing, "cl-00000000")


def test_ids_of_two_agents_sharing_digits_are_not_lengthened(monkeypatch):
    """The prefix tells agents apart: a session of another agent never changes an id (a
    discovery of one store gives the ids a discovery of every store gives)."""
    found = sessions_with_digests(monkeypatch, {"a": "abcdef01" + "1" * 56, "b": "abcdef01" + "2" * 56})
    found[1].agent = "codex"
    catalog.assign_short_ids(found)
    assert [s.short_id for s in found] == ["cl-abcdef01", "cx-abcdef01"]


def test_a_session_comes_back_from_its_cache_record_as_it_was():
    session = Session(agent="claude", native_id="n", source="/s", started=1.5, cwd="/w", title="t",
                      model="m", locator="l", extra={"format": "jsonl"})
    assert Session.from_cache(session.to_cache()) == session
    assert session.to_cache()[-1] is not session.extra  # a copy: the cache never shares it
