"""What a linearizability search needs to know about a system, beyond its ops.

duespec.histories.linearize is generic: it drives the system's reference model through
the Target interface. Three facts are system knowledge and so live here, beside the
system (duespec/systems is the only place that knows one):

- `fork`: a copy of a model target whose state can move on without touching the
  original. The search branches at every call it tries; copy.deepcopy of a schedules
  model cost 40-60x a fork that copies the state's dicts and shares their values, which
  are frozen dataclasses (measured in `duespec bench --only linearize`).
- `keys`: which independent parts of the state a call reads or writes. Calls whose keys
  never meet can be checked apart (P-compositionality); None means "possibly all of
  it", which puts the call in every part and so stops partitioning.
- `timers` and `tick`: the instants at which the model's state has a timeout due, and
  the op that fires what is due, so that the search can place the server's background
  timeouts as internal steps.
- `state_key`: a model target's state as a hashable value, equal exactly when the states
  are, and cheap: the search's memo holds one per configuration it visits, so a key
  that serialises the whole state (the default, the observed state as JSON bytes) costs
  both time and memory. `sys.getsizeof` of a key is what the search counts against its
  memory cap, so a key that shares the state's parts says their size.
- `touched` and `project`: for a call that may touch every key but whose recorded answer
  says which keys it changed (a `tick` and its `fired`), those keys, and the part of an
  answer that concerns some keys. Such a call is checked in every part, against its
  answer's part there, instead of putting the whole history in one part.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable, Hashable

Json = Any


@dataclass(frozen=True)
class Concurrency:
    #: A model target -> an independent copy of it (its state moves on alone).
    fork: Callable[[Any], Any]
    #: (op, args) -> the keys the call may touch, or None for "maybe every key".
    keys: Callable[[str, Json], frozenset[str] | None]
    #: Links between keys that only a whole history shows (a schedule and the promises its
    #: occurrences create): (events, keys no call names but a tick's answer does) -> pairs
    #: of keys to put in one part.
    links: Callable[[list[tuple[str, Json]], frozenset[str]], list[tuple[str, str]]]
    #: An observed state -> the earliest instant a timeout is due in it, or None.
    next_timer: Callable[[dict[str, Json]], int | None]
    #: The op (args {}) that fires every timeout due at its `now`, or None if the system has
    #: no background timeouts.
    tick: str | None
    #: A model target -> its state as a hashable memo key (None: the observed state's JSON).
    state_key: Callable[[Any], Hashable] | None = None
    #: (op, answer, keys) -> the part of the answer that concerns `keys` (None: all of it),
    #: in a form compared whole; None when the op's answer does not say what it touched
    #: (the call then stays in one part with everything).
    project: Callable[[str, Json, frozenset[str] | None], Json] | None = None
    #: (op, recorded answer) -> the keys the answer says the call changed, or None when it
    #: does not say (then `project` is not used for that call).
    touched: Callable[[str, Json], frozenset[str] | None] | None = None


def concurrency_of(system: str) -> Concurrency:
    return importlib.import_module(f"duespec.systems.{system}").CONCURRENCY


def no_links(_: list[tuple[str, Json]], extra: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    return []


def template_pattern(template: str, schedule_id: str) -> re.Pattern[str] | None:
    """The promise ids a schedule's occurrences may get (model/schedules/expand.py fills
    `{{.id}}` then `{{.timestamp}}` with decimal epoch ms), as a regex."""
    if type(template) is not str or type(schedule_id) is not str:
        return None
    filled = template.replace("{{.id}}", schedule_id)
    return re.compile("[0-9]+".join(re.escape(part) for part in filled.split("{{.timestamp}}")))
