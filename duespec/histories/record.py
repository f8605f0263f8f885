"""`duespec record`: a recording HTTP proxy in front of a Resonate server.

A production server cannot be reset or inspected, but its traffic can be watched. This
proxy forwards every request to the upstream byte for byte (method, path, headers, body)
and every answer back the same way, and records each call as one history event: the
client connection, the instants the call reached the proxy and its answer came back, the
request and response envelopes (`wire`), and the op, args and response in the system's
terms (duespec.wire.envelope's mapping). `duespec linearize` then checks the file.

What makes the file sound to check:
- the interval [call, return] is taken around the upstream exchange, so the server's
  handling of the call lies inside it;
- a line is written (and flushed) before the answer goes back to the client, so a
  client's next call never precedes its previous line, and a killed proxy leaves every
  answered call up to its last complete line;
- a call the proxy could not see answered (the upstream broke the connection, timed out,
  answered past the size limit, or the proxy was stopped while it was in flight) is
  written with outcome `unknown`: it may or may not have taken effect;
- what a history cannot express stops the recording (exit 2) instead of being left out:
  a `debug.reset` after the first call, a pinned call in a real-clock recording or an
  unpinned one in a pinned recording, an answer past the limit.

The proxy listens on loopback only: it has no authentication and keeps everything it is
sent. The user's guide is docs/field.md.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import itertools
import signal
import socket
import sys
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import aiohttp
from aiohttp import web
from yarl import URL

from duespec.histories.format import Event, HistoryHeader, HistoryWriter
from duespec.histories.resonate_valid import FORMAT as RESONATE_VALID, ResonateValidWriter
from duespec.limits import MAX_LINE_BYTES, InputError, parse_json
from duespec.wire.envelope import (
    OP_OF_KIND, ProtocolViolation, WireError, check_envelope, op_response, parse_request, request_to_op,
)

Json = Any

#: Largest request or response body recorded: a history line holds both, and a line is
#: at most MAX_LINE_BYTES (docs/histories.md), so a quarter each leaves room for the rest.
MAX_BODY = MAX_LINE_BYTES // 4
#: Seconds an upstream exchange may take before the call is given up on (outcome unknown).
DEFAULT_TIMEOUT = 30.0
#: Headers that belong to one hop, not to the request (RFC 9110, 7.6.1), and the ones
#: aiohttp sets itself from the body it sends; every other header is forwarded as it came.
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                         "trailer", "transfer-encoding", "upgrade", "host", "content-length"})
EXIT_HOLDS = 0
#: Seconds a stopping proxy waits for the calls in flight to be answered.
DRAIN_SECONDS = 2.0


class RecordError(Exception):
    """What stops a recording: one paragraph for the user, exit 2."""


@dataclass(eq=False)
class InFlight:
    """A call sent upstream and not yet written: written `unknown` if the proxy stops first."""

    client: str
    op: str
    args: dict[str, Json]
    now: int | None
    call_ns: int
    call_ms: int
    request: dict[str, Json]
    #: The aiohttp request it came in, to find it again after an unexpected error.
    request_id: int = 0
    written: bool = False


@dataclass
class Stats:
    recorded: int = 0
    unknown: int = 0
    not_recorded: dict[str, int] = field(default_factory=dict)

    def skip(self, why: str) -> None:
        self.not_recorded[why] = self.not_recorded.get(why, 0) + 1


class Recorder:
    """The proxy's state: the upstream session, the writer, the calls in flight.

    Everything runs on one event loop, so the in-flight set and the writer need no lock
    beyond the writer's own."""

    def __init__(self, upstream: URL, writer: HistoryWriter | ResonateValidWriter, clock: str,
                 timeout: float, stop: asyncio.Event, log: Callable[[str], None]) -> None:
        self.upstream, self.writer, self.clock, self.timeout = upstream, writer, clock, timeout
        self.stop, self.log = stop, log
        self.stats = Stats()
        self.fatal: str | None = None
        self.closed = False
        #: Requests being handled: on the way out, the proxy lets them finish (a short grace).
        self.active = 0
        self._numbers = itertools.count(1)
        self.in_flight: set[InFlight] = set()
        self._clients: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        # One upstream connection per call at most in flight: a pool without a cap, so the
        # proxy never queues a client's call behind another's (that would widen intervals).
        connector = aiohttp.TCPConnector(limit=0, force_close=False)
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False,
                                              timeout=aiohttp.ClientTimeout(total=self.timeout))

    async def close(self) -> None:
        """Write every call still in flight as `unknown`, then close the writer and session."""
        self.closed = True
        for call in list(self.in_flight):
            self._write_unknown(call, time.monotonic_ns(), time.time_ns() // 1_000_000)
        self.writer.close()
        if self._session is not None:
            await self._session.close()

    def client_of(self, request: web.Request) -> str:
        """One client per connection: HTTP/1.1 answers a connection's requests in order, so
        one connection's calls never overlap."""
        transport = request.transport
        if transport is None:
            return "c?"
        client = self._clients.get(transport)
        if client is None:
            client = self._clients[transport] = f"c{next(self._numbers)}"
        return client

    def halt(self, problem: str) -> None:
        if self.fatal is None:
            self.fatal = problem
        self.stop.set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.active += 1
        try:
            return await self._handle(request)
        except Exception as error:  # a bug in the proxy costs one call (recorded unknown), never the proxy
            self.log(f"duespec record: internal error on {request.method} {request.path}: "
                     f"{type(error).__name__}: {str(error)[:300]} (a bug in duespec; the call, if any, is "
                     f"recorded as unknown)")
            for call in [c for c in self.in_flight if c.request_id == id(request)]:
                self._give_up(call, "internal error")
            return web.Response(status=502, text="duespec record: internal error\n")
        finally:
            self.active -= 1

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if self.fatal is not None or self.closed:
            why = self.fatal or "stopping"
            return web.Response(status=503, text=f"duespec record stopped: {why}\n")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            self.stats.skip(f"request bodies over {MAX_BODY:,} bytes (answered 413, not forwarded)")
            return web.Response(status=413, text=f"duespec record: request body over {MAX_BODY:,} bytes\n")
        except (ConnectionError, aiohttp.ClientPayloadError) as error:
            # The client hung up before its whole body came: nothing went upstream, so there
            # is no call to record (the client is gone; the answer reaches no one).
            self.stats.skip("requests whose client disconnected before sending its whole body (not forwarded)")
            self.log(f"duespec record: {request.method} {request.path}: client disconnected mid-body "
                     f"({type(error).__name__}); nothing forwarded or recorded")
            return web.Response(status=400, text="duespec record: the request body was cut short\n")
        client = self.client_of(request)
        call = self._classify(request, body, client)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        # rel_url: the path and query of an origin-form request line (`POST / HTTP/1.1`) and of
        # an absolute-form one (`POST http://host:port/`, what a client behind a proxy sends) alike
        target = URL(str(self.upstream.origin()) + request.rel_url.raw_path_qs, encoded=True)
        call_ns, call_ms = time.monotonic_ns(), time.time_ns() // 1_000_000
        if call is not None:
            call.call_ns, call.call_ms, call.request_id = call_ns, call_ms, id(request)
            self.in_flight.add(call)
        try:
            assert self._session is not None
            async with self._session.request(request.method, target, headers=headers, data=body,
                                             allow_redirects=False) as answer:
                data = await _read_limited(answer.content, MAX_BODY)
                status, answer_headers = answer.status, answer.headers
        except _TooLarge:
            self._give_up(call, "upstream answered past the size limit")
            self.halt(f"the upstream answered {request.method} {request.path} with a body over {MAX_BODY:,} "
                      f"bytes, more than one history line can record (docs/histories.md, Limits); the call "
                      f"is recorded as unknown and the recording stops here")
            return web.Response(status=502, text=f"duespec record: upstream answer over {MAX_BODY:,} bytes\n")
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            reason = _why(error, self.timeout)
            self._give_up(call, reason)
            self.log(f"duespec record: {request.method} {request.path} from {client}: {reason}; the call is "
                     f"recorded as unknown and the client answered 502")
            return web.Response(status=502, text=f"duespec record: upstream failed: {reason}\n")
        return_ns, return_ms = time.monotonic_ns(), time.time_ns() // 1_000_000
        if call is not None and not call.written:
            self._write_answered(call, status, data, return_ns, return_ms)
        out = web.Response(status=status, body=data)
        for key, value in answer_headers.items():
            if key.lower() not in _HOP_BY_HOP:
                out.headers.add(key, value)
        return out

    def _classify(self, request: web.Request, body: bytes, client: str) -> InFlight | None:
        """The call to record for this request, or None (not an operation), or a halt."""
        if request.method != "POST" or request.path != "/":
            self.stats.skip(f"{request.method} {request.path} (not the protocol's POST /)")
            return None
        try:
            parsed = parse_request(body)
        except WireError:
            self.stats.skip("bodies that are not a valid envelope (the server refuses them)")
            return None
        if parsed.kind not in OP_OF_KIND:
            if parsed.kind == "debug.reset" and (self.stats.recorded or self.in_flight):
                self.halt("a debug.reset came after the first recorded call: one history cannot span a "
                          "reset (its calls would be checked as one run); the recording stops here")
            else:
                self.stats.skip(f"{parsed.kind} (not an operation)")
            return None
        pinned = parsed.debug_time is not None or parsed.kind == "debug.tick"
        if pinned != (self.clock == "pinned"):
            self.halt(f"a {parsed.kind} call from {client} " + (
                "pins the time (resonate:debug_time or debug.tick) in a --clock real recording: the server "
                "did not use its own clock for it; record with --clock pinned" if pinned else
                "carries no resonate:debug_time in a --clock pinned recording: the server used its own "
                "clock; record with --clock real") + "; the recording stops here")
            return None
        try:
            op, args, now = request_to_op(parsed, 0)
        except WireError:
            self.stats.skip("requests the protocol refuses (bad task actions, a tick without a time)")
            return None
        if self.clock == "real":
            now = None
        elif type(now) is not int:
            self.stats.skip("calls pinned to a time that is not an integer (the server refuses them)")
            return None
        return InFlight(client, op, args, now, 0, 0, _request_json(body))

    def _write_answered(self, call: InFlight, status: int, data: bytes, return_ns: int, return_ms: int) -> None:
        try:
            answer = parse_json(data)
            kind = call.request.get("kind", "")
            corr = call.request.get("head", {}).get("corrId", "")
            wire_status, wire_data = check_envelope(answer, kind, corr, status)
            response = op_response(call.op, wire_status, wire_data)
        except (InputError, ProtocolViolation, AttributeError) as error:
            problem = getattr(error, "problem", None) or str(error)
            self._give_up(call, f"the answer is not a protocol envelope ({problem[:200]})", return_ns, return_ms)
            return
        self._write(call, Event(call.client, call.op, call.args, call.call_ns, return_ns, call.call_ms,
                                return_ms, "ok", response, call.now,
                                {"request": call.request, "response": answer}))
        self.stats.recorded += 1

    def _give_up(self, call: InFlight | None, reason: str, return_ns: int | None = None,
                 return_ms: int | None = None) -> None:
        if call is None or call.written:
            return
        self._write_unknown(call, return_ns or time.monotonic_ns(), return_ms or time.time_ns() // 1_000_000, reason)

    def _write_unknown(self, call: InFlight, return_ns: int, return_ms: int,
                       reason: str = "the proxy stopped with the call in flight") -> None:
        if call.written:
            return
        self._write(call, Event(call.client, call.op, call.args, call.call_ns, return_ns, call.call_ms,
                                return_ms, "unknown", None, call.now, {"request": call.request, "unknown": reason}))
        self.stats.unknown += 1

    def _write(self, call: InFlight, event: Event) -> None:
        call.written = True
        self.in_flight.discard(call)
        self.writer.write(event)


class _TooLarge(Exception):
    pass


async def _read_limited(stream: aiohttp.StreamReader, limit: int) -> bytes:
    """The whole body, or _TooLarge as soon as it passes `limit` (never held past it)."""
    chunks, size = [], 0
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise _TooLarge()
        chunks.append(chunk)


def _request_json(body: bytes) -> dict[str, Json]:
    value = parse_json(body)  # parse_request accepted it, so it parses
    return value if isinstance(value, dict) else {}


def _why(error: BaseException, timeout: float) -> str:
    if isinstance(error, asyncio.TimeoutError):
        return f"no answer within --timeout {timeout:g} s"
    if isinstance(error, aiohttp.ClientConnectorError):
        return f"cannot connect to the upstream ({error.os_error.strerror or error.os_error})"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the upstream closed the connection without answering"
    if isinstance(error, aiohttp.ClientResponseError):
        return f"the upstream's answer is not HTTP ({error.message})"
    return f"{type(error).__name__}: {error}"


# ---- starting -------------------------------------------------------------------------------

def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT on a loopback address ([::1]:PORT for IPv6), else RecordError."""
    host, sep, port_text = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not (port_text.isascii() and port_text.isdigit()) or not 0 <= int(port_text) <= 65535:
        raise RecordError(f"--listen {text[:100]!r} is not HOST:PORT with a port in [0, 65535] "
                          f"(for example 127.0.0.1:8002)")
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise RecordError(f"--listen {text[:100]!r}: duespec record listens on loopback only (127.0.0.1, "
                              f"::1, localhost): it has no authentication and keeps every request it is sent")
    return ("127.0.0.1" if host == "localhost" else host), int(port_text)


def parse_upstream(text: str) -> URL:
    try:
        url = URL(text)
    except (ValueError, TypeError):
        url = None
    if url is None or url.scheme != "http" or not url.host:
        raise RecordError(f"--upstream {text[:100]!r} is not an http:// URL with a host (for example "
                          f"http://127.0.0.1:8001); duespec record forwards plain HTTP only")
    if url.port is None:
        raise RecordError(f"--upstream {text[:100]!r} has no port")
    return url


async def probe(url: URL, timeout: float) -> None:
    """Refuse an upstream that does not answer HTTP, before any client is let in: a GET of
    its root must come back as an HTTP status line (any status)."""
    where = f"{url.host}:{url.port}"
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(url.host, url.port), timeout)
    except (OSError, asyncio.TimeoutError) as error:
        reason = getattr(error, "strerror", None) or "no connection within the timeout"
        raise RecordError(f"the upstream {where} refuses connections ({reason}); start the server first, "
                          f"or check --upstream") from None
    try:
        writer.write(f"GET / HTTP/1.1\r\nHost: {where}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        first = await asyncio.wait_for(reader.readline(), timeout)
    except (OSError, asyncio.TimeoutError, ValueError):
        first = b""
    finally:
        writer.close()
    if not first.startswith(b"HTTP/1."):
        shown = first[:60].decode("utf-8", "replace") if first else "nothing"
        raise RecordError(f"the upstream {where} does not speak HTTP: to a GET / it answered {shown!r}; "
                          f"--upstream must be a Resonate server's HTTP address")


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    # A port left in TIME_WAIT by a previous run is free to take; a live listener still refuses.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise RecordError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.listen(512)
    sock.setblocking(False)
    return sock


def open_writer(path: str, header: HistoryHeader, fmt: str) -> HistoryWriter | ResonateValidWriter:
    from duespec.outputs import OutputError, check_output

    try:
        check_output(path, what="-o")
    except OutputError as error:
        raise RecordError(str(error)) from None
    try:
        if fmt == RESONATE_VALID:
            return ResonateValidWriter(path, header)
        return HistoryWriter(path, header)
    except FileExistsError:
        raise RecordError(f"-o {path[:200]!r} exists; duespec record writes a new file and never over a "
                          f"history (choose another name)") from None
    except ValueError as error:
        raise RecordError(str(error)) from None


async def run(args: argparse.Namespace, ready: Callable[[str], None]) -> int:
    upstream = parse_upstream(args.upstream)
    host, port = parse_listen(args.listen)
    await probe(upstream, min(args.timeout, 10.0))
    sock = bind(host, port)
    config = {key: value for key, value in (("profile", args.profile), ("retry_timeout", args.retry_timeout))
              if value is not None}
    header = HistoryHeader("schedules", args.clock, config, producer="duespec record",
                           meta={"upstream": str(upstream)})
    try:
        writer = open_writer(args.output, header, args.format)
    except BaseException:
        sock.close()
        raise
    stop = asyncio.Event()
    recorder = Recorder(upstream, writer, args.clock, args.timeout, stop,
                        lambda line: print(line, file=sys.stderr, flush=True))
    await recorder.start()
    app = web.Application(client_max_size=MAX_BODY)
    app.router.add_route("*", "/{tail:.*}", recorder.handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.SockSite(runner, sock, shutdown_timeout=2.0)
    await site.start()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]:{bound[1]}" if ":" in bound[0] else f"{bound[0]}:{bound[1]}"
    ready(f"duespec record: listening on http://{shown}, forwarding to {upstream}, recording to "
          f"{args.output} ({args.format}, clock {args.clock}); Ctrl-C stops")
    try:
        await stop.wait()
    finally:
        await site.stop()  # no new connections
        grace = time.monotonic() + DRAIN_SECONDS
        while recorder.active and time.monotonic() < grace:
            await asyncio.sleep(0.01)  # let the calls in flight be answered and written
        # what is still in flight is written unknown by close()
        await recorder.close()
        await runner.cleanup()
    stats = recorder.stats
    skipped = "; ".join(f"{count} {why}" for why, count in sorted(stats.not_recorded.items()))
    print(f"duespec record: {stats.recorded} calls recorded, {stats.unknown} with outcome unknown"
          + (f"; not recorded: {skipped}" if skipped else ""), file=sys.stderr, flush=True)
    if recorder.fatal is not None:
        raise RecordError(recorder.fatal)
    return EXIT_HOLDS


def main(args: argparse.Namespace) -> int:
    from duespec.exits import UsageError

    try:
        return asyncio.run(run(args, lambda line: print(line, flush=True)))
    except RecordError as error:
        raise UsageError(str(error)) from None


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from duespec.exits import seconds

    parser = subparsers.add_parser(
        "record", help="a recording HTTP proxy: live traffic to a Resonate server as a history",
        description="Forward every request to --upstream byte for byte and record each call (client "
                    "connection, call and return instants, request and response) as a history that "
                    "`duespec linearize` checks. Listens on loopback only. See docs/field.md.",
        epilog="example: duespec record --listen 127.0.0.1:8002 --upstream http://127.0.0.1:8001 "
               "-o traffic.ndjson")
    parser.add_argument("--listen", required=True, metavar="HOST:PORT",
                        help="loopback address to listen on (port 0 picks a free one)")
    parser.add_argument("--upstream", required=True, metavar="URL", help="the server, http://HOST:PORT")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the history to write (a new file)")
    parser.add_argument("--format", choices=("duespec", RESONATE_VALID), default="duespec",
                        help="duespec's history format (docs/histories.md, default) or the Resonate "
                             "specification's valid/ .history lines (needs --clock pinned)")
    parser.add_argument("--clock", choices=("real", "pinned"), default="real",
                        help="real (default): the server reads its own clock, as SDK traffic; pinned: "
                             "every call carries resonate:debug_time")
    parser.add_argument("--profile", default=None, help="the server's spec reading, noted in the header")
    parser.add_argument("--retry-timeout", type=int, default=None, metavar="MS",
                        help="the server's task retry timeout, noted in the header")
    parser.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"give up on an upstream call after this long (outcome unknown; default "
                             f"{DEFAULT_TIMEOUT:g})")
    parser.set_defaults(run=main)
