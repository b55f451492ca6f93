"""trajectoriz memory: its file system without a mount (fast, everywhere), then mounted for real.

Mount tests mount with the CLI (background mode, or --foreground in a subprocess) and run every
client command under `timeout -s KILL`: a buggy server leaves its clients in uninterruptible
sleep, which SIGTERM cannot end. Each mount is taken down in `finally` (fusermount3 -u, then -uz,
then SIGKILL to its server). They are skipped only when FUSE is unavailable here, with the reason
(`memory.fuse_problem`); CI (.ci/run) installs fuse3 and runs as root, so there they run.

The store: the live stores of six agents in one $HOME, each agent's sessions re-homed into two
project folders whose names share a prefix, `proj` (a git repository) and `proj-2`. Expected
files and bytes come from `trajectoriz list` and `show`, so agents whose translators land later
are covered as they come.
"""

import errno
import glob
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from core import cache, mounts
from discovery import archive, catalog
from mount import memory, memoryfs, memoryindex
from rendering import cards, documents, views
from helpers import LIVE, ROOT, base_env, cli, needs

GIT = shutil.which("git")
HOMES = ["claude-2.1.332", "codex-0.171.0", "copilot-1.0.102", "gemini-0.61.0", "pi-0.73.1", "qwen-0.24.4"]
CLIENT_SECONDS = 10


# the store ------------------------------------------------------------------------------------------
def make_store(root) -> tuple[dict, str, str]:
    """A $HOME under `root` with the live stores, and the two projects (proj is a git repo)."""
    env = base_env(root)
    proj, proj2 = str(root / "work" / "proj"), str(root / "work" / "proj-2")
    for path in (proj, proj2):
        os.makedirs(path)
    if GIT:
        subprocess.run(["git", "init", "-q", proj], check=True, capture_output=True)
    else:
        os.makedirs(os.path.join(proj, ".git", "info"))  # what memory looks for, without git
        open(os.path.join(proj, ".git", "HEAD"), "w").write("ref: refs/heads/main\n")
    pattern = re.compile(r"/tmp/agents/proj-[a-z]+(-other)?")
    for name in HOMES:
        shutil.copytree(os.path.join(LIVE, name), env["HOME"], dirs_exist_ok=True)
    for folder, _, files in os.walk(env["HOME"]):
        for name in files:
            rehome(os.path.join(folder, name), pattern, proj, proj2)
    return env, proj, proj2


def rehome(path: str, pattern, proj: str, proj2: str) -> None:
    """Move the sessions recorded in /tmp/agents/proj-<agent>[-other] into proj [proj-2]. Binary
    files (SQLite) keep their paths: a length change would break them."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    if "\0" not in text:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(pattern.sub(lambda m: proj2 if m.group(1) else proj, text))


LONG_AGO_NS = time.time_ns() - 30 * 86400 * 10**9


def settle(env) -> None:
    """Date every file of the stores a month back: sessions nobody is recording any more."""
    for folder, _, files in os.walk(env["HOME"]):
        for name in files:
            os.utime(os.path.join(folder, name), ns=(LONG_AGO_NS, LONG_AGO_NS))


def claude_sessions(env) -> list[str]:
    """The two Claude transcripts recorded in proj (their folder keeps its original name)."""
    folder = os.path.join(env["HOME"], ".claude", "projects", "-tmp-agents-proj-claude")
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".jsonl"))


def listed(env, project: str) -> dict:
    """file name -> size, as `trajectoriz list` gives them."""
    result = cli("list", "--json", "--steps", "--dir", project, env=env)
    assert result.returncode == 0, result.stderr
    return {r["file"]: r["bytes"] for r in map(json.loads, result.stdout.splitlines())}


def append_user_message(path: str, text: str) -> None:
    """Append what Claude Code writes when the user sends another prompt."""
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    last = [r for r in records if r.get("uuid")][-1]
    prompt = next(r for r in records if r.get("type") == "user" and isinstance(r["message"]["content"], str))
    added = dict(prompt, uuid="0" * 8 + "-0000-4000-8000-" + "%012d" % len(records), parentUuid=last["uuid"],
                 timestamp="2026-11-29T23:00:00.000Z", message={"role": "user", "content": text})
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(added) + "\n")


def copy_session(path: str, new_id: str) -> str:
    """A second transcript of the same conversation under a new session id."""
    old_id = os.path.basename(path)[: -len(".jsonl")]
    copy = os.path.join(os.path.dirname(path), new_id + ".jsonl")
    with open(path, encoding="utf-8") as handle:
        text = handle.read().replace(old_id, new_id)
    with open(copy, "w", encoding="utf-8") as handle:
        handle.write(text)
    return copy


@pytest.fixture
def store(tmp_path):
    return make_store(tmp_path)


# the file system without a mount ---------------------------------------------------------------------
def new_fs(env, project) -> memoryfs.MemoryFS:
    return memoryfs.MemoryFS(project, env)


def expected_sessions(env, project) -> dict:
    """The sessions the mount must show, found from the scenario prompts (not from the scoping
    code under test): every session whose first prompt says it ran in `project`."""
    found = catalog.discover(env).sessions
    return {catalog.file_name(s): s for s in found if f" in {project}:" in s.title}


def read_all(fs, name, chunk=4096) -> tuple[bytes, SimpleNamespace]:
    fi = SimpleNamespace(flags=os.O_RDONLY, fh=0, keep_cache=0, direct_io=0)
    fs.open("/" + name, fi)
    parts, offset = [], 0
    while True:
        part = fs.read("/" + name, chunk, offset, fi)
        if not part:
            break
        parts.append(part)
        offset += len(part)
    fs.release("/" + name, fi)
    return b"".join(parts), fi


def test_listing_sizes_and_bytes_match_show(store):
    env, proj, _ = store
    fs = new_fs(env, proj)
    wanted = expected_sessions(env, proj)
    assert len(wanted) >= 2
    entries = fs.readdir("/", 0)
    assert [e[0] for e in entries[:4]] == [".", "..", memoryfs.README, memoryindex.INDEX]
    transcripts = [views.name_of(n, "transcript") for n in wanted]
    assert sorted(e[0] for e in entries[4:]) == sorted([*wanted, *map(cards.card_name, wanted), *transcripts])
    assert {e[1] for e in entries[4:] if e[0] in wanted} == {memoryfs.LINK_MODE}  # documents: symlinks
    assert memoryfs.DOCUMENTS not in {e[0] for e in entries}  # found by name, never listed
    assert fs.getattr("/")["st_mode"] == fs.getattr("/" + memoryfs.DOCUMENTS)["st_mode"] == memoryfs.DIR_MODE
    assert sorted(e[0] for e in fs.readdir("/" + memoryfs.DOCUMENTS, 0)[2:]) == sorted(wanted)
    for name, session in wanted.items():
        card = cards.card_name(name)  # its size before its document was rendered: made to answer
        before = fs.getattr("/" + card)["st_size"]
        rendered = documents.render(session, env)
        link = fs.getattr("/" + name)
        assert link["st_mode"] == memoryfs.LINK_MODE and fs.readlink("/" + name) == f".atif/{name}"
        assert link["st_size"] == len(f".atif/{name}")
        attrs = fs.getattr("/" + memoryfs.document_path(name))
        assert attrs["st_mode"] == memoryfs.FILE_MODE and attrs["st_size"] == len(rendered)
        assert attrs["st_blocks"] * 512 >= len(rendered)
        assert read_all(fs, memoryfs.document_path(name))[0] == rendered
        card_bytes = read_all(fs, card)[0]  # its size from the document's facts now
        bare = cards.render(documents.translate(session, env))  # then its related sessions, from facts
        rest = card_bytes[len(bare):]
        assert card_bytes.startswith(bare) and (rest == b"" or rest.startswith(b"\n## Related sessions ("))
        assert fs.getattr("/" + card)["st_size"] == len(card_bytes) and before <= len(card_bytes)
        assert card_bytes.startswith(b"# SCENARIO ") and " · outcome: completed · ".encode() in card_bytes
        transcript = views.name_of(name, "transcript")
        transcript_bytes = read_all(fs, transcript)[0]
        assert transcript_bytes == views.made("transcript", documents.translate(session, env))
        assert fs.getattr("/" + transcript)["st_size"] == len(transcript_bytes) and b"SCENARIO-DONE" in transcript_bytes
    readme, _ = read_all(fs, memoryfs.README)
    assert fs.getattr("/" + memoryfs.README)["st_size"] == len(readme)
    assert f"({len(wanted)} session(s))" in readme.decode() and "generates when a file is read" in readme.decode()


def test_cards_and_transcripts_are_kept_beside_the_documents(store, monkeypatch):
    """Made once, then kept on disk beside the cached document with their sizes among the
    facts: a later mount stats and reads every card and transcript without making one, nor
    parsing a document."""
    env, proj, _ = store
    fs = new_fs(env, proj)
    names = [views.name_of(n, kind) for n in expected_sessions(env, proj) for kind in views.KINDS]
    first = {name: read_all(fs, name)[0] for name in names}
    fs.destroy("/")
    monkeypatch.setattr(views, "made", lambda *a: pytest.fail("a view was made again"))
    monkeypatch.setattr(documents, "_rendered", lambda *a: pytest.fail("a document was rendered again"))
    import atif.serialize
    monkeypatch.setattr(atif.serialize, "loads", lambda *a: pytest.fail("a document was parsed"))
    again = new_fs(env, proj)
    assert {name: again.getattr("/" + name)["st_size"] for name in names} == {n: len(d) for n, d in first.items()}
    assert {name: read_all(again, name)[0] for name in names} == first


def test_listing_translates_nothing(store, monkeypatch):
    env, proj, _ = store
    fs = new_fs(env, proj)
    monkeypatch.setattr(documents, "translate", lambda *a: pytest.fail("listing translated"))
    assert len(fs.readdir("/", 0)) == 4 + 3 * len(expected_sessions(env, proj))  # documents, cards, transcripts


def index_rows(data: bytes) -> dict:
    """File name -> the cells of its INDEX.md row."""
    rows = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            for line in data.decode().splitlines() if line.startswith("| `")]
    return {cells[0][1:-1]: cells[1:] for cells in rows}


def test_index_s_first_read_has_every_session_s_facts_and_the_next_mount_renders_none(store, monkeypatch):
    """The first read of INDEX.md on a fresh cache renders the sessions it knows no facts of
    before answering (here, without workers, in the server), so every row has its steps and
    outcome; the facts are kept: a later mount's INDEX.md renders nothing and is the same."""
    env, proj, _ = store
    fs = new_fs(env, proj)
    wanted = expected_sessions(env, proj)
    index, _ = read_all(fs, memoryindex.INDEX)
    assert fs.getattr("/" + memoryindex.INDEX)["st_size"] == len(index)
    rows = index_rows(index)
    assert list(rows) == [n for n in (catalog.file_name(s) for s in catalog.discover(env).sessions) if n in wanted]
    for name, row in rows.items():
        doc = documents.translate(wanted[name], env)
        assert row[2] == str(len(doc["steps"])) and row[4] == "completed" and row[6] == "note.txt", name
    assert all(r[1] == wanted[n].agent and r[3].startswith("SCENARIO") for n, r in rows.items())
    assert b"still being read" not in index and b"blank" not in index
    fs.destroy("/")
    monkeypatch.setattr(documents, "_rendered", lambda *a: pytest.fail("the index rendered a session"))
    assert read_all(new_fs(env, proj), memoryindex.INDEX)[0] == index


