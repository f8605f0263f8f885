"""Starting `duespec serve` as the README says, for the wire tests."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Served:
    """`duespec serve schedules --port 0 ARGS` in a child process; `url` once it listens."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "duespec", "serve", "schedules", "--port", "0", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if "listening on " not in line:
            self.process.kill()
            raise AssertionError(f"duespec serve did not start: {line!r} {self.process.stderr.read()!r}")
        self.url = line.split("listening on ")[1].split()[0]

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> str:
        """Stop it as Ctrl-C would; its stderr."""
        self.process.terminate()
        try:
            _, err = self.process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.alive():
            self.stop()


def wait_until(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False
