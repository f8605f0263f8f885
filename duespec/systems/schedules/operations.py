"""The schedules system's ops and their argument names, apart from ops.py (the values a
campaign sends, drawn with Hypothesis): reading a history needs this table and nothing
else of the campaign's."""

from __future__ import annotations

#: Argument names of each op, exactly as docs/operations.md lists them.
OPERATIONS: dict[str, tuple[str, ...]] = {
    "schedule.create": ("id", "cron", "promiseId", "promiseTimeout", "promiseParam", "promiseTags"),
    "schedule.get": ("id",),
    "schedule.delete": ("id",),
    "schedule.search": ("tags", "limit", "cursor"),
    "promise.create": ("id", "timeoutAt", "param", "tags"),
    "promise.get": ("id",),
    "promise.settle": ("id", "state", "value"),
    "promise.register_callback": ("awaited", "awaiter"),
    "promise.register_listener": ("awaited", "address"),
    "promise.search": ("state", "tags", "limit", "cursor"),
    "task.get": ("id",),
    "task.create": ("pid", "ttl", "action"),
    "task.acquire": ("id", "version", "pid", "ttl"),
    "task.fence": ("id", "version", "action"),
    "task.heartbeat": ("pid", "tasks"),
    "task.suspend": ("id", "version", "actions"),
    "task.fulfill": ("id", "version", "action"),
    "task.release": ("id", "version"),
    "task.halt": ("id",),
    "task.continue": ("id",),
    "task.search": ("state", "limit", "cursor"),
    "schedule.timeout": ("id",),
    "promise.timeout": ("id",),
    "tick": (),
}
