"""Servers with a bug at a boundary a real server gets wrong (issue 40's rules): each is
`duespec serve`'s own server with one change, as tools/pg_variants/variants.py makes of
resonate.sql (heartbeat_not_renewing, create_existing_overwrites_param, settle_overwrites_settled)."""

from __future__ import annotations

import dataclasses

from duespec.impl.schedules import ScheduleServer


class HeartbeatRenewsNothing(ScheduleServer):
    """task.heartbeat answers 200 and leaves every lease where it was: a task its holder
    keeps heartbeating still lapses at its first deadline (T-05)."""

    def task_heartbeat(self, req, now):  # type: ignore[no-untyped-def]
        return {"status": 200}


class CreateOverwritesParam(ScheduleServer):
    """promise.create of an id that exists stores the new request's param and answers it,
    where the spec answers the stored promise and changes nothing (P-02)."""

    def _promise_create(self, req, now):  # type: ignore[no-untyped-def]
        existing = self.store.get_promise(req.id)
        if existing is not None and existing.param != req.param:
            self.store.set_promise(dataclasses.replace(existing, param=req.param))
        return super()._promise_create(req, now)


class SettleOverwritesSettled(ScheduleServer):
    """promise.settle of a promise already settled by a client (before its timeoutAt)
    settles it again with the new state and value, where the spec answers the stored
    promise (P-03: settled is final)."""

    def _promise_settle(self, req, now):  # type: ignore[no-untyped-def]
        p = self.store.get_promise(req.id)
        if p is not None and p.state in ("resolved", "rejected", "rejected_canceled") and p.timeout_at > now:
            self.store.set_promise(dataclasses.replace(p, state=req.state, value=req.value, settled_at=now))
            return {"status": 200, "promise": self.store.get_promise(req.id).seen_at(now).record()}
        return super()._promise_settle(req, now)
