"""Mutants of resonate.sql that survived the benchmark, each judged (tools/pg_variants/mutate_sql.py).

Keyed by the mutant's id (tools/pg_variants/sql_mutants.py: operator, function, line, the
snippet before and after), as tools/mutate/equivalent.py keys the survivors of impl/:

- EQUIVALENT: no client of resonate-pg can tell the mutant from the file as shipped, for
  the reason given; left out of the kill rate;
- GAP: a real difference the two commands did not show; the reason says what would show
  it. Counted as a survivor.

Only mutants that were run and survived are here: an entry is a judgment of one
measured survivor, never a guess about a mutant nobody ran.
"""

from __future__ import annotations

EQUIVALENT = "EQUIVALENT"
GAP = "GAP"

SURVIVORS: dict[str, tuple[str, str]] = {
}
