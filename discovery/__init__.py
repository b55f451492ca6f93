"""Which sessions exist and where: the catalog (every agent's stores, the archive and what was
pulled from the project's remote as its sources, ids, project scoping), the snapshot that lets a
warm listing skip the scan, the archive's format and reader (`archive`; writing it is
`archiving`'s), and the pulled sessions (`pulled`; pulling them is `sharing`'s); where each
session's bytes live, its origin (`origin`: the interface; `store`, `archive`, `pulled` each
implement it).

May import `agents`, `atif`, `redaction` and `core`.
"""
