"""The HTTP server of `pointer-generator serve`: a JSON endpoint and a page.

    GET  /                 the page: paste an article, see its summary and the attention
                           view of the decode pages (`/?text=...` fills and submits it)
    GET  /healthz          {"status": "ok", "model": ...}
    POST /api/summarize    {"text": "..."} or {"texts": ["...", ...]}, optional
                           "attention_page": true -> {"summaries": [{"summary": readable
                           text, "tokens", "sentences", "article_tokens", "attention"
                           [summary tokens][article tokens], "p_gens", "score"
                           (+ "attention_page": HTML)}]}

Requests of all clients are decoded together (`summary_service.SummaryService`). Each text is
checked before it joins a batch, so a text that cannot be summarized fails only its own
request. A bad request gets a 4xx status and {"error": "..."} (texts are numbered from 0,
as in the request's list): 400 for a body that is not UTF-8 or not JSON (or nested too
deeply to read), a text that is empty or not valid Unicode (a lone surrogate), 411
without Content-Length, 413 for a body, a text or a request's texts together over the
limits, 415 for a body not sent as application/json, 422 for a text with no words to
summarize, 404 for other paths and 405 for other methods; the server keeps serving.
A client must send its whole request within `request_deadline_s` (and something every
`read_timeout_s`), and at most `max_connections` are served at once: a newcomer takes
the slot of the connection that has been sending its request the longest, else gets a
503, so neither stalled nor trickling clients can lock others out (`connections.py`).
What a client sent is logged with its control characters escaped, and a client that
goes away is one log line.

The standard library's `ThreadingHTTPServer` is enough here: every request waits on the
one model anyway, so a web framework would add a dependency and no speed.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import logging
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

from pointer_generator.serving.connections import (
    CLIENT_GONE,
    ConnectionSlots,
    DeadlineReader,
    error_text,
    gone_text,
    printable,
)
from pointer_generator.serving.summary_service import (  # noqa: F401 (the server's API)
    RequestError,
    SummaryService,
    result_json,
)

log = logging.getLogger(__name__)


def page_html() -> str:
    return (
        resources.files("pointer_generator")
        .joinpath("assets", "serve_page.html")
        .read_text("utf-8")
    )


class Handler(BaseHTTPRequestHandler):
    server_version = "pointer-generator"
    service: SummaryService  # set by make_server

    def setup(self):
        super().setup()
        # Reads through a deadline: a request must arrive whole in time, however slowly
        # its bytes trickle in (`connections.DeadlineReader`).
        self.rfile.close()
        self._reader = DeadlineReader(self.connection, self.timeout)
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self):
        self._reader.start(self.service.request_deadline_s)
        self.server.slots.reading(self.connection)
        try:
            super().handle_one_request()
        except CLIENT_GONE as e:  # while reading the request line or headers, or writing
            self._client_gone(e)

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if ok and not host_allowed(self.headers.get("Host"), self.server.server_address[0]):
            # A page on another site whose name was made to resolve to 127.0.0.1 (DNS
            # rebinding) is same-origin to the browser; it still sends its own name.
            self.close_connection = True
            self._json(
                HTTPStatus.MISDIRECTED_REQUEST,
                {"error": "this server answers requests for localhost only (Host header)"},
            )
            return False
        if ok and self.command != "POST":
            self._done_reading()  # no body is read: the request is in
        return ok

    def _done_reading(self) -> bool:
        """The request is read: no deadline now, and the connection counts as working
        (never cut off for a newcomer). False if it was cut off meanwhile."""
        self._reader.stop()
        return self.server.slots.working(self.connection)

    def _client_gone(self, e: BaseException) -> None:
        self.close_connection = True
        log.info("%s: connection closed: %s", self.address_string(), gone_text(e))

    def log_message(self, fmt, *args):  # one INFO line per request, not stderr noise
        # Escaped: the request line and the errors that quote it are the client's text.
        log.info("%s %s", self.address_string(), printable(fmt % args))

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        # No other site may show the page in a frame: `/?text=...` submits by itself, so
        # a hidden frame on any page could make its visitors' browsers use the model.
        self.send_header("X-Frame-Options", "DENY")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: HTTPStatus, obj: dict) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), "application/json; charset=utf-8")

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/":
            self._send(HTTPStatus.OK, page_html().encode("utf-8"), "text/html; charset=utf-8")
        elif path == "/healthz":
            health = self.service.health()
            ok = health["status"] == "ok"
            self._json(HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE, health)
        elif path == "/api/summarize":
            self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "POST a JSON body here"})
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {path}"})

    def _not_allowed(self):
        self.close_connection = True  # a body it may have sent is not read
        self._json(
            HTTPStatus.METHOD_NOT_ALLOWED,
            {"error": f"{self.command} is not served: GET / and /healthz, POST /api/summarize"},
        )

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed

    def do_HEAD(self):
        # HEAD gets no body, only the status and headers a GET would have.
        self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Allow", "GET, POST")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        if self.path.split("?", 1)[0] != "/api/summarize":
            self.close_connection = True  # its body is not read
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: {self.path}"})
            return
        try:
            n = self._body_length()
            with self.service.arriving():
                body = self._read_body(n)
                if body is None:
                    return
                texts, page = self.service.parse(body)
            self._json(HTTPStatus.OK, self.service.summarize(texts, page))
        except RequestError as e:
            self._json(e.status, {"error": str(e)})
        except CLIENT_GONE as e:
            self._client_gone(e)
        except Exception as e:  # never a dead server for one request
            log.error("%s: request failed\n%s", self.address_string(), error_text(e))
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"internal error: {e}"})

    def _body_length(self) -> int:
        """The announced body size; RequestError (the body unread, the connection to be
        closed) for a missing or bad Content-Length, a body over the limit, or a body
        that is not JSON by its Content-Type."""
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            raise RequestError(HTTPStatus.LENGTH_REQUIRED, "send a Content-Length header")
        try:
            n = int(length)
        except ValueError:
            n = -1
        if n < 0:
            self.close_connection = True
            raise RequestError(HTTPStatus.BAD_REQUEST, "a bad Content-Length")
        if n > self.service.max_body_bytes:
            self.close_connection = True
            raise RequestError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"the body has {n:,} bytes; the limit is {self.service.max_body_bytes:,}",
            )
        problem = content_type_problem(self.headers.get("Content-Type"))
        if problem:
            self.close_connection = True
            raise RequestError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, problem)
        return n

    def _read_body(self, n: int) -> bytes | None:
        """The body's n bytes; None (logged, the connection to be closed) when the client
        closed before sending them all, or was cut off meanwhile."""
        body = self.rfile.read(n)
        if not self._done_reading():
            self.close_connection = True
            return None  # cut off for a newcomer (logged then)
        if len(body) < n:
            self.close_connection = True
            log.info(
                "%s: connection closed: it went away after %d of its %d body bytes",
                self.address_string(),
                len(body),
                n,
            )
            return None
        return body


def content_type_problem(value: str | None) -> str | None:
    """Why a request with Content-Type `value` is not a JSON request, or None.

    Only application/json (in UTF-8) is taken: a page on another site can POST text/plain
    or a form to any address without asking, but a JSON request from it first needs the
    browser's CORS preflight (OPTIONS), which this server refuses.
    """
    media, _, params = (value or "").partition(";")
    charset = ""
    for param in params.split(";"):
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset":
            charset = val.strip().strip('"').lower()
    if media.strip().lower() == "application/json" and charset in ("", "utf-8", "utf8"):
        return None
    shown = repr(value[:100]) if value else "none"
    return f"send the body as Content-Type: application/json (UTF-8); got {shown}"


class _Server(ThreadingHTTPServer):
    """A ThreadingHTTPServer that serves at most `max_connections` connections at once
    (`connections.ConnectionSlots`: a newcomer takes the slot of the slowest reader, or
    gets a 503 at once) and logs a client that went away as one line, not a traceback."""

    daemon_threads = True

    def __init__(self, address, handler, max_connections: int, evict_after_s: float, health):
        super().__init__(address, handler)
        self.slots = ConnectionSlots(max_connections, evict_after_s)
        self.health = health
        self._health_threads = threading.BoundedSemaphore(HEALTH_THREADS)

    def process_request(self, request, client_address):
        if not self.slots.admit(request, _address(client_address)):
            self._refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release(request)  # no thread was started to release it
            raise

    def _refuse(self, request) -> None:
        """Every slot is taken by requests being summarized: a 503, except that a health
        check still gets its answer (read in a thread of a few kept for that, each
        bounded in time, so that a monitor never sees a busy server as a dead one)."""
        if self._health_threads.acquire(blocking=False):
            threading.Thread(target=self._answer_refused, args=(request,), daemon=True).start()
        else:
            _send_raw(request, 503, BUSY)
            self.shutdown_request(request)

    def _answer_refused(self, request) -> None:
        first = b""
        try:
            with contextlib.suppress(OSError):  # nothing sent within the second: a 503
                request.settimeout(HEALTH_READ_S)
                first = request.recv(64)
            if first.startswith((b"GET /healthz ", b"GET /healthz?")):
                health = self.health()
                status = 200 if health["status"] == "ok" else 503
                _send_raw(request, status, json.dumps(health).encode("utf-8"))
            else:
                _send_raw(request, 503, BUSY)
        finally:
            self.shutdown_request(request)
            self._health_threads.release()

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release(request)

    def handle_error(self, request, client_address):
        # socketserver's default prints a traceback to stderr: 62 of them when slow
        # clients closed their connections.
        e = sys.exc_info()[1] or RuntimeError("an unknown error")
        if isinstance(e, CLIENT_GONE):
            log.info("%s: connection closed: %s", _address(client_address), gone_text(e))
        else:
            log.error("%s: request failed\n%s", _address(client_address), error_text(e))


HEALTH_THREADS = 8  # connections over the limit read at once, for a health check
HEALTH_READ_S = 1.0  # how long one is read (a monitor sends its request at once)
BUSY = b'{"error": "the server is busy: too many connections; try again"}'
_REASONS = {200: b"OK", 503: b"Service Unavailable"}


def _send_raw(request, status: int, body: bytes) -> None:
    """A whole JSON response on a socket no handler serves (the connection is closed)."""
    try:
        request.sendall(
            b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (status, _REASONS[status], len(body), body)
        )
    except OSError:
        pass


def _is_loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a name: only `localhost` is known to stay on this machine


def host_allowed(host_header: str | None, bound: str) -> bool:
    """Whether a request's Host header may be answered by a server bound to `bound`: on
    a loopback address only loopback names (a DNS-rebinding page sends its own); bound
    elsewhere, any (the operator exposed it on purpose; serve warns)."""
    if not _is_loopback(bound):
        return True
    if host_header is None:
        return True  # HTTP/1.0 clients send none; browsers always do
    host = host_header.strip().lower()
    if host.startswith("["):  # [::1]:8000
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:  # name:port
        host = host.split(":", 1)[0]
    return _is_loopback(host)


def _address(client_address) -> str:
    return str(client_address[0]) if client_address else "?"


def make_server(service: SummaryService, host: str = "127.0.0.1", port: int = 8000):
    """A threading HTTP server bound to (host, port) (port 0: a free one); call
    `serve_forever()` on it."""
    handler = type(
        "BoundHandler", (Handler,), {"service": service, "timeout": service.read_timeout_s}
    )
    return _Server(
        (host, port), handler, service.max_connections, service.evict_after_s, service.health
    )
