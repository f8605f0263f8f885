"""`duespec serve schedules`: the production implementation behind Resonate's HTTP protocol.

aiohttp parses HTTP (the SDK's own HTTP library, so one well-kept dependency serves both
sides); everything after the body bytes is `WireServer.answer`, a plain function. Each
request runs whole under one lock on one SQLite store, so concurrent clients see one
handler (one transaction) at a time and a request the protocol rejects reaches no handler.

Two clocks. `--clock pinned` (the default): the server never fires timeouts on its own;
time moves only when a client says so (`resonate:debug_time`, `debug.tick`), which is
what a replaying checker needs. `--clock real`: the server reads its own wall clock for
every call and fires due timeouts from a background loop every `--tick-ms`, as a deployed
server does; pins and debug.tick are then refused (400), since they would mean a second
clock. What such a server does is checked from outside, by `duespec stress` and
`duespec linearize` (docs/linearize.md).

`--unsafe-drop-acquire-lock` (hidden, for tests of those checkers) makes task.acquire
racy: it reads the task under the lock, lets the lock go for a moment, and then writes
its acquisition from what it read, so two concurrent acquires of one task version can
both succeed. It exists so that a test can show the checkers catch a real race.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sqlite3
import sys
import threading
import time
from typing import Callable

from aiohttp import web

from duespec.impl.schedules import (
    CATCH_UP_POLICIES, DEFAULT_RETRY_TIMEOUT, PROFILES, CatchUpTooLong, ScheduleServer, check_config,
)
from duespec.impl.schedules_sql import StoreError
from duespec.wire.envelope import (
    CONTROL_KINDS, OP_OF_KIND, Json, Request, WireError, envelope, parse_request, request_to_op,
    response_envelope,
)

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8001
#: Largest request body read (the deployed server's framework caps bodies at 2 MB too).
DEFAULT_MAX_BODY = 1024 * 1024
MEMORY = ":memory:"


class WallClock:
    """Epoch milliseconds that never go backwards, as the deployed server's clock."""

    def __init__(self) -> None:
        self.last = 0

    def __call__(self) -> int:
        self.last = max(self.last, time.time_ns() // 1_000_000)
        return self.last


#: The server's clocks (module docstring); the default tick period of the real one.
CLOCKS = ("pinned", "real")
DEFAULT_TICK_MS = 100
#: How long the racy acquire (--unsafe-drop-acquire-lock) holds off between read and write:
#: wide enough that two acquires of one version overlap on a loaded machine too, now that
#: stress spreads its calls over every op (at 2 ms a seed could go without a race).
UNSAFE_GAP_SECONDS = 0.02


class WireServer:
    """One ScheduleServer and the protocol around it, without HTTP (tests call `answer`)."""

    def __init__(self, db: str = MEMORY, *, profile: str | None = None, retry_timeout: int | None = None,
                 catch_up: str | None = None, server_class: type[ScheduleServer] = ScheduleServer,
                 clock: Callable[[], int] | None = None, clock_mode: str = "pinned",
                 tick_ms: int | None = None, unsafe_drop_acquire_lock: bool = False) -> None:
        if clock_mode not in CLOCKS:
            raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, got {clock_mode!r}")
        self.db, self.server_class = db, server_class
        self.clock = clock or WallClock()
        self.clock_mode = clock_mode
        #: Under the real clock, the background loop's period (ms); None: no loop.
        self.tick_ms = (tick_ms or DEFAULT_TICK_MS) if clock_mode == "real" else None
        self.unsafe_drop_acquire_lock = unsafe_drop_acquire_lock
        self.lock = threading.Lock()
        self.server = server_class(db, profile=profile, retry_timeout=retry_timeout, catch_up=catch_up)
        if clock_mode == "pinned":  # a checker's server: it keeps what workers were sent for debug.messages
            self.server.log_messages()
        self.tick_errors = 0

    def close(self) -> None:
        with self.lock:
            self.server.close()

    def answer(self, body: bytes) -> tuple[int, dict[str, Json]]:
        """(HTTP status, envelope) for one request body; never raises."""
        try:
            request = parse_request(body)
        except WireError as error:
            return error.status, envelope(error.kind, error.corr_id, error.status, error.message)
        try:
            if self.clock_mode == "real" and (request.debug_time is not None or request.kind == "debug.tick"):
                raise WireError(400, "this server reads its own clock (duespec serve --clock real): "
                                     "resonate:debug_time and debug.tick are refused")
            if self.unsafe_drop_acquire_lock and request.kind == "task.acquire":
                answer = self._racy_acquire(request)
            else:
                with self.lock:
                    answer = self._dispatch(request)
        except WireError as error:
            answer = envelope(request.kind, request.corr_id, error.status, error.message)
        except CatchUpTooLong as error:  # the request's time is the problem: the client's to fix
            answer = envelope(request.kind, request.corr_id, 422,
                              f"resonate:debug_time / data.time: {error}")
        except Exception as error:  # a bug must cost one 500, never the server
            answer = envelope(request.kind, request.corr_id, 500,
                              f"Internal error: {type(error).__name__}: {error}")
        return answer["head"]["status"], answer

    def tick(self) -> dict[str, Json]:
        """The background loop's step (--clock real): fire what is due at the server's now."""
        with self.lock:
            return self.server.handle("tick", {}, self.clock())

    def _racy_acquire(self, request: Request) -> dict[str, Json]:
        """task.acquire with the lock let go between its read and its write (the bug
        --unsafe-drop-acquire-lock plants): the write trusts what was read."""
        from duespec.impl.schedules_records import InvalidRequest, check_time, parse_task_acquire

        with self.lock:
            op, args, now = request_to_op(request, self.clock())
            try:
                check_time(now, "now")
                req = parse_task_acquire(args)
            except (InvalidRequest, TypeError, ValueError):
                return self._dispatch(request)  # a bad request: answered as always
            server = self.server
            with server.store.transaction():
                held = server._held(req.id, req.version, "pending", now)
            if isinstance(held, int):
                return response_envelope(request.kind, request.corr_id, op, {"status": held})
        time.sleep(UNSAFE_GAP_SECONDS)  # another acquire of the same version may read it pending now
        with self.lock:
            task, promise = held
            with server.store.transaction():
                task = server._acquire(task, req.pid, req.ttl, now)
            return response_envelope(request.kind, request.corr_id, op,
                                     {"status": 200, "task": task.record(), "promise": promise.record()})

    def _dispatch(self, request: Request) -> dict[str, Json]:
        kind, corr_id = request.kind, request.corr_id
        if kind in OP_OF_KIND:
            op, args, now = request_to_op(request, self.clock())
            return response_envelope(kind, corr_id, op, self.server.handle(op, args, now))
        if kind == "debug.reset":
            self._reset(request.data)
            return envelope(kind, corr_id, 200, {})
        if kind == "debug.snap":
            return envelope(kind, corr_id, 200, self.server.observe())
        if kind == "debug.messages":
            if self.clock_mode != "pinned":
                raise WireError(400, "debug.messages needs a pinned clock: a server firing on its own "
                                     "keeps no log of what it sent (duespec serve --clock real)")
            return envelope(kind, corr_id, 200, {"messages": self.server.sent_messages()})
        if kind in CONTROL_KINDS:  # debug.start / debug.stop: always in debug mode here
            return envelope(kind, corr_id, 200, {})
        raise WireError(400, f"Unknown operation: {kind}")

    def _reset(self, config: dict[str, Json]) -> None:
        """debug.reset: an empty store; `data` may name a new profile, retry_timeout and catch_up.

        The whole request is checked first, with the server's own rule for each field, and
        the store is emptied in place in one transaction, never closed: a refused reset
        changes nothing, and a file store stays owned (its lock held) throughout."""
        unknown = sorted(set(config) - {"profile", "retry_timeout", "catch_up"})
        if unknown:
            raise WireError(400, f"debug.reset takes profile, retry_timeout and catch_up, not {', '.join(unknown)}")
        profile = config.get("profile", self.server.profile)
        retry_timeout = config.get("retry_timeout", self.server.retry_timeout)
        catch_up = config.get("catch_up", self.server.catch_up)
        for key, value in (("profile", profile), ("retry_timeout", retry_timeout), ("catch_up", catch_up)):
            if key in config and value is None:
                raise WireError(400, f"debug.reset: {key} must not be null (leave it out to keep the current one)")
        try:
            check_config(profile, retry_timeout, catch_up)
        except ValueError as error:
            raise WireError(400, f"debug.reset: {error}") from None
        self.server.reset(profile, retry_timeout, catch_up)


def make_app(wire: WireServer, max_body: int = DEFAULT_MAX_BODY) -> web.Application:
    app = web.Application(client_max_size=max_body)

    async def post_root(request: web.Request) -> web.Response:
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            answer = envelope("unknown", "0", 413, f"Request body larger than {max_body} bytes")
            return web.json_response(answer, status=413)
        status, answer = await asyncio.get_running_loop().run_in_executor(None, wire.answer, body)
        return web.json_response(answer, status=status)

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app.router.add_post("/", post_root)
    app.router.add_get("/health", health)
    if wire.tick_ms:
        app.on_startup.append(lambda app: _start_ticking(app, wire))
        app.on_cleanup.append(_stop_ticking)
    return app


_TICKER = web.AppKey("ticker", asyncio.Task)


async def _start_ticking(app: web.Application, wire: WireServer) -> None:
    async def loop() -> None:
        running = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(wire.tick_ms / 1000)
            try:
                await running.run_in_executor(None, wire.tick)
            except Exception as error:  # a bug in a tick must not stop the next one
                wire.tick_errors += 1
                if wire.tick_errors == 1:
                    print(f"duespec serve: a background tick failed: {type(error).__name__}: {error}",
                          file=sys.stderr, flush=True)

    app[_TICKER] = asyncio.get_running_loop().create_task(loop())


async def _stop_ticking(app: web.Application) -> None:
    app[_TICKER].cancel()
    try:
        await app[_TICKER]
    except asyncio.CancelledError:
        pass


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def _serve(app: web.Application, sock: socket.socket, stop: asyncio.Event) -> None:
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class ServerThread:
    """`duespec serve` in a thread of this process (tests and the bench): `url`, `stop()`."""

    def __init__(self, wire: WireServer, host: str = DEFAULT_HOST, port: int = 0,
                 max_body: int = DEFAULT_MAX_BODY) -> None:
        self.wire = wire
        self.sock = bind(host, port)
        self.url = url_of(self.sock)
        self.loop = asyncio.new_event_loop()
        self.stopping = asyncio.Event()
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(started.set)
            self.loop.run_until_complete(_serve(make_app(wire, max_body), self.sock, self.stopping))

        self.thread = threading.Thread(target=run, name="duespec-serve", daemon=True)
        self.thread.start()
        started.wait()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.stopping.set)
        self.thread.join(10)
        self.loop.close()
        self.wire.close()

    def __enter__(self) -> ServerThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _OneLine(logging.Handler):
    """aiohttp logs a malformed request (after answering it 400) with its traceback; a
    server's operator gets one line naming the problem instead, the traceback only with
    --debug."""

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        text = record.getMessage() + (f": {type(error).__name__}: {error}" if error is not None else "")
        print(f"duespec serve: {' '.join(text.split())[:500]}", file=sys.stderr, flush=True)


