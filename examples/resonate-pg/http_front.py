"""An HTTP front for resonate-pg, so Resonate SDK workers (and `duespec record`) can talk
to it as to any Resonate server.

    python examples/resonate-pg/http_front.py --dsn 'host=127.0.0.1 port=5432 user=postgres dbname=resonate' \
        --listen 127.0.0.1:8001
    #   listening on http://127.0.0.1:8001

resonate-pg is a server in one PostgreSQL file: its protocol is
`SELECT resonate.resonate_rpc(envelope::jsonb)` and its timers fire when
`resonate.process_timeouts(now)` is called (by pg_cron in production). This front does
both and nothing else:

- `POST /`: the request body, unchanged, goes to `resonate_rpc`; the answer envelope is
  sent back with its `head.status` as the HTTP status (as `duespec serve` answers). A body
  that is not JSON is answered 400; an SQL error that escapes `resonate_rpc` 500, with
  the error as message. Each request thread keeps one connection of its own (autocommit).
- `GET /health`: `{"status": "ok"}`.
- A background thread calls `process_timeouts` with the wall clock every `--tick-ms`
  (100 by default), the deployed server's own timer loop at a finer grain than pg_cron's
  5 seconds. Requests carry no `resonate:debug_time`, so resonate-pg reads the same wall
  clock (`clock_timestamp()`) for them.

There is no `/poll` (server-sent events): resonate-pg keeps outgoing messages in its
`outbox` table and delivers none itself. SDK workers given no message source
(`Resonate(url=..., sources=[])`) run against it; see docs/field.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg

#: The largest request body read (as duespec serve's default): a larger one is answered 413.
MAX_BODY = 16 * 1024 * 1024


def error_envelope(status: int, message: str) -> dict:
    return {"kind": "error", "head": {"corrId": "", "status": status, "version": "2026-04-01"}, "data": message}


class Front(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], dsn: str) -> None:
        super().__init__(address, Handler)
        self.dsn = dsn
        self.local = threading.local()

    def connection(self) -> psycopg.Connection:
        conn = getattr(self.local, "conn", None)
        if conn is None or conn.closed:
            conn = self.local.conn = psycopg.connect(self.dsn, autocommit=True)
        return conn

    def rpc(self, body: bytes) -> tuple[int, dict]:
        try:
            request = json.loads(body)
        except ValueError as error:
            return 400, error_envelope(400, f"request body is not JSON: {error}")
        try:
            row = self.connection().execute("SELECT resonate.resonate_rpc(%s::jsonb)",
                                            (json.dumps(request),)).fetchone()
        except psycopg.Error as error:
            return 500, error_envelope(500, str(error).strip())
        answer = row[0]
        status = answer.get("head", {}).get("status") if isinstance(answer, dict) else None
        return (status if isinstance(status, int) and 100 <= status < 600 else 200), answer


class Handler(BaseHTTPRequestHandler):
    server: Front
    protocol_version = "HTTP/1.1"

    def _send(self, status: int, answer: dict) -> None:
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            self._send(413, error_envelope(413, f"request body over {MAX_BODY} bytes"))
            return
        self._send(*self.server.rpc(self.rfile.read(length)))

    def do_GET(self) -> None:  # noqa: N802
        if self.path.split("?")[0] == "/health":
            self._send(200, {"status": "ok"})
        else:
            self._send(404, error_envelope(404, f"no such path: {self.path} (resonate-pg has no /poll)"))

    def log_message(self, format: str, *args: object) -> None:
        pass


def fire_timeouts(dsn: str, tick_ms: int, stop: threading.Event) -> None:
    """resonate-pg's timer driver, every `tick_ms` at the wall clock."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.wait(tick_ms / 1000):
            conn.execute("SELECT resonate.process_timeouts(%s::bigint)", (time.time_ns() // 1_000_000,))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True, help="libpq connection string of a database with resonate.sql applied")
    parser.add_argument("--listen", default="127.0.0.1:8001", help="HOST:PORT (port 0: a free one)")
    parser.add_argument("--tick-ms", type=int, default=100, help="how often process_timeouts runs")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    try:
        psycopg.connect(args.dsn).close()
        front = Front((host or "127.0.0.1", int(port)), args.dsn)
    except (psycopg.Error, OSError, ValueError) as error:
        print(f"http_front: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    ticker = threading.Thread(target=fire_timeouts, args=(args.dsn, args.tick_ms, stop), daemon=True)
    ticker.start()
    bound_host, bound_port = front.server_address[:2]
    print(f"listening on http://{bound_host}:{bound_port}", flush=True)
    try:
        front.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        front.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