def test_past_its_bound_index_says_which_rows_are_pending(store, monkeypatch):
    """Rendering past INDEX_SECONDS: the rows not rendered yet are blank and INDEX.md says how many
    and to read it again; each version of a session is waited for once."""
    env, proj, _ = store
    monkeypatch.setattr(memoryfs, "INDEX_SECONDS", 0.0)
    fs = new_fs(env, proj)
    index = read_all(fs, memoryindex.INDEX)[0].decode()
    wanted = expected_sessions(env, proj)
    assert f"{len(wanted)} session(s) are still being read" in index and "read INDEX.md again" in index
    assert all(r[2] == "" for r in index_rows(index.encode()).values())
    monkeypatch.setattr(documents, "_rendered", lambda *a: pytest.fail("waited twice for one version"))
    assert read_all(fs, memoryindex.INDEX)[0].decode() == index


def test_writes_fail_with_erofs(store):
    env, proj, _ = store
    fs = new_fs(env, proj)
    name = "/" + next(iter(expected_sessions(env, proj)))
    attempts = [lambda: fs.write(name, b"x", 0, None), lambda: fs.create("/new", 0o644, None),
                lambda: fs.mkdir("/dir", 0o755), lambda: fs.rename(name, "/other"),
                lambda: fs.chmod(name, 0o777), lambda: fs.truncate(name, 0),
                lambda: fs.unlink(name), lambda: fs.open(name, SimpleNamespace(flags=os.O_WRONLY)),
                lambda: fs.open(name, SimpleNamespace(flags=os.O_RDWR))]
    for attempt in attempts:
        with pytest.raises(OSError) as caught:
            attempt()
        assert caught.value.errno == errno.EROFS


def test_only_operations_are_public():
    """mfusepy registers any attribute named like a FUSE operation as one (`lock`, `flush`...)."""
    public = {n for n in dir(memoryfs.MemoryFS) if not n.startswith("_")}
    assert public == {"use_ns", "init_with_config", "destroy", "getattr", "getxattr", "opendir", "readdir",
                      "readlink", "statfs",
                      "open", "read", "release", "chmod", "chown", "create", "fallocate", "link", "mkdir",
                      "mknod", "removexattr", "rename", "rmdir", "setxattr", "symlink", "truncate", "unlink",
                      "utimens", "write"}


