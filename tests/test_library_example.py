"""docs/library.md's example runs as shown: a campaign from Python, its classes inspected,
its report rendered as `duespec conform` prints it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from test_docs import ROOT, Block, _assert_lines_in

PAGE = ROOT / "docs" / "library.md"


def example_and_output() -> tuple[str, list[str], int]:
    """The page's python block, the `text output` block after it, and the block's line."""
    text = PAGE.read_text()
    found = re.search(r"^```python\n(.*?)^```\n.*?^```text output\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)
    assert found, f"{PAGE}: a ```python block followed by a ```text output block"
    return found.group(1), found.group(2).splitlines(), text[:found.start()].count("\n") + 1


def test_the_library_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    code, output, line = example_and_output()
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stderr == "", run.stderr  # the library prints nothing of its own
    _assert_lines_in(Block(PAGE, line, "", [], output), run.stdout)
    # the one class's trace, written where the report says
    [trace] = (tmp_path / ".duespec" / "failures").iterdir()
    assert f"trace: .duespec/failures/{trace.name}" in run.stdout.splitlines()
