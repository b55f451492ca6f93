"""A FUSE file system of one empty, read-only folder, served in the foreground until unmounted:
`python tinyfuse.py POINT`. The test suite keeps one mounted while it runs (conftest.py), as a
user's machine often has one (their own `trajectoriz memory` in another project): what
trajectoriz records of the mount table must not change its behaviour or the bytes it keeps."""

import errno
import os
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mount import memory  # noqa: E402  (binds mfusepy to libfuse 3, as the product does)

FSNAME = "trajectoriz-tests-tinyfuse"


def serve(point: str) -> None:
    memory.fuse_problem()
    import mfusepy

    class OneFolder(mfusepy.Operations):
        def getattr(self, path, fh=None):
            if path == "/":
                return {"st_mode": stat.S_IFDIR | 0o555, "st_nlink": 2}
            raise mfusepy.FuseOSError(errno.ENOENT)

        def readdir(self, path, fh):
            return [".", ".."]

    mfusepy.FUSE(OneFolder(), point, foreground=True, ro=True, fsname=FSNAME)


if __name__ == "__main__":
    serve(sys.argv[1])
