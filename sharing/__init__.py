"""A project's sessions shared through its own git remote: `trajectoriz push` (`push`) and
`pull` (`pull`), through the user's git (`git`), a contributor's ref and the checks of one read
from a remote (`refs`), the pack a push writes (`packfile`) and what a shared document says of a
path (`paths`). Discovery lists what was pulled (`discovery.pulled`).

May import `rendering`, `discovery`, `agents`, `atif`, `redaction` and `core`.
"""
