"""Which sessions exist and where: the catalog (every agent's stores and the archive as its
sources, ids, project scoping), the snapshot that lets a warm listing skip the scan, and the
archive's format and reader (`archive`; writing it is `archiving`'s).

May import `agents`, `atif`, `redaction` and `core`.
"""
