"""What `serve` does with a request, apart from HTTP: the JSON body checked text by
text, the texts of all clients batched for the model (`batcher.RequestBatcher`), the
results as JSON. `http_server.py` is the transport over it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from http import HTTPStatus

import numpy as np

from pointer_generator.errors import PointerGeneratorError
from pointer_generator.runtime import json_files
from pointer_generator.serving.batcher import RequestBatcher


class RequestError(Exception):
    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status


class SummaryService:
    """The model behind the server: checks requests, batches them, formats results.

    Args:
      summarizer: a `pointer_generator.summarizing.summarizer.Summarizer`.
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
        # Requests being summarized, and when the last one ended (`idle_for`).
        self._busy, self._last_end = 0, time.monotonic()

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

    def idle_for(self) -> float:
        """Seconds since the last request ended, 0 while one is being summarized (work
        that may slow requests, as keeping the search, waits for a quiet moment)."""
        with self._arriving_lock:
            busy = self._busy or self._arriving
            return 0.0 if busy else time.monotonic() - self._last_end

    def health(self) -> dict:
        """What /healthz answers."""
        if self.batcher.alive:
            return {"status": "ok", "model": self.name}
        return {"status": "error", "error": "the model's worker has stopped"}

    def summarize(self, texts: list[str], attention_page: bool) -> dict:
        with self._arriving_lock:
            self._busy += 1
        try:
            return self._summarize(texts, attention_page)
        finally:
            with self._arriving_lock:
                self._busy -= 1
                self._last_end = time.monotonic()

    def _summarize(self, texts: list[str], attention_page: bool) -> dict:
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
