"""expand (spec/schedules.md X-02): the promise id of one occurrence of a schedule.

Replaces `{{.id}}` then `{{.timestamp}}` (decimal epoch ms), as the deployed server does.
The template must contain `{{.timestamp}}` and placeholders cannot overlap, so after the id
is filled in at least one `{{.timestamp}}` is left: one schedule's occurrences get distinct
ids (the injectivity argument is in spec/schedules.md)."""

from __future__ import annotations

from duespec.coverage import reached

ID_PLACEHOLDER = "{{.id}}"
TIMESTAMP_PLACEHOLDER = "{{.timestamp}}"


def expand(template: str, id: str, timestamp: int) -> str:
    reached("X-02.expanded")
    return template.replace(ID_PLACEHOLDER, id).replace(TIMESTAMP_PLACEHOLDER, str(timestamp))
