"""Automated mutation of impl/ (the tool itself is the package tools/mutate/, whose
docstring says what it does; docs/mutation.md how to run it):

    .venv/bin/python tools/mutate_impl.py --list                # the mutants per file
    .venv/bin/python tools/mutate_impl.py --run impl/duebook.py 17  # one mutant
"""

import sys
from pathlib import Path

# Run as a script, so its package is found beside it, whatever the working directory.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mutate.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
