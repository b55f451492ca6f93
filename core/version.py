"""The trajectoriz release. Part of every cache key: a new release re-translates."""

VERSION = "0.3.0"

# The redaction rules' version, in the name of every cache that holds redacted text (the
# index's first messages, documents and their search texts, facts, snapshots: cache.named):
# what weaker rules let through is never served after an upgrade, and is removed the first
# time a process looks (cache.is_obsolete). Raised with every change of what the rules find
# (tests/test_redact_layers.py holds the rules' digest for each version).
RULES = 3
