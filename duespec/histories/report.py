"""A linearizability verdict for people: a terminal timeline and a self-contained HTML page.

A "not linearizable" is only useful if a maintainer can see why, so the counterexample is
shown as what happened (each client's calls on one time axis, which of them overlap) and
what the model makes of it: the longest prefix of calls it can place, the call it then
cannot place, the model's state just before that call, and what the model would have
answered each call that could have gone next there. The HTML page holds the same facts
with one swimlane per client; it is one file with inline CSS and SVG and no script or
network reference, so it opens anywhere and its facts are in the DOM (tests read them).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from duespec.histories.format import Event
from duespec.systems import model_of
from duespec.systems.concurrent import concurrency_of

if TYPE_CHECKING:
    from duespec.histories.linearize import Counterexample, Verdict

Json = Any

#: Longest JSON shown for one value in the terminal before it is cut with an ellipsis.
_WIDTH = 160


def _short(value: Json, width: int = _WIDTH) -> str:
    text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= width else text[:width - 1] + "…"


def _clients(events: list[Event]) -> list[str]:
    return sorted({e.client for e in events}, key=lambda c: min(e.call_ns for e in events if e.client == c))


def overlaps(events: list[Event], indices: list[int]) -> list[tuple[int, int]]:
    """Pairs of calls (by index) whose intervals overlap: the ones whose order is free."""
    out = []
    for a in range(len(events)):
        for b in range(a + 1, len(events)):
            ea, eb = events[a], events[b]
            if ea.call_ns <= eb.return_ns and eb.call_ns <= ea.return_ns or \
                    "unknown" in (ea.outcome, eb.outcome):
                out.append((indices[a], indices[b]))
    return out


def _answer(event: Event) -> str:
    if event.outcome == "unknown":
        return "outcome unknown"
    return _short(event.response)


def replay_prefix(verdict: Verdict) -> tuple[dict[str, Json], dict[str, Json], dict[str, Json] | None,
                                             dict[str, Json] | None]:
    """(model state before the prefix's last step, the state before the blocked call, the
    state after the model's own step of it, the model's answer), by stepping a fresh model
    along the counterexample's prefix. The last step's change is usually why the blocked
    call cannot go next (the acquire that won, the settle that landed)."""
    cx = verdict.counterexample
    assert cx is not None
    by_index = dict(zip(cx.original, cx.events))
    model = model_of(verdict.system)()
    model.reset(verdict.config)
    tick = concurrency_of(verdict.system).tick
    try:
        previous = model.observe()
        for placed in cx.stuck.prefix:
            previous = model.observe()
            if placed.call is None:
                model.step(tick, {}, placed.now)
            else:
                event = by_index[placed.call]
                model.step(event.op, event.args, placed.now)
        before = model.observe()
        blocked = by_index.get(cx.stuck.call)
        attempt = next((a for a in cx.stuck.attempts if a.call == cx.stuck.call and a.now is not None), None)
        if blocked is None or attempt is None:
            return previous, before, None, None
        answer = model.step(blocked.op, blocked.args, attempt.now)
        return previous, before, model.observe(), answer
    finally:
        getattr(model, "close", lambda: None)()


def flatten(value: Json, prefix: str = "") -> dict[str, Json]:
    """A JSON value as {path: leaf}, for a diff a person can read line by line."""
    if isinstance(value, dict) and value:
        out: dict[str, Json] = {}
        for key in sorted(value):
            out.update(flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for n, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{n}]"))
        return out
    return {prefix or "(value)": value}


def diff(before: Json, after: Json) -> list[tuple[str, Json, Json]]:
    """(path, before, after) of every leaf that differs; a missing side is the string '-'.
    An empty list or object whose other side has elements is no row of its own: the
    elements' rows say it (`promises[0].id: - -> "p1"`, not also `promises: [] -> -`)."""
    a, b = flatten(before), flatten(after)

    def grown(path: str, value: Json, other: dict[str, Json]) -> bool:
        return value in ([], {}) and any(key.startswith((path + "[", path + ".")) for key in other)

    return [(path, a.get(path, "-"), b.get(path, "-")) for path in sorted(set(a) | set(b))
            if a.get(path, "-") != b.get(path, "-")
            and not (path not in b and grown(path, a[path], b)) and not (path not in a and grown(path, b[path], a))]


