"""The store origin (`origin`): a session in its agent's own store, read in place.

Its stamp is its native files' fingerprint (the module's `dependencies` of its source, one stat
each) beside its translator's version; its cached document is also valid only while those files'
ctimes stay. Its document is its translator's, run on the store as it is (a SQLite store read
in one moment: it must not change meanwhile). Its agent may change or delete it at any time:
the archive keeps it, the mount watches it, and a session whose file went since it was listed
is read from the archive when the archive holds it.
"""

from __future__ import annotations

import os
import sys

import agents
from core import cache
from core.version import VERSION
from discovery import archive
from discovery.origin import Origin, module_version


def dependencies(module, source: str, env) -> list[str]:
    """The files a session's translation reads (the module's `dependencies`, else its source)."""
    deps = getattr(module, "dependencies", None)
    return deps(source, env) if deps else [source]


class Store(Origin):
    __slots__ = ()
    kind = "store"
    in_store = True

    def stamps(self, env, known: tuple | None = None, stats: dict | None = None) -> tuple[list, list]:
        if known is not None:
            stamp = self.stamp(env, True, known)
            found = cache.stats(known[0], stats)
        else:
            module = agents.load(self.session.agent)
            found = cache.stats(dependencies(module, self.session.source, env))
            stamp = [cache.fingerprint_of(found), module_version(module), VERSION, True]
        return stamp, stamp + [[st.st_ctime_ns if st is not None else None for st in found]]

    def stamp(self, env, redact: bool = True, known: tuple | None = None) -> list:
        if known is not None:
            return [known[2], known[1], VERSION, redact]
        module = agents.load(self.session.agent)
        return [cache.fingerprint(dependencies(module, self.session.source, env)), module_version(module),
                VERSION, redact]

    def now(self, env):
        if os.path.lexists(self.session.source):
            return self.session
        return archive.copy_of(self.session, env)

    def translated(self, module, env) -> dict:
        sqlite_ro = sys.modules.get("agents.sqlite_ro")  # loaded by the agents whose stores are SQLite
        if sqlite_ro is not None:  # a store read in place must not change meanwhile
            return sqlite_ro.in_one_moment(lambda: module.translate(self.session, env))
        return module.translate(self.session, env)
