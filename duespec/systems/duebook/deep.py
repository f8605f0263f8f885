"""Deep runs of the duebook machine: many ids, many open entries. About half the runs'
opening fills the book (or tours the implementation's index) before the first drawn step,
and the rules here fill, drain and outlive it, so bugs that need a deep book are reached.

A mixin of DuebookMachine (machine.py): its methods use the machine's state and steps
(`call`, `act`, `state`, `now`, `next_id`, `consumed`, `depth`, `excluded_ops`). Hypothesis
collects a machine's rules by name over its whole class hierarchy, so a rule here is drawn
exactly as if written in the machine."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from duespec.coverage import reached
from duespec.systems.duebook.ops import (
    COMPACT_FLOOR,
    DRAIN_SIZES,
    FILL_PATTERNS,
    FILL_SIZES,
    INDEX_RUN,
    INT64_MAX,
    KEEPER_CLAIM,
    LISTING_OPS,
    OUTLIVED,
    OWNER_CANCEL,
    OWNER_NAMES,
    OWNER_POOL,
    PROBE_OPS,
    SCATTER,
    TOUR_BATCH,
    TOUR_INSERTS,
    TOUR_OPEN,
    TOUR_WINDOW,
    most_claimable_instant,
)


class DeepRuns:
    """The opening's fill and tour, and the rules that fill, drain and outlive a deep book."""

    def is_deep(self) -> bool:
        return self.deep

    # --- the opening of a deep run: a tour of the implementation's index, or a fill ---

    def tour_size(self, already_open: int) -> tuple[int, int]:
        """The tour's deferrals, to TOUR_OPEN open, and its inserts (times `--depth`)."""
        return max(1, round(TOUR_OPEN * self.depth) - already_open), max(1, round(TOUR_INSERTS * self.depth))

    def tour(self) -> None:
        """Tour the implementation's index: the opening's deferrals withdrawn, then
        short-lived deferrals (every window TOUR_WINDOW long, due two instants apart, so
        whole runs close before later rows open and there is room between any two) until
        two index runs are full, the first run indexed on its own and one more appended to
        it; the whole book listed where the most are claimable, at the median expiry and
        at the latest due_at; one at a time at the places of the index a run's bookkeeping
        changes (`probe_the_index`); one that never expires lands mid-book; the keeper
        claims what is claimable at the latest due_at and the book is listed over those
        consumed rows once their windows have closed; then inserts due all over the built
        index, the keeper listing after every TOUR_BATCH (full runs split, first keys and
        bounds move), the whole book listed again. Hypothesis shrinks it away with the fill
        size; the trace minimiser (duespec.campaigns.minimise) drops the steps a failure
        inside it does not need."""
        self.withdraw_the_opening()
        count, inserts = self.tour_size(len(self.oracle_state()["open"]))
        first_run = min(count, INDEX_RUN)
        # The first run full and indexed, then one due after it, listed where it is claimable
        # beside the first run's last: a run of its own after a full one (DR-04.after_a_full_run).
        scheduled = self.tour_rows(0, first_run)
        if scheduled and self.index_pending(self.now) and self.tour_rows(first_run, first_run + 1):
            if self.index_pending(self.now + 1 + 2 * first_run) and first_run == INDEX_RUN:
                reached("DR-04.after_a_full_run")
            # One more row than planned: the first is cancelled, and two full runs stay open.
            self.tour_rows(first_run + 1, count + self.expirable_at_a_run_end(first_run))
        elif scheduled:  # a campaign without claimable: the rest of the rows all the same
            self.tour_rows(first_run, count)
        self.tour_listings()
        self.expirable_across_the_first_run()
        self.probe_the_index()
        self.one_never_expires_mid_book()
        dropped = self.keeper_claims_the_latest()
        latest = max((d["due_at"] for d in self.oracle_state()["open"]), default=self.now)
        claimable, _ = LISTING_OPS
        span = 2 * count
        for n in range(inserts):
            batch_ends = n % TOUR_BATCH == TOUR_BATCH - 1
            # Each batch ends with one due after every other deferral: the end of the index.
            delay = span + n if batch_ends else (n * 1009) % max(span, 1)
            response = self.call("schedule", {"owner": OWNER_NAMES[n % len(OWNER_NAMES)], "delay": delay,
                                              "ttl": TOUR_WINDOW}, self.now)
            if "error" in response:
                break
            self.next_id = response["ok"]["id"] + 1
            if dropped:
                reached("DR-04.insert_after_dropped_rows")
            if batch_ends and claimable not in self.excluded_ops:
                # The keeper looks in: the Book indexes this batch, and every run's bounds are asked.
                self.call(claimable, {"limit": INT64_MAX}, latest)
        if inserts:
            self.tour_listings()
        self.bulk_done()

    def withdraw_the_opening(self) -> None:
        """The opening's owners cancel theirs, and the book is listed past them (claimable
        and expirable) so that their rows leave the indexes: the tour starts from an empty
        index, every key of it the tour's own, none at the instant the tour starts."""
        open_deferrals = self.oracle_state()["open"]
        if not open_deferrals or self.excluded_ops & {OWNER_CANCEL, *LISTING_OPS}:
            return
        for deferral in open_deferrals:
            if "ok" in self.call(OWNER_CANCEL, {"id": deferral["id"], "caller": deferral["owner"]}, self.now):
                self.consumed.append(deferral["id"])
        claimable, expirable = LISTING_OPS
        self.call(claimable, {"limit": INT64_MAX}, max(d["due_at"] for d in open_deferrals))
        self.call(expirable, {"limit": INT64_MAX}, max(d["expires_at"] for d in open_deferrals))

    def tour_rows(self, start: int, stop: int) -> bool:
        """The tour's deferrals number start to stop - 1, due at now + 1 + 2n; whether all were scheduled."""
        for n in range(start, stop):
            response = self.call("schedule", {"owner": OWNER_NAMES[n % len(OWNER_NAMES)], "delay": 1 + 2 * n,
                                              "ttl": TOUR_WINDOW}, self.now)
            if "error" in response:
                return False
            self.next_id = response["ok"]["id"] + 1
        return True

    def index_pending(self, instant: int) -> bool:
        """The claimable at `instant`: the Book indexes what was scheduled since the last
        listing (at the tour's own start nothing is claimable, so it costs no answer).
        Whether it was taken."""
        claimable, _ = LISTING_OPS
        if claimable in self.excluded_ops:
            return False
        self.call(claimable, {"limit": INT64_MAX}, instant)
        return True

    def expirable_at_a_run_end(self, first_run: int) -> int:
        """The owner cancels the tour's first deferral, then the expirable is listed once
        the first run's windows and the one after it have closed, with a limit of the
        first run's open rows: the limit is reached at that run's end, while the index
        still holds the cancelled row (a listing that walks each row to drop such rows
        must stop there too). The claimable at its due_at drops it from the other index.
        1 when it was cancelled, else 0."""
        open_deferrals = self.oracle_state()["open"]
        claimable, expirable = LISTING_OPS
        if len(open_deferrals) != first_run + 1 or self.excluded_ops & {OWNER_CANCEL, claimable, expirable}:
            return 0
        first, after = open_deferrals[0], open_deferrals[-1]
        if "error" in self.call(OWNER_CANCEL, {"id": first["id"], "caller": first["owner"]}, self.now):
            return 0
        self.consumed.append(first["id"])
        self.call(expirable, {"limit": first_run - 1}, after["expires_at"])
        self.call(claimable, {"limit": INT64_MAX}, first["due_at"])
        reached("DR-04.run_end_limit")
        return 1

    def expirable_across_the_first_run(self) -> None:
        """The expirable with a limit one past the first full run, where the second run
        has two rows expired: the limit cuts the second run after its first row."""
        _, expirable = LISTING_OPS
        expiries = sorted(d["expires_at"] for d in self.oracle_state()["open"] if d["expires_at"])
        if expirable not in self.excluded_ops and len(expiries) > INDEX_RUN + 1:
            self.call(expirable, {"limit": INDEX_RUN + 1}, expiries[INDEX_RUN + 1])

    def probe_the_index(self) -> None:
        """One deferral at a time at each place of a two-run index where a run's
        bookkeeping changes, each listed where it lands: at the second-to-last key of the
        full last run (it splits, and the new row goes to the second half), there again
        (now a last run with room, between its last two keys), in the gap after the first
        key of the second run and then at that first key (the run's first key must not
        move), one appended to the run before the last quarter's first key, one short-lived
        at that first key (the bound on its run's earliest expiry must come down), listed
        there with a limit that cuts the run after one row, then as it closes with a limit
        the run before fills and with none; last, one due now, below every key (the first
        run splits with it in the first half, whose bound on the earliest expiry must come
        down: listed as it lands and as it closes)."""
        keys = sorted(d["due_at"] for d in self.oracle_state()["open"])
        claimable, _ = LISTING_OPS
        if len(keys) < 2 * INDEX_RUN or claimable in self.excluded_ops:
            return
        second_half, last_quarter = keys[INDEX_RUN], keys[INDEX_RUN + INDEX_RUN // 2]
        probes = [(keys[-2], TOUR_WINDOW, ((keys[-2] + 1, INT64_MAX),)),
                  (keys[-2], TOUR_WINDOW, ((keys[-2] + 1, INT64_MAX),)),
                  (second_half + 1, TOUR_WINDOW, ()),
                  (second_half, TOUR_WINDOW, ((second_half + 1, INT64_MAX),)),
                  (last_quarter - 1, TOUR_WINDOW, ()),
                  (last_quarter, 1, ((last_quarter, 3), (last_quarter + 1, 1), (last_quarter + 1, INT64_MAX))),
                  (self.now, TOUR_WINDOW, ((self.now, INT64_MAX), (self.now + TOUR_WINDOW, INT64_MAX)))]
        for due_at, ttl, listings in probes:
            response = self.call("schedule", {"owner": OWNER_NAMES[0], "delay": due_at - self.now, "ttl": ttl},
                                 self.now)
            if "error" in response:
                return
            self.next_id = response["ok"]["id"] + 1
            if not listings:
                self.index_pending(self.now)
            for instant, limit in listings:
                self.call(claimable, {"limit": limit}, instant)
        reached("DR-04.probed_runs")

    def one_never_expires_mid_book(self) -> None:
        """One deferral that never expires, due at the median due_at (in an index of two
        full runs, the front of the second, which it splits), then the keeper lists what
        is claimable once every window has closed, at the latest expires_at: the run that
        took it in has a row no instant closes."""
        open_deferrals = self.oracle_state()["open"]
        claimable, _ = LISTING_OPS
        if not open_deferrals or claimable in self.excluded_ops:
            return
        dues = sorted(d["due_at"] for d in open_deferrals)
        response = self.call("schedule", {"owner": OWNER_NAMES[0], "delay": max(dues[len(dues) // 2] - self.now, 0),
                                          "ttl": 0}, self.now)
        if "error" in response:
            return
        self.next_id = response["ok"]["id"] + 1
        reached("DR-04.never_expiring_insert")
        closed = max(d["expires_at"] for d in open_deferrals)
        self.call(claimable, {"limit": INT64_MAX}, closed)

    def keeper_claims_the_latest(self) -> bool:
        """The keeper claims what is claimable at the latest due_at, the end of the index,
        and the book is listed once those windows have closed: the listing walks over
        the consumed rows, which the implementation drops from a run that keeps others.
        Whether it did (claim and expirable are in the campaign, and a claim succeeded)."""
        open_deferrals = self.oracle_state()["open"]
        claimable, expirable = LISTING_OPS
        if not open_deferrals or self.excluded_ops & {claimable, expirable, KEEPER_CLAIM}:
            return False
        latest = max(d["due_at"] for d in open_deferrals)
        claimed = [deferral for deferral in self.call(claimable, {"limit": INT64_MAX}, latest)["ok"]
                   if "ok" in self.call(KEEPER_CLAIM, {"id": deferral["id"]}, latest)]
        self.consumed.extend(deferral["id"] for deferral in claimed)
        closed = max((deferral["expires_at"] for deferral in claimed), default=0)
        if closed:
            self.call(expirable, {"limit": INT64_MAX}, closed)
        return bool(closed)

    def tour_listings(self) -> None:
        """The whole book, claimable and expirable, at three instants of the tour's span."""
        open_deferrals = self.oracle_state()["open"]
        if not open_deferrals:
            return
        expiries = sorted(d["expires_at"] for d in open_deferrals if d["expires_at"])
        instants = [most_claimable_instant(open_deferrals), max(d["due_at"] for d in open_deferrals)]
        if expiries:
            instants.insert(1, expiries[len(expiries) // 2])
        for instant in instants:
            for op in LISTING_OPS:
                if op not in self.excluded_ops:  # an opening takes no op left out of the campaign
                    self.call(op, {"limit": INT64_MAX}, instant)

    def fill_count(self, size: int, already_open: int) -> int:
        """How many a fill of `size` schedules into a book with room for all of them."""
        ceiling = round(max(FILL_SIZES) * self.depth) + 40
        return max(0, min(max(1, round(size * self.depth)), ceiling - already_open))

    # --- deep runs: many ids, many open entries ---

    @precondition(is_deep)
    @rule(size=st.sampled_from(FILL_SIZES), pattern=st.sampled_from(FILL_PATTERNS))
    def fill(self, size: int, pattern: str) -> None:
        """Schedule `size` (x depth) deferrals in one step, until the book is full; every
        answer is compared, the state once at the end."""
        # A fill stops a little past the largest fill: every step compares the whole state.
        count = self.fill_count(size, len(self.state["open"]))
        # "same instant": at the book's next due instant, so the fill ties with what is
        # there already and a listing at that instant starts inside the tie.
        tie = min((d["due_at"] for d in self.state["open"] if d["due_at"] >= self.now), default=self.now + 3)
        for n in range(count):
            delay = {"ascending": n // 2, "descending": (count - n) // 2, "same instant": tie - self.now,
                     "scattered": (n * 7919) % SCATTER}[pattern]
            ttl = (50, 0, 1000, 3, 400)[n % 5]  # the first expires: a fill of one still has a window
            response = self.call("schedule", {"owner": OWNER_NAMES[n % len(OWNER_NAMES)], "delay": delay, "ttl": ttl},
                                 self.now)
            if "error" in response:
                break
            self.next_id = response["ok"]["id"] + 1
        self.bulk_done()

    @precondition(lambda self: self.deep and self.has_open())
    @rule(size=st.sampled_from(DRAIN_SIZES), newest_first=st.booleans())
    def drain(self, size: int, newest_first: bool) -> None:
        """Consume up to `size` (x depth) of the oldest (or the newest) open deferrals:
        claim when it is claimable, else expire when late, else cancel as the owner."""
        open_count = len(self.state["open"])
        in_order = self.state["open"][::-1] if newest_first else self.state["open"]
        for deferral in in_order[:max(1, round(size * self.depth))]:
            if deferral["due_at"] <= self.now and (not deferral["expires_at"] or self.now < deferral["expires_at"]):
                op, args = "claim", {"id": deferral["id"]}
            elif deferral["expires_at"] and deferral["expires_at"] <= self.now:
                op, args = "expire", {"id": deferral["id"]}
            else:
                op, args = "cancel", {"id": deferral["id"], "caller": deferral["owner"]}
            response = self.call(op, args, self.now)
            if "ok" in response:
                self.consumed.append(deferral["id"])
                open_count -= 1
                self.dead_slots += 1
                if self.dead_slots > open_count and self.dead_slots > COMPACT_FLOOR:
                    reached("DR-05.compaction")
                    self.dead_slots = 0
        self.bulk_done()

    @precondition(lambda self: not self.deep and self.depth > 0)  # `--depth 0`: no run allocates many ids
    @rule(op=st.sampled_from(("claim", "expire")), owner=OWNER_POOL)
    def an_old_deferral_outlives_many(self, op: str, owner: str) -> None:
        """One deferral stays open while OUTLIVED later ids are scheduled and cancelled (each
        after the next is scheduled, when there is room, and then asked for again), then
        the book is listed over it (stale rows on the way) and it is claimed or expired in
        its window: the Book keeps such an old one apart from its id window once it
        compacts, and a short campaign rarely consumes that many ids around one survivor,
        nor asks for a consumed id just below where the window starts after a compaction."""
        response = self.act("schedule", {"owner": owner, "delay": 1, "ttl": TOUR_WINDOW})
        if "error" in response:
            return
        old = response["ok"]
        self.next_id = old["id"] + 1
        previous: int | None = None
        for n in range(OUTLIVED):
            request = {"owner": owner, "delay": n % 2, "ttl": 1 + n % 3}
            scheduled = self.call("schedule", request, self.now)
            if "error" in scheduled and previous is not None:  # no room for two: the previous one first
                self.cancel_and_probe(previous, owner)
                previous = None
                scheduled = self.call("schedule", request, self.now)
            if "error" in scheduled:
                break
            self.next_id = scheduled["ok"]["id"] + 1
            if previous is not None:
                self.cancel_and_probe(previous, owner)
            previous = scheduled["ok"]["id"]
        if previous is not None:
            self.cancel_and_probe(previous, owner)
        self.bulk_done()
        if op == "claim":
            self.now = old["due_at"]
            self.act("claimable", {"limit": INT64_MAX})
        else:
            self.now = old["expires_at"]
            self.act("expirable", {"limit": INT64_MAX})
        self.consume(op, {"id": old["id"]})

    def cancel_and_probe(self, id: int, owner: str) -> None:
        """Cancel `id` (the newest but one, when there is room for two), then ask for it again
        with every op that takes an id: each must answer not_found, also right after the
        Book compacted and its id window starts just above `id`."""
        if "ok" in self.call("cancel", {"id": id, "caller": owner}, self.now):
            self.consumed.append(id)
        for op in PROBE_OPS:
            self.call(op, {"id": id, "caller": owner} if op == "cancel" else {"id": id}, self.now)

    def bulk_done(self) -> None:
        """After many steps in one rule: one state comparison, no transition invariants
        (they judge one step), the depth regimes from the state reached."""
        self.observed(one_step=False)
        self.transition = None
