"""Drive `duespec serve` with the published Resonate Python SDK (resonate-sdk, Python >= 3.12).

Run by tests/test_resonate_sdk.py in its own 3.12 virtualenv, never imported by pytest:
argv[1] is the server's URL. Every call goes through the SDK's HttpConnection, Transport
and Sender (which check kind and corrId echoes and parse the records with msgspec); the
clock is moved with debug.tick, sent as a raw envelope over the same HttpConnection,
since the SDK has no call for it. Prints one JSON object of what it saw; any surprise is
an AssertionError (exit 1).
"""

import asyncio
import json
import sys

from resonate.codec import Codec, NoopEncryptor
from resonate.connections.http import HttpConnection
from resonate.error import ServerError
from resonate.promises import Promises
from resonate.schedules import Schedules
from resonate.send import Sender, TaskRef
from resonate.transport import Transport
from resonate.types import PromiseCreateReq, PromiseRegisterCallbackData, PromiseSettleReq, Value

MINUTE, HOUR = 60_000, 3_600_000
TARGET = {"resonate:target": "poll://any@workers"}


async def tick(connection: HttpConnection, time: int) -> dict:
    body = {"kind": "debug.tick", "head": {"corrId": f"tick-{time}", "version": "2026-04-01"},
            "data": {"time": time}}
    answer = json.loads(await connection.send(json.dumps(body)))
    assert answer["head"]["status"] == 200, answer
    return answer


async def task_story(sender: Sender, now: int) -> dict:
    """A task's life through the SDK's own task calls, which nest their promise requests as
    action envelopes and parse the answers (preload, fence action, the 300 redirect)."""
    seen: dict = {}
    callback = [PromiseRegisterCallbackData(awaited="job.child", awaiter="job")]
    created = await sender.task_create("w1", MINUTE, PromiseCreateReq(id="job", timeout_at=now + HOUR, tags=TARGET))
    seen["created"] = [created.task.state, created.task.version, created.task.pid, created.promise.state,
                       created.preload]
    await sender.task_heartbeat("w1", [TaskRef(id="job", version=1)])
    child = await sender.task_fence_create("job", 1, PromiseCreateReq(id="job.child", timeout_at=now + HOUR,
                                                                      tags=TARGET))
    seen["fenced"] = [child.promise.id, child.promise.state, child.preload]
    seen["suspended"] = await sender.task_suspend("job", 1, callback)
    settled = await sender.promise_settle(PromiseSettleReq(id="job.child", state="resolved", value=Value(data="eQ==")))
    seen["settled"] = [settled.state, settled.value.data]
    acquired = await sender.task_acquire("job", 1, "w2", MINUTE)      # resumed by the settlement
    seen["acquired"] = [acquired.task.state, acquired.task.version, acquired.task.pid]
    redirect = await sender.task_suspend("job", 2, callback)          # job.child is done: 300
    seen["redirected"] = redirect != "suspended" and redirect.preload == []
    listened = await sender.promise_register_listener("job", "poll://any@me")
    seen["listened"] = listened.state
    fulfilled = await sender.task_fulfill("job", 2, PromiseSettleReq(id="job", state="resolved",
                                                                     value=Value(data="ZG9uZQ==")))
    seen["fulfilled"] = [fulfilled.state, fulfilled.value.data]
    try:
        await sender.task_release("job", 2)
        seen["release_after_fulfil"] = 200
    except ServerError as error:
        seen["release_after_fulfil"] = error.code
    return seen


async def far_values(promises: Promises, sender: Sender) -> dict:
    """The values the SDKs send for "never": 2^53-1 (the TypeScript SDK's cap on a detached
    promise's timeoutAt), 2^63-1 (the Python SDK's in-process server's default), and the
    lease this SDK asks for when its ttl is not positive (1 << 50 ms)."""
    seen: dict = {}
    for name, timeout_at in (("2^53-1", 2**53 - 1), ("2^63-1", 2**63 - 1)):
        try:
            record = await promises.create(f"never-{name}", timeout_at, Value(data="x"), {})
            seen[name] = [200, record.state, record.timeout_at, (await promises.get(f"never-{name}")).timeout_at]
        except ServerError as error:
            seen[name] = [error.code, str(error)]
    try:
        created = await sender.task_create("w9", 1 << 50, PromiseCreateReq(id="never-task", timeout_at=2**63 - 1,
                                                                             tags=TARGET))
        seen["task"] = [200, created.task.state, created.task.ttl, created.promise.timeout_at]
    except ServerError as error:
        seen["task"] = [error.code, str(error)]
    return seen


async def main(url: str) -> dict:
    connection = HttpConnection(url)
    await connection.start()
    sender = Sender(Transport(connection), None)
    codec = Codec(NoopEncryptor())
    schedules, promises = Schedules(sender, codec), Promises(sender, codec)
    seen: dict = {}
    try:
        created = await schedules.create("nightly", "* * * * *", "{{.id}}.{{.timestamp}}", HOUR,
                                         Value(data={"report": "daily"}), TARGET)
        fetched = await schedules.get("nightly")
        assert fetched == created, (fetched, created)
        seen["schedule"] = {"id": created.id, "cron": created.cron, "promiseId": created.promise_id,
                            "createdAt": created.created_at, "tags": created.promise_tags}
        try:
            await schedules.create("untargeted", "* * * * *", "{{.id}}.{{.timestamp}}", HOUR,
                                   Value(data=None), {})
            seen["untargeted_status"] = 200
        except ServerError as error:
            seen["untargeted_status"] = error.code

        now = created.created_at
        promise = await promises.create("greeting", now + HOUR, Value(data="hello"), {"kind": "demo"})
        again = await promises.get("greeting")
        seen["promise"] = {"state": again.state, "param": again.param.data,
                           "tags": again.tags, "same": again == promise}

        # The schedule's first three ticks: the minute boundaries after its creation.
        first = (now // MINUTE + 1) * MINUTE
        ticks = [first, first + MINUTE, first + 2 * MINUTE]
        for _ in ticks:  # the deployed reading fires one occurrence per pass
            await tick(connection, ticks[-1])
        occurrences = []
        for cron_time in ticks:
            record = await promises.get(f"nightly.{cron_time}")
            occurrences.append({"id": record.id, "state": record.state, "timeoutAt": record.timeout_at,
                                "createdAt": record.created_at, "param": record.param.data,
                                "schedule_tag": record.tags.get("resonate:schedule")})
        seen["occurrences"] = occurrences
        try:
            await promises.get(f"nightly.{ticks[-1] + MINUTE}")
            seen["beyond"] = 200
        except ServerError as error:
            seen["beyond"] = error.code

        seen["tasks"] = await task_story(sender, now)
        seen["far"] = await far_values(promises, sender)

        await schedules.delete("nightly")
        try:
            await schedules.get("nightly")
            seen["after_delete"] = 200
        except ServerError as error:
            seen["after_delete"] = error.code
    finally:
        await connection.stop()
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
