"""S-04 schedule.search: not implemented at 83d64c3, whatever the request.

Profile `deployed` searches as the deployed server does (DEP-04): schedules whose
promiseTags include every pair of `tags`, ids after `cursor`, ordered by id, at most
`limit` (default 10, at most 1000); the answer's cursor is the last id answered when more
remain, else null."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.requests import Invalid, Json, Res, search_req
from duespec.model.schedules.state import ServerState

DEFAULT_LIMIT, MAX_LIMIT = 10, 1000


def schedule_search(state: ServerState, args: Json, now: int) -> Res:
    reached("S-04.answered")
    if state.config.profile != "deployed":
        reached("S-04.not_implemented")
        return Res(501)
    req = search_req(args)
    if req.limit is not None and not 1 <= req.limit <= MAX_LIMIT:
        raise Invalid(f"limit must lie in [1, {MAX_LIMIT}], got {req.limit}")
    limit = DEFAULT_LIMIT if req.limit is None else req.limit
    matching = [state.schedules[id] for id in sorted(state.schedules)
                if (req.cursor is None or id > req.cursor)
                and all(state.schedules[id].promise_tags.get(k) == v for k, v in (req.tags or {}).items())]
    page = matching[:limit]
    more = len(matching) > limit
    reached("DEP-04.page_with_more" if more else "DEP-04.last_page")
    return Res(200, schedules=tuple(page), cursor=page[-1].id if more else None)
