"""A deliberately tiny third system, whole in one file: a counter with a cap.

Plugged in with DUESPEC_SYSTEMS=counter.system:SYSTEM (tests/ on the path), it goes
through `duespec check`, `conform`, `replay` and JUnit output like the built-in systems,
with no file of duespec changed (docs/architecture.md, "Adding a system").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import rule

from duespec.coverage import reached
from duespec.systems import System
from duespec.systems.machine import ProtocolMachine

Json = Any
OPERATIONS = {"add": ("n",), "read": ()}


def _malformed(op: Json, args: Json) -> bool:
    if op not in OPERATIONS or type(args) is not dict or set(args) != set(OPERATIONS[op]):
        return True
    return op == "add" and not (type(args["n"]) is int and 1 <= args["n"] <= 3)


class CounterModel:
    """The reference model, one branch per requirement (counter.md)."""

    def reset(self, config: dict[str, Json]) -> None:
        self.cap, self.value = config["cap"], 0

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        if _malformed(op, args):
            reached("CT-04.invalid")
            return {"error": "invalid"}
        if op == "read":
            reached("CT-03.read")
            return {"ok": self.value}
        if self.value + args["n"] > self.cap:
            reached("CT-02.over_cap")
            return {"error": "over_cap"}
        reached("CT-01.added")
        self.value += args["n"]
        return {"ok": self.value}

    def observe(self) -> dict[str, Json]:
        return {"cap": self.cap, "value": self.value}

    def close(self) -> None:
        pass


class CounterImpl:
    """The "production" counter: keeps its room left rather than its value."""

    def reset(self, config: dict[str, Json]) -> None:
        self.cap = self.room = config["cap"]

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        if _malformed(op, args):
            return {"error": "invalid", "message": "not a counter request"}
        if op == "add":
            if args["n"] > self.room:
                return {"error": "over_cap"}
            self.room -= args["n"]
        return {"ok": self.cap - self.room}

    def observe(self) -> dict[str, Json]:
        return {"cap": self.cap, "value": self.cap - self.room}

    def close(self) -> None:
        pass


class CounterMachine(ProtocolMachine):
    """Rules that read like the protocol."""

    @rule(n=st.integers(min_value=0, max_value=4))
    def add(self, n: int) -> None:
        self.call("add", {"n": n}, len(self.steps))

    @rule()
    def read(self) -> None:
        self.call("read", {}, len(self.steps))

    @rule(op=st.sampled_from(["Add", "add", "read"]), args=st.sampled_from([None, {}, {"n": "1"}, {"x": 1}]))
    def malformed(self, op: str, args: Json) -> None:
        self.call(op, args, len(self.steps))


SYSTEM = System(
    name="counter",
    profiles=("default", "roomy"),
    config=lambda profile: {"cap": 5 if profile == "default" else 50},
    model=CounterModel,
    impl=CounterImpl,
    machine=CounterMachine,
    catalogue=str(Path(__file__).with_name("counter.md")),
    operations=OPERATIONS,
    state_keys=("cap", "value"),
    required_tags=frozenset({"CT-01.added", "CT-02.over_cap", "CT-03.read", "CT-04.invalid"}),
    out_of_reach={"roomy": {"CT-02": "a cap of 50 is never reached in a 50-step run of adds of at most 3"}},
)
