"""A session made into what readers see: its ATIF document (`documents`), the cache of rendered
documents and their facts (`doccache`), the flat text content search reads (`searchtext`),
what each tool call does (`toolkinds`), the markdown transcript (`transcript`), a
session's card (`cards`) and its HTML page (`page`).

May import `discovery` and everything below it (`agents`, `atif`, `redaction`, `core`).
"""
