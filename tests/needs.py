"""What a test does when a service it checks against cannot be had on this machine.

Outside CI the test is skipped with the reason and how to get the service (pytest's
summary lists it, and `make test`, through tools/services.py, says it once more at the
end). Under CI (CI=true, as every CI service and `.ci/run` set it) the machine is meant to
have everything, so a missing service fails the test: a skip there would hide that
something went unchecked.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def under_ci(environ: dict[str, str] | None = None) -> bool:
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() not in ("", "0", "false", "no")


def unavailable(what: str, reason: str) -> NoReturn:
    """Skip (outside CI) or fail (under CI) the calling test: `what` did not run, because `reason`."""
    message = f"not run: {what}: {reason}"
    if under_ci():
        pytest.fail(f"{message} (CI=true: everything must run)", pytrace=False)
    pytest.skip(message)
