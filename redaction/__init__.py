"""Secrets out of every output: the rules (`redact`) and the per-user key the markers are
digested with (`markerkey`).

May import `core` and `atif`.
"""
