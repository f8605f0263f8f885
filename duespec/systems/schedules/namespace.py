"""One run's namespace on a Resonate server duespec cannot reset (`conform --reset none`).

Every run sends its logical ids (the model's and the trace's) with the run's token in
front: ids of schedules, promises and tasks, the awaited and awaiter of a callback, a
worker's pid, a search's cursor, and a schedule's promiseId template (unless it starts
with `{{.id}}`, whose expansion already carries the token once). Every promise and
schedule the run creates carries the tag `duespec:run` = token, and every search asks for
that tag, so a listing sees the run's objects only, and pages as the model's would. In an
answer the token is taken out of every string, the tag out of every tags object, and a
tick's `fired` keeps only the run's entries (that list is the server's, of every run).

A token is `run-` and hex digits, none of which an id may not hold, so an id that is
valid (or invalid) stays so; an empty id stays empty (invalid); a value that is no string
is sent as it is. The common prefix keeps ids in the same order on both sides."""

from __future__ import annotations

from typing import Any

from duespec.model.schedules.clock import MAX_TIME
from duespec.systems.schedules.ops import PARAMS, with_required_tags
from duespec.targets.namespaced import strip_token

Json = Any

#: The tag that marks what a run created, and that its searches ask for.
RUN_TAG = "duespec:run"
#: Request keys whose string value is an id the run makes or names.
ID_KEYS = frozenset({"id", "awaited", "awaiter", "pid"})
#: Request keys under which ids nest (a task's action, a suspend's actions, a heartbeat's tasks).
NESTED_KEYS = frozenset({"action", "actions", "tasks"})
SEARCHES = frozenset({"schedule.search", "promise.search", "task.search"})
#: The template placeholder whose expansion is the schedule's (already namespaced) id.
ID_PLACEHOLDER = "{{.id}}"
#: What a namespaced campaign cannot see, for the coverage report.
BLIND_SPOTS = ("with no reset, a search with no tags filter (every search asks for the run's tag), "
               "a tick's firing order between runs' objects, and every config but the server's own "
               "(SR-03's drawn retry timeouts)")


class ScheduleNamespace:
    """Namespacing (duespec.targets.namespaced) for the schedules system."""

    blind_spots = BLIND_SPOTS
    out_of_reach = {tag: ("a target that is not reset runs every run with its own config, so no run takes "
                          "the retry timeout it draws (--reset none)")
                    for tag in ("SR-03.default_retry_timeout", "SR-03.retry_timeout_one")}

    def request(self, op: str, args: Json, token: str) -> Json:
        if not isinstance(args, dict):
            return args
        sent = _ids(args, token)
        if op == "schedule.create" and _names(sent.get("promiseId")) and not sent["promiseId"].startswith(ID_PLACEHOLDER):
            sent["promiseId"] = token + sent["promiseId"]
        if op in SEARCHES:
            if _names(sent.get("cursor")):
                sent["cursor"] = token + sent["cursor"]
            if op != "task.search" and ("tags" not in sent or isinstance(sent["tags"], dict)):
                sent["tags"] = {**(sent.get("tags") or {}), RUN_TAG: token}
            return sent
        return with_required_tags(op, sent, {RUN_TAG: token})

    def response(self, op: str, response: dict[str, Json], token: str) -> dict[str, Json]:
        if op == "tick" and isinstance(response.get("fired"), list):
            response = {**response, "fired": [entry for entry in response["fired"]
                                              if not isinstance(entry, dict) or _ours(entry.get("id"), token)]}
        return _without_run_tag(strip_token(response, token))

    def instant(self, now: Json) -> bool:
        return type(now) is int and 0 <= now <= MAX_TIME

    def undo(self, op: str, args: Json, response: dict[str, Json]) -> list[tuple[str, Json]]:
        calls: list[tuple[str, Json]] = []
        if op == "schedule.create" and isinstance(response.get("schedule"), dict):
            calls.append(("schedule.delete", {"id": response["schedule"].get("id")}))
        for promise in _promises(response):
            if promise.get("state") == "pending":
                calls.append(("promise.settle", {"id": promise.get("id"), "state": "rejected_canceled",
                                                 "value": PARAMS[0]}))
        return calls


def _names(value: Json) -> bool:
    return isinstance(value, str) and value != ""


def _ours(value: Json, token: str) -> bool:
    return isinstance(value, str) and value.startswith(token)


def _ids(args: dict[str, Json], token: str) -> dict[str, Json]:
    sent = dict(args)
    for key, value in args.items():
        if key in ID_KEYS and _names(value):
            sent[key] = token + value
        elif key in NESTED_KEYS:
            if isinstance(value, dict):
                sent[key] = _ids(value, token)
            elif isinstance(value, list):
                sent[key] = [_ids(item, token) if isinstance(item, dict) else item for item in value]
    return sent


def _without_run_tag(value: Json) -> Json:
    if isinstance(value, dict):
        return {key: _without_run_tag(item) for key, item in value.items() if key != RUN_TAG}
    if isinstance(value, list):
        return [_without_run_tag(item) for item in value]
    return value


def _promises(value: Json) -> list[dict[str, Json]]:
    """Every promise record in an answer (a task's action nests one)."""
    found: list[dict[str, Json]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "promise" and isinstance(item, dict):
                found.append(item)
            elif isinstance(item, (dict, list)):
                found += _promises(item)
    elif isinstance(value, list):
        for item in value:
            found += _promises(item)
    return found


NAMESPACE = ScheduleNamespace()
