"""The commands' work, one module per command or family: list, show, export and validate
(`basics`), `search`, `stats`, `blame`, `agents` (`health`) and the man page (`manual`).
`trajectoriz.py` parses the command line and calls them.

May import every package below it (`mount`, `sharing`, `archiving`, `rendering`, `discovery`,
`agents`, `atif`, `redaction`, `core`).
"""