def test_deleted_and_new_sessions(store):
    env, proj, _ = store
    fs = new_fs(env, proj)
    first, second = claude_sessions(env)
    names = {s.source: n for n, s in expected_sessions(env, proj).items()}
    os.remove(first)
    with pytest.raises(OSError) as caught:
        fs.getattr("/" + names[first])  # at once, before any rescan
    assert caught.value.errno == errno.ENOENT
    copy = copy_session(second, "11111111-2222-4333-8444-555555555555")
    fs._refresh()
    now = {e[0] for e in fs.readdir("/", 0)}
    assert names[first] not in now and names[second] in now
    added = {n for n, s in expected_sessions(env, proj).items() if s.source == copy}
    assert len(added) == 1 and added <= now
    assert read_all(fs, names[second])[0] == documents.render(expected_sessions(env, proj)[names[second]], env)
    with pytest.raises(OSError) as caught:
        fs.getattr("/no-such-file")
    assert caught.value.errno == errno.ENOENT


def test_the_kernel_keeps_the_directory_s_entries_while_the_names_stay_the_same(store):
    """The kernel is told to keep the entries it read (cache_readdir) and, at the next open, to
    keep them (keep_cache) only while the listing has the same names in the same order; a
    readdir lists the listing of its moment, whatever handle asks (an older one cached under
    the new listing's mtime would stay)."""
    env, proj, _ = store
    fs = new_fs(env, proj)
    first, second = claude_sessions(env)

    def opened():
        fi = SimpleNamespace(fh=0, keep_cache=0, cache_readdir=0)
        assert fs.opendir("/", fi) == 0 and fi.cache_readdir == 1
        return fi

    early = opened()
    assert early.keep_cache == 0 and opened().keep_cache == 1
    fs._refresh()  # the same names: nothing swapped in
    assert opened().keep_cache == 1
    changed = fs.getattr("/")["st_mtime"]
    copy = copy_session(second, "33333333-4444-4555-8666-777777777777")
    fs._refresh()
    added = next(n for n, s in expected_sessions(env, proj).items() if s.source == copy)
    assert opened().keep_cache == 0 and fs.getattr("/")["st_mtime"] != changed
    assert added in {e[0] for e in fs.readdir("/", early.fh)}  # opened before: today's listing
    with pytest.raises(OSError) as caught:
        fs.opendir("/" + added, SimpleNamespace(fh=0, keep_cache=0, cache_readdir=0))
    assert caught.value.errno == errno.ENOTDIR


def test_a_listing_in_another_order_is_another_listing(store):
    """libfuse's directory offsets are positions: the same names in another order (a session's
    start time moved) change the listing's stamp, so the kernel keeps no entries read in the
    old order."""
    env, proj, _ = store
    fs = new_fs(env, proj)
    listing = fs._listing
    sessions = list(listing.files.values())
    assert memoryfs.Listing(proj, sessions, listing).changed_ns == listing.changed_ns
    assert memoryfs.Listing(proj, sessions[::-1], listing).changed_ns != listing.changed_ns


def opened(fs, name) -> SimpleNamespace:
    fi = SimpleNamespace(flags=os.O_RDONLY, fh=0, keep_cache=0, direct_io=0)
    fs.open("/" + name, fi)
    return fi


def test_sizes_and_bytes_agree_while_a_session_grows(store):
    env, proj, _ = store
    settle(env)
    fs = new_fs(env, proj)
    source = claude_sessions(env)[0]
    name, session = next((n, s) for n, s in expected_sessions(env, proj).items() if s.source == source)
    path = "/" + memoryfs.document_path(name)
    before = documents.render(session, env)
    fi = opened(fs, name)
    assert fi.direct_io == 0  # settled: read through the page cache
    append_user_message(source, "GROWN-MARKER and then?")
    after = documents.render(session, env)
    assert len(after) > len(before) and b"GROWN-MARKER" in after
    # the open handle keeps its bytes, and every size the kernel can ask for matches them
    assert fs.getattr(path, fi)["st_size"] == len(before)
    assert fs.getattr(path)["st_size"] == len(before)
    assert fs.read(path, len(after) + 10, 0, fi) == before
    fs.release(path, fi)
    assert fs.getattr(path)["st_size"] == len(after)
    data, reopened = read_all(fs, name)
    assert data == after and reopened.direct_io == 1  # being recorded: past the page cache
    settle(env)
    data, settled = read_all(fs, name)
    assert data == after and settled.direct_io == 0 and settled.keep_cache == 0  # pages may be older
    _, again = read_all(fs, name)
    assert again.direct_io == 0 and again.keep_cache == 1  # unchanged: the kernel may keep them


def test_a_change_is_served_once_the_page_cache_readers_are_gone(store):
    """The kernel shares one page cache and one size per file among all its handles: while a
    handle reads through it, later opens get the same bytes (past the cache); then the new ones.
    A stat without a handle answers for the handle its thread opened."""
    env, proj, _ = store
    settle(env)
    asking = [0]
    fs = memoryfs.MemoryFS(proj, env, caller=lambda: asking[-1])
    source = claude_sessions(env)[0]
    name, session = next((n, s) for n, s in expected_sessions(env, proj).items() if s.source == source)
    path = "/" + memoryfs.document_path(name)
    before = documents.render(session, env)
    asking.append(101)
    reading = opened(fs, name)
    append_user_message(source, "GROWN-MARKER and then?")
    after = documents.render(session, env)
    asking.append(102)
    held = opened(fs, name)
    assert held.direct_io == 1 and fs.read(path, len(after), 0, held) == before
    assert fs.getattr(path)["st_size"] == len(before)
    fs.release(path, reading)
    asking.append(103)
    fresh = opened(fs, name)
    assert fresh.direct_io == 1 and fs.read(path, len(after), 0, fresh) == after
    for asker, size in ((102, len(before)), (103, len(after)), (104, len(after))):
        asking.append(asker)
        assert fs.getattr(path)["st_size"] == size, asker
    fs.release(path, held)
    fs.release(path, fresh)
    assert fs.getattr(path)["st_size"] == len(after)


def test_sizes_persist_and_are_saved_in_batches(store, monkeypatch):
    env, proj, _ = store
    facts_file = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", documents.FACTS_FILE)
    fs = new_fs(env, proj)
    names = list(expected_sessions(env, proj))
    sizes = {n: fs.getattr("/" + memoryfs.document_path(n))["st_size"] for n in names}
    assert not os.path.exists(facts_file)  # no write per stat
    fs.destroy("/")
    saved = cache.load(env, documents.FACTS_FILE)
    assert len(saved) == len(names)
    monkeypatch.setattr(documents, "translate", lambda *a: pytest.fail("translated a cached size"))
    fresh = new_fs(env, proj)
    assert {n: fresh.getattr("/" + memoryfs.document_path(n))["st_size"] for n in names} == sizes


def test_byte_cache_is_bounded_by_bytes():
    cache = memoryfs.ByteCache(limit=100)
    for key in "abcd":
        cache.put(key, [1], bytes(40))
    assert cache.total == 80 and cache.get("a", [1]) is None and cache.get("b", [1]) is None
    assert cache.get("c", [1]) == bytes(40) and cache.get("c", [2]) is None  # another stamp
    cache.put("e", [1], bytes(40))  # "c" was used last, so "d" goes
    assert cache.get("d", [1]) is None and cache.get("c", [1]) is not None
    cache.put("big", [1], bytes(101))
    assert cache.get("big", [1]) is None and cache.total <= 100


