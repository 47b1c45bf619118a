"""Requests from many clients, decoded together: `RequestBatcher`.

Each request (a list of texts) waits in a queue; one worker thread takes the waiting
requests, up to `max_batch` texts (a request is never split), waiting at most
`max_wait_s` after the first for others to join, decodes them in one call and hands each
request its results. Given `arriving` (how many requests are being received and will be
submitted soon: the server counts them), it waits only while some are: a lone client's
request is decoded at once instead of after `max_wait_s` (on a small model that wait was
most of its latency), while requests that arrive together still share a batch, and
those that arrive during a decode form the next one. A batch that fails is decoded again
one request at a time, so a text that cannot be summarized fails only its own request;
the worker goes on whatever happens (`alive` says so, for the server's health check).
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from concurrent.futures import Future

from pointer_generator.errors import FlagError

log = logging.getLogger(__name__)


class RequestBatcher:
    """Args:
    summarize: texts -> one result per text, in order (e.g. `Summarizer.summarize`).
    max_batch: the most texts decoded together.
    max_wait_s: how long the first waiting request waits for others.
    arriving: () -> how many requests are on their way (None: always wait max_wait_s).
    """

    def __init__(self, summarize, max_batch: int = 16, max_wait_s: float = 0.01, arriving=None):
        if not (isinstance(max_wait_s, int | float) and math.isfinite(max_wait_s)):
            raise FlagError(f"max_wait_s must be a finite number of seconds, got {max_wait_s}")
        if max_wait_s < 0:
            raise FlagError(f"max_wait_s must be >= 0, got {max_wait_s}")
        self.summarize = summarize
        self.max_batch = max(1, max_batch)
        self.max_wait_s = max_wait_s
        self.arriving = arriving
        self._queue: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self.batch_sizes: list[int] = []  # texts per decoded batch (for tests, stats)
        self._thread = threading.Thread(target=self._run, name="request-batcher", daemon=True)
        self._thread.start()

    def submit(self, texts: list[str]) -> Future:
        """A Future of the texts' results (in order)."""
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the batcher is closed")
            self._queue.append((list(texts), future))
            self._cond.notify()
        return future

    def recheck(self) -> None:
        """Wake a worker that waits for requests to join, to ask `arriving` again."""
        with self._cond:
            self._cond.notify()

    @property
    def alive(self) -> bool:
        """Whether the worker thread is there to decode requests."""
        return self._thread.is_alive()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=60)

    def _take(self) -> list | None:
        """The next group of requests (None once closed and empty)."""
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if not self._queue:
                return None
            deadline = time.monotonic() + self.max_wait_s
            while True:
                size = sum(len(t) for t, _ in self._queue)
                left = deadline - time.monotonic()
                if size >= self.max_batch or left <= 0 or self._closed:
                    break
                if self.arriving is not None and self.arriving() <= 0:
                    break  # nobody else is on the way: waiting would only add latency
                self._cond.wait(left)
            group, size = [], 0
            while self._queue and (not group or size + len(self._queue[0][0]) <= self.max_batch):
                texts, future = self._queue.popleft()
                # A request its client gave up on (timed out: `Future.cancel`) costs the
                # model nothing; one taken here can no longer be cancelled.
                if future.set_running_or_notify_cancel():
                    group.append((texts, future))
                    size += len(texts)
            return group

    def _run(self) -> None:
        while True:
            try:
                group = self._take()
            except BaseException:  # never a dead worker behind a live server
                log.exception("request batcher: could not take requests")
                time.sleep(0.1)
                continue
            if group is None:
                return
            if group:
                self._decode(group)

    def _decode(self, group: list) -> None:
        texts = [t for request, _ in group for t in request]
        try:
            results = self.summarize(texts)
        except BaseException as e:
            if len(group) == 1:
                group[0][1].set_exception(e)
                return
            # One request's text may be what failed: each request again, alone.
            for request in group:
                self._decode([request])
            return
        self.batch_sizes.append(len(texts))
        i = 0
        for request, future in group:
            future.set_result(results[i : i + len(request)])
            i += len(request)
