"""`duespec serve schedules`: the production implementation behind Resonate's HTTP protocol.

aiohttp parses HTTP (the SDK's own HTTP library, so one well-kept dependency serves both
sides); everything after the body bytes is `WireServer.answer`, a plain function. Each
request runs whole under one lock on one SQLite store, so concurrent clients see one
handler (one transaction) at a time and a request the protocol rejects reaches no handler.
duespec serve never fires timeouts on its own: time moves only when a client says so
(`resonate:debug_time`, `debug.tick`), which is what a checker needs.
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

from duespec.impl.schedules import DEFAULT_RETRY_TIMEOUT, PROFILES, ScheduleServer
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


class WireServer:
    """One ScheduleServer and the protocol around it, without HTTP (tests call `answer`)."""

    def __init__(self, db: str = MEMORY, *, profile: str | None = None, retry_timeout: int | None = None,
                 server_class: type[ScheduleServer] = ScheduleServer,
                 clock: Callable[[], int] | None = None) -> None:
        self.db, self.server_class = db, server_class
        self.clock = clock or WallClock()
        self.lock = threading.Lock()
        self.server = server_class(db, profile=profile, retry_timeout=retry_timeout)

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
            with self.lock:
                answer = self._dispatch(request)
        except WireError as error:
            answer = envelope(request.kind, request.corr_id, error.status, error.message)
        except Exception as error:  # a bug must cost one 500, never the server
            answer = envelope(request.kind, request.corr_id, 500,
                              f"Internal error: {type(error).__name__}: {error}")
        return answer["head"]["status"], answer

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
        if kind in CONTROL_KINDS:  # debug.start / debug.stop: always in debug mode here
            return envelope(kind, corr_id, 200, {})
        raise WireError(400, f"Unknown operation: {kind}")

    def _reset(self, config: dict[str, Json]) -> None:
        """debug.reset: an empty store; `data` may name a new profile and retry_timeout."""
        unknown = sorted(set(config) - {"profile", "retry_timeout"})
        if unknown:
            raise WireError(400, f"debug.reset takes profile and retry_timeout, not {', '.join(unknown)}")
        profile = config.get("profile", self.server.profile)
        retry_timeout = config.get("retry_timeout", self.server.retry_timeout)
        if profile not in PROFILES:
            raise WireError(400, f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
        if type(retry_timeout) is not int or retry_timeout < 0:
            raise WireError(400, f"retry_timeout must be a non-negative integer, got {retry_timeout!r}")
        self.server.close()
        if self.db != MEMORY:
            wipe(self.db)
        self.server = self.server_class(self.db, profile=profile, retry_timeout=retry_timeout)


def wipe(path: str) -> None:
    """Empty every table of a store file, its config included, in one transaction."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            db.execute(f'DELETE FROM "{table}"')
        db.execute("COMMIT")
    finally:
        db.close()


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
    return app


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
    if args.max_body < 1024:
        raise UsageError(f"--max-body must be at least 1024 bytes, got {args.max_body}")
    try:
        wire = WireServer(args.db, profile=args.profile, retry_timeout=args.retry_timeout)
    except (ValueError, OSError, sqlite3.Error, StoreError) as error:
        raise UsageError(f"cannot open the store {args.db!r}: {error}") from None
    try:
        sock = bind(args.host, args.port)
    except OSError as error:
        wire.close()
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {error.strerror or error}") from None
    print(f"duespec serve schedules: listening on {url_of(sock)} (profile {wire.server.profile}, "
          f"store {args.db}); POST / with Resonate envelopes, Ctrl-C stops", flush=True)

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
                    "Time moves only when a client pins it (head resonate:debug_time) or ticks "
                    "(debug.tick); debug.reset, debug.snap control the store. "
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
    parser.add_argument("--max-body", type=int, default=DEFAULT_MAX_BODY, metavar="BYTES",
                        help=f"largest request body; larger ones get 413 (default {DEFAULT_MAX_BODY})")
    parser.set_defaults(run=main)
