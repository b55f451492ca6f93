"""The commands' work, one module per command or family: list, show, export and validate
(`basics`), `search`, `stats`, `blame`, `agents` (`health`), the man page (`manual`), the
shell completion scripts (`completion`) and the local web view (`serve`).
`trajectoriz.py` parses the command line and calls them.

May import every package below it (`mount`, `sharing`, `archiving`, `rendering`, `discovery`,
`agents`, `atif`, `redaction`, `core`).
"""