def test_a_walk_keeps_what_the_byte_cache_holds():
    """Two walks over ten documents, four of which fit: least-recently-used eviction has every
    document of the second walk miss; a walk that does not evict (`evict=False`, as memoryfs
    puts during `grep -r`) finds the four it kept (before: 64 MB against a project's 100 MB of
    documents, a warm `grep -r` read every one from the document cache)."""
    def walk(cache, evict: bool) -> int:
        hits = 0
        for key in "abcdefghij":
            if cache.get(key, [1]) is not None:
                hits += 1
            else:
                cache.put(key, [1], bytes(25), evict=evict)
        return hits

    lru, kept = memoryfs.ByteCache(limit=100), memoryfs.ByteCache(limit=100)
    assert (walk(lru, True), walk(lru, True)) == (0, 0)
    assert (walk(kept, False), walk(kept, False)) == (0, 4)
    kept.put("k", [1], bytes(25))  # outside a walk: the least recently used goes
    assert kept.get("k", [1]) is not None and kept.total == 100


# mount table and git -------------------------------------------------------------------------------
MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
42 27 0:39 / /home/u/proj/memory ro,nosuid,nodev,relatime - fuse.trajectoriz trajectoriz ro,user_id=0
43 27 0:40 / /home/u/my\\040docs rw,relatime shared:5 - fuse.sshfs u@host:/docs rw
44 27 0:41 / /home rw - fuse.gcsfuse bucket rw
"""


def test_mount_table_and_what_discovery_avoids():
    table = mounts.parse_mountinfo(MOUNTINFO)
    assert [m.point for m in table] == ["/proc", "/home/u/proj/memory", "/home/u/my docs", "/home"]
    assert [m.is_ours for m in table] == [False, True, False, False]
    assert [m.is_fuse for m in table] == [False, True, True, True]
    avoided = mounts.avoided({"HOME": "/home/u"}, table)
    assert avoided == ["/home/u/proj/memory", "/home/u/my docs"]  # /home holds $HOME: read it
    assert mounts.inside("/home/u/proj/memory/x.json", avoided)
    assert mounts.inside("/home/u/proj/memory", avoided)
    assert not mounts.inside("/home/u/proj/memory-2/x", avoided)
    assert not mounts.inside("/home/u/proj", avoided)
    assert mounts.find("/home/u/proj/memory/", table).fstype == "fuse.trajectoriz"
    bsd = mounts.parse_mount_output("trajectoriz on /Users/u/p/memory (macfuse, nodev, read-only)\n")
    assert bsd[0].point == "/Users/u/p/memory" and bsd[0].is_ours


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@needs("git")
def test_git_exclude_is_written_once_also_from_a_linked_worktree(tmp_path):
    repo, linked = tmp_path / "repo", tmp_path / "linked"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x", cwd=repo)
    git("worktree", "add", "-q", str(linked), cwd=repo)
    assert (linked / ".git").is_file()
    exclude = repo / ".git" / "info" / "exclude"
    for point in (repo / "memory", repo / "memory", linked / "sub dir" / "mem[1]"):
        point.mkdir(parents=True, exist_ok=True)
        (point / "file").write_text("x")
        memory.exclude_from_git(str(point))
    lines = exclude.read_text().splitlines()
    assert lines.count("/memory/") == 1 and lines.count("/sub\\ dir/mem\\[1\\]/") == 1
    assert "memory" not in git("status", "--porcelain", cwd=repo)
    assert "sub dir/" not in git("status", "--porcelain", "--untracked-files=all", cwd=linked)
    assert not (linked / ".gitignore").exists() and not (repo / ".gitignore").exists()


def test_failure_reason_names_cause_and_fix():
    log = ("Serving trajectory memory for /p at /p/memory (Ctrl-C or SIGTERM unmounts).\n"
           "fuse: device not found, try 'modprobe fuse' first\n"
           "trajectoriz: cannot mount /p/memory: libfuse refused (its reason is on the line above)\n")
    reason = memory.failure_reason(log, "/log")
    assert "--device /dev/fuse" in reason and "trajectoriz export" in reason
    assert memory.failure_reason("trajectoriz: --dir /x: no such directory\n", "/log") == "--dir /x: no such directory"


# mounted for real -----------------------------------------------------------------------------------
FUSE_PROBLEM = memory.fuse_problem() or (None if shutil.which("fusermount3") or shutil.which("fusermount")
                                         else "no fusermount3")
needs_fuse = pytest.mark.skipif(FUSE_PROBLEM is not None, reason=f"FUSE unavailable: {FUSE_PROBLEM}")


def client(*command, cwd=None, seconds=CLIENT_SECONDS, input=None) -> subprocess.CompletedProcess:
    return subprocess.run(["timeout", "-s", "KILL", str(seconds), *command], cwd=cwd,
                          capture_output=True, text=True, input=input.decode() if isinstance(input, bytes) else input)


def servers_of(point: str) -> list[int]:
    """Every process serving `point` (whatever the test did to the state file)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            arguments = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"--foreground" in arguments and os.fsencode(point) in arguments:
            found.append(int(pid))
    return found


def watchers_of(pid: int) -> list[int]:
    """fusermount3's auto_unmount helper, a child of the server."""
    children = []
    for task in os.listdir(f"/proc/{pid}/task"):
        children += open(f"/proc/{pid}/task/{task}/children").read().split()
    return [int(c) for c in children]


def take_down(point: str) -> None:
    for flag in ("-u", "-uz"):
        if mounts.find(point) is None:
            break
        for tool in ("fusermount3", "fusermount"):
            if shutil.which(tool):
                client(tool, flag, point)
                break
    for pid in servers_of(point):
        os.kill(pid, signal.SIGKILL)


def wait_for(condition, seconds: float, step: float = 0.1):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return condition()


def mount(env, cwd, *args) -> tuple[str, int]:
    result = cli("memory", *args, env=env, cwd=cwd, timeout=60)
    assert result.returncode == 0, result.stderr
    point = result.stdout.decode().splitlines()[1].strip()[: -len(" (daemonized).")]
    status = cli("memory", "--status", point, env=env, cwd=cwd)
    return point, int(re.search(rb"server pid (\d+)", status.stdout).group(1))