def main(args: argparse.Namespace) -> int:
    from duespec.exits import UsageError

    if not getattr(args, "debug", False):
        for name in ("aiohttp.server", "aiohttp.web", "aiohttp.access", "asyncio"):
            logger = logging.getLogger(name)
            logger.addHandler(_OneLine())
            logger.propagate = False

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must lie in [0, 65535], got {args.port}")
    if args.tick_ms is not None and not 1 <= args.tick_ms <= 60_000:
        raise UsageError(f"--tick-ms must lie in [1, 60000], got {args.tick_ms}")
    if args.tick_ms is not None and args.clock != "real":
        raise UsageError("--tick-ms needs --clock real (a pinned server fires timeouts only when told)")
    if args.max_body < 1024:
        raise UsageError(f"--max-body must be at least 1024 bytes, got {args.max_body}")
    try:
        check_config(args.profile, None, args.catch_up)
    except ValueError as error:
        raise UsageError(f"--catch-up: {error}") from None
    try:
        wire = WireServer(args.db, profile=args.profile, retry_timeout=args.retry_timeout, catch_up=args.catch_up,
                          clock_mode=args.clock,
                          tick_ms=args.tick_ms, unsafe_drop_acquire_lock=args.unsafe_drop_acquire_lock)
    except (ValueError, OSError, sqlite3.Error, StoreError) as error:
        raise UsageError(f"cannot open the store {args.db!r}: {error}") from None
    try:
        sock = bind(args.host, args.port)
    except OSError as error:
        wire.close()
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {error.strerror or error}") from None
    clock = f"real clock, ticking every {wire.tick_ms} ms" if args.clock == "real" else "pinned clock"
    print(f"duespec serve schedules: listening on {url_of(sock)} (profile {wire.server.profile}, "
          f"catch-up {wire.server.catch_up}, "
          f"store {args.db}, {clock}"
          f"{', UNSAFE: task.acquire drops its lock' if args.unsafe_drop_acquire_lock else ''}); "
          f"POST / with Resonate envelopes, Ctrl-C stops", flush=True)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await _serve(make_app(wire, args.max_body), sock, stop)

    try:
        asyncio.run(run())
    finally:
        wire.close()
    print("duespec serve schedules: stopped", file=sys.stderr)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve", help="serve the production implementation over Resonate's HTTP protocol",
        description="Serve duespec's production implementation of Resonate schedules over the "
                    "Resonate HTTP protocol: POST / with {kind, head: {corrId, version}, data}. "
                    "Under --clock pinned (the default) time moves only when a client pins it (head "
                    "resonate:debug_time) or ticks (debug.tick); under --clock real the server reads its "
                    "own clock and fires timeouts every --tick-ms. debug.reset, debug.snap control the store; "
                    "debug.messages hands over the messages sent since it was last asked (pinned clock). "
                    "See docs/wire.md, 'Running duespec serve'.",
        epilog="example: duespec serve schedules --port 8001 --profile deployed")
    parser.add_argument("system", choices=("schedules",))
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"address to bind (default {DEFAULT_HOST}: this machine only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port (default {DEFAULT_PORT}, the Resonate server's; 0 picks a free one)")
    parser.add_argument("--db", default=MEMORY, metavar="FILE",
                        help="SQLite store file, kept across restarts (default: in memory)")
    parser.add_argument("--profile", choices=PROFILES, default=None,
                        help="spec reading (default lean; a store file keeps the one it was made with)")
    parser.add_argument("--retry-timeout", type=int, default=None, metavar="MS",
                        help=f"task retry timeout in ms (default {DEFAULT_RETRY_TIMEOUT})")
    parser.add_argument("--catch-up", choices=CATCH_UP_POLICIES, default=None, metavar="POLICY",
                        help="how a timer pass catches up missed cron occurrences: all (default, the "
                             "spec's), one-per-pass, once-skip, never (spec/schedules.md, 'Catch-up policies'; "
                             "profiles lean and server)")
    parser.add_argument("--max-body", type=int, default=DEFAULT_MAX_BODY, metavar="BYTES",
                        help=f"largest request body; larger ones get 413 (default {DEFAULT_MAX_BODY})")
    parser.add_argument("--clock", choices=CLOCKS, default="pinned",
                        help="pinned (default): time moves only when a client pins it or ticks; real: the "
                             "server reads its own clock and fires timeouts in the background")
    parser.add_argument("--tick-ms", type=int, default=None, metavar="MS",
                        help=f"with --clock real: fire due timeouts every MS ms (default {DEFAULT_TICK_MS})")
    parser.add_argument("--unsafe-drop-acquire-lock", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(run=main)
