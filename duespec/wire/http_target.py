"""`--target http://HOST:PORT`: a schedules server reached over Resonate's HTTP protocol.

Each operations.md step becomes one envelope with `now` pinned in the head; `tick` is
`debug.tick`, the single timeouts are duespec's debug kinds, `reset` is `debug.reset` with
the config as data, `observe` is `debug.snap` and `messages` (what workers were sent) is
`debug.messages`. The server must answer debug.snap with
the docs/operations.md state (duespec serve does). The last exchange is kept as text so a
divergence report can show the request and response bodies of the failing step.
"""

from __future__ import annotations

import http.client
import itertools
import json
from urllib.parse import urlsplit

from duespec.limits import MAX_LINE_BYTES
from duespec.targets.interface import Json, TargetError, TargetTooSlow
from duespec.targets.deadline import deadline
from duespec.wire.envelope import (
    PROTOCOL_VERSION, ProtocolViolation, check_envelope, op_envelope, op_response,
)

#: Longest body shown in a divergence report.
SHOWN_BODY = 2000


class HttpTarget:
    def __init__(self, url: str, timeout: float) -> None:
        parts = urlsplit(url)
        self.url, self.timeout = url, timeout
        self.connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80,
                                                     timeout=timeout)
        self.corr_ids = itertools.count(1)
        #: The request and response bodies of the last step, for divergence reports.
        self.last_exchange: str | None = None

    def reset(self, config: dict[str, Json]) -> None:
        status, data, _ = self._call("debug.reset", dict(config))
        if status != 200:
            raise TargetError(f"{self.url} refused debug.reset {json.dumps(config)}: {status} {data}",
                              not_offered=status in (400, 404, 501))

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        corr_id = f"duespec-{next(self.corr_ids)}"
        request = op_envelope(op, args, now, corr_id)
        http_status, answer, exchange = self._post(request)
        self.last_exchange = exchange
        try:
            status, data = check_envelope(answer, request["kind"], corr_id, http_status)
            return op_response(op, status, data)
        except ProtocolViolation as error:
            raise TargetError(f"{self.url} broke the protocol on {op}: {error}\n{exchange}") from None

    def observe(self) -> dict[str, Json]:
        status, data, exchange = self._call("debug.snap", {})
        if status != 200 or not isinstance(data, dict):
            raise TargetError(f"{self.url} answered debug.snap with {status}\n{exchange}",
                              not_offered=status in (400, 404, 501))
        return data

    def messages(self) -> list[Json]:
        """The Target hook: the messages the server sent since the last call, by
        `debug.messages` (docs/wire.md); a server without it (400, 404, 501) does not
        offer the hook, which the judge then leaves alone."""
        status, data, exchange = self._call("debug.messages", {})
        if status != 200:
            raise TargetError(f"{self.url} answered debug.messages with {status}\n{exchange}",
                              not_offered=status in (400, 404, 501))
        sent = data.get("messages") if isinstance(data, dict) else None
        if not isinstance(sent, list):
            raise TargetError(f"{self.url} answered debug.messages without a list of messages\n{exchange}")
        return sent

    def close(self) -> None:
        self.connection.close()

    def _call(self, kind: str, data: dict[str, Json]) -> tuple[int, Json, str]:
        corr_id = f"duespec-{next(self.corr_ids)}"
        request = {"kind": kind, "head": {"corrId": corr_id, "version": PROTOCOL_VERSION}, "data": data}
        http_status, answer, exchange = self._post(request)
        try:
            status, data = check_envelope(answer, kind, corr_id, http_status)
        except ProtocolViolation as error:
            raise TargetError(f"{self.url} broke the protocol on {kind}: {error}\n{exchange}") from None
        return status, data, exchange

    def _post(self, request: dict[str, Json]) -> tuple[int, Json, str]:
        """One exchange, whole within --timeout: the socket's own timeout bounds each read,
        so a server dripping a byte a second would otherwise never be overdue."""
        try:
            with deadline(self.timeout, f"{self.url} answering {request.get('kind')}"):
                return self._exchange(json.dumps(request))
        except TargetError:
            self.connection.close()  # mid-response: the connection is out of step
            raise

    def _exchange(self, body: str) -> tuple[int, Json, str]:
        for attempt in (1, 2):  # a kept-alive connection the server closed is reopened once
            try:
                self.connection.request("POST", "/", body=body.encode(),
                                        headers={"Content-Type": "application/json"})
                response = self.connection.getresponse()
                text = _read_body(response, self.url).decode("utf-8", errors="replace")
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
                self.connection.close()
                if attempt == 2:
                    raise TargetError(f"{self.url} dropped the connection: {error}") from None
            except TimeoutError:  # the socket's own timeout, the same bound as the deadline's
                self.connection.close()
                raise TargetTooSlow(f"{self.url} did not answer within {self.timeout:g}s (--timeout)",
                                    seconds=self.timeout) from None
            except (OSError, http.client.HTTPException) as error:
                self.connection.close()
                raise TargetError(f"cannot reach {self.url}: {type(error).__name__}: {error}") from None
        exchange = (f"HTTP exchange: POST {self.url}/\n  request:  {_cut(body)}\n"
                    f"  response: {response.status} {_cut(text)}")
        try:
            answer = json.loads(text)
        except ValueError:
            raise TargetError(f"{self.url} answered with a body that is not JSON\n{exchange}") from None
        return response.status, answer, exchange


def _read_body(response: http.client.HTTPResponse, url: str) -> bytes:
    """The body, refused once it passes MAX_LINE_BYTES: an endless chunked body would
    otherwise fill memory before any deadline."""
    parts, size = [], 0
    while chunk := response.read(1 << 16):  # read, not read1: it ends the response at its length
        size += len(chunk)
        if size > MAX_LINE_BYTES:
            raise TargetError(f"{url} sent a response body over {MAX_LINE_BYTES:,} bytes, the limit "
                              f"on a trace line (README, Limits)")
        parts.append(chunk)
    return b"".join(parts)


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_BODY else text[:SHOWN_BODY] + f"... ({len(text)} chars)"


class HttpTargetFactory:
    """Fresh HttpTargets for one server; `name` is what reports print."""

    def __init__(self, url: str, timeout: float) -> None:
        self.url, self.timeout, self.name = url.rstrip("/"), timeout, url

    def __call__(self) -> HttpTarget:
        return HttpTarget(self.url, self.timeout)


def check_url(url: str) -> str | None:
    """Why `url` cannot name an HTTP target, or None if it can."""
    try:
        parts = urlsplit(url)
    except ValueError as error:  # "Invalid IPv6 URL", say
        return f"{url[:200]!r}: {error}"
    if parts.scheme != "http":
        return f"{url!r}: only http:// is spoken (run TLS in front of duespec, not inside it)"
    if not parts.hostname:
        return f"{url!r} names no host; e.g. http://127.0.0.1:8001"
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):  # urlsplit drops tabs
        return f"{url[:200]!r}: the URL holds a space or control character"
    try:
        parts.port
    except ValueError as error:
        return f"{url!r}: {error}"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return f"{url!r}: the protocol has one endpoint, POST /; give the server's root"
    return None