@pytest.fixture(scope="module")
def mounted(tmp_path_factory):
    """proj's memory at proj/memory, mounted in the background as a user would."""
    if FUSE_PROBLEM:
        pytest.skip(f"FUSE unavailable: {FUSE_PROBLEM}")
    env, proj, proj2 = make_store(tmp_path_factory.mktemp("mounted"))
    settle(env)  # as most sessions of a project are: read through the page cache
    point = os.path.join(proj, "memory")
    try:
        result = cli("memory", env=env, cwd=proj, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.decode() == (f"Mounting trajectory memory for {proj} at\n  {point} (daemonized).\n"
                                          "Unmount with: trajectoriz memory --unmount\n")
        yield SimpleNamespace(env=env, proj=proj, proj2=proj2, point=point)
        done = cli("memory", "--unmount", env=env, cwd=proj)
        assert done.returncode == 0 and mounts.find(point) is None, done.stderr
    finally:
        take_down(point)


def sizes_seen_by_ls(point: str) -> dict:
    """name -> size as `ls -lL` gives them (a document's, through its symlink)."""
    listing = client("ls", "-lL", "--time-style=+", point)
    assert listing.returncode == 0, listing.stderr
    found = {}
    for line in listing.stdout.splitlines()[1:]:
        fields = line.split()
        assert fields[0] == "-r--r--r--", line
        found[fields[-1]] = int(fields[4])
    return found


def links_seen_by_ls(point: str) -> dict:
    """name -> (mode, size, target) of what `ls -l` shows as symlinks."""
    listing = client("ls", "-l", "--time-style=+", point)
    assert listing.returncode == 0, listing.stderr
    return {fields[-3]: (fields[0], int(fields[4]), fields[-1]) for fields in map(str.split, listing.stdout.splitlines()[1:])
            if fields[0].startswith("l")}


@needs_fuse
def test_ls_shows_this_projects_sessions_with_the_sizes_show_prints(mounted):
    env, point = mounted.env, mounted.point
    seen = sizes_seen_by_ls(point)
    wanted = listed(env, mounted.proj)
    assert len(wanted) >= 2 and {n: s for n, s in seen.items() if n.endswith(".atif.json")} == wanted
    assert {n for n in seen if n.endswith(".card.md")} == {cards.card_name(n) for n in wanted}  # one each
    assert {n for n in seen if n.endswith(".transcript.md")} == {views.name_of(n, "transcript") for n in wanted}
    assert links_seen_by_ls(point) == {n: ("lrwxrwxrwx", len(f".atif/{n}"), f".atif/{n}") for n in wanted}
    assert ".atif" not in client("ls", "-a", point).stdout.split()  # found by name, never listed
    assert sorted(client("ls", os.path.join(point, ".atif")).stdout.split()) == sorted(wanted)
    assert not set(seen) & set(listed(env, mounted.proj2))  # proj-2 shares the prefix, not the project
    for name, size in wanted.items():
        shown = cli("show", name, env=env)
        assert len(shown.stdout) == size
        assert client("cat", os.path.join(point, name)).stdout.encode() == shown.stdout
    assert client("stat", "-c", "%a", point).stdout.strip() == "555"


@needs_fuse
@needs("rg", "jq")
def test_tools_read_complete_correct_content(mounted):
    env, point = mounted.env, mounted.point
    wanted = listed(env, mounted.proj)
    files = [os.path.join(point, n) for n in sorted(wanted)]
    counts = client("wc", "-c", *files).stdout.splitlines()
    assert [int(line.split()[0]) for line in counts[:-1]] == [wanted[n] for n in sorted(wanted)]
    card_files = [cards.card_name(f) for f in files]  # which quote the final answer
    transcript_files = [views.name_of(f, "transcript") for f in files]
    done = client("grep", "-r", "-l", "SCENARIO-DONE", point).stdout.split()  # the documents are symlinks,
    assert sorted(done) == sorted(card_files + transcript_files)  # which grep -r and rg skip when recursing
    assert sorted(client("rg", "-l", "SCENARIO-DONE", point).stdout.split()) == sorted(card_files + transcript_files)
    named = client("grep", "-l", "SCENARIO-DONE", *files).stdout.split()  # named, they are followed
    assert sorted(named) == sorted(files) == sorted(client("rg", "-l", "SCENARIO-DONE", *files).stdout.split())
    ids = client("jq", "-r", ".extra.short_id", *files).stdout.split()
    assert ids == [n.rsplit("_", 1)[1][: -len(".atif.json")] for n in sorted(wanted)]
    loaded = client("python3", "-c", "import json, sys; print(sum(len(json.load(open(f))['steps']) for f in sys.argv[1:]))", *files)
    assert int(loaded.stdout) == sum(len(json.loads(cli("show", n, env=env).stdout)["steps"]) for n in wanted)
    copy = os.path.join(mounted.proj, "copy.json")
    assert client("cp", files[0], copy).returncode == 0
    assert open(copy, "rb").read() == cli("show", sorted(wanted)[0], env=env).stdout
    os.remove(copy)
    total = sum(wanted.values()) + sum(os.path.getsize(os.path.join(point, n)) for n in ("README.md", "INDEX.md")) \
        + sum(len(client("cat", f).stdout.encode()) for f in card_files + transcript_files)
    assert int(client("du", "-s", "-b", "-L", point).stdout.split()[0]) == total
    links = sum(len(f".atif/{n}") for n in wanted)  # without -L, du counts the symlinks, not their documents
    assert int(client("du", "-s", "-b", point).stdout.split()[0]) == total - sum(wanted.values()) + links
    big = max(wanted.values())
    found = client("find", "-L", point, "-size", f"+{big - 1}c", "-name", "*.atif.json").stdout.split()
    assert [os.path.basename(f) for f in found] == [n for n, s in wanted.items() if s == big]
    assert sorted(client("find", point, "-name", "*.atif.json").stdout.split()) == sorted(files)


@needs_fuse
@needs("rg")
def test_grep_and_rg_over_the_mount_return_lines_of_cards_and_transcripts_not_json(mounted):
    """What an agent's first `grep -rn WORDS memory/` or `rg -n WORDS memory/` returns: lines of
    the cards and transcripts, never a line of a document (a JSON line can hold tens of KB);
    the documents stay one read away by their names (jq, cat, Python)."""
    env, point = mounted.env, mounted.point
    wanted = listed(env, mounted.proj)
    for command in (["grep", "-rn", "note.txt", point], ["rg", "-n", "note.txt", point]):
        lines = client(*command).stdout.splitlines()
        hit_files = {line.split(":", 1)[0] for line in lines}
        kinds = {f.rsplit(".", 2)[-2] for f in hit_files if os.path.basename(f) != "INDEX.md"}
        assert lines and kinds == {"card", "transcript"} and not any(".atif" in f for f in hit_files), command
    name = sorted(wanted)[0]
    path = os.path.join(point, name)
    shown = cli("show", name, env=env).stdout
    assert client("cat", path).stdout.encode() == shown
    assert client("jq", "-c", ".", path).stdout.encode() == client("jq", "-c", ".", "-", input=shown).stdout.encode()
    loaded = client("python3", "-c", "import json, sys; print(json.load(open(sys.argv[1]))['extra']['short_id'])", path)
    assert loaded.stdout.strip() == name.rsplit("_", 1)[1][: -len(".atif.json")]
    assert os.path.realpath(path) == os.path.join(point, ".atif", name) and os.path.getsize(path) == len(shown)


@needs_fuse
def test_writes_fail_with_read_only_file_system(mounted):
    point = mounted.point
    victim = os.path.join(point, "README.md")
    attempts = [["touch", os.path.join(point, "new")], ["sh", "-c", f"echo x > '{victim}'"],
                ["mkdir", os.path.join(point, "dir")], ["mv", victim, os.path.join(point, "moved")],
                ["chmod", "666", victim], ["truncate", "-s", "0", victim], ["rm", "-f", victim]]
    for attempt in attempts:
        result = client(*attempt)
        assert result.returncode != 0 and "Read-only file system" in result.stderr, attempt
    assert os.path.getsize(victim) > 0
    executed = client(victim)  # the kernel checks a file's execute bits even without default_permissions
    assert executed.returncode != 0 and "Permission denied" in executed.stderr


@needs_fuse
def test_git_ignores_the_mount_and_a_second_mount_changes_nothing(mounted):
    env, proj = mounted.env, mounted.proj
    exclude = open(os.path.join(proj, ".git", "info", "exclude")).read().splitlines()
    assert exclude.count("/memory/") == 1
    if GIT:
        assert git("status", "--porcelain", cwd=proj) == ""
    again = cli("memory", env=env, cwd=proj)
    assert again.returncode == 0 and b"already mounted" in again.stdout
    assert open(os.path.join(proj, ".git", "info", "exclude")).read().splitlines() == exclude


@needs_fuse
def test_from_a_subdirectory_it_mounts_at_the_work_trees_root(store):
    """Without MOUNTPOINT, `memory` run deep in the work tree mounts <root>/memory, and says so;
    --status and --unmount run from another subdirectory find it there. A MOUNTPOINT given is
    still taken as given, relative to the current directory."""
    env, proj, _ = store
    deep, other = os.path.join(proj, "src", "deep"), os.path.join(proj, "docs")
    for folder in (deep, other):
        os.makedirs(folder)
    point, explicit = os.path.join(proj, "memory"), os.path.join(deep, "memory")
    try:
        started = cli("memory", env=env, cwd=deep, timeout=60)
        assert started.returncode == 0, started.stderr
        assert started.stdout.decode() == (f"Mounting trajectory memory for {proj} at\n  {point} (daemonized).\n"
                                           "Unmount with: trajectoriz memory --unmount\n")
        assert "README.md" in client("ls", point).stdout and not os.path.exists(explicit)
        status = cli("memory", "--status", env=env, cwd=other)
        assert status.returncode == 0 and status.stdout.decode().startswith(f"{point}: mounted, trajectory memory of {proj},")
        done = cli("memory", "--unmount", env=env, cwd=other)
        assert done.returncode == 0 and done.stdout.decode() == f"Unmounted {point}.\n" and mounts.find(point) is None
        assert mount(env, deep, "memory")[0] == explicit and mounts.find(point) is None
        assert "README.md" in client("ls", explicit).stdout
        done = cli("memory", "--unmount", "memory", env=env, cwd=deep)
        assert done.returncode == 0 and mounts.find(explicit) is None, done.stderr
    finally:
        take_down(point)
        take_down(explicit)


@needs_fuse
@needs("jq")
def test_live_sessions_grow_appear_and_disappear(mounted):
    env, proj, point = mounted.env, mounted.proj, mounted.point
    first, second = claude_sessions(env)
    name = next(n for n, s in expected_sessions(env, proj).items() if s.source == first)
    path = os.path.join(point, name)
    assert "LIVE-MARKER" not in client("cat", path).stdout  # read once: in the page cache now
    append_user_message(first, "LIVE-MARKER what next?")
    shown = cli("show", name, env=env).stdout
    assert client("cat", path).stdout.encode() == shown
    assert sizes_seen_by_ls(point)[name] == len(shown)
    assert client("jq", "-r", '.steps[] | select(.source == "user") | .message', path).stdout.splitlines()[-1] == "LIVE-MARKER what next?"

    # an edit that keeps the size and leaves an old mtime (as `cp -p` does): only the page-cache
    # rule (keep_cache) can serve it fresh
    other = next(n for n, s in expected_sessions(env, proj).items() if s.source == second)
    other_path = os.path.join(point, other)
    assert "SCENARIO-DONE" in client("cat", other_path).stdout
    with open(second, encoding="utf-8") as handle:
        text = handle.read()
    with open(second, "w", encoding="utf-8") as handle:
        handle.write(text.replace("SCENARIO-DONE", "SCENARIO-DUNE"))
    os.utime(second, ns=(LONG_AGO_NS, LONG_AGO_NS + 1))
    edited = client("cat", other_path).stdout
    assert "SCENARIO-DUNE" in edited and "SCENARIO-DONE" not in edited
    assert edited.encode() == cli("show", other, env=env).stdout

    copy = copy_session(second, "22222222-3333-4444-8555-666666666666")
    added = next(n for n, s in expected_sessions(env, proj).items() if s.source == copy)
    assert wait_for(lambda: added in client("ls", point).stdout.split(), 10)
    added_bytes = cli("show", added, env=env).stdout
    assert client("cat", os.path.join(point, added)).stdout.encode() == added_bytes
    assert wait_for(lambda: archived_ids(env) >= {"22222222-3333-4444-8555-666666666666"}, 10)
    os.remove(copy)  # the mount archived it as it appeared: it stays, served from the archive
    assert client("cat", os.path.join(point, added)).stdout.encode() == added_bytes  # at once
    records = [json.loads(line) for line in cli("list", "--dir", proj, "--json", env=env).stdout.splitlines()]
    assert [r["archived"] for r in records if r["file"] == added] == [True]
    assert cli("forget", added, env=env).returncode == 0  # gone for good
    assert wait_for(lambda: added not in client("ls", point).stdout.split(), 10)
    seen = sizes_seen_by_ls(point)
    assert {n: size for n, size in seen.items() if not n.endswith((".card.md", ".transcript.md"))} == {
        **listed(env, proj), **{n: os.path.getsize(os.path.join(point, n)) for n in ("README.md", "INDEX.md")}}


@needs_fuse
def test_index_is_the_same_in_the_mount_and_in_an_export(mounted, tmp_path):
    env, proj, point = mounted.env, mounted.proj, mounted.point
    names = sorted(listed(env, proj))
    for name in names:  # every file read: the mount knows every session's facts
        client("cat", os.path.join(point, name))
    assert cli("export", "--dir", proj, "--out", str(tmp_path / "out"), env=env).returncode == 0
    exported = (tmp_path / "out" / "INDEX.md").read_bytes()
    assert client("cat", os.path.join(point, "INDEX.md")).stdout.encode() == exported
    assert sorted(index_rows(exported)) == names and all(r[2] and r[4] for r in index_rows(exported).values())
    for card in map(cards.card_name, names):  # the cards too, byte for byte
        assert client("cat", os.path.join(point, card)).stdout.encode() == (tmp_path / "out" / card).read_bytes()


def archived_ids(env) -> set:
    return {entry["record"][1] for entry in archive.read_index(env)["sessions"].values()}


HOLDER = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
first = os.read(fd, 100)
print(os.fstat(fd).st_size, flush=True)
sys.stdin.readline()
data = first + b"".join(iter(lambda: os.read(fd, 4096), b""))
open(sys.argv[2], "wb").write(data)
print(os.fstat(fd).st_size, flush=True)
"""
TOOLS = [["cat"], ["wc", "-c"], ["tail", "-c", "64"], ["jq", "-c", "[.session_id, (.steps | length)]"],
         ["rg", "--no-config", "-c", "step_id"], ["grep", "-c", "step_id"],
         [sys.executable, "-c", "import json, sys; print(len(json.load(open(sys.argv[1]))['steps']))"]]


class Holder:
    """A process that opens a file of the mount, reads its start, and holds it open: its fstat
    size then, and on `finish()` the rest of what it reads and its fstat size at the end."""

    def __init__(self, path: str, out: str):
        self.out = out
        self.process = subprocess.Popen(["timeout", "-s", "KILL", str(CLIENT_SECONDS), sys.executable,
                                         "-c", HOLDER, path, out], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.size_at_open = int(self.process.stdout.readline())

    def finish(self) -> tuple[bytes, int]:
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        closing = int(self.process.stdout.readline())
        self.process.wait()
        with open(self.out, "rb") as handle:
            return handle.read(), closing


def tool_outputs(path: str, copy: str) -> list[str]:
    """What each tool says of `path`, its name taken out; and `cp`'s copy, read back."""
    said = [client(*tool, path).stdout.replace(path, "FILE") for tool in TOOLS]
    client("cp", path, copy)
    with open(copy, "rb") as handle:
        return said + [handle.read().decode()]


@needs_fuse
@needs("jq", "rg")
@pytest.mark.parametrize("recorded_now", [False, True], ids=["settled", "being-recorded"])
def test_each_reader_gets_one_whole_version_while_a_session_grows(store, tmp_path, recorded_now):
    """A handle opened before a change reads the old version whole, with its own size from
    fstat, while handles opened after it read and measure theirs; every tool sees one version."""
    env, proj, _ = store
    point = os.path.join(proj, "memory")
    source = claude_sessions(env)[0]
    for n in range(50):  # a document of several pages
        append_user_message(source, f"EARLIER-{n} and then?")
    if not recorded_now:
        settle(env)
    try:
        mount(env, proj)
        name = next(n for n, s in expected_sessions(env, proj).items() if s.source == source)
        path = os.path.join(point, name)
        before = cli("show", name, env=env).stdout
        (tmp_path / "before").write_bytes(before)
        first = Holder(path, str(tmp_path / "first"))
        append_user_message(source, "HELD-MARKER and then?")
        after = cli("show", name, env=env).stdout
        (tmp_path / "after").write_bytes(after)
        second = Holder(path, str(tmp_path / "second"))
        seen = tool_outputs(path, str(tmp_path / "copy"))
        assert seen in [tool_outputs(str(tmp_path / v), str(tmp_path / "copy")) for v in ("before", "after")], seen
        assert first.size_at_open == len(before)
        assert first.finish() == (before, len(before))
        data, closing = second.finish()
        assert data in (before, after) and second.size_at_open == closing == len(data)
        if recorded_now:
            assert data == after  # a session being recorded is served fresh at every open
        assert client("cat", path).stdout.encode() == after and sizes_seen_by_ls(point)[name] == len(after)
    finally:
        take_down(point)


@needs_fuse
def test_foreground_mount_unmounts_cleanly_on_sigterm(store, tmp_path):
    env, proj, _ = store
    point = str(tmp_path / "fg")
    command = [sys.executable, os.path.join(ROOT, "trajectoriz.py"), "memory", point, "--foreground", "--dir", proj]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: mounts.find(point) and client("ls", point).returncode == 0, 20)
        assert "README.md" in client("ls", point).stdout
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=10) == 0
        assert mounts.find(point) is None
        assert cli("memory", "--status", point, env=env).stdout.decode().endswith("not mounted\n")
    finally:
        server.kill()
        take_down(point)


