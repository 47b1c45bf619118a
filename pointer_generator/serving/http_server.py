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
as in the request's list): 400 for a body that is not UTF-8 or not JSON, a text that is
empty or not valid Unicode (a lone surrogate), 411 without Content-Length, 413 for a
body or text over the limits, 422 for a text with no words to summarize, 404 for other
paths and 405 for other methods; the server keeps serving. A client that stops sending
is cut off after `read_timeout_s`, and at most `max_connections` are served at once
(503 beyond), so stalled sockets cannot pile up threads.

The standard library's `ThreadingHTTPServer` is enough here: every request waits on the
one model anyway, so a web framework would add a dependency and no speed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

import numpy as np

from pointer_generator.errors import PointerGeneratorError
from pointer_generator.serving.batcher import RequestBatcher

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
      max_body_bytes: the largest request body; timeout_s: how long a request may wait.
      read_timeout_s: how long a connection may take to send its request;
      max_connections: connections served at once.
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
        max_body_bytes: int = 8 << 20,
        timeout_s: float = 600.0,
        read_timeout_s: float = 30.0,
        max_connections: int = 256,
        wait_for_arrivals_only: bool = True,
    ):
        self.summarizer, self.name = summarizer, name
        self.read_timeout_s, self.max_connections = read_timeout_s, max_connections
        # Requests being read and checked: the batcher waits for them, and only them.
        self._arriving, self._arriving_lock = 0, threading.Lock()
        self.batcher = RequestBatcher(
            summarizer.summarize,
            max_batch,
            max_wait_s,
            arriving=(lambda: self._arriving) if wait_for_arrivals_only else None,
        )
        self.max_chars, self.max_texts = max_chars, max_texts
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
            request = json.loads(text)
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

    def summarize(self, texts: list[str], attention_page: bool) -> dict:
        try:
            results = self.batcher.submit(texts).result(timeout=self.timeout_s)
        except FutureTimeout:
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

    def log_message(self, fmt, *args):  # one INFO line per request, not stderr noise
        log.info("%s %s", self.address_string(), fmt % args)

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: HTTPStatus, obj: dict) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), "application/json; charset=utf-8")

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/":
            self._send(HTTPStatus.OK, page_html().encode("utf-8"), "text/html; charset=utf-8")
        elif path == "/healthz":
            if self.service.batcher.alive:
                self._json(HTTPStatus.OK, {"status": "ok", "model": self.service.name})
            else:
                self._json(
                    HTTPStatus.SERVICE_UNAVAILABLE,
                    {"status": "error", "error": "the model's worker has stopped"},
                )
        elif path == "/api/summarize":
            self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "POST a JSON body here"})
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {path}"})

    def _not_allowed(self):
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
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: {self.path}"})
            return
        try:
            length = self.headers.get("Content-Length")
            if length is None:
                raise RequestError(HTTPStatus.LENGTH_REQUIRED, "send a Content-Length header")
            try:
                n = int(length)
            except ValueError:
                raise RequestError(HTTPStatus.BAD_REQUEST, "a bad Content-Length") from None
            if n > self.service.max_body_bytes:
                self.close_connection = True  # the body is not read
                raise RequestError(
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                    f"the body has {n:,} bytes; the limit is {self.service.max_body_bytes:,}",
                )
            with self.service.arriving():
                texts, page = self.service.parse(self.rfile.read(max(n, 0)))
            self._json(HTTPStatus.OK, self.service.summarize(texts, page))
        except RequestError as e:
            self._json(e.status, {"error": str(e)})
        except TimeoutError:  # the client stopped sending its body: drop it
            self.close_connection = True
        except Exception as e:  # never a dead server for one request
            log.exception("request failed")
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"internal error: {e}"})


class _Server(ThreadingHTTPServer):
    """A ThreadingHTTPServer that serves at most `max_connections` connections at once
    (a 503 answers the rest at once) and cuts off clients that stop sending."""

    daemon_threads = True

    def __init__(self, address, handler, max_connections: int):
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_connections)

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            try:
                body = b'{"error": "the server is busy: too many connections; try again"}'
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def make_server(service: SummaryService, host: str = "127.0.0.1", port: int = 8000):
    """A threading HTTP server bound to (host, port) (port 0: a free one); call
    `serve_forever()` on it."""
    handler = type(
        "BoundHandler", (Handler,), {"service": service, "timeout": service.read_timeout_s}
    )
    return _Server((host, port), handler, service.max_connections)