def _summary(verdict: Verdict) -> str:
    clients = len({e.client for e in verdict.history_events})
    return (f"{verdict.events:,} calls of {clients} clients, {verdict.partitions:,} independent part"
            f"{'' if verdict.partitions == 1 else 's'}, {verdict.states:,} states explored, "
            f"{verdict.seconds:.2f} s ({verdict.system}, {verdict.clock} clock"
            + (f", timers may fire up to {verdict.max_timer_lag} ms late" if verdict.clock == "real" else "")
            + ")")


def _why_unknown(verdict: Verdict) -> str:
    if verdict.limit == "memory":
        return f"a search reached the memory cap of {verdict.max_memory / 2**20:,.0f} MiB (--max-memory)"
    return "the budget ran out"


def describe(verdict: Verdict) -> str:
    """The verdict as terminal text: one line when linearizable, a timeline when not."""
    lines: list[str] = []
    if verdict.status == "linearizable":
        lines.append(f"LINEARIZABLE: an order of the calls explains every answer: {_summary(verdict)}")
    elif verdict.status == "unknown":
        placed, size = verdict.progress or (0, 0)
        lines.append(f"UNKNOWN ({_why_unknown(verdict)} before a verdict; this is not a pass): {_summary(verdict)}; "
                     f"{verdict.decided:,} of {verdict.partitions:,} parts decided linearizable; the deepest "
                     f"search of an undecided part placed {placed:,} of its {size:,} calls")
    else:
        lines.append(f"NOT LINEARIZABLE: no order of the calls explains the answers: {_summary(verdict)}")
        if verdict.counterexample is not None:
            lines.extend(timeline(verdict))
    lines.extend(f"note: {note}" for note in verdict.notes)
    return "\n".join(lines)


def timeline(verdict: Verdict) -> list[str]:
    cx = verdict.counterexample
    assert cx is not None
    stuck = cx.stuck
    events, indices = cx.events, cx.original
    t0 = min(e.call_ns for e in events)
    clients = _clients(events)
    out = [f"Counterexample: {len(events)} calls of {len(clients)} clients, shrunk from {verdict.events:,} "
           + ("(minimal: no call can be removed and the same violation kept; each is the culprit, core, "
              "the rest linearizable without it, or context, another call failing or unjustified without it"
              if cx.minimal else "(not shown minimal: a shrinking check ran out of budget")
           + f"; {cx.checks} checks)",
           "Timeline (ms after the first call; [call, return]):"]
    width = max(len(c) for c in clients)
    for index, event in sorted(zip(indices, events), key=lambda pair: pair[1].call_ns):
        mark = "   <- cannot be placed" if index == stuck.call else ""
        when = f"now={event.now}" if event.now is not None else f"ms [{event.call_ms}, {event.return_ms}]"
        out.append(f"  #{index:<4} {event.client:<{width}} [{(event.call_ns - t0) / 1e6:9.3f}, "
                   f"{(event.return_ns - t0) / 1e6:9.3f}] {when} {event.op} {_short(event.args, 90)}")
        out.append(f"  {'':5} {'':<{width}} {'':23} answered {_answer(event)}{mark}")
        if index in cx.roles:
            out.append(f"  {'':5} {'':<{width}} {'':23} ({cx.roles[index]})")
    pairs = overlaps(events, indices)
    if cx.violation is not None:
        out.append(f"Violation: #{cx.violation.culprit}'s answer: {cx.violation.kind} (the other calls "
                   f"linearize without it; shrinking kept this violation)")
    out.append("Overlapping calls (either order is allowed): "
               + (", ".join(f"#{a}~#{b}" for a, b in pairs) if pairs else "none: the calls are sequential"))
    steps = [f"tick@{p.now}" if p.call is None else f"#{p.call}@{p.now}" for p in stuck.prefix]
    out.append("Longest prefix the model can place: " + (" ".join(steps) if steps else "(none: not even the first call)"))
    if stuck.call >= 0:
        blocked = dict(zip(indices, events))[stuck.call]
        out.append(f"Cannot place #{stuck.call} ({blocked.client} {blocked.op}), which answered {_answer(blocked)}")
    out.append("Model state just before it: " + _short(_nonempty(stuck.state), 600))
    if stuck.prefix:
        try:
            previous, before, _, _ = replay_prefix(verdict)
        except Exception:  # the timeline above still stands without this line
            previous = before = None
        changes = diff(previous, before) if before is not None else []
        if changes:
            shown = "; ".join(f"{path}: {_short(old, 40)} -> {_short(new, 40)}" for path, old, new in changes[:8])
            out.append(f"What the prefix's last step changed: {shown}" + (" ..." if len(changes) > 8 else ""))
    out.append("What the model answers each call that could go next there:")
    by_index = dict(zip(indices, events))
    for attempt in stuck.attempts:
        event = by_index[attempt.call]
        if attempt.now is None:
            out.append(f"  #{attempt.call} {event.op}: cannot go next ({attempt.why})")
            continue
        verdict_word = "agrees" if attempt.agrees else "DIFFERS from the recorded answer"
        out.append(f"  #{attempt.call} {event.op} at now={attempt.now}: model {_short(attempt.answer, 200)} "
                   f"({verdict_word})")
    return out


