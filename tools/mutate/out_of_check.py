"""Survivors judged out of `check`'s reach, each with its reason (docs/mutation-log.md)."""

from __future__ import annotations

#: Survivors that are not equivalent but that `duespec check` cannot tell apart: code it
#: never runs, or a regime its bounds keep it out of. Same keys as EQUIVALENT; counted as
#: survivors, and reported apart.
_FILE_STORE_ONLY = ("a file store's own path that `duespec check` never takes: it runs the server profile "
                    "on a store file, reopens it every 16 steps and has a second server refused at once, "
                    "but never has one wait for the lock, a foreign SQLite connection, a crash before a "
                    "sync, or a page cache to fill; tests/store_crash.py and the store tests cover those")
_OVER_A_MILLION_OWED = ("tells only when one catch-up owes about 1,000,000 occurrences; the campaign "
                        "never owes more than MAX_OWED_PER_JUMP (60) per clock move, because the model "
                        "fires ~10^4 occurrences a second, and the harness's own guard "
                        "(refuse_long_catch_up) counts with occurrences_due too; tests/test_limits.py "
                        "covers the refusal")
_CONSTRUCTOR_CHECK = ("ScheduleServer's own argument check: ImplTarget.reset builds the server only "
                      "from config_of's answer, which has refused a bad profile or retry_timeout first "
                      "(always a valid profile and an int in [1, MAX_TIME])")
_IMPL_DEFAULT_RETRY = ("impl/'s own default, used only by a ScheduleServer made without retry_timeout "
                       "(`duespec serve` with no --retry-timeout, the unit tests): ImplTarget.reset resolves a "
                       "config without retry_timeout through config_of, with duespec/systems/schedules.py's "
                       "own DEFAULT_RETRY_TIMEOUT, and always passes it; tests/test_schedules_impl.py::"
                       "test_promise_create_with_target_dispatches_a_task kills it (taskTimeouts at T0 + 5000)")
#: Deferral.__eq__'s line, as the keys below name it.
EQ_LINE = "return type(other) is Deferral and self._fields() == other._fields()  # type: ignore[attr-defined]"
_PYTHON_EQUALITY = ("Deferral's == and != are Python API only: no JSON answer compares two Deferrals (the "
                    "contract reads their fields) and the Book tells rows apart by identity; "
                    "tests/test_duebook_impl.py::test_deferrals_are_equal_exactly_when_every_field_is kills it")
