"""Digests of short keys (ids, paths, file names) from the interpreter's own hash modules.

`hashlib` loads OpenSSL before anything is hashed: 2–3 ms of every run, which pays only where
much data is hashed (the archive's checksums use it). The built-in modules give the very same
digests.
"""

try:
    from _sha256 import sha256  # Python 3.11
except ImportError:
    try:
        from _sha2 import sha256  # Python 3.12 on
    except ImportError:
        from hashlib import sha256
try:
    from _md5 import md5
except ImportError:
    from hashlib import md5

__all__ = ["md5", "sha256", "sha256_digest"]

OPENSSL_PAYS = 1 << 20  # bytes from which OpenSSL's sha256 (5x faster per byte) pays for its load


def sha256_digest(data: bytes) -> bytes:
    """The sha256 digest of `data`, by whichever costs less: the built-in module for up to a
    megabyte, OpenSSL's beyond."""
    if len(data) < OPENSSL_PAYS:
        return sha256(data).digest()
    import hashlib

    return hashlib.sha256(data).digest()
