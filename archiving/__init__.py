"""Keeping sessions past the agents' clean-up: writing the archive (`archiver`: `trajectoriz
archive` and the mount's passes), each agent's deletion policy (`retention`), the daily job
(`schedule`), and taking sessions out again (`forget`).

May import `rendering` and everything below it.
"""
