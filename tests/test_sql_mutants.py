"""tools/pg_variants/sql_mutants.py: each operator makes the edit it names, only inside function
bodies, never on `:=`, `=>`, a SET list, a string or a comment; ids are stable; and every mutant
of the real resonate.sql applies, once, where it was found. No PostgreSQL needed."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools" / "pg_variants"))

import pg_support  # noqa: E402
import sql_mutants  # noqa: E402
from mutate_sql import Result, benchmark_commands, main, summary  # noqa: E402
from needs import unavailable  # noqa: E402
from run import readme_commands  # noqa: E402
from sql_survivors import EQUIVALENT, GAP, SURVIVORS  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
from mutate.floor import read_floors  # noqa: E402

SNIPPET = """\
CREATE TABLE t (id text PRIMARY KEY, n int CHECK (n >= 0));
CREATE OR REPLACE FUNCTION _lock(id text) RETURNS void
  LANGUAGE sql AS $$ SELECT pg_advisory_xact_lock(hashtextextended(id, 0)); $$;
CREATE OR REPLACE FUNCTION bump(p_id text, p_now bigint) RETURNS int
  LANGUAGE plpgsql AS $$
DECLARE r t; cnt int := 0;
BEGIN
  PERFORM _lock(p_id);
  SELECT * INTO r FROM t WHERE id = p_id FOR UPDATE;
  IF r.n <= p_now THEN  -- a comment: r.n < 1, FOR UPDATE, ORDER BY n
    UPDATE t SET n = n + 1 WHERE id = p_id;
  END IF;
  FOR r IN SELECT * FROM t WHERE n > p_now ORDER BY n, id DESC LOOP
    cnt := cnt + p_now;
  END LOOP;
  PERFORM log_it(msg => 'a = b <> c');
  RETURN cnt;
END $$;
CREATE OR REPLACE FUNCTION take(p_limit int) RETURNS SETOF t LANGUAGE sql AS $$
  SELECT * FROM t ORDER BY id FOR UPDATE SKIP LOCKED LIMIT p_limit $$;
