"""The document cache (rendering/doccache.py): a redacted rendering is served again from disk while the
session's native files do not change, a changed session is translated again, unredacted
renderings are never stored, and the folder stays within its bound."""

from __future__ import annotations

import os
import shutil

import pytest

import agents
from discovery import catalog
from rendering import doccache, documents
from helpers import LIVE, base_env

CLAUDE_HOME = os.path.join(LIVE, "claude-2.1.332")


@pytest.fixture
def store(tmp_path):
    env = base_env(tmp_path)
    shutil.copytree(os.path.join(CLAUDE_HOME, ".claude"), os.path.join(env["HOME"], ".claude"))
    return env, catalog.discover(env).sessions


def cached_files(env) -> list[str]:
    try:
        return sorted(os.listdir(doccache.folder(env)))
    except FileNotFoundError:
        return []


def test_a_rendering_is_served_from_the_cache_until_the_session_changes(store, monkeypatch):
    env, sessions = store
    session = sessions[0]
    first = documents.render(session, env)
    assert len(cached_files(env)) == 1

    def broken(*_):
        raise AssertionError("translated again")

    monkeypatch.setattr(agents.load("claude"), "translate", broken)
    assert documents.render(session, env) == first
    doc, data = documents.document(session, env)
    assert data == first and doc["session_id"] == session.native_id
    monkeypatch.undo()

    with open(session.source, "ab") as handle:  # the session grows
        handle.write(b'{"type":"summary","summary":"later"}\n')
    documents.render(session, env)  # translated again, under a new name
    assert len(cached_files(env)) == 2


def test_unredacted_renderings_are_not_stored(store):
    env, sessions = store
    documents.render(sessions[0], env, redact=False)
    documents.translate(sessions[0], env, redact=False)
    assert cached_files(env) == []


def test_the_folder_stays_within_its_bound(store, monkeypatch):
    env, sessions = store
    sizes = [len(documents.render(s, env, redact=False)) for s in sessions]
    monkeypatch.setattr(doccache, "LIMIT_BYTES", max(sizes) + 1)
    monkeypatch.setattr(doccache, "_known_total", {})
    for session in sessions:
        documents.render(session, env)
    kept = cached_files(env)
    assert 1 <= len(kept) < len(sessions)
    total = sum(os.path.getsize(os.path.join(doccache.folder(env), name)) for name in kept)
    assert total <= max(sizes) + 1


def test_a_permission_change_is_not_served_from_the_cache(store):
    """chmod changes no content and no mtime, only the ctime: a session made unreadable must be
    read again (and say so), not served as it was."""
    env, sessions = store
    documents.render(sessions[0], env)
    os.chmod(sessions[0].source, 0o600)
    documents.render(sessions[0], env)
    assert len(cached_files(env)) == 2


def test_a_hit_refreshes_an_old_files_mtime_only(tmp_path):
    """Least recently used goes first: a hit makes an old file recent, while reading a file
    used minutes ago writes nothing."""
    env = base_env(tmp_path)
    doccache.put(env, "key", "id", [1], b"document")
    path = doccache.path_of(env, "key", "id", [1])
    recent = os.stat(path).st_mtime_ns - 10 ** 9
    os.utime(path, ns=(recent, recent))
    assert doccache.get(env, "key", "id", [1]) == b"document"
    assert os.stat(path).st_mtime_ns == recent
    os.utime(path, (1, 1))
    assert doccache.get(env, "key", "id", [1]) == b"document"
    assert os.stat(path).st_mtime > doccache.REFRESH_AFTER


def test_an_entry_that_cannot_be_deleted_still_counts(tmp_path, monkeypatch):
    """Eviction reports the bytes left in the folder: an entry it failed to delete is still
    there, so it still counts."""
    env = base_env(tmp_path)
    for n in range(3):
        doccache.put(env, f"key{n}", "id", [n], b"x" * 100)
        path = doccache.path_of(env, f"key{n}", "id", [n])
        os.utime(path, ns=(n * 10 ** 9, n * 10 ** 9))  # key0 oldest
    stuck = doccache.path_of(env, "key0", "id", [0])
    real_unlink = os.unlink

    def unlink(path, *args, **kwargs):
        if path == stuck:
            raise PermissionError(path)
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    left = doccache.evict(doccache.folder(env), 150, keep=doccache.path_of(env, "key2", "id", [2]))
    assert os.path.exists(stuck)
    assert left == sum(os.path.getsize(os.path.join(doccache.folder(env), name))
                       for name in os.listdir(doccache.folder(env)))