@needs_fuse
def test_stale_mounts_are_recovered_by_mount_and_by_unmount(store, tmp_path):
    env, proj, _ = store
    point = str(tmp_path / "mem")

    def kill_server(pid):
        for victim in watchers_of(pid) + [pid]:  # the helper first: it would unmount for us
            os.kill(victim, signal.SIGKILL)
        assert wait_for(lambda: "not connected" in client("ls", point).stderr, 5)

    try:
        _, pid = mount(env, proj, point)
        kill_server(pid)
        status = cli("memory", "--status", point, env=env)
        assert status.returncode == 1 and b"stale" in status.stdout
        _, pid = mount(env, proj, point)  # heals, then mounts
        assert "README.md" in client("ls", point).stdout
        kill_server(pid)
        done = cli("memory", "--unmount", point, env=env)
        assert done.returncode == 0 and b"had died" in done.stdout, done.stderr
        assert mounts.find(point) is None and not os.path.exists(point)  # the folder `memory` made: gone
    finally:
        take_down(point)


@needs_fuse
def test_a_folder_without_sessions_says_why_and_unmount_removes_the_folder_memory_made(store, tmp_path):
    """Issue 42: `memory` where no session ran says why its folder is empty, as `list` does
    there; `--unmount` removes the empty memory/ it created, and leaves a folder the user made."""
    env, _, _ = store
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    point = str(lonely / "memory")
    try:
        hint = cli("list", env=env, cwd=str(lonely)).stdout.decode().splitlines()[-1]
        assert hint.startswith("None of the ") and "`trajectoriz list --all`" in hint
        result = cli("memory", env=env, cwd=str(lonely), timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.decode().splitlines()[3:] == [
            f"It holds no session yet (new ones appear as they are recorded). {hint}"]
        assert mounts.find(point) is not None
        done = cli("memory", "--unmount", env=env, cwd=str(lonely))
        assert done.returncode == 0, done.stderr
        assert mounts.find(point) is None and not os.path.exists(point)
        os.mkdir(point)  # the user's own folder
        assert cli("memory", env=env, cwd=str(lonely), timeout=60).returncode == 0
        assert cli("memory", "--unmount", env=env, cwd=str(lonely)).returncode == 0
        assert mounts.find(point) is None and os.path.isdir(point)
    finally:
        take_down(point)


@needs_fuse
def test_hung_server_neither_blocks_listing_nor_unmount(store):
    """A server that stops answering (SIGSTOP): `list` must not look inside its mount even for
    a session recorded there, and --unmount must end it."""
    env, proj, _ = store
    point = os.path.join(proj, "memory")
    inside = copy_session(claude_sessions(env)[1], "33333333-4444-4555-8666-777777777777")
    with open(inside, encoding="utf-8") as handle:
        text = handle.read().replace(f'"cwd":"{proj}"', f'"cwd":"{point}/sub"')
    with open(inside, "w", encoding="utf-8") as handle:
        handle.write(text)
    try:
        _, pid = mount(env, proj)
        os.kill(pid, signal.SIGSTOP)
        assert memory.probe(point, 1) == "hung"
        started = time.monotonic()
        listing = cli("list", "--json", "--dir", proj, env=env, timeout=30)
        assert listing.returncode == 0 and time.monotonic() - started < 10
        assert any(json.loads(r)["cwd"] == f"{point}/sub" for r in listing.stdout.splitlines())
        for state in glob.glob(os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "mount-*.json")):
            os.remove(state)  # the server is found all the same
        done = cli("memory", "--unmount", env=env, cwd=proj, timeout=30)
        assert done.returncode == 0 and b"was not answering" in done.stdout, done.stderr
        assert mounts.find(point) is None and not memory.alive(pid)
    finally:
        take_down(point)


