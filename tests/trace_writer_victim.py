"""A campaign's failure-trace writer made to write fast and forever, for the kill test
(tests/test_trace_kills.py): it writes one failure trace after another into DIR, each a
counterexample of STEPS steps, printing each trace's path as it lands; the test SIGKILLs it
at random points.

    python tests/trace_writer_victim.py DIR STEPS [COUNT]
"""

from __future__ import annotations

import sys
from collections import Counter

from duespec.campaigns.run import CampaignResult, write_failure_trace


def main() -> None:
    directory, steps = sys.argv[1], int(sys.argv[2])
    count = int(sys.argv[3]) if len(sys.argv) > 3 else None
    result = CampaignResult(system="duebook", profile="seed", seed=0, examples=1, steps=steps, seconds=0.1,
                            coverage=Counter(), failure="planted", config={"max_open": 3},
                            counterexample=[{"i": i, "op": "get", "args": {"id": 1}, "now": i,
                                             "result": {"error": "not_found"}} for i in range(steps)])
    print("ready", flush=True)
    written = 0
    while count is None or written < count:
        print(write_failure_trace(result, directory, target="victim", producer="kill-test"), flush=True)
        written += 1


if __name__ == "__main__":
    main()
