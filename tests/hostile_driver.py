"""Runs many hostile CLI cases in one process (tests/test_hostile.py starts it).

`python hostile_driver.py CASES RESULTS START`: for each case (a JSON line: argv, cwd,
limit) from index START on, writes {"start": i} before and the outcome after, flushed,
so the parent can tell a hang (the watchdog ends the process with HUNG) from a crash.
Starting a Python per case costs ~0.3 s; in-process, a case costs milliseconds. The
address space is capped at 1 GiB (RLIMIT_AS), as the issue's limits require.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import sys
import threading
import time
import traceback

HUNG = 99
MEMORY_LIMIT = 1 << 30


def run(cases_path: str, results_path: str, start: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    from duespec.cli import main as cli

    with open(cases_path, encoding="utf-8") as handle:
        cases = [json.loads(line) for line in handle]
    home = os.getcwd()
    with open(results_path, "a", encoding="utf-8") as results:
        for index in range(start, len(cases)):
            case = cases[index]
            results.write(json.dumps({"start": index}) + "\n")
            results.flush()
            watchdog = threading.Timer(case["limit"], os._exit, (HUNG,))
            watchdog.daemon = True
            watchdog.start()
            out, err = io.StringIO(), io.StringIO()
            started = time.monotonic()
            code: object
            try:
                os.chdir(case["cwd"])
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = cli(case["argv"])
            except SystemExit as stop:  # argparse's own usage errors (2) and --help (0)
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
            except BaseException:  # anything escaping main is a finding: record it whole
                code = "escaped"
                err.write(traceback.format_exc())
            finally:
                watchdog.cancel()
                os.chdir(home)
            results.write(json.dumps({"index": index, "code": code, "seconds": time.monotonic() - started,
                                      "stdout": out.getvalue()[-3000:], "stderr": err.getvalue()[-3000:]})
                          + "\n")
            results.flush()


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]))
