"""The small core every other package stands on: errors and the version, digests, JSON,
compiled regular expressions, tables for output, the process pool, trajectoriz's own private
caches, the mount table, recorded paths resolved safely, and the file-access layer through
which stores are read (`storefs`).

Imports nothing of trajectoriz outside `core`.
"""
