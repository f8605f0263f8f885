"""A schedules stdio target (docs/protocol.md) that answers the optional `messages` request:
duespec's own server behind the protocol, for tests/test_messages.py.

    --no-messages        answers `messages` with a protocol error, as a program written
                         before the request existed would
    --dispatch-expired   the planted dispatch bug of tests/dispatch_bugs.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dispatch_bugs import DispatchesExpired  # noqa: E402

from duespec.impl.schedules import ScheduleServer  # noqa: E402


def main() -> None:
    server_class = DispatchesExpired if "--dispatch-expired" in sys.argv else ScheduleServer
    answers_messages = "--no-messages" not in sys.argv
    server: ScheduleServer | None = None
    for line in sys.stdin:
        request = json.loads(line)
        kind = request.get("type")
        if kind == "hello":
            reply = {"type": "hello", "protocol": 1, "systems": ["schedules"]}
        elif kind == "reset":
            if server is not None:
                server.close()
            config = request.get("config", {})
            server = server_class(profile=config.get("profile", "lean"), retry_timeout=config.get("retry_timeout"))
            server.log_messages()
            reply = {"type": "reset"}
        elif kind == "step" and server is not None:
            reply = {"type": "step", "response": server.handle(request["op"], request["args"], request["now"])}
        elif kind == "observe" and server is not None:
            reply = {"type": "observe", "state": server.observe()}
        elif kind == "messages" and server is not None and answers_messages:
            reply = {"type": "messages", "messages": server.sent_messages()}
        else:
            reply = {"type": "error", "message": f"unknown request type {kind!r}"}
        print(json.dumps(reply), flush=True)


main()
