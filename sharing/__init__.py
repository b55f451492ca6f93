"""A project's sessions shared through its own git remote: `trajectoriz push` and `pull`
(`remote`: the git objects and refs, the checks of what was fetched). Discovery lists what was
pulled (`discovery.pulled`).

May import `rendering`, `discovery`, `agents`, `atif`, `redaction` and `core`.
"""
