"""Git objects as one pack, for `git index-pack --stdin` (`Indexed`), which stores it as a
fetch stores what it receives: git checks every object it indexes (each id, each zlib stream,
the trailer) and writes the pack and its index itself, so a mistake here is refused, never
stored.

Why not `git fast-import`: it spent 0.4 s storing the 12 MB of zstd blobs of a 2,000-session
push (0.2 s without its delta attempts), where building the pack here costs ~30 ms (zlib level 0
around data that is zstd already, a SHA-1 over the stream) and index-pack ~0.1 s, reading the
stream while it is made (bench/NOTES.md, issue 31).

The format (git's Documentation/gitformat-pack.txt, version 2): "PACK", the version and the
number of objects as 4-byte big-endian integers; each object a header (its type, and its size
in 7-bit groups, least significant first: 4 bits in the first byte after the type) then its body
as one zlib stream; then the SHA-1 of everything before. No object is a delta.
"""

from __future__ import annotations

import hashlib
import struct
import zlib

from sharing import git

TYPES = {"commit": 1, "tree": 2, "blob": 3}


def object_id(kind: str, body: bytes) -> str:
    """The id git gives an object of this kind and body."""
    return hashlib.sha1(b"%s %d\0" % (kind.encode(), len(body)) + body).hexdigest()


def blob_id(data: bytes) -> str:
    return object_id("blob", data)


def tree_body(entries: dict) -> bytes:
    """A tree of `entries` (name -> (mode, hex id)) as git writes it: entries sorted by name, a
    folder's name compared as if it ended with '/'."""
    def order(name: str) -> bytes:
        return name.encode() + (b"/" if entries[name][0] == "40000" else b"")

    return b"".join(f"{entries[n][0]} {n}\0".encode() + bytes.fromhex(entries[n][1])
                    for n in sorted(entries, key=order))


def object_header(kind: str, size: int) -> bytes:
    """An object's header in a pack: its type and its size."""
    first = TYPES[kind] << 4 | size & 0x0F
    size >>= 4
    out = bytearray()
    while size:
        out.append(first | 0x80)
        first, size = size & 0x7F, size >> 7
    out.append(first)
    return bytes(out)


class Writer:
    """A pack of `count` objects written to `out` an object at a time (`add`), its trailer
    after the last one. The header says how many objects follow, so the count is given before
    the first object is made; `git index-pack --stdin` checks each object as it reads it."""

    def __init__(self, out, count: int):
        self.out = out
        self.left = count
        self.trailer = hashlib.sha1()
        self._put(b"PACK" + struct.pack(">II", 2, count))

    def add(self, kind: str, body: bytes, level: int) -> None:
        """One more object: `level` the zlib level of its body (0 for data that is compressed
        already)."""
        if not self.left:
            raise ValueError("more objects than the pack's header says")
        self.left -= 1
        self._put(object_header(kind, len(body)) + zlib.compress(body, level))
        if not self.left:
            self.out.write(self.trailer.digest())

    def _put(self, data: bytes) -> None:
        self.trailer.update(data)
        self.out.write(data)


class Indexed:
    """A pack stored by `git index-pack --stdin` as it is written (`packfile.Writer`): git
    checks every object as it reads it, on another core than the one making them."""

    INDEXING = ["index-pack", "--stdin"]

    def __init__(self, repo: "git.Repository", count: int):
        import subprocess

        self.process = git.git_started(self.INDEXING, repo.root, repo.env, feeding=True, stdout=subprocess.DEVNULL)
        self._widen_pipe()
        self.writer = self._writing(lambda: Writer(self.process.stdin, count))

    def _widen_pipe(self) -> None:
        """A 1 MB pipe to git where the system allows (Linux; else its 64 KB): the blobs are
        read on while git catches up."""
        try:
            import fcntl

            fcntl.fcntl(self.process.stdin.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
        except (ImportError, AttributeError, OSError):
            pass

    def add(self, kind: str, body: bytes, level: int = 0) -> None:
        """One more object (`level`: its zlib level, 0 for the zstd documents)."""
        if self.writer is not None:
            self._writing(lambda: self.writer.add(kind, body, level))

    def _writing(self, write):
        try:
            return write()
        except BrokenPipeError:  # git stopped reading: `stored` says why
            self.writer = None

    def stored(self) -> None:
        """Once every object is added: git's check done, the pack stored (GitFailed if not)."""
        git.git_finished(self.process, self.INDEXING)

    def abandon(self) -> None:
        self.process.kill()
        self.process.communicate()