def _nonempty(state: Json) -> Json:
    return {k: v for k, v in state.items() if v not in ({}, [], None)} if isinstance(state, dict) else state


# ---- HTML ----------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.5em}
.verdict-not{color:#b00020} .verdict-ok{color:#1b5e20} .verdict-unknown{color:#8a6d00}
table{border-collapse:collapse;margin:.5em 0} td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top;max-width:40em;overflow-wrap:anywhere}
th{background:#f3f3f3;text-align:left;white-space:nowrap;overflow-wrap:normal} code,pre{font:12px/1.3 ui-monospace,monospace}
pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:30em}
tr.failing td{background:#fde7ea} .differs{color:#b00020;font-weight:bold}
svg text{font:11px ui-monospace,monospace} .lane-bg{fill:#fafafa;stroke:#ddd}
rect.call{fill:#90caf9;stroke:#1565c0} rect.call.unknown{fill:#e0e0e0;stroke:#757575;stroke-dasharray:3 2}
rect.call.failing{fill:#ef9a9a;stroke:#b00020;stroke-width:2}
"""


def _e(value: object) -> str:
    import html  # only for the HTML report: `import html` loads every entity name

    return html.escape(str(value), quote=True)


def _j(value: Json) -> str:
    return _e(json.dumps(value, sort_keys=True, indent=1))


def render_html(verdict: Verdict, source: str = "") -> str:
    """The verdict as one self-contained HTML page (no scripts, no external references)."""
    status_class = {"linearizable": "verdict-ok", "unknown": "verdict-unknown"}.get(verdict.status, "verdict-not")
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>duespec linearize: "
             f"{_e(verdict.status)}</title><style>{_CSS}</style></head><body>",
             f"<h1 id=verdict class={status_class} data-status=\"{_e(verdict.status)}\">"
             f"{_e(verdict.status.upper())}</h1>",
             f"<p id=summary>{_e(source + ': ' if source else '')}{_e(_summary(verdict))}</p>",
             *(f"<p class=note>{_e(note)}</p>" for note in verdict.notes)]
    cx = verdict.counterexample
    if cx is None:
        if verdict.status == "unknown":
            placed, size = verdict.progress or (0, 0)
            parts.append(f"<p>{_e(_why_unknown(verdict).capitalize())}: {verdict.decided} of {verdict.partitions} parts decided; the "
                         f"deepest search of an undecided part placed {placed} of its {size} calls. Unknown is "
                         f"not a pass.</p>")
        parts.append("</body></html>")
        return "".join(parts)
    stuck = cx.stuck
    by_index = dict(zip(cx.original, cx.events))
    parts.append(f"<p id=counterexample data-calls={len(cx.events)} data-minimal={str(cx.minimal).lower()}>"
                 f"Counterexample: {len(cx.events)} calls of {len(_clients(cx.events))} clients, shrunk from "
                 f"{verdict.events} ({'minimal' if cx.minimal else 'not shown minimal'}; {cx.checks} checks). "
                 f"The failing call is #{stuck.call}, in red.</p>")
    if cx.violation is not None:
        parts.append(f"<p id=violation data-culprit={cx.violation.culprit} data-kind=\"{_e(cx.violation.kind)}\">"
                     f"Violation: #{cx.violation.culprit}'s answer: {_e(cx.violation.kind)} (the other calls "
                     f"linearize without it; shrinking kept this violation)</p>")
    parts.append("<h2>Swimlanes</h2>")
    parts.append(_swimlanes(cx, stuck.call))
    parts.append("<h2>Calls</h2><table id=calls><tr><th>#</th><th>client</th><th>call..return (ms after the "
                 "first call)</th><th>now</th><th>op</th><th>args</th><th>recorded answer</th><th>role</th></tr>")
    t0 = min(e.call_ns for e in cx.events)
    for index, event in sorted(by_index.items(), key=lambda pair: pair[1].call_ns):
        cls = " class=failing" if index == stuck.call else ""
        parts.append(f"<tr{cls} data-call={index}><td>{index}</td><td>{_e(event.client)}</td>"
                     f"<td>{(event.call_ns - t0) / 1e6:.3f}..{(event.return_ns - t0) / 1e6:.3f}</td>"
                     f"<td>{_e(event.now if event.now is not None else f'[{event.call_ms}, {event.return_ms}]')}</td>"
                     f"<td>{_e(event.op)}</td><td><code>{_e(_short(event.args, 400))}</code></td>"
                     f"<td><code>{_e(_answer(event))}</code></td><td>{_e(cx.roles.get(index, ''))}</td></tr>")
    parts.append("</table>")
    steps = [f"tick@{p.now}" if p.call is None else f"#{p.call}@{p.now}" for p in stuck.prefix]
    parts.append(f"<h2>Longest prefix the model can place</h2><p id=prefix>{_e(' '.join(steps) or '(none)')}</p>")
    parts.append("<h2>What each call that could go next would have been answered</h2><table id=attempts>"
                 "<tr><th>call</th><th>now</th><th>model's answer</th><th>recorded</th><th></th></tr>")
    for attempt in stuck.attempts:
        event = by_index[attempt.call]
        word = attempt.why or ("agrees" if attempt.agrees else "differs")
        parts.append(f"<tr data-call={attempt.call}><td>#{attempt.call} {_e(event.op)}</td><td>{_e(attempt.now)}</td>"
                     f"<td><pre>{_j(attempt.answer)}</pre></td><td><pre>{_j(event.response)}</pre></td>"
                     f"<td class={'ok' if attempt.agrees else 'differs'}>{_e(word)}</td></tr>")
    parts.append("</table>")
    try:
        previous, before, after, answer = replay_prefix(verdict)
    except Exception as error:  # the page must still show what it has
        previous, before, after, answer = stuck.state, stuck.state, None, {"error": f"{type(error).__name__}: {error}"}
    blocked = by_index.get(stuck.call)
    if blocked is not None and answer is not None:
        parts.append("<h2>The failing call: recorded answer against the model's</h2><table id=answer-diff>"
                     "<tr><th>field</th><th>recorded</th><th>model</th></tr>")
        for path, rec, mod in diff(blocked.response if blocked.response is not None else {}, answer):
            parts.append(f"<tr><td><code>{_e(path)}</code></td><td><code>{_e(json.dumps(rec))}</code></td>"
                         f"<td><code>{_e(json.dumps(mod))}</code></td></tr>")
        parts.append("</table>")
    last = stuck.prefix[-1] if stuck.prefix else None
    last_name = ("nothing (the prefix is empty)" if last is None else
                 f"tick@{last.now}" if last.call is None else f"#{last.call} {by_index[last.call].op}")
    parts.append(f"<h2>State diff: what the prefix's last step ({_e(last_name)}) changed, just before the "
                 f"failing call</h2>" + _diff_table("state-diff", previous, before))
    if after is not None:
        parts.append("<h2>State diff: what the model's own step of the failing call would change</h2>"
                     + _diff_table("own-step-diff", before, after))
    parts.append(f"<h2>Model state just before the failing call</h2><pre id=state>{_j(_nonempty(before))}</pre>")
    parts.append("</body></html>")
    return "".join(parts)


def _cell(value: Json) -> str:
    """A side of a state diff: its JSON, or `absent` for the side that has no such path."""
    return "<em>absent</em>" if value == "-" else f"<code>{_e(json.dumps(value))}</code>"


def _diff_table(id: str, before: Json, after: Json) -> str:
    rows = diff(before, after)
    if not rows:
        return f"<p id={id}>no change</p>"
    out = [f"<table id={id}><tr><th>path</th><th>before</th><th>after</th></tr>"]
    for path, old, new in rows:
        out.append(f"<tr><td><code>{_e(path)}</code></td><td>{_cell(old)}</td><td>{_cell(new)}</td></tr>")
    out.append("</table>")
    return "".join(out)


#: Width of a character of the lanes' 11 px monospace labels, in px (a little over 0.6 em).
_LABEL_CHAR_PX = 7.0


def _bar_label(label: str, x0: float, x1: float, right: float, y: float) -> str:
    """A call's label beside its bar's start, or ending at its bar's end when it would run
    past the lane's right edge (a late call's label is then read leftwards, never cut)."""
    if x0 + 2 + len(label) * _LABEL_CHAR_PX <= right + 10:
        return f'<text x="{x0 + 2:.1f}" y="{y}">{_e(label)}</text>'
    return f'<text x="{max(x1, 4 + len(label) * _LABEL_CHAR_PX):.1f}" y="{y}" text-anchor="end">{_e(label)}</text>'


def _swimlanes(cx: Counterexample, failing: int) -> str:
    """One lane per client, each call a bar over its [call, return] interval (every
    attribute quoted: inside HTML an unquoted value runs into a self-closing slash)."""
    events, indices = cx.events, cx.original
    clients = _clients(events)
    t0 = min(e.call_ns for e in events)
    t1 = max(e.return_ns for e in events)
    span = max(t1 - t0, 1)
    left, width, lane_h = 80, 900, 44

    def x(ns: int) -> float:
        return left + (ns - t0) / span * width

    height = lane_h * len(clients) + 30
    out = [f'<svg id="swimlanes" xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" '
           f'height="{height}" role="img" aria-label="one lane per client on a time axis">']
    for row, client in enumerate(clients):
        y = 10 + row * lane_h
        out.append(f'<g class="lane" data-client="{_e(client)}"><rect class="lane-bg" x="0" y="{y}" '
                   f'width="{left + width + 10}" height="{lane_h - 4}"></rect>'
                   f'<text x="4" y="{y + 24}">{_e(client)}</text>')
        for index, event in zip(indices, events):
            if event.client != client:
                continue
            cls = "call" + (" failing" if index == failing else "") + (" unknown" if event.outcome == "unknown" else "")
            x0, x1 = x(event.call_ns), x(event.return_ns)
            out.append(f'<g class="{cls}" data-call="{index}" data-op="{_e(event.op)}">'
                       f'<title>#{index} {_e(event.op)} {_e(_short(event.args, 200))} -> {_e(_answer(event))}</title>'
                       f'<rect class="{cls}" x="{x0:.1f}" y="{y + 6}" width="{max(x1 - x0, 3):.1f}" '
                       f'height="{lane_h - 16}"></rect>'
                       f'{_bar_label(f"#{index} {event.op}", x0, x1, left + width, y + 22)}</g>')
        out.append("</g>")
    axis_y = 10 + len(clients) * lane_h + 12
    out.append(f'<text x="{left}" y="{axis_y}">0 ms</text><text x="{left + width - 60}" y="{axis_y}">'
               f'{span / 1e6:.3f} ms</text></svg>')
    return "".join(out)