# a cache folder the mount cannot use ----------------------------------------------------------------
NO_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-dac_override,-dac_read_search", "--"]
needs_modes_that_bind = pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"),
                                           reason="root ignores file modes unless setpriv drops CAP_DAC_OVERRIDE")


def bound_by_modes(*args, env, cwd) -> subprocess.CompletedProcess:
    """trajectoriz run by a user whom file modes bind: root without CAP_DAC_OVERRIDE (its
    mount server inherits that), or the user running the tests."""
    prefix = NO_DAC if os.geteuid() == 0 else []
    return subprocess.run([*prefix, sys.executable, os.path.join(ROOT, "trajectoriz.py"), *args],
                          env=env, cwd=cwd, capture_output=True, timeout=90)


def unusable_cache(env, how: str) -> str:
    """Make the cache folder read-only, or its parent, or another user's; returns the folder."""
    folder = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz")
    if how == "its parent read-only":
        os.makedirs(env["XDG_CACHE_HOME"], exist_ok=True)
        os.chmod(env["XDG_CACHE_HOME"], 0o500)
        return folder
    os.makedirs(folder)
    if how == "another user's":
        os.chmod(folder, 0o777)
        os.chown(folder, 65534, 65534)
    else:
        os.chmod(folder, 0o500)
    return folder