OUT_OF_CHECK: dict[tuple[str, str, str, str], str] = {
    ("impl/duebook.py", "__ne__", "return not self == other", "Eq -> NotEq"): _PYTHON_EQUALITY,
    ("impl/duebook.py", "__ne__", "return not self == other", "drop `not`"): _PYTHON_EQUALITY,
    ("impl/duebook.py", "__eq__", EQ_LINE, "Is -> IsNot"): _PYTHON_EQUALITY,
    ("impl/duebook.py", "__eq__", EQ_LINE, "And -> Or"): _PYTHON_EQUALITY,
    ("impl/duebook.py", "__eq__", EQ_LINE, "Eq -> NotEq"): _PYTHON_EQUALITY,
    ("impl/duebook.py", "__init__", 'self._max_open = _int64("max_open", max_open, 1)', "1 -> 0"):
        "a Book of max_open 0 is a bad config, which reset() refuses before a campaign starts (the "
        "model's D-01.invalid); tests/test_duebook_impl.py::test_a_cap_below_one_or_not_an_int64_is_invalid "
        "kills it",
    ("impl/schedules_sql.py", "", "CACHE_KIB = 256 * 1024", "Mult -> FloorDiv"): _FILE_STORE_ONLY,
    **{("impl/schedules_sql.py", "", "BUSY_TIMEOUT_MS = 5000", change): "how long a statement waits "
       "for a lock held by a foreign SQLite connection to the store file: " + _FILE_STORE_ONLY
       for change in ("5000 -> 4999", "5000 -> 5001")},
    ("impl/duebook_requests.py", "call", "known = CALLS.get(op) if type(op) is str or isinstance(op, str) else None",
     "Is -> IsNot"):
        "differs only for an unhashable op (a JSON array or object), which CALLS.get then raises on; "
        "the campaign cannot send one: a trace step's op must be a string (duespec/traces), and the "
        "harness looks ops up in sets and dicts (tried: it raises inside duespec); "
        "tests/test_malformed_requests.py sends both to the model, impl/ and the JavaScript target",
    ("impl/schedules.py", "occurrences_due", "if next_run_at > now:", "Gt -> Lt"): _OVER_A_MILLION_OWED,
    ("impl/schedules.py", "occurrences_due", "if next_run_at > now:", "Gt -> GtE"): _OVER_A_MILLION_OWED,
    ("impl/schedules.py", "", "MAX_CATCH_UP_OCCURRENCES = 1_000_000", "1000000 -> 999999"): _OVER_A_MILLION_OWED,
    ("impl/schedules_sql.py", "__init__", "timeout=BUSY_TIMEOUT_MS / 1000)", "1000 -> 999"):
        "the same wait as BUSY_TIMEOUT_MS (in seconds for sqlite3.connect), for a lock held by a "
        "foreign SQLite connection to the store file: " + _FILE_STORE_ONLY,
    ("impl/schedules_sql.py", "__init__", "timeout=BUSY_TIMEOUT_MS / 1000)", "1000 -> 1001"):
        "as `1000 -> 999`: the wait for a lock held by a foreign SQLite connection to the store "
        "file: " + _FILE_STORE_ONLY,
    ("impl/schedules_sql.py", "_own",
     'raise StoreError(f"cannot open store {path!r}: {lock_path}: {error.strerror or error}") from None',
     "Or -> And"):
        "only the text of the StoreError when the lock file cannot be opened (str(error) instead of its "
        "strerror): " + _FILE_STORE_ONLY,
    ("impl/schedules_sql.py", "_own", 'owner = handle.read(32).strip() or "unknown"', "32 -> 33"):
        "only StoreInUse's message, and only for a lock file holding more than 32 characters (_own "
        "writes a pid and a newline): " + _FILE_STORE_ONLY,
    ("impl/schedules_sql.py", "_own", 'owner = handle.read(32).strip() or "unknown"', "32 -> 31"):
        "only StoreInUse's message, and only for a lock file holding more than 31 characters (_own "
        "writes a pid and a newline): " + _FILE_STORE_ONLY,
    ("impl/schedules.py", "", "DEFAULT_RETRY_TIMEOUT = 5000", "5000 -> 5001"): _IMPL_DEFAULT_RETRY,
    ("impl/schedules.py", "", "DEFAULT_RETRY_TIMEOUT = 5000", "5000 -> 4999"): _IMPL_DEFAULT_RETRY,
    ("impl/schedules.py", "", "MAX_CATCH_UP_OCCURRENCES = 1_000_000", "1000000 -> 1000001"):
        _OVER_A_MILLION_OWED + "; test_the_bound_is_one_number_and_the_machine_stays_below_it kills it",
    ("impl/schedules.py", "occurrences_due",
     "return sum(1 for _ in islice(chain((next_run_at,), later), limit + 1))", "1 -> 2 #1"):
        "counts each occurrence twice, so _catch_up refuses a catch-up of more than 500,000 occurrences "
        "over at least 1,000,000 unticked minutes (e.g. `*/2 * * * *` ticked 1,100,000 minutes after "
        "its next run: 550,000 promises, or CatchUpTooLong): the campaign never owes more than "
        "MAX_OWED_PER_JUMP (60) per clock move (outage_of_years owes a yearly schedule's 2), and the "
        "harness's own guard (refuse_long_catch_up) counts with the mutated occurrences_due too; no "
        "unit test covers it",
    ("impl/schedules.py", "occurrences_due",
     "return sum(1 for _ in islice(chain((next_run_at,), later), limit + 1))", "1 -> 0 #1"):
        "counts 0, so no catch-up is ever refused: " + _OVER_A_MILLION_OWED
        + " (under this mutant its refusal tests never finish)",
    # judge6: impl/schedules.py survivors of `check schedules --profile all`.
    ("impl/schedules.py", "__init__", "if retry_timeout is not None and (type(retry_timeout) is not int",
     "Or -> And"):
        "accepts an int out of range (0, -1, past MAX_TIME) and a non-int inside it (1.5): "
        + _CONSTRUCTOR_CHECK + "; tests/test_schedules_impl.py::test_bad_config_is_refused kills it",
    ("impl/schedules.py", "__init__", "or not 1 <= retry_timeout <= MAX_TIME):", "1 -> 0"):
        "accepts retry_timeout=0: " + _CONSTRUCTOR_CHECK + "; no unit test covers it "
        "(test_bad_config_is_refused tries -1, which both refuse)",
    ("impl/schedules.py", "_catch_up", "if ((now - s.next_run_at) // 60_000 >= MAX_CATCH_UP_OCCURRENCES",
     "GtE -> Gt"):
        "skips the refusal when the outage is exactly 1,000,000 whole minutes: `* * * * *` ticked "
        "60,000,000,000 ms after its nextRunAt owes 1,000,001 occurrences, which the original refuses "
        "and the mutant fires; " + _OVER_A_MILLION_OWED + "; no unit test covers that edge",
    ("impl/schedules.py", "_catch_up", "if ((now - s.next_run_at) // 60_000 >= MAX_CATCH_UP_OCCURRENCES",
     "GtE -> LtE"):
        "refuses only at exactly 1,000,000 unticked minutes, never beyond: " + _OVER_A_MILLION_OWED
        + "; tests/test_limits.py::test_a_catch_up_past_the_bound_is_refused_and_changes_nothing kills it "
        "(a minutely schedule ticked in year 9999)",
    ("impl/schedules.py", "_catch_up", "and occurrences_due(s.cron, s.next_run_at, now, MAX_CATCH_UP_OCCURRENCES)",
     "Gt -> GtE"):
        "also refuses a catch-up of exactly 1,000,000 occurrences over at least 1,000,000 minutes "
        "(e.g. `0-58 * * * *`): " + _OVER_A_MILLION_OWED + "; no unit test covers that edge",
    ("impl/schedules.py", "_catch_up", "if ((now - s.next_run_at) // 60_000 >= MAX_CATCH_UP_OCCURRENCES",
     "60000 -> 60001"):
        "the pre-check undercounts minutes, so outages of 1,000,000 to ~1,000,017 minutes skip the "
        "refusal (`* * * * *` 1,000,000 minutes late fires 1,000,001 occurrences): "
        + _OVER_A_MILLION_OWED + "; no unit test covers that edge",
    ("impl/schedules.py", "occurrences_due",
     "return sum(1 for _ in islice(chain((next_run_at,), later), limit + 1))", "Add -> Sub"):
        "counts at most limit - 1, so no catch-up is ever refused: " + _OVER_A_MILLION_OWED
        + "; test_a_catch_up_past_the_bound_is_refused_and_changes_nothing kills it (never finishes)",
    ("impl/schedules.py", "occurrences_due",
     "return sum(1 for _ in islice(chain((next_run_at,), later), limit + 1))", "1 -> 0 #2"):
        "counts at most `limit`, so no catch-up is ever refused: " + _OVER_A_MILLION_OWED
        + "; test_a_catch_up_past_the_bound_is_refused_and_changes_nothing kills it (never finishes)",
    # fifth round: the rest of impl/schedules_sql.py's survivors (the file store's own paths)
    **{("impl/schedules_sql.py", "", "CACHE_KIB = 256 * 1024", change): "the page cache size of a "
       "file-backed store (PRAGMA cache_size runs only for a file): a speed setting, no answer "
       "depends on it; " + _FILE_STORE_ONLY
       for change in ("256 -> 257", "256 -> 255", "1024 -> 1025", "1024 -> 1023")},
    ("impl/schedules_sql.py", "_own", "deadline = time.monotonic() + wait", "Add -> Sub"):
        "gives up at once on a lock another process holds, even when asked to wait: only a second "
        "process opening the same store file reaches it; " + _FILE_STORE_ONLY,
    ("impl/schedules_sql.py", "_own", "if time.monotonic() >= deadline:", "GtE -> Gt"):
        "when the wait for another process's lock ends, to one clock tick: " + _FILE_STORE_ONLY,
    # the same line twice in __init__: the lock (#16, killed: a second server opens the file),
    # then the pragmas (#21), so one key names both
    ("impl/schedules_sql.py", "__init__", 'if path != ":memory:":', "NotEq -> Eq"):
        "the second moves the WAL, synchronous and cache pragmas from a file store (durability "
        "across a crash, speed) to the in-memory one, where SQLite ignores WAL and sync: "
        + _FILE_STORE_ONLY,
    ("impl/schedules_sql.py", "__init__",
     "self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False,", "False -> True"):
        "refuses a statement from a thread other than the one that opened the store: `duespec "
        "serve`'s HTTP handler threads; `duespec check` calls the store from the thread that made it",
}
