"""The `memory/` directory: the command that mounts it (`memory`), the read-only file system it
serves (`memoryfs`), the workers that render ahead of a walk (`warmup`), and its README.md
(`guide`) and INDEX.md (`memoryindex`).

May import `sharing` and everything below it; knows no agent's format.
"""
