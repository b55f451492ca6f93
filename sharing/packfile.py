"""Git objects as one pack, for `git index-pack --stdin` (sharing.remote), which stores it as a
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

TYPES = {"commit": 1, "tree": 2, "blob": 3}


def object_id(kind: str, body: bytes) -> str:
    """The id git gives an object of this kind and body."""
    return hashlib.sha1(b"%s %d\0" % (kind.encode(), len(body)) + body).hexdigest()


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
