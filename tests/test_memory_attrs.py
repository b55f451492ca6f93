"""How long the kernel keeps the mount's attributes (issue 19): a settled session's for
memoryfs.ATTR_SECONDS once two rescans found it unchanged, so that a warm `ls -l` or `grep -r`
asks the server nothing per file; a session being recorded, README.md, INDEX.md and the
directory never. A settled session that is
appended to again shows its new size through `stat` within a few rescans (the kernel is told to
forget what it kept), and at once to whoever opens it.

The mount runs a MemoryFS that writes the path of every getattr it answers to a log, so that the
tests can see which `stat`s reached the server.
"""

import errno
import os
import subprocess
import sys
import time

import pytest

from helpers import ROOT, cli
from mount import memoryfs
from rendering import documents, views
from test_memory import (CLIENT_SECONDS, FUSE_PROBLEM, LONG_AGO_NS, append_user_message, claude_sessions,
                         expected_sessions, make_store, needs_fuse, settle, take_down, wait_for)

SERVER = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
from mount import memory, memoryfs

memoryfs.RESCAN_SECONDS = 0.5
point, project, log = sys.argv[2:5]
fuse = memory.load_fuse()


class Counting(memoryfs.MemoryFS):
    def getattr(self, path, fh=None):
        with open(log, "a") as handle:
            handle.write(path + "\n")
        return super().getattr(path, fh)


ready = lambda: open(log, "a").close()
fuse.FUSE(Counting(project, dict(os.environ), on_ready=ready), point, foreground=True, nothreads=True,
          raw_fi=True, **memory.mount_options())
"""


@pytest.fixture
def counted(tmp_path):
    """A settled store, mounted by a server that logs its getattrs; (env, proj, point, asked)."""
    if FUSE_PROBLEM:
        pytest.skip(f"FUSE unavailable: {FUSE_PROBLEM}")
    env, proj, _ = make_store(tmp_path)
    settle(env)
    point, log = str(tmp_path / "m"), str(tmp_path / "getattrs")
    os.makedirs(point)
    server = subprocess.Popen([sys.executable, "-c", SERVER, ROOT, point, proj, log], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def asked(name: str) -> int:
        with open(log) as handle:
            return handle.read().splitlines().count("/" + name)

    try:
        assert wait_for(lambda: os.path.exists(log) and os.path.ismount(point), 30), server.stderr
        time.sleep(3 * 0.5)  # two rescans (RESCAN_SECONDS above) found the settled sessions unchanged
        yield env, proj, point, asked
    finally:
        take_down(point)
        server.kill()
        server.wait()


def stat_size(path: str) -> int:
    """`stat -L` in another process (a client of the mount, as in use; a document through its symlink)."""
    done = subprocess.run(["timeout", "-s", "KILL", str(CLIENT_SECONDS), "stat", "-L", "-c", "%s", path],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def names_of(env, proj) -> tuple[str, str]:
    first, second = claude_sessions(env)
    names = {s.source: n for n, s in expected_sessions(env, proj).items()}
    return names[first], names[second]


@needs_fuse
def test_a_settled_sessions_attributes_are_kept_a_live_ones_are_not(counted):
    env, proj, point, asked = counted
    settled, live = names_of(env, proj)
    os.utime(claude_sessions(env)[1], None)  # modified now: being recorded
    for name in (settled, live):
        sizes = [stat_size(os.path.join(point, name)) for _ in range(3)]
        assert sizes == [len(cli("show", name, env=env).stdout)] * 3
    assert asked(memoryfs.document_path(settled)) == 1  # the lookup; the kernel answered the other two
    assert asked(memoryfs.document_path(live)) >= 3  # each stat asks
    sessions = expected_sessions(env, proj)
    for kind in views.KINDS:  # a settled session's card and transcript: kept as its document is
        for name in (settled, live):
            made = views.made(kind, documents.translate(sessions[name], env))
            sizes = [stat_size(os.path.join(point, views.name_of(name, kind))) for _ in range(3)]
            assert len(set(sizes)) == 1 and sizes[0] >= len(made), (kind, sizes, len(made))
        assert asked(views.name_of(settled, kind)) == 1, kind
        assert asked(views.name_of(live, kind)) >= 3, kind
        for name in (settled, live):  # a card ends with its related sessions' section, from facts
            served = open(os.path.join(point, views.name_of(name, kind)), "rb").read()
            made = views.made(kind, documents.translate(sessions[name], env))
            assert served == made or served.startswith(made + b"\n## Related sessions (") and kind == "card"
    for name in ("README.md", "INDEX.md"):
        before = asked(name)
        stat_size(os.path.join(point, name))
        stat_size(os.path.join(point, name))
        assert asked(name) - before >= 2, name


@needs_fuse
def test_a_settled_session_appended_to_shows_its_new_size_and_bytes(counted):
    env, proj, point, asked = counted
    name, other = names_of(env, proj)
    source, other_source = claude_sessions(env)
    path = os.path.join(point, name)
    assert stat_size(path) == len(cli("show", name, env=env).stdout)
    append_user_message(source, "RESUMED-MARKER one more thing")  # resumed: modified now
    grown = cli("show", name, env=env).stdout
    assert wait_for(lambda: stat_size(path) == len(grown), 5)  # told by the rescan, nobody opened it
    grown_doc = documents.translate(expected_sessions(env, proj)[name], env)
    for kind in views.KINDS:  # and so are its card and transcript
        view = os.path.join(point, views.name_of(name, kind))
        made = views.made(kind, grown_doc)
        assert wait_for(lambda: open(view, "rb").read().startswith(made), 5), kind
        served = open(view, "rb").read()
        assert stat_size(view) == len(served) and (served == made or kind == "card" and
                                                   served.startswith(made + b"\n## Related sessions ("))
    with open(path, "rb") as handle:
        assert os.fstat(handle.fileno()).st_size == len(grown) and handle.read() == grown

    # changed while its attributes are kept, and opened before any rescan could see it: the
    # opener's fstat already has the new size (an old mtime, as `cp -p` leaves, keeps it settled)
    other_path = os.path.join(point, other)
    assert stat_size(other_path) == len(cli("show", other, env=env).stdout)
    before = asked(memoryfs.document_path(other))
    append_user_message(other_source, "RESUMED-MARKER again")
    os.utime(other_source, ns=(LONG_AGO_NS, LONG_AGO_NS + 1))
    with open(other_path, "rb") as handle:
        size, data = os.fstat(handle.fileno()).st_size, handle.read()
    changed = cli("show", other, env=env).stdout
    assert size == len(changed) and data == changed
    assert stat_size(other_path) == len(changed)
    assert asked(memoryfs.document_path(other)) > before



@needs_fuse
def test_acl_queries_say_not_supported(counted):
    """ENOTSUP (not ENODATA, what the kernel says by itself when libfuse has no getxattr), which
    `ls -l` remembers for the mount instead of asking again for each file."""
    env, proj, point, _ = counted
    name, _ = names_of(env, proj)
    for path in (point, os.path.join(point, name)):
        with pytest.raises(OSError) as raised:
            os.getxattr(path, "system.posix_acl_access")
        assert raised.value.errno == errno.ENOTSUP
