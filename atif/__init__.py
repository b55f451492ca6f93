"""ATIF, the Agent Trajectory Interchange Format (Harbor), as trajectoriz writes and checks it.

- `atif.build`: `TrajectoryBuilder`, the one way translators assemble a document.
- `atif.serialize`: bytes out (orjson, 2-space indent, UTF-8, spec key order).
- `atif.validate`: every rule of the v1.7 spec, with a JSON path per violation.

May import `core` alone.
"""

SCHEMA_VERSION = "ATIF-v1.7"
