"""A real Resonate application (resonate-sdk 0.8.1, Python >= 3.12), run by
tests/test_field_sdk.py through `duespec record`; never imported by pytest.

argv[1] is the recording proxy's URL. A durable function sleeps and calls a child, a
schedule is created, its first occurrence (fired by the server's own real-clock loop) is
read, and the schedule deleted. The SDK is given no message source: duespec serve has no
`/poll` (SSE) channel, so a worker could not be told to resume after a sleep that
suspended it, and the sleep is therefore zero long (its timer promise is created, and
found resolved at once, without suspending). Prints one JSON object of what it saw.
"""

import asyncio
import json
import sys
import time
from datetime import timedelta

from resonate.context import Context
from resonate.resonate import Resonate

MINUTE = 60_000


async def shout(ctx: Context, name: str) -> str:
    return name.upper()


async def greet(ctx: Context, name: str) -> str:
    await ctx.sleep(timedelta(0))
    return await ctx.run(shout, name)


async def main(url: str) -> dict:
    resonate = Resonate(url=url, sources=[], subscription_refresh_secs=0.2)
    resonate.register(greet)
    resonate.register(shout)
    seen: dict = {}
    try:
        seen["result"] = await asyncio.wait_for(resonate.run("greet-ada", greet, "ada").result(), 30)
        schedule = await resonate.schedule("nightly", "* * * * *", "greet", args=("bob",))
        created = await resonate.schedules.get("nightly")
        first = (created.created_at // MINUTE + 1) * MINUTE
        while time.time() * 1000 < first + 2_000:  # the server's own clock fires it
            await asyncio.sleep(0.2)
        occurrence = await resonate.promises.get(f"nightly-{first}")
        seen["occurrence"] = {"id": occurrence.id, "state": occurrence.state, "createdAt": occurrence.created_at,
                              "first": first}
        await schedule.delete()
    finally:
        await resonate.stop()
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
