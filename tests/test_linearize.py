"""`duespec linearize`: verdicts on generated and planted histories, counterexamples a
maintainer can act on, the HTML report in a real browser, and bad input refused."""

from __future__ import annotations

import copy
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from needs import unavailable

from duespec.histories.format import Event, History, HistoryHeader, HistoryWriter
from duespec.histories.generate import START_MS, VALUE, generate
from duespec.histories.linearize import _Budget, _decide, _Search, check_history
from duespec.histories.report import describe, render_html
from duespec.histories.resonate_valid import resonate_valid_line
from duespec.systems import get_system

CONFIG = {"profile": "lean", "retry_timeout": 5000}
NS = 1_000_000
T = START_MS
MINUTE = 60_000


def duespec(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "duespec", *args], capture_output=True, text=True, timeout=timeout)


def write(path: Path, history: History) -> str:
    with HistoryWriter(path, history.header) as writer:
        for event in history.events:
            writer.write(event)
    return str(path)


# ---- planted violations ---------------------------------------------------------------------

def scripted(seed: int, phases: list[tuple[int, list[tuple[str, str, dict]]]], mutate,
             noise_clients: int = 3, noise_ops: int = 5) -> tuple[History, set[str]]:
    """A history made by the model, then one answer changed.

    Each phase (at_ms, calls) runs its calls at once, on clients of their own, pinned at
    T + at_ms; phases follow one another. Noise clients call other ids and read the
    scenario's ids throughout. Every call takes effect at a random point inside its
    interval and the model answers in the order of the points; then `mutate(answers)`
    changes one answer (answers: label -> response) and the result is returned with the
    labels of the scenario's calls."""
    rng = random.Random(seed)
    plans = []  # (call_ns, return_ns, point_ns, client, op, args, now, label)
    for p, (at, calls) in enumerate(phases):
        base = (T + at) * NS
        for n, (label, op, args) in enumerate(calls):
            start = base + rng.randrange(0, NS // 2)
            end = base + NS + rng.randrange(0, NS // 2)
            plans.append((start, end, rng.randrange(start, end + 1), f"a{p}.{n}", op, args, T + at, label))
    last = phases[-1][0] + 2
    ids = [scenario_id for _, calls in phases for _, _, args in calls
           if isinstance(scenario_id := args.get("id"), str) and not scenario_id.startswith("s")]
    for c in range(noise_clients):
        t = T * NS + rng.randrange(0, NS)
        for k in range(noise_ops):
            start = t + rng.randrange(0, max(last * NS // noise_ops, 2))
            end = start + rng.randrange(NS // 10, NS)
            if k % 2 and ids:
                op, args = "promise.get", {"id": rng.choice(ids)}
            else:
                op, args = rng.choice([("promise.create", {"id": f"n{c}", "timeoutAt": T + 10 * MINUTE,
                                                           "param": VALUE, "tags": {}}),
                                       ("promise.get", {"id": f"n{(c + 1) % noise_clients}"}),
                                       ("promise.settle", {"id": f"n{c}", "state": "resolved", "value": VALUE})])
            plans.append((start, end, rng.randrange(start, end + 1), f"z{c}", op, args, start // NS, None))
            t = end + 1
    model = get_system("schedules").model()
    model.reset(CONFIG)
    answers: dict[str, dict] = {}
    responses = {}
    for n in sorted(range(len(plans)), key=lambda n: plans[n][2]):
        *_, op, args, now, label = plans[n]
        responses[n] = model.step(op, args, now)
        if label:
            answers[label] = responses[n]
    mutated = copy.deepcopy(answers)
    mutate(mutated)
    events = []
    for n, (start, end, _, client, op, args, now, label) in enumerate(plans):
        response = mutated[label] if label else responses[n]
        events.append(Event(client, op, args, start, end, start // NS, end // NS, "ok", response, now))
    events.sort(key=lambda e: (e.return_ns, e.call_ns))
    return History(HistoryHeader("schedules", "pinned", CONFIG), events), set(answers)


TARGETED = {"resonate:target": "poll://any"}
SCHEDULE = {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}", "promiseTimeout": MINUTE,
            "promiseParam": VALUE, "promiseTags": {}}


def double_acquire(answers: dict) -> None:
    winner, loser = ("acq1", "acq2") if answers["acq1"]["status"] == 200 else ("acq2", "acq1")
    answers[loser] = copy.deepcopy(answers[winner])
    answers[loser]["task"].update(pid=loser, ttl=2000 if loser == "acq1" else 3000)


def lost_settle(answers: dict) -> None:
    answers["settle2"] = copy.deepcopy(answers["settle1"])
    answers["settle2"]["promise"].update(state="rejected", settledAt=T + 20)


def stale_read(answers: dict) -> None:
    answers["get"] = copy.deepcopy(answers["create"])


def early_timer(answers: dict) -> None:
    answers["get"]["promise"].update(state="rejected_timedout", settledAt=T + 1000)


def occurrence_twice(answers: dict) -> None:
    assert answers["tick2"]["fired"] == []
    answers["tick2"]["fired"] = [{"kind": "schedule", "id": "s"}]


def skipped_occurrence(answers: dict) -> None:
    assert answers["get"]["status"] == 200
    answers["get"] = {"status": 404}


PLANTED = {
    "double acquire of one task version": ([
        (0, [("create", "promise.create", {"id": "x", "timeoutAt": T + MINUTE, "param": VALUE, "tags": TARGETED})]),
        (10, [("acq1", "task.acquire", {"id": "x", "version": 0, "pid": "acq1", "ttl": 2000}),
              ("acq2", "task.acquire", {"id": "x", "version": 0, "pid": "acq2", "ttl": 3000})]),
    ], double_acquire, {"acq1", "acq2"}),
    "lost settle": ([
        (0, [("create", "promise.create", {"id": "x", "timeoutAt": T + MINUTE, "param": VALUE, "tags": {}})]),
        (10, [("settle1", "promise.settle", {"id": "x", "state": "resolved", "value": VALUE})]),
        (20, [("settle2", "promise.settle", {"id": "x", "state": "rejected", "value": VALUE})]),
    ], lost_settle, {"settle2"}),
    "stale read after a settle returned": ([
        (0, [("create", "promise.create", {"id": "x", "timeoutAt": T + MINUTE, "param": VALUE, "tags": {}})]),
        (10, [("settle", "promise.settle", {"id": "x", "state": "resolved", "value": VALUE})]),
        (20, [("get", "promise.get", {"id": "x"})]),
    ], stale_read, {"get"}),
    "timer fired before its timeoutAt": ([
        (0, [("create", "promise.create", {"id": "x", "timeoutAt": T + 1000, "param": VALUE, "tags": {}})]),
        (500, [("get", "promise.get", {"id": "x"})]),
    ], early_timer, {"get"}),
    "schedule occurrence created twice": ([
        (0, [("create", "schedule.create", SCHEDULE)]),
        (MINUTE, [("tick1", "tick", {})]),
        (MINUTE + 10, [("tick2", "tick", {})]),
    ], occurrence_twice, {"tick2"}),
    "skipped occurrence": ([
        (0, [("create", "schedule.create", SCHEDULE)]),
        (MINUTE, [("tick", "tick", {})]),
        (MINUTE + 10, [("get", "promise.get", {"id": f"s.{T + MINUTE}"})]),
    ], skipped_occurrence, {"get"}),
}


def justification(history: History, indices: list[int]) -> dict[int, int]:
    result, search = _decide([history.events[i] for i in indices], indices, "schedules", CONFIG, "pinned", 1000,
                             _Budget(30))
    assert result.status == "not linearizable"
    return search.justification()


def status(history: History, indices: list[int]) -> str:
    """The verdict on the sub-history of `indices`, unshrunk."""
    return check_history(History(history.header, [history.events[i] for i in indices]), shrink=False).status


@pytest.mark.parametrize("name", list(PLANTED))
def test_a_planted_violation_is_caught_with_a_minimal_counterexample(name: str) -> None:
    phases, mutate, culprits = PLANTED[name]
    for seed in range(3):
        history, _ = scripted(seed, phases, mutate)
        unchanged, _ = scripted(seed, phases, lambda answers: None)
        assert check_history(unchanged).status == "linearizable", "the unmutated history is linearizable"
        verdict = check_history(history, budget=30)
        assert verdict.status == "not linearizable" and verdict.exit_code == 1
        cx = verdict.counterexample
        assert cx is not None and cx.minimal, describe(verdict)
        assert len(cx.events) <= 6, describe(verdict)
        # Calls on the noise clients' own ids are shrunk away (a noise read of the scenario's
        # id may stay: it can witness the same violation).
        assert not any(str(e.args.get("id", "")).startswith("n") for e in cx.events), describe(verdict)
        assert any(e.client.startswith("a") for e in cx.events)
        # The violation: its culprit is a scenario call, and the other calls linearize without it.
        violation = cx.violation
        assert violation is not None and violation.culprit in cx.original, describe(verdict)
        assert history.events[violation.culprit].client.startswith("a"), describe(verdict)
        assert status(history, [i for i in cx.original if i != violation.culprit]) == "linearizable"
        # Minimality, proved here call by call: without any one call the same violation is
        # gone: the rest is linearizable, or the culprit is gone, or another call fails before
        # it, or (a call that only justifies another) some call's recorded answer can no
        # longer be given at all, where it could in the counterexample.
        levels = justification(history, cx.original)
        for index in cx.original:
            rest = [i for i in cx.original if i != index]
            if status(history, rest) == "linearizable" or violation.culprit not in rest:
                continue
            if status(history, [i for i in rest if i != violation.culprit]) == "not linearizable":
                continue  # a different violation: a call other than the culprit fails
            without = justification(history, rest)
            assert any(without[i] < levels[i] for i in rest), f"#{index} could be removed: {describe(verdict)}"
        text = describe(verdict)
        assert "NOT LINEARIZABLE" in text and "Cannot place" in text and "Model state just before it" in text


def test_the_terminal_counterexample_names_the_race() -> None:
    phases, mutate, _ = PLANTED["double acquire of one task version"]
    history, _ = scripted(1, phases, mutate)
    text = describe(check_history(history, budget=30))
    assert "task.acquire" in text and "<- cannot be placed" in text
    assert "DIFFERS from the recorded answer" in text and '"status":409' in text
    assert "Overlapping calls" in text and "Longest prefix the model can place: #" in text


# ---- generated (linearizable) corpus --------------------------------------------------------

def corpus(count: int) -> list[History]:
    out = []
    for seed in range(count):
        clock = "real" if seed % 3 == 2 else "pinned"
        out.append(generate(seed=seed, clock=clock, clients=2 + seed % 5, ops=8 + seed % 25, keys=1 + seed % 4,
                            unknown_rate=0.1 if seed % 4 == 3 else 0.0, with_ticks=seed % 5 == 1))
    return out


def test_a_hundred_generated_histories_are_all_linearizable() -> None:
    verdicts = [check_history(h, budget=20, shrink=False) for h in corpus(100)]
    assert [v.status for v in verdicts].count("linearizable") == 100


@pytest.mark.long
def test_a_thousand_generated_histories_are_all_linearizable() -> None:
    statuses = [check_history(h, budget=20, shrink=False).status for h in corpus(1000)]
    assert statuses.count("linearizable") == 1000, {s: statuses.count(s) for s in set(statuses)}


# ---- the real clock: background timeouts placed within --max-timer-lag ------------------------

def lease_history(read_at_ms: int) -> History:
    """Real clock: w1 acquires task x with a 100 ms lease (due at T+110..T+112), and a
    task.get at T + read_at_ms still sees it acquired: the server had not fired the lease."""
    model = get_system("schedules").model()
    model.reset(CONFIG)
    created = model.step("promise.create", {"id": "x", "timeoutAt": T + MINUTE, "param": VALUE, "tags": TARGETED}, T)
    acquired = model.step("task.acquire", {"id": "x", "version": 0, "pid": "w1", "ttl": 100}, T + 10)
    seen = model.step("task.get", {"id": "x"}, T + 20)
    assert seen["task"]["state"] == "acquired"

    def event(client, op, args, at, response):
        return Event(client, op, args, at * NS, (at + 2) * NS, at, at + 2, "ok", response, None)

    events = [event("a", "promise.create", {"id": "x", "timeoutAt": T + MINUTE, "param": VALUE, "tags": TARGETED},
                    T, created),
              event("a", "task.acquire", {"id": "x", "version": 0, "pid": "w1", "ttl": 100}, T + 10, acquired),
              event("b", "task.get", {"id": "x"}, T + read_at_ms, seen)]
    return History(HistoryHeader("schedules", "real", CONFIG), events)


@pytest.mark.parametrize("read_at_ms, lag, expected", [
    (600, 1000, "linearizable"),       # fired late, within the lag
    (600, 200, "not linearizable"),    # the lease was due 490 ms before the read: past a 200 ms lag
    (600, 0, "not linearizable"),      # lag 0: fired exactly when due
    (1500, 1000, "not linearizable"),  # beyond the lag
    (100, 0, "linearizable"),          # read before the lease was due
])
def test_a_background_firing_is_allowed_only_within_the_max_timer_lag(read_at_ms, lag, expected) -> None:
    verdict = check_history(lease_history(read_at_ms), max_timer_lag=lag, budget=20, shrink=False)
    assert verdict.status == expected, (read_at_ms, lag, verdict.status)


def test_background_ticks_are_tried_across_the_lag_window_and_only_at_the_due_instant_with_lag_0() -> None:
    """The search's tick choices after the acquire: with lag 0 only the due instant (as
    before the lag window existed); with a lag, the due instant and the critical instants
    after it (interval ends, named instants) up to due + lag and no further."""
    history = lease_history(600)
    for lag in (0, 1000):
        search = _Search(history.events, list(range(3)), "schedules", CONFIG, "real", lag, _Budget(20))
        target = search.fresh()
        create, acquire = history.events[0], history.events[1]
        target.step(create.op, create.args, T)
        target.step(acquire.op, acquire.args, T + 10)
        due = T + 110
        ticks = [now for i, now in search.choices(0b011, target, search.key(target), T + 10) if i is None]
        if lag == 0:
            assert ticks == [due]
        else:
            assert ticks[0] == due and len(ticks) > 1 and all(due < t <= due + lag for t in ticks[1:])
            assert T + 600 in ticks, "the read's interval start is a critical instant inside the window"


def test_partitioned_and_whole_searches_agree() -> None:
    for history in corpus(30):
        whole = check_history(history, budget=20, partition=False, shrink=False)
        parted = check_history(history, budget=20, shrink=False)
        assert whole.status == parted.status == "linearizable"
    phases, mutate, _ = PLANTED["stale read after a settle returned"]
    bad, _ = scripted(4, phases, mutate)
    assert check_history(bad, partition=False, shrink=False).status == "not linearizable"
    assert check_history(bad, shrink=False).status == "not linearizable"


# ---- the command ----------------------------------------------------------------------------

def test_the_command_exit_codes_follow_the_verdict(tmp_path: Path) -> None:
    good = write(tmp_path / "good.ndjson", generate(seed=3, clients=4, ops=40))
    run = duespec("linearize", good, "--system", "schedules")
    assert run.returncode == 0 and run.stdout.startswith("LINEARIZABLE"), run.stderr
    phases, mutate, _ = PLANTED["lost settle"]
    bad = write(tmp_path / "bad.ndjson", scripted(2, phases, mutate)[0])
    run = duespec("linearize", bad, "--system", "schedules", "--json", str(tmp_path / "v.json"))
    assert run.returncode == 1 and "NOT LINEARIZABLE" in run.stdout and "Cannot place" in run.stdout
    document = json.loads((tmp_path / "v.json").read_text())
    assert document["status"] == "not linearizable" and document["counterexample"]["minimal"] is True


def test_a_budget_of_zero_is_unknown_with_exit_3_never_a_pass(tmp_path: Path) -> None:
    path = write(tmp_path / "h.ndjson", generate(seed=1, clients=4, ops=60))
    run = duespec("linearize", path, "--system", "schedules", "--budget", "0")
    assert run.returncode == 3, run.stdout + run.stderr
    assert run.stdout.startswith("UNKNOWN") and "not a pass" in run.stdout and "placed 0 of" in run.stdout


def test_a_hot_key_history_out_of_budget_is_unknown_saying_how_far_it_got() -> None:
    history = generate(seed=5, clients=16, ops=800, keys=1, max_call_ms=400)
    verdict = check_history(history, budget=0.5)
    assert verdict.status in ("unknown", "linearizable")
    if verdict.status == "unknown":
        assert verdict.exit_code == 3 and verdict.progress is not None and verdict.states > 0
        assert "the deepest search of an undecided part placed" in describe(verdict)


GOOD_LINE = Event("c0", "promise.get", {"id": "p"}, 1, 5, 1000, 1000, "ok", {"status": 404}, 1000).to_json()


@pytest.mark.parametrize("lines, words", [
    (["not json at all"], "MALFORMED"),
    ([GOOD_LINE, {**GOOD_LINE, "call_ns": 0, "return_ns": 2}], "out of order"),
    ([{**GOOD_LINE, "return_ns": 0}], "before its call"),
    ([{**GOOD_LINE, "op": "promise.explode"}], "unknown op"),
])
def test_malformed_histories_are_refused_in_one_paragraph_with_exit_2(tmp_path: Path, lines, words) -> None:
    path = tmp_path / "bad.ndjson"
    header = HistoryHeader("schedules", "pinned", CONFIG).to_json()
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in [json.dumps(header), *lines]) + "\n")
    run = duespec("linearize", str(path), "--system", "schedules")
    assert run.returncode == 2 and words in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    path = write(tmp_path / "h.ndjson", generate(seed=1, ops=8))
    for args, words in ((["--system", "duebook"], "give --system schedules"),
                        (["--system", "schedules", "--budget", "-1"], "--budget"),
                        (["--system", "schedules", "--profile", "nope"], "no profile 'nope'"),
                        (["--system", "schedules", "--max-events", "0"], "--max-events"),
                        (["--system", "schedules", "--max-memory", "0"], "--max-memory")):
        run = duespec("linearize", path, *args)
        assert run.returncode == 2 and words in run.stderr and "Traceback" not in run.stderr, (args, run.stderr)
    run = duespec("linearize", str(tmp_path / "missing.ndjson"), "--system", "schedules")
    assert run.returncode == 2 and "Traceback" not in run.stderr


def test_a_history_past_the_event_limit_is_refused_before_the_rest_is_read(tmp_path: Path) -> None:
    """The limit stops reading at the first event past it: what follows (here a line no
    reader would accept, standing for the other ten million) is never read."""
    history = generate(seed=2, clients=4, ops=120)
    path = tmp_path / "big.ndjson"
    write(path, history)
    with open(path, "a") as out:
        out.write("this line is never read\n")
    run = duespec("linearize", str(path), "--system", "schedules", "--max-events", "100")
    assert run.returncode == 2 and "more than 100 events" in run.stderr and "Traceback" not in run.stderr
    run = duespec("linearize", "--help")
    assert "250,000" in run.stdout


def test_resonate_valid_traces_and_captures_are_read(tmp_path: Path) -> None:
    history = generate(seed=7, clients=3, ops=30, with_schedules=False)
    capture = tmp_path / "traffic.history"
    clients: dict[str, int] = {}
    with open(capture, "w") as out:
        for event in history.events:
            line = resonate_valid_line(event, clients.setdefault(event.client, len(clients)))
            if line is not None:
                out.write(json.dumps(line) + "\n")
    run = duespec("linearize", str(capture), "--system", "schedules")
    assert run.returncode == 0 and "LINEARIZABLE" in run.stdout, run.stdout + run.stderr
    # A sequential valid/ trace (no call/return): one answer changed is caught.
    sequential = tmp_path / "valid.ndjson"
    lines = [json.loads(text) for text in capture.read_text().splitlines()]
    trace = [{k: v for k, v in line.items() if k not in ("call", "return", "client")}
             for line in sorted(lines, key=lambda line: line["call"])]
    sequential.write_text("".join(json.dumps(line) + "\n" for line in trace))
    assert duespec("linearize", str(sequential), "--system", "schedules").returncode == 0
    for line in trace:
        if line["kind"] == "promise.get" and line["res"]["head"]["status"] == 200:
            line["res"]["data"]["promise"]["state"] = "rejected_canceled"
            break
    else:
        pytest.fail("no promise.get found to change")
    sequential.write_text("".join(json.dumps(line) + "\n" for line in trace))
    run = duespec("linearize", str(sequential), "--system", "schedules")
    assert run.returncode == 1 and "NOT LINEARIZABLE" in run.stdout


def test_a_resonate_trace_with_an_unknown_kind_is_refused_and_system_defaults_to_the_header(tmp_path: Path) -> None:
    path = tmp_path / "valid.ndjson"
    path.write_text(json.dumps({"kind": "promise.explode", "now": 0, "req": {},
                                "res": {"kind": "promise.explode", "head": {"status": 200}, "data": {}}}) + "\n")
    run = duespec("linearize", str(path))
    assert run.returncode == 2 and "promise.explode" in run.stderr and "Traceback" not in run.stderr
    good = write(tmp_path / "h.ndjson", generate(seed=5, ops=12))
    run = duespec("linearize", good)
    assert run.returncode == 0 and run.stdout.startswith("LINEARIZABLE")


# ---- the HTML report ------------------------------------------------------------------------

def chromium() -> str | None:
    return os.environ.get("DUESPEC_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def test_the_html_report_is_self_contained_and_shows_lanes_and_the_failing_call(tmp_path: Path) -> None:
    phases, mutate, _ = PLANTED["double acquire of one task version"]
    history, _ = scripted(0, phases, mutate)
    path = write(tmp_path / "race.ndjson", history)
    page = tmp_path / "report.html"
    run = duespec("linearize", path, "--system", "schedules", "--html", str(page))
    assert run.returncode == 1, run.stderr
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    assert "<script" not in text and "<link" not in text
    browser = chromium()
    if not browser:
        unavailable("the HTML report's rendering in a browser",
                    "no chromium (as root: apt-get install chromium; or set DUESPEC_CHROMIUM)")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    from html.parser import HTMLParser

    class Facts(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.lanes: list[str] = []
            self.failing: list[str] = []
            self.bars: list[str] = []
            self.status = ""
            self.culprit: str | None = None
            self.diff_rows = 0
            self._in_diff = False

        def handle_starttag(self, tag: str, attrs: list) -> None:
            a = dict(attrs)
            classes = (a.get("class") or "").split()
            if tag == "g" and "lane" in classes:
                self.lanes.append(a["data-client"])
            if tag == "rect" and "call" in classes:
                self.bars.append(a.get("class"))
                if "failing" in classes:
                    self.failing.append(a.get("class"))
            if tag == "h1" and a.get("id") == "verdict":
                self.status = a.get("data-status")
            if tag == "p" and a.get("id") == "violation":
                self.culprit = a.get("data-culprit")
            if tag == "table":
                self._in_diff = a.get("id") == "state-diff"
            if tag == "tr" and self._in_diff:
                self.diff_rows += 1

    facts = Facts()
    facts.feed(dom)
    cx = check_history(history).counterexample
    assert facts.status == "not linearizable"
    assert cx.violation is not None and facts.culprit == str(cx.violation.culprit), "the page names the violation"
    assert sorted(facts.lanes) == sorted({e.client for e in cx.events}) and len(facts.lanes) >= 2
    assert len(facts.bars) == len(cx.events) and len(facts.failing) == 1
    assert facts.diff_rows >= 2, "the state diff has a header and at least one changed path"
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                    "--window-size=1100,900", page.as_uri()], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000


def test_render_html_for_a_linearizable_verdict_has_no_counterexample() -> None:
    verdict = check_history(generate(seed=1, ops=10))
    text = render_html(verdict)
    assert 'data-status="linearizable"' in text and "swimlanes" not in text


# ---- memory, unknown outcomes ---------------------------------------------------------------

def hot_and_wrong(calls: int = 200) -> History:
    """`calls` calls of as many clients on one id, all overlapping, one read's answer one
    no order gives: the search must exhaust the orders of the others to say so."""
    history = generate(seed=1, clients=calls, ops=calls, keys=1, max_call_ms=2000, with_schedules=False)
    events = list(history.events)
    at = next(k for k, e in enumerate(events) if e.op == "promise.get" and e.response["status"] == 200)
    answer = copy.deepcopy(events[at].response)
    answer["promise"]["state"] = "rejected_canceled"
    events[at] = Event(**{**events[at].__dict__, "response": answer})
    return History(history.header, events)


def test_the_memory_cap_stops_a_search_that_time_would_not_and_holds() -> None:
    """200 calls on one id, all overlapping: the search's memo is what grows. Under an 8 MiB
    cap the verdict is unknown, says the cap stopped it, and the memory really held by the
    search (tracemalloc) stays under the cap."""
    import tracemalloc

    history = hot_and_wrong()
    cap = 8 * 2**20
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        verdict = check_history(history, budget=600, shrink=False, max_memory=cap)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert verdict.status == "unknown" and verdict.limit == "memory", describe(verdict)
    assert peak < cap, f"the search held {peak / 2**20:.1f} MiB under a cap of {cap / 2**20:.0f} MiB"
    assert verdict.progress is not None and verdict.progress[0] > 0
    text = describe(verdict)
    assert "memory cap of 8 MiB" in text and "not a pass" in text


def test_unknown_settles_that_change_nothing_do_not_multiply_the_search() -> None:
    """A create, then 40 settles of the promise whose outcome nobody saw, all at once, and
    one read that saw the 38th settle's value. Either way each settle went is allowed,
    and the settles after the first change nothing: the search must decide, not run out."""
    model = get_system("schedules").model()
    model.reset(CONFIG)
    create_args = {"id": "x", "timeoutAt": T + 10 * MINUTE, "param": VALUE, "tags": {}}
    created = model.step("promise.create", create_args, T)
    settles = [{"id": "x", "state": ("resolved", "rejected")[n % 2], "value": {"headers": {}, "data": str(n)}}
               for n in range(40)]
    model.step("promise.settle", settles[37], T + 50 + 37)
    seen = model.step("promise.get", {"id": "x"}, T + 200)
    events = [Event("a", "promise.create", create_args, T * NS, (T + 2) * NS, T, T + 2, "ok", created, T)]
    for n, args in enumerate(settles):
        at = T + 50 + n
        events.append(Event(f"s{n}", "promise.settle", args, at * NS, (at + 1) * NS, at, at + 1, "unknown", None, at))
    events.append(Event("r", "promise.get", {"id": "x"}, (T + 200) * NS, (T + 201) * NS, T + 200, T + 201, "ok",
                        seen, T + 200))
    events.sort(key=lambda e: (e.return_ns, e.call_ns))
    history = History(HistoryHeader("schedules", "pinned", CONFIG), events)
    verdict = check_history(history, budget=60)
    assert verdict.status == "linearizable", describe(verdict)
    assert verdict.states < 10_000
    # The read's answer names a settle none could give (data "40"): not linearizable, decided.
    wrong = copy.deepcopy(seen)
    wrong["promise"]["value"]["data"] = "40"
    events[-1] = Event(**{**events[-1].__dict__, "response": wrong})
    verdict = check_history(History(history.header, events), budget=60, shrink=False)
    assert verdict.status == "not linearizable", describe(verdict)


def test_unknown_settles_in_a_valid_file_do_not_multiply_the_search_either(tmp_path: Path) -> None:
    """The same 40 unknown settles exported to the valid/ format, whose ticks the search
    places: each settle's `now` once moved the search's clock, so configurations that
    placed different settles never met in the memo, and the search ran out of budget where
    the duespec history decides at once (found by make export-audit)."""
    model = get_system("schedules").model()
    model.reset(CONFIG)
    create_args = {"id": "x", "timeoutAt": T + 10 * MINUTE, "param": VALUE, "tags": {}}
    events = [Event("a", "promise.create", create_args, T * NS, (T + 2) * NS, T, T + 2, "ok",
                    model.step("promise.create", create_args, T), T)]
    for n in range(40):
        at = T + 50 + n
        args = {"id": "x", "state": ("resolved", "rejected")[n % 2], "value": {"headers": {}, "data": str(n)}}
        if n == 37:
            model.step("promise.settle", args, at)
        events.append(Event(f"s{n}", "promise.settle", args, at * NS, (at + 1) * NS, at, at + 1, "unknown", None, at))
    events.append(Event("r", "promise.get", {"id": "x"}, (T + 200) * NS, (T + 201) * NS, T + 200, T + 201, "ok",
                        model.step("promise.get", {"id": "x"}, T + 200), T + 200))
    events.sort(key=lambda e: (e.return_ns, e.call_ns))
    valid = exported(History(HistoryHeader("schedules", "pinned", CONFIG), events), tmp_path / "settles.history")
    verdict = check_history(valid, budget=20, shrink=False)
    assert verdict.status == "linearizable" and verdict.states < 10_000, describe(verdict)


# ---- the server's own timeouts, placed by the search under the pinned clock -------------------

def exported(history: History, path: Path) -> History:
    """`history` as the Resonate specification's `.history` capture (ticks left out, as that
    format says: its checkers place internal steps), read back."""
    from duespec.histories.resonate_valid import read_any_history

    clients: dict[str, int] = {}
    with open(path, "w") as out:
        for event in history.events:
            line = resonate_valid_line(event, clients.setdefault(event.client, len(clients)))
            if line is not None:
                out.write(json.dumps(line) + "\n")
    return read_any_history(path)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_a_stress_ticks_history_exported_to_valid_is_linearizable(tmp_path: Path, seed: int) -> None:
    """`duespec stress --ticks` against duespec serve: its ticks fire leases, retries and
    promise timeouts. Exported, the ticks are gone, and the search places the firings
    itself (that a read can need them: test_timers_left_out_by_a_later_read_..., and one
    pinned before a tick yet arriving after it: test_a_timeout_fired_before_a_call_...).
    stress runs real threads, so every run is a new interleaving: three seeds, three runs."""
    from duespec.histories.stress import stress

    history = stress(target="serve", clients=8, ops=400, clock="pinned", seed=seed, keys=2,
                     output=tmp_path / "h.ndjson", ticks=True)
    fired = [f for e in history.events if e.op == "tick" for f in e.response.get("fired", [])]
    assert fired, "the run's ticks fired something"
    valid = exported(history, tmp_path / "run.history")
    assert not any(e.op == "tick" for e in valid.events)
    verdict = check_history(valid, budget=60)
    assert verdict.status == "linearizable", describe(verdict)


def test_a_captured_stress_ticks_export_is_linearizable() -> None:
    """The part of a `stress --ticks` run's export (seed 3) the search once judged not
    linearizable, kept as the run wrote it (instants by their last digits): a create whose
    promise times out at ...845, a create pinned at ...871 that read it timed out, and one
    pinned at ...474 that saw it timed out too, after a tick pinned at ...049 (left out by
    the export) had fired it."""
    from duespec.histories.resonate_valid import read_any_history

    history = read_any_history(Path(__file__).parent / "stress_ticks_export.history")
    assert len(history.events) == 12
    verdict = check_history(history, budget=60)
    assert verdict.status == "linearizable", describe(verdict)


def test_a_firing_whose_clock_only_another_part_shows_is_placed(tmp_path: Path) -> None:
    """A `stress --ticks` export (seed 5): promise k1-14 times out at ...883; a tick pinned
    at ...952 (left out by the export) fired it; a task.get pinned at ...712 but answered
    after the tick saw its task fulfilled. No call on k1-14 is pinned past ...883: what
    shows the server's clock got there is a schedule.create of another part, pinned at
    ...171 and invoked before the task.get returned. Without that call no request could
    have moved the clock there, and the firing is refused."""
    from duespec.histories.resonate_valid import read_any_history

    path = Path(__file__).parent / "stress_ticks_export_foreign_clock.history"
    history = read_any_history(path)
    assert len(history.events) == 10
    verdict = check_history(history, budget=60)
    assert verdict.status == "linearizable", describe(verdict)
    alone = tmp_path / "alone.history"
    alone.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                             if '"schedule.create"' not in line))
    assert check_history(read_any_history(alone), budget=60).status == "not linearizable"


def early_lease_history(server_class) -> History:
    """w1 acquires task x with a 5 s lease; a tick 1 s later; a task.get 2 s later; and a
    second worker's acquire of the next version. Each answered by `server_class`."""
    from duespec.systems.schedules import ImplTarget

    target = ImplTarget(server_class)
    target.reset(CONFIG)
    script = [("a", "promise.create", {"id": "x", "timeoutAt": T + 10 * MINUTE, "param": VALUE, "tags": TARGETED}, 0),
              ("a", "task.acquire", {"id": "x", "version": 0, "pid": "w1", "ttl": 5000}, 10),
              ("t", "tick", {}, 1000),
              ("b", "task.get", {"id": "x"}, 2000),
              ("b", "task.acquire", {"id": "x", "version": 1, "pid": "w2", "ttl": 5000}, 2100)]
    events = []
    for client, op, args, at in script:
        answer = target.step(op, args, T + at)
        events.append(Event(client, op, args, (T + at) * NS, (T + at + 2) * NS, T + at, T + at + 2, "ok", answer,
                            T + at))
    target.close()
    return History(HistoryHeader("schedules", "pinned", CONFIG), events)


def test_a_server_whose_leases_expire_early_is_caught_from_its_export(tmp_path: Path) -> None:
    """The planted server arms a lease for a tenth of its ttl, so its tick 1 s in fires a
    5 s lease, and the reads after it see the task pending again. With the tick in the
    history the answer it gives ("fired": the lease) already fails; exported, the tick is
    gone, and the search may fire the lease itself only once it is due (5 s after the
    acquire), after which no call carrying an earlier `now` may go: still not
    linearizable. The same script against the correct server is linearizable both ways."""
    from duespec.impl.schedules import ScheduleServer
    from duespec.impl.schedules_tasks import LEASE

    class EarlyLeases(ScheduleServer):
        def _acquire(self, t, pid, ttl, now):
            t = super()._acquire(t, pid, ttl, now)
            self.store.del_task_timeout(t.id)
            self.store.set_task_timeout(t.id, LEASE, now + ttl // 10)
            return t

    good = early_lease_history(ScheduleServer)
    assert check_history(good).status == "linearizable"
    assert check_history(exported(good, tmp_path / "good.history")).status == "linearizable"
    bad = early_lease_history(EarlyLeases)
    assert bad.events[3].response["task"]["state"] == "pending", "the planted server fired the lease early"
    assert check_history(bad).status == "not linearizable"
    verdict = check_history(exported(bad, tmp_path / "bad.history"), budget=30)
    assert verdict.status == "not linearizable", describe(verdict)
    cx = verdict.counterexample
    assert cx is not None and cx.violation is not None
    assert cx.events[cx.original.index(cx.violation.culprit)].op in ("task.get", "task.acquire"), describe(verdict)


def test_timers_left_out_by_a_later_read_are_fired_by_the_search(tmp_path: Path) -> None:
    """The correct server, its lease fired by a tick after it was due: exported without
    the tick, the read that sees the task pending again needs the search's own step."""
    from duespec.systems.schedules import ImplTarget

    target = ImplTarget()
    target.reset(CONFIG)
    script = [("promise.create", {"id": "x", "timeoutAt": T + 10 * MINUTE, "param": VALUE, "tags": TARGETED}, 0),
              ("task.acquire", {"id": "x", "version": 0, "pid": "w1", "ttl": 100}, 10),
              ("tick", {}, 500),
              ("task.get", {"id": "x"}, 600)]
    events = [Event("a", op, args, (T + at) * NS, (T + at + 1) * NS, T + at, T + at + 1, "ok",
                    target.step(op, args, T + at), T + at) for op, args, at in script]
    history = History(HistoryHeader("schedules", "pinned", CONFIG), events)
    assert events[-1].response["task"]["state"] == "pending"
    valid = exported(history, tmp_path / "lease.history")
    assert check_history(valid).status == "linearizable"
    # Read at 100 ms, before the lease was due, and seeing it expired: caught.
    early = [*valid.events[:2], Event(**{**valid.events[2].__dict__, "now": T + 100, "call_ms": T + 100,
                                         "return_ms": T + 101})]
    assert check_history(History(valid.header, early), shrink=False).status == "not linearizable"


def test_a_timeout_fired_before_a_call_pinned_earlier_arrived_is_placed_by_the_search(tmp_path: Path) -> None:
    """Stress pins each request from one shared clock, so a request pinned at 100 ms can
    reach the server after a tick pinned at 500 ms. Here that tick times the promise out
    (due at 300) and the late read, pinned at 100, sees it timed out; a read pinned at 500
    runs beside them. Exported without the tick, the search must fire the timeout before
    the read of the earlier `now` (a stress run's export failed on exactly this). With no
    request ever pinned past 300, nothing could have moved the clock there: caught."""
    from duespec.systems.schedules import ImplTarget

    target = ImplTarget()
    target.reset(CONFIG)
    script = [("a", "promise.create", {"id": "x", "timeoutAt": T + 300, "param": VALUE, "tags": TARGETED}, 0, 0),
              ("t", "tick", {}, 500, 10),
              ("b", "promise.get", {"id": "x"}, 100, 11),
              ("c", "promise.get", {"id": "x"}, 500, 12)]
    events = []
    for client, op, args, now, arrival in script:
        answer = target.step(op, args, T + now)
        events.append(Event(client, op, args, (T + arrival) * NS, (T + 20 + arrival) * NS, T + arrival,
                            T + 20 + arrival, "ok", answer, T + now))
    target.close()
    assert events[2].response["promise"]["state"] == "rejected_timedout"
    history = History(HistoryHeader("schedules", "pinned", CONFIG), events)
    assert check_history(history).status == "linearizable"
    valid = exported(history, tmp_path / "late.history")
    assert [e.now for e in valid.events] == [T, T + 100, T + 500]
    verdict = check_history(valid, budget=60)
    assert verdict.status == "linearizable", describe(verdict)
    never_reached = History(valid.header, valid.events[:2])
    assert check_history(never_reached, budget=60, shrink=False).status == "not linearizable"


def test_the_command_imports_no_other_command(tmp_path: Path) -> None:
    """`duespec linearize` starts without importing the other commands (the campaigns, the
    HTTP server and client), nor what only a campaign uses (Hypothesis, the lockstep
    machine, the implementation), nor the target boundary (subprocess), the --declared
    reader (tomllib) or the HTML report's entity table unless asked for: what its start-up
    costs is its own."""
    path = write(tmp_path / "h.ndjson", generate(seed=1, ops=10))
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "duespec", "linearize", path],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "duespec.histories.linearize" in imported
    for other in ("duespec.campaigns.conform", "duespec.wire.serve", "duespec.histories.stress", "aiohttp",
                  "hypothesis", "duespec.systems.machine", "duespec.systems.schedules.ops", "duespec.impl",
                  "duespec.targets.resolve", "subprocess", "duespec.campaigns.declared", "tomllib",
                  "html.entities", "tempfile"):
        assert other not in imported, other

# ---- recorded ticks: checked part by part, by what they fired ------------------------------

def _with_ticks(seed: int) -> History:
    return generate(seed=seed, clients=4, ops=40, keys=4, with_ticks=True, with_schedules=seed % 2 == 0)


def test_a_recorded_tick_is_checked_in_every_part_by_what_it_fired() -> None:
    """A tick reads every id, so it used to put the whole history in one search; its
    `fired` says which ids it changed, so each part checks the tick against its own share
    of `fired`, and the verdict is the same as the whole search's."""
    split = 0
    for seed in range(12):
        history = _with_ticks(seed)
        parted = check_history(history, budget=20, shrink=False)
        whole = check_history(history, budget=20, partition=False, shrink=False)
        assert parted.status == whole.status == "linearizable", (seed, parted.notes)
        if any(e.op == "tick" for e in history.events) and parted.partitions > 1:
            split += 1
    assert split >= 6, "histories with ticks are checked in several parts"


def test_a_tick_that_misses_or_invents_a_firing_is_not_linearizable_part_by_part() -> None:
    """One entry of a recorded tick's `fired` dropped, or one added for a timeout that was
    not due: found in the part of that id, as the whole search finds it."""
    checked = 0
    for seed in range(40):
        history = _with_ticks(seed)
        ticks = [n for n, e in enumerate(history.events) if e.op == "tick" and e.response["fired"]]
        if not ticks:
            continue
        for change in ("drop", "add"):
            events = copy.deepcopy(history.events)
            fired = events[ticks[0]].response["fired"]
            if change == "drop":
                fired.pop()
            else:
                fired.append({"kind": "promise", "id": "k9"})  # no call names k9: one search for all
                fired.append({"kind": "lease", "id": fired[0]["id"]})
            bad = History(history.header, events)
            parted = check_history(bad, budget=20, shrink=False)
            assert parted.status == "not linearizable", (seed, change)
            assert check_history(bad, budget=20, partition=False, shrink=False).status == "not linearizable"
        checked += 1
        if checked == 4:
            break
    assert checked == 4


def test_a_tick_takes_effect_id_by_id_within_its_interval() -> None:
    """A timeout pass fires each id under that id's own lock, not all at one instant: here
    it fired timer `a` before the settle of a (which saw a resolved at its timeout), and
    found timer `b` already settled by the settle of b, though the settle of a returned
    before the settle of b was called. Linearizable id by id (docs/linearize.md, "Ticks");
    the unpartitioned search, which steps a tick as one atomic step, finds no order."""
    timer = {"resonate:timer": "true"}
    model = get_system("schedules").model()
    model.reset(CONFIG)
    calls = [("c0", "promise.create", {"id": "a", "timeoutAt": T + 500, "param": VALUE, "tags": timer}, T, 0, 1),
             ("c1", "promise.create", {"id": "b", "timeoutAt": T + 500, "param": VALUE, "tags": timer}, T, 0, 1),
             ("c3", "promise.settle", {"id": "b", "state": "resolved", "value": VALUE}, T + 100, 30, 40),
             ("c2", "tick", {}, T + 1000, 2, 100),
             ("c4", "promise.settle", {"id": "a", "state": "resolved", "value": VALUE}, T + 100, 10, 20)]
    answers = [model.step(op, args, now) for _, op, args, now, _, _ in calls]
    assert answers[3] == {"status": 200, "fired": [{"kind": "promise", "id": "a"}]}
    assert answers[4]["promise"]["settledAt"] == T + 500
    events = sorted((Event(client, op, args, (T + start) * NS, (T + end) * NS, T + start, T + end, "ok", answer, now)
                     for (client, op, args, now, start, end), answer in zip(calls, answers)),
                    key=lambda e: e.return_ns)
    history = History(HistoryHeader("schedules", "pinned", CONFIG), events)
    parted = check_history(history, budget=20, shrink=False)
    assert parted.status == "linearizable" and parted.partitions == 2
    assert check_history(history, budget=20, partition=False, shrink=False).status == "not linearizable"

def test_the_state_diff_shows_a_list_that_grew_by_its_elements_and_an_absent_side_as_absent() -> None:
    from duespec.histories.report import _diff_table, diff

    before, after = {"promises": [], "tasks": []}, {"promises": [{"id": "p1", "state": "pending"}], "tasks": []}
    assert diff(before, after) == [("promises[0].id", "-", "p1"), ("promises[0].state", "-", "pending")]
    assert diff(after, before) == [("promises[0].id", "p1", "-"), ("promises[0].state", "pending", "-")]
    assert diff({"promises": []}, {"promises": None}) == [("promises", [], None)]  # no elements: a row of its own
    table = _diff_table("state-diff", before, after)
    assert "<em>absent</em>" in table and '"-"' not in table


def test_a_late_calls_label_ends_at_its_bar_instead_of_running_off_the_lane() -> None:
    from duespec.histories.report import _bar_label

    assert _bar_label("#4 promise.get", 100.0, 140.0, 980.0, 30) == '<text x="102.0" y="30">#4 promise.get</text>'
    late = _bar_label("#46 promise.set", 975.0, 979.0, 980.0, 30)
    assert 'text-anchor="end"' in late and 'x="979.0"' in late


def test_the_html_tables_headers_never_wrap() -> None:
    phases, mutate, _ = PLANTED["double acquire of one task version"]
    history, _ = scripted(0, phases, mutate)
    text = render_html(check_history(history))
    assert re.search(r"th\{[^}]*white-space:nowrap", text)


def test_a_fork_of_the_model_moves_on_alone() -> None:
    """The search steps forks and keeps their parents (in its memo and its stack): a
    fork shares no collection with its parent, so stepping it leaves the parent's state
    as it was, through every kind of entry (promises, tasks and their timeouts)."""
    from duespec.systems.schedules.adapter import ModelTarget
    from duespec.systems.schedules.concurrency import fork_model

    parent = ModelTarget()
    parent.reset(CONFIG)
    history = generate(seed=5, clients=2, ops=30, keys=2)
    for event in history.events[:10]:
        parent.step(event.op, event.args, event.now)
    before = json.dumps(parent.observe(), sort_keys=True)
    fork = fork_model(parent)
    for name, value in vars(parent.state).items():
        if isinstance(value, (dict, list)):
            assert getattr(fork.state, name) is not value, name
    for event in history.events[10:]:
        fork.step(event.op, event.args, event.now)
    parent.observed = None
    assert json.dumps(parent.observe(), sort_keys=True) == before
    assert json.dumps(fork.observe(), sort_keys=True) != before


def test_a_broken_capture_gives_the_same_witness_whichever_reader_parses_it(tmp_path: Path, monkeypatch) -> None:
    """A capture's lines carry 19-digit nanosecond instants, which orjson reads (the fast
    path, duespec.limits.orjson_exact); a read that saw a value no call wrote is still
    NOT LINEARIZABLE, with the same shrunk counterexample as the same file read by json."""
    from duespec import limits
    from duespec.histories.resonate_valid import read_any_history

    history = generate(seed=7, clients=4, ops=60, keys=1, with_schedules=False)
    events = list(history.events)
    last = max(i for i, e in enumerate(events) if e.op == "promise.get" and e.response.get("status") == 200)
    wrong = copy.deepcopy(events[last].response)
    wrong["promise"]["value"]["data"] = "never written"
    events[last] = Event(**{**events[last].__dict__, "response": wrong, "wire": None})
    path = tmp_path / "broken.history"
    exported(History(history.header, events), path)
    assert events[0].call_ns >= 10**18, "the instants are nanoseconds since the epoch: 19 digits"
    assert limits.orjson_exact(path.read_bytes().splitlines()[0].translate(limits.ORJSON_SHAPE))
    fast = check_history(read_any_history(path), budget=60)
    monkeypatch.setattr(limits, "orjson_exact", lambda shape: False)
    slow = check_history(read_any_history(path), budget=60)
    assert fast.status == slow.status == "not linearizable", describe(fast)
    assert fast.counterexample is not None and slow.counterexample is not None
    assert fast.counterexample.original == slow.counterexample.original
    assert fast.counterexample.violation == slow.counterexample.violation
    assert [e.to_json() for e in fast.counterexample.events] == [e.to_json() for e in slow.counterexample.events]
