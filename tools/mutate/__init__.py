"""Automated mutation of impl/: does `duespec check SYSTEM --profile all` (default
settings) kill mutants nobody chose?

Each mutant changes one AST node of one impl file: a comparison operator (< <= > >= ==
!=, in, is), an arithmetic or boolean operator, an integer constant (n -> n+1, n -> n-1),
a `not` dropped, a True/False flipped. The mutated module is compiled in memory in a
fresh process (the files on disk never change), installed in sys.modules before duespec
imports it, and `duespec check` runs against it: exit 1 kills the mutant, exit 0 lets it
survive; a check still running after CPU_LIMIT CPU seconds counts as killed ("hung"),
and so does a mutant that crashes duespec outright ("broken"). Functions outside the JSON
contract (snapshot and restore, close, transaction, repr) are not mutated: no campaign
calls them; their unit tests do.

    .venv/bin/python tools/mutate_impl.py --list                # the mutants per file
    .venv/bin/python tools/mutate_impl.py --sample 150 --seed 1 --system schedules --out s.json
    .venv/bin/python tools/mutate_impl.py --summary s.json d.json   # kill rate, survivors
    .venv/bin/python tools/mutate_impl.py --run impl/duebook.py 17  # one mutant

docs/mutation.md has today's figures and how to run it; docs/mutation-log.md every round,
with the survivors judged equivalent (EQUIVALENT, with their reasons).

The tool is a package of one idea a module: operators.py (what a mutant is, and naming
it), runner.py (checking one in a child process, and drawing a sample), report.py (the kill
rate), equivalent.py and out_of_check.py (the survivors judged), cli.py (the command line).
tools/mutate_impl.py is the command.
"""
