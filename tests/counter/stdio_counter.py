"""A counter written from docs/protocol.md and counter.md alone, as a program: JSON lines
on stdin and stdout. `--bug` lets the value reach cap + 1 (an off-by-one in the cap check)."""

import json
import sys

BUG = "--bug" in sys.argv
cap = value = 0
for line in sys.stdin:
    request = json.loads(line)
    kind = request.get("type")
    if kind == "hello":
        reply = {"type": "hello", "protocol": 1, "systems": ["counter"]}
    elif kind == "reset":
        cap, value = request["config"]["cap"], 0
        reply = {"type": "reset"}
    elif kind == "observe":
        reply = {"type": "observe", "state": {"cap": cap, "value": value}}
    else:
        op, args = request.get("op"), request.get("args")
        ops = {"add": {"n"}, "read": set()}
        if (op not in ops or not isinstance(args, dict) or set(args) != ops[op]
                or (op == "add" and not (type(args["n"]) is int and 1 <= args["n"] <= 3))):
            response = {"error": "invalid"}
        elif op == "read":
            response = {"ok": value}
        elif value + args["n"] > cap + (1 if BUG else 0):
            response = {"error": "over_cap"}
        else:
            value += args["n"]
            response = {"ok": value}
        reply = {"type": "step", "response": response}
    print(json.dumps(reply), flush=True)