@needs_fuse
@needs_modes_that_bind
@pytest.mark.parametrize("how", ["read-only", "its parent read-only", "another user's"])
def test_a_cache_it_cannot_use_moves_the_log_and_state_elsewhere(store, tmp_path, how):
    env, proj, _ = store
    if how == "another user's" and os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    env = {**env, "TMPDIR": str(tmp_path / "tmp")}
    os.makedirs(env["TMPDIR"])
    folder = unusable_cache(env, how)
    elsewhere = os.path.join(env["TMPDIR"], f"trajectoriz-{os.getuid()}")
    point = os.path.join(proj, "memory")
    try:
        done = bound_by_modes("memory", env=env, cwd=proj)
        assert done.returncode == 0, done.stderr
        why = "is another user's" if how == "another user's" else "cannot be written"
        assert done.stderr.decode().splitlines() == [
            f"trajectoriz: the cache folder {folder} {why}: the mount keeps its log and state in {elsewhere}"]
        name = next(iter(listed(env, proj)))
        assert client("cat", os.path.join(point, name)).stdout.encode() == cli("show", name, env=env).stdout
        status = bound_by_modes("memory", "--status", env=env, cwd=proj)
        assert status.returncode == 0 and f"trajectory memory of {proj}, server pid".encode() in status.stdout
        assert f"log {elsewhere}/mount-".encode() in status.stdout, status.stdout
        assert stat.S_IMODE(os.stat(elsewhere).st_mode) == 0o700
        assert {stat.S_IMODE(os.stat(os.path.join(elsewhere, f)).st_mode) for f in os.listdir(elsewhere)} == {0o600}
        assert len(glob.glob(os.path.join(elsewhere, "mount-*.json"))) == 1
        assert glob.glob(os.path.join(folder, "mount-*")) == []  # (the test's own root commands write there)
        done = bound_by_modes("memory", "--unmount", env=env, cwd=proj)
        assert done.returncode == 0 and mounts.find(point) is None, done.stderr
        assert glob.glob(os.path.join(elsewhere, "mount-*.json")) == []  # the server took its state away
    finally:
        take_down(point)
        os.chmod(env["XDG_CACHE_HOME"], 0o700)


@needs_fuse
@needs_modes_that_bind
def test_with_no_private_folder_to_write_it_mounts_without_log_or_state(store, tmp_path):
    env, proj, _ = store
    env = {**env, "TMPDIR": str(tmp_path / "tmp")}
    os.makedirs(env["TMPDIR"], mode=0o500)
    unusable_cache(env, "read-only")
    point = os.path.join(proj, "memory")
    try:
        done = bound_by_modes("memory", env=env, cwd=proj)
        assert done.returncode == 0, done.stderr
        lines = done.stderr.decode().splitlines()
        assert len(lines) == 1 and "no private folder can be written" in lines[0] and "without a log" in lines[0]
        name = next(iter(listed(env, proj)))
        assert client("cat", os.path.join(point, name)).stdout.encode() == cli("show", name, env=env).stdout
        status = bound_by_modes("memory", "--status", env=env, cwd=proj)
        assert status.returncode == 0 and re.search(rb"server pid \d+$", status.stdout.strip()), status.stdout
        done = bound_by_modes("memory", "--unmount", env=env, cwd=proj)
        assert done.returncode == 0 and mounts.find(point) is None, done.stderr
        assert os.listdir(env["TMPDIR"]) == []
    finally:
        take_down(point)


def test_without_fuse_one_clear_line(store, tmp_path):
    env, proj, _ = store
    missing = cli("memory", str(tmp_path / "m"), env={**env, "FUSE_LIBRARY_PATH": str(tmp_path / "libfuse3.so.3")}, cwd=proj)
    lines = missing.stderr.decode().splitlines()
    assert missing.returncode == 2 and len(lines) == 1, lines
    assert "no usable FUSE library" in lines[0] and "apt install fuse3" in lines[0] and "trajectoriz export" in lines[0]
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("hiding /dev/fuse needs root and unshare")
    script = 'mount --make-rprivate / && mount -t tmpfs tmpfs /dev && exec "$@"'
    no_device = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", sys.executable,
                                os.path.join(ROOT, "trajectoriz.py"), "memory", str(tmp_path / "m")],
                               env=env, cwd=proj, capture_output=True, timeout=60)
    lines = no_device.stderr.decode().splitlines()
    assert no_device.returncode == 2 and len(lines) == 1, lines
    assert "/dev/fuse does not exist" in lines[0] and "--device /dev/fuse" in lines[0] and "trajectoriz export" in lines[0]


@needs_fuse
def test_a_refused_mount_reports_libfuses_reason_from_the_servers_log(store, tmp_path):
    """Background mode: the server fails after the checks passed (no CAP_SYS_ADMIN); the command
    prints the cause found in the server's log, in one line."""
    env, proj, _ = store
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("dropping CAP_SYS_ADMIN needs root and setpriv")
    point = str(tmp_path / "m")
    try:
        refused = subprocess.run(["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--",
                                  sys.executable, os.path.join(ROOT, "trajectoriz.py"), "memory", point],
                                 env=env, cwd=proj, capture_output=True, timeout=60)
        lines = refused.stderr.decode().splitlines()
        assert refused.returncode == 2 and len(lines) == 1, lines
        assert "not permitted to mount" in lines[0] and "--cap-add SYS_ADMIN" in lines[0], lines
        assert mounts.find(point) is None
    finally:
        take_down(point)
