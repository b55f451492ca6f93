"""PyInstaller run-time hook: runs in the binary before trajectoriz.py, in every process.

Child processes get the environment the user gave: the bootloader points LD_LIBRARY_PATH at
the bundle's libraries (so that a `umount` or `git` started from here would load our libuuid
or libz instead of the host's), and sets private _PYI_* variables that would make a copy of
the binary started from here (a background mount) think it is part of this process. The
variable is restored for children (this process's loader read it at start-up already), and
PYINSTALLER_RESET_ENVIRONMENT=1 makes any copy of the binary start afresh.

The single file unpacks the program once into a folder of the user's cache (build/launcher.sh),
`<cache>/trajectoriz/app/<version>-<hash>/`, marked by a `.trajectoriz-app` file. Every process
running from such a folder holds a shared lock on its marker for its whole life, mount daemons
included. Right after unpacking (the launcher sets TRAJECTORIZ_UNPACKED), the new program
removes the folders of other versions whose marker it can lock exclusively: nothing runs from
them any more. Unpack folders left by an interrupted first run are removed after an hour.
"""


def _restore_child_environment():
    import os

    original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
    if original is not None:
        os.environ["LD_LIBRARY_PATH"] = original
    else:
        os.environ.pop("LD_LIBRARY_PATH", None)
    os.environ["PYINSTALLER_RESET_ENVIRONMENT"] = "1"


def _hold_and_clean():
    import os
    import sys

    if os.path.basename(sys._MEIPASS) != "_internal":
        return  # a onefile build (bench/startup.py): its folder is a temporary one
    app = os.path.dirname(sys._MEIPASS)
    try:
        marker = os.open(os.path.join(app, ".trajectoriz-app"), os.O_RDONLY)
    except OSError:
        return  # not unpacked by the launcher (dist/trajectoriz-app run in place)
    import fcntl

    try:
        fcntl.flock(marker, fcntl.LOCK_SH | fcntl.LOCK_NB)  # held until the process exits
    except OSError:
        pass
    if os.environ.pop("TRAJECTORIZ_UNPACKED", None):
        _remove_old_versions(app)


def _remove_old_versions(app):
    import os

    root = os.path.dirname(app)
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        path = os.path.join(root, name)
        if path != app and not os.path.islink(path) and os.path.isdir(path):
            if name.startswith(".unpack-"):
                _remove_if_abandoned(path)
            else:
                _remove_if_unused(path, root)


def _remove_if_abandoned(path):
    import os
    import shutil
    import time

    try:
        if time.time() - os.lstat(path).st_mtime > 3600:
            shutil.rmtree(path, ignore_errors=True)
    except OSError:
        pass


def _remove_if_unused(path, root):
    import fcntl
    import os
    import shutil
    import tempfile

    try:
        marker = os.open(os.path.join(path, ".trajectoriz-app"), os.O_RDONLY)
    except OSError:
        return  # not a folder the launcher made: never touch it
    try:
        fcntl.flock(marker, fcntl.LOCK_EX | fcntl.LOCK_NB)
        trash = tempfile.mkdtemp(prefix=".unpack-removing-", dir=root)
        os.rename(path, os.path.join(trash, "old"))  # launchers stop finding it at once
        shutil.rmtree(trash, ignore_errors=True)
    except OSError:
        pass  # in use (or already being removed): the next new version tries again
    finally:
        os.close(marker)


_restore_child_environment()
_hold_and_clean()
# Run-time hooks share the namespace of the main script: leave nothing behind in it.
del _restore_child_environment, _hold_and_clean, _remove_old_versions, _remove_if_abandoned, _remove_if_unused
