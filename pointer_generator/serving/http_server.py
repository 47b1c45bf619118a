"""The HTTP server of `pointer-generator serve`: a JSON endpoint and a page.

    GET  /                 the page: paste an article, see its summary and the attention
                           view of the decode pages (`/?text=...` fills and submits it)
    GET  /healthz          {"status": "ok", "model": ...}
    POST /api/summarize    {"text": "..."} or {"texts": ["...", ...]}, optional
                           "attention_page": true -> {"summaries": [{"summary": readable
                           text, "tokens", "sentences", "article_tokens", "attention"
                           [summary tokens][article tokens], "p_gens", "score"
                           (+ "attention_page": HTML)}]}

Requests of all clients are decoded together (`batcher.RequestBatcher`). Each text is
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
from concurrent.futures import TimeoutError as FutureTimeout
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

import numpy as np

from pointer_generator.errors import PointerGeneratorError
from pointer_generator.runtime import json_files
from pointer_generator.serving.batcher import RequestBatcher
from pointer_generator.serving.connections import (
    CLIENT_GONE,
    ConnectionSlots,
    DeadlineReader,
    error_text,
    gone_text,
    printable,
)

log = logging.getLogger(__name__)


class RequestError(Exception):
    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status


class SummaryService:
    """The model behind the server: checks requests, batches them, formats results.

    Args:
      summarizer: a `pointer_generator.decoding.summarizer.Summarizer`.
      name: what /healthz reports.
      max_batch, max_wait_s: see `RequestBatcher`.
      max_chars: the longest text accepted; max_texts: texts per request;
      max_request_chars: the most characters of all texts of one request together (the
        cost of a request: one client cannot hold the server for minutes);
      max_body_bytes: the largest request body; timeout_s: how long a request may wait.
      read_timeout_s: how long a connection may wait between two pieces of its request;
      request_deadline_s: how long it may take to send a whole request (headers and body);
      max_connections: connections served at once; evict_after_s: how long a connection
        must have been sending its request before a newcomer may take its slot when all
        are taken.
      wait_for_arrivals_only: the batcher waits up to max_wait_s only while other
        requests are being received (False: always, the earlier behaviour).
    """

    def __init__(
        self,
        summarizer,
        name: str = "",
        max_batch: int = 16,
        max_wait_s: float = 0.01,
        max_chars: int = 100_000,
        max_texts: int = 64,
        max_request_chars: int = 500_000,
        max_body_bytes: int = 8 << 20,
        timeout_s: float = 600.0,
        read_timeout_s: float = 30.0,
        request_deadline_s: float = 60.0,
        max_connections: int = 256,
        evict_after_s: float = 1.0,
        wait_for_arrivals_only: bool = True,
    ):
        self.summarizer, self.name = summarizer, name
        self.read_timeout_s, self.request_deadline_s = read_timeout_s, request_deadline_s
        self.max_connections, self.evict_after_s = max_connections, evict_after_s
        # Requests being read and checked: the batcher waits for them, and only them.
        self._arriving, self._arriving_lock = 0, threading.Lock()
        self.batcher = RequestBatcher(
            summarizer.summarize,
            max_batch,
            max_wait_s,
            arriving=(lambda: self._arriving) if wait_for_arrivals_only else None,
        )
        self.max_chars, self.max_texts = max_chars, max_texts
        self.max_request_chars = max_request_chars
        self.max_body_bytes, self.timeout_s = max_body_bytes, timeout_s

    @contextlib.contextmanager
    def arriving(self):
        """Counts a request as on its way to the batcher while it is read and checked."""
        with self._arriving_lock:
            self._arriving += 1
        try:
            yield
        finally:
            with self._arriving_lock:
                self._arriving -= 1
            self.batcher.recheck()  # a waiting batcher sees who is still coming

    def parse(self, body: bytes) -> tuple[list[str], bool]:
        """(texts, attention_page) of a request body; RequestError when it is bad."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RequestError(
                HTTPStatus.BAD_REQUEST, f"the body is not UTF-8 (byte {e.start})"
            ) from None
        try:
            request = json_files.loads(text)
        except json_files.NestingError as e:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"the body cannot be read ({e})") from None
        except ValueError as e:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"the body is not JSON ({e})") from None
        if not isinstance(request, dict) or ("text" in request) == ("texts" in request):
            raise RequestError(
                HTTPStatus.BAD_REQUEST,
                'send a JSON object with "text": "..." or "texts": ["...", ...]',
            )
        texts = [request["text"]] if "text" in request else request["texts"]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise RequestError(
                HTTPStatus.BAD_REQUEST, '"text" must be a string, "texts" a list of strings'
            )
        if not texts or len(texts) > self.max_texts:
            raise RequestError(
                HTTPStatus.BAD_REQUEST, f"send 1 to {self.max_texts} texts, got {len(texts)}"
            )
        total = sum(len(t) for t in texts)
        if total > self.max_request_chars:
            raise RequestError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"the texts have {total:,} characters together; the limit is "
                f"{self.max_request_chars:,} characters a request",
            )
        for i, t in enumerate(texts):
            self.check_text(i, t)
        return texts, bool(request.get("attention_page", False))

    def check_text(self, i: int, text: str) -> None:
        """RequestError when text `i` of a request cannot be summarized, before it joins
        a batch that it would fail for everyone."""
        if not text.strip():
            raise RequestError(HTTPStatus.BAD_REQUEST, f"text {i} is empty")
        if len(text) > self.max_chars:
            raise RequestError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"text {i} has {len(text):,} characters; the limit is {self.max_chars:,}",
            )
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise RequestError(
                HTTPStatus.BAD_REQUEST,
                f"text {i} is not valid Unicode: a lone surrogate "
                f"(U+{ord(text[e.start]):04X}) at character {e.start}",
            ) from None
        check = getattr(self.summarizer, "check_text", None)
        if check is not None:
            try:
                check(text)
            except PointerGeneratorError as e:
                raise RequestError(HTTPStatus.UNPROCESSABLE_ENTITY, f"text {i}: {e}") from None

    def health(self) -> dict:
        """What /healthz answers."""
        if self.batcher.alive:
            return {"status": "ok", "model": self.name}
        return {"status": "error", "error": "the model's worker has stopped"}

    def summarize(self, texts: list[str], attention_page: bool) -> dict:
        future = self.batcher.submit(texts)
        try:
            results = future.result(timeout=self.timeout_s)
        except FutureTimeout:
            future.cancel()  # not decoded later for nobody, if it has not started
            raise RequestError(
                HTTPStatus.SERVICE_UNAVAILABLE, "timed out waiting for the model"
            ) from None
        except PointerGeneratorError as e:
            raise RequestError(HTTPStatus.UNPROCESSABLE_ENTITY, str(e)) from None
        return {"summaries": [result_json(r, attention_page) for r in results]}


def _rounded(values) -> list:
    """Nested lists of Python floats rounded to 6 decimals, rounded by NumPy in one pass:
    a paper-size attention (120 x 400) took 18 ms value by value, a tenth of its search."""
    return np.round(np.asarray(values, np.float64), 6).tolist()


def result_json(result, attention_page: bool = False) -> dict:
    out = {
        "summary": result.text,
        "tokens": result.tokens,
        "sentences": result.sentences,
        "article_tokens": result.article_tokens,
        "attention": _rounded(result.attention),
        "p_gens": _rounded(result.p_gens),
        "score": result.score,
    }
    if attention_page:
        from pointer_generator.decoding import attention_html

        data = attention_html.attn_vis_data(
            result.article_tokens, result.tokens, "", result.attention, result.p_gens
        )
        out["attention_page"] = attention_html.render_attention_page(data, "Attention")
    return out


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