DO $$ BEGIN IF 1 = 1 THEN DELETE FROM t WHERE n >= 0; END IF; END $$;
"""

EXPECTED = [
    "lock _lock:3 SELECT pg_advisory_xact_lock(hashtextextended(id, 0)); -> (dropped)",
    "off-by-one _lock:3 pg_advisory_xact_lock(hashtextextended(id, 0)); $$; -> pg_advisory_xact_lock(hashtextextended(id, 1)); $$;",
    "off-by-one _lock:3 pg_advisory_xact_lock(hashtextextended(id, 0)); $$; -> pg_advisory_xact_lock(hashtextextended(id, -1)); $$;",
    "off-by-one bump:6 := 0; -> := 1;",
    "off-by-one bump:6 := 0; -> := -1;",
    "lock bump:8 PERFORM _lock(p_id); -> (dropped)",
    "cmp bump:9 id = p_id -> id <> p_id",
    "for-update bump:9 id = p_id FOR UPDATE; -> id = p_id;",
    "cmp bump:10 r.n <= p_now -> r.n < p_now",
    "drop-statement bump:11 UPDATE t SET n = n + 1 WHERE id = p_id; -> (dropped)",
    "off-by-one bump:11 n + 1 WHERE -> n + 2 WHERE",
    "off-by-one bump:11 n + 1 WHERE -> n + 0 WHERE",
    "cmp bump:11 id = p_id; -> id <> p_id;",
    "cmp bump:13 n > p_now -> n >= p_now",
    "order-by bump:13 BY n, id -> BY n DESC, id",
    "order-by bump:13 id DESC LOOP -> id ASC LOOP",
    "off-by-one bump:14 cnt + p_now; -> cnt + p_now + 1;",
    "off-by-one bump:14 cnt + p_now; -> cnt + p_now - 1;",
    "drop-statement bump:16 PERFORM log_it(msg => 'a = b <> c'); -> (dropped)",
    "order-by take:20 BY id FOR -> BY id DESC FOR",
    "for-update take:20 BY id FOR UPDATE SKIP LOCKED LIMIT -> BY id LIMIT",
    "for-update take:20 FOR UPDATE SKIP LOCKED LIMIT -> FOR UPDATE LIMIT",
]


def _by_id() -> dict[str, sql_mutants.SqlMutant]:
    return {m.id: m for m in sql_mutants.mutants(SNIPPET)}


def test_the_snippet_has_exactly_the_expected_mutants_in_file_order():
    assert [m.id for m in sql_mutants.mutants(SNIPPET)] == EXPECTED


def test_ids_are_stable_across_enumerations_and_name_distinct_edits():
    first, again = sql_mutants.mutants(SNIPPET), sql_mutants.mutants(SNIPPET)
    assert first == again
    assert len({(m.start, m.region, m.replacement) for m in first}) == len(first)


@pytest.mark.parametrize("mutant_id, old_line, new_line", [
    ("cmp bump:10 r.n <= p_now -> r.n < p_now",
     "  IF r.n <= p_now THEN", "  IF r.n < p_now THEN"),
    ("for-update bump:9 id = p_id FOR UPDATE; -> id = p_id;",
     "  SELECT * INTO r FROM t WHERE id = p_id FOR UPDATE;", "  SELECT * INTO r FROM t WHERE id = p_id;"),
    ("order-by bump:13 id DESC LOOP -> id ASC LOOP",
     "ORDER BY n, id DESC LOOP", "ORDER BY n, id ASC LOOP"),
    ("off-by-one bump:11 n + 1 WHERE -> n + 2 WHERE",
     "SET n = n + 1 WHERE", "SET n = n + 2 WHERE"),
    ("off-by-one bump:14 cnt + p_now; -> cnt + p_now + 1;",
     "cnt := cnt + p_now;", "cnt := cnt + p_now + 1;"),
    ("for-update take:20 FOR UPDATE SKIP LOCKED LIMIT -> FOR UPDATE LIMIT",
     "ORDER BY id FOR UPDATE SKIP LOCKED LIMIT", "ORDER BY id FOR UPDATE LIMIT"),
])
def test_each_operator_makes_the_edit_it_names_and_nothing_else(mutant_id, old_line, new_line):
    mutated = sql_mutants.apply(_by_id()[mutant_id], SNIPPET)
    assert SNIPPET.count(old_line) == 1 and mutated.count(old_line) == 0
    assert mutated == SNIPPET.replace(old_line, new_line)


@pytest.mark.parametrize("mutant_id, dropped", [
    ("lock bump:8 PERFORM _lock(p_id); -> (dropped)", "  PERFORM _lock(p_id);\n"),
    ("drop-statement bump:11 UPDATE t SET n = n + 1 WHERE id = p_id; -> (dropped)",
     "    UPDATE t SET n = n + 1 WHERE id = p_id;\n"),
    ("lock _lock:3 SELECT pg_advisory_xact_lock(hashtextextended(id, 0)); -> (dropped)",
     "SELECT pg_advisory_xact_lock(hashtextextended(id, 0)); "),
])
def test_a_dropped_statement_is_removed_whole(mutant_id, dropped):
    assert sql_mutants.apply(_by_id()[mutant_id], SNIPPET) == SNIPPET.replace(dropped, "", 1)


def test_assignments_named_arguments_set_lists_strings_comments_and_code_outside_functions_are_untouched():
    everything = sql_mutants.mutants(SNIPPET)
    cmp_at = {m.start for m in everything if m.operator == "cmp"}
    assert any(op in cmp_at for op in (SNIPPET.index("<= p_now"), SNIPPET.index("> p_now")))
    for text, equals_at in ((":= 0", 1), (":= cnt", 1), ("=>", 0), ("SET n =", 6)):
        assert SNIPPET.index(text) + equals_at not in cmp_at, text
    for text in ("'a = b <> c'", "-- a comment: r.n < 1, FOR UPDATE, ORDER BY n"):
        at = SNIPPET.index(text)
        assert not [m.id for m in everything if at <= m.start < at + len(text)], text
    bodies = sql_mutants.functions(SNIPPET)
    assert [f.name for f in bodies] == ["_lock", "bump", "take"]
    for mutant in everything:
        assert any(f.start <= mutant.start and mutant.end <= f.end for f in bodies), mutant.id
    # the table's CHECK and the DO block hold comparisons, a DELETE and literals: none mutated
    assert not [m.id for m in everything if m.start < SNIPPET.index("CREATE OR REPLACE")]
    assert not [m.id for m in everything if m.start > SNIPPET.index("DO $$")]


def test_a_mutant_whose_text_moved_is_refused():
    mutant = _by_id()["cmp bump:10 r.n <= p_now -> r.n < p_now"]
    with pytest.raises(sql_mutants.MutantError, match="not at line 10"):
        sql_mutants.apply(mutant, "-- one line more\n" + SNIPPET)


def test_the_sample_is_seeded_and_stratified_by_operator():
    everything = sql_mutants.mutants(SNIPPET)
    sample = sql_mutants.stratified_sample(everything, 6, seed=3)
    assert sample == sql_mutants.stratified_sample(everything, 6, seed=3)
    assert len(sample) == 6 and len(set(sample)) == 6
    assert {m.operator for m in sample} == set(sql_mutants.OPERATORS)
    assert sql_mutants.stratified_sample(everything, 100, seed=3) != everything  # shuffled
    assert sorted(m.id for m in sql_mutants.stratified_sample(everything, 100, seed=3)) == sorted(EXPECTED)


def test_the_kill_rate_leaves_out_equivalent_survivors_and_stillborn_and_needs_every_survivor_judged(monkeypatch):
    killed = [Result(f"k{i}", "cmp", "f", "killed", 1.0) for i in range(8)]
    stillborn = Result("s", "lock", "f", "stillborn", 0.0, error="syntax error")
    text, holds = summary(killed + [Result("a survivor", "lock", "f", "survived", 1.0), stillborn])
    assert "8 killed of 9 non-equivalent = 88.9%" in text and "1 stillborn" in text
    assert "a survivor\n      unexplained" in text and not holds
    monkeypatch.setitem(SURVIVORS, "a survivor", (EQUIVALENT, "no client can tell, for a reason given here"))
    text, holds = summary(killed + [Result("a survivor", "lock", "f", "survived", 1.0), stillborn])
    assert "8 killed of 8 non-equivalent = 100.0%" in text and holds
    monkeypatch.setitem(SURVIVORS, "a survivor", (GAP, "a campaign that reads the lock table would show it"))
    text, holds = summary(killed[:3] + [Result("a survivor", "lock", "f", "survived", 1.0)])
    assert "3 killed of 4 non-equivalent = 75.0%" in text and "GAP: a campaign" in text and not holds
    text, holds = summary(killed[:3] + [Result(f"h{i}", "lock", "f", "hung", 1.0) for i in range(5)])
    assert "8 killed of 8" in text and "5 of the killed hung" in text and holds


def test_summary_judges_saved_results_again_and_exits_by_the_done_when(tmp_path, capsys):
    killed = [Result(f"k{i}", "cmp", "f", "killed", 1.0).__dict__ for i in range(4)]
    saved = tmp_path / "out.json"
    saved.write_text(json.dumps(killed + [Result("s", "lock", "f", "survived", 1.0).__dict__]))
    assert main(["--summary", str(saved)]) == 1
    assert "4 killed of 5 non-equivalent = 80.0%" in capsys.readouterr().out
    later = tmp_path / "later.json"  # the same mutant run again: the later result is kept
    later.write_text(json.dumps([Result("s", "lock", "f", "killed", 1.0).__dict__]))
    assert main(["--summary", str(saved), str(later)]) == 0
    assert "5 killed of 5" in capsys.readouterr().out
    saved.write_text("not json")
    assert main(["--summary", str(saved)]) == 2


def test_the_floor_exits_by_the_committed_count_and_every_survivor_judged(tmp_path, capsys, monkeypatch):
    """make pg-mutation's gate: below the floor, or a survivor nobody judged, exits 1 whatever
    the rate; at the floor with every survivor judged, 0 though the 80% Done-when does not hold."""
    floor = read_floors()["sql"]
    monkeypatch.setitem(SURVIVORS, "judged", (GAP, "a story the campaign lacks would show it"))
    results = [Result(f"k{i}", "cmp", "f", "killed", 1.0).__dict__ for i in range(floor)]
    saved = tmp_path / "out.json"
    saved.write_text(json.dumps(results + [Result("judged", "lock", "f", "survived", 1.0).__dict__] * 2 * floor))
    assert main(["--summary", str(saved), "--floor"]) == 0
    assert f"mutation floor sql: {floor} killed, floor {floor}: HOLDS" in capsys.readouterr().out
    saved.write_text(json.dumps(results[1:]))
    assert main(["--summary", str(saved), "--floor"]) == 1
    assert "BROKEN" in capsys.readouterr().out
    saved.write_text(json.dumps(results + [Result("nobody judged it", "lock", "f", "survived", 1.0).__dict__]))
    assert main(["--summary", str(saved), "--floor"]) == 1
    assert "1 survivors unexplained: BROKEN" in capsys.readouterr().out


def test_the_benchmark_runs_the_readmes_response_only_examples_20_and_stress_declared_commands():
    conform, stress = benchmark_commands(readme_commands())
    assert conform.argv[:2] == ["conform", "schedules"] and "--examples 20" in conform.text
    assert "--observe none" in conform.text
    assert stress.argv[:2] == ["stress", "schedules"] and "examples/resonate-pg/stress-declared.toml" in stress.argv


@pytest.fixture(scope="module")
def resonate_source() -> str:
    try:
        return pg_support.resonate_sql().read_text()
    except pg_support.PostgresUnavailable as error:
        unavailable("the mutants of resonate.sql", str(error))


def test_every_mutant_of_resonate_sql_applies_once_where_it_was_found(resonate_source):
    everything = sql_mutants.mutants(resonate_source)
    assert set(Counter(m.operator for m in everything)) == set(sql_mutants.OPERATORS)
    outputs = set()
    for mutant in everything:
        mutated = sql_mutants.apply(mutant, resonate_source)
        assert mutated != resonate_source, mutant.id
        # one edit, at the mutant's place: all before it and all after it unchanged
        tail = len(resonate_source) - mutant.end
        assert mutated[:mutant.start] == resonate_source[:mutant.start], mutant.id
        assert mutated[len(mutated) - tail:] == resonate_source[mutant.end:], mutant.id
        line = resonate_source.splitlines()[mutant.line - 1]
        if mutant.operator != "drop-statement" and mutant.operator != "lock" and "\n" not in mutant.region:
            assert " ".join(mutant.old.split()) in " ".join(line.split()), mutant.id
        outputs.add(mutated)
    assert len(outputs) == len(everything)  # no two mutants are the same file


def test_every_judged_survivor_is_a_mutant_of_resonate_sql_with_a_reason(resonate_source):
    ids = {m.id for m in sql_mutants.mutants(resonate_source)}
    for mutant_id, (kind, reason) in SURVIVORS.items():
        assert mutant_id in ids, f"{mutant_id}: no such mutant of resonate.sql (the file moved? re-key it)"
        assert kind in (EQUIVALENT, GAP) and len(reason.split()) >= 8, mutant_id
