"""Servers that send workers a message the spec does not: bugs only what a worker receives
shows (tests/test_messages.py). Each is `duespec serve`'s own server with one change."""

from __future__ import annotations

from duespec.impl.schedules import ScheduleServer
from duespec.impl.schedules_records import TARGET_TAG, execute_message


class DispatchesExpired(ScheduleServer):
    """promise.create of a promise already past its timeout, with a resonate:target, creates
    it settled (right) and still sends an execute for its task (wrong: P-02 dispatches only
    a pending promise). Every answer and read is the correct server's."""

    def _promise_create(self, req, now):  # type: ignore[no-untyped-def]
        new = self.store.get_promise(req.id) is None
        promise = super()._promise_create(req, now)
        target = req.tags.get(TARGET_TAG)
        if new and target is not None and req.timeout_at <= now:
            self.store.set_message(target, execute_message(req.id, 0))
        return promise
