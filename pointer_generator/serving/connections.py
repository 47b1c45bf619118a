"""What `serve` does about clients it cannot trust to be quick or well-behaved.

* `DeadlineReader`: a request (headers and body together) must arrive within a deadline.
  A socket timeout alone applies to each read, so a client that announced a 1 MB body
  and sent one byte every 15 s held its connection for as long as it liked.
* `ConnectionSlots`: at most `limit` connections are served at once; when all are taken,
  a new connection takes the slot of the one that has been sending its request the
  longest (at least `evict_after_s`), so 256 slow clients cannot lock everyone out,
  `GET /healthz` included; only when every slot is working on a request (or was taken
  moments ago) is the new connection refused with 503.
* `printable`: the log shows a client's request line, path, headers and the errors that
  quote them with control characters escaped, so that they can neither drive the
  operator's terminal (`\\x1b]0;...\\x07`) nor forge log lines (`\\r`, `\\n`).
* `CLIENT_GONE`: the errors of a client that went away or was too slow, logged as one
  line each instead of a traceback.
"""

from __future__ import annotations

import io
import logging
import math
import re
import socket
import threading
import time
import traceback

log = logging.getLogger("pointer_generator.serving.http_server")


class SlowClient(Exception):
    """A client that did not send its request in time (not a TimeoutError, which
    `BaseHTTPRequestHandler` would catch and log itself)."""


# A client that closed or reset its connection, or sent too slowly.
CLIENT_GONE = (ConnectionError, TimeoutError, SlowClient)

# C0 and C1 controls, DEL, the backslash (so that an escape in the log is unambiguous),
# and the invisible characters that reorder or split a line on a terminal: the line and
# paragraph separators, bidirectional overrides and isolates, zero-width characters.
_UNPRINTABLE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\\\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]"
)


def _escape(match: re.Match) -> str:
    c = match.group()
    if c == "\\":
        return "\\\\"
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def printable(text) -> str:
    """`text` (any object: its str) with control and invisible characters escaped
    (`\\x1b`, `\\x0d`, `\\u202e`), for one log line that shows what a client sent."""
    return _UNPRINTABLE.sub(_escape, str(text))


def error_text(e: BaseException) -> str:
    """An unexpected error's traceback for the log: the frames (this program's code) as
    Python prints them, the message (which may quote a client's data) escaped."""
    tb = traceback.TracebackException.from_exception(e)
    frames = "".join(tb.stack.format())
    message = "".join(tb.format_exception_only()).strip()
    return f"Traceback (most recent call last):\n{frames}{printable(message)}"


def gone_text(e: BaseException) -> str:
    """What a CLIENT_GONE error says, in a few words."""
    if isinstance(e, SlowClient):
        return str(e)
    if isinstance(e, TimeoutError):
        return "it stopped sending (timed out)"
    return f"it went away ({type(e).__name__})"


class DeadlineReader(io.RawIOBase):
    """A connection's socket as the raw stream under a handler's `rfile`: each read waits
    at most `read_timeout_s`, and none goes past `deadline` (set per request with
    `start`, cleared with `stop` once the request is read).

    Raises SlowClient when either runs out.
    """

    def __init__(self, sock: socket.socket, read_timeout_s: float | None):
        super().__init__()
        self._sock = sock
        self._read_timeout_s = math.inf if read_timeout_s is None else read_timeout_s
        self._deadline, self._limit_s = math.inf, math.inf

    def start(self, limit_s: float) -> None:
        """The request that begins now must be read within `limit_s` seconds."""
        self._deadline, self._limit_s = time.monotonic() + limit_s, limit_s

    def stop(self) -> None:
        """The request is read: the socket's timeout is the per-read one again (for
        writing the answer), and no deadline applies until the next `start`."""
        self._deadline = math.inf
        self._sock.settimeout(self._timeout(math.inf))

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise self._late()
        self._sock.settimeout(self._timeout(left))
        try:
            return self._sock.recv_into(buffer)
        except TimeoutError:
            if self._deadline - time.monotonic() <= 0:
                raise self._late() from None
            raise SlowClient(f"nothing received for {self._read_timeout_s:g} s") from None

    def _timeout(self, left: float) -> float | None:
        timeout = min(self._read_timeout_s, left)
        return None if math.isinf(timeout) else timeout

    def _late(self) -> SlowClient:
        return SlowClient(f"no complete request within {self._limit_s:g} s")


class ConnectionSlots:
    """The connections being served, at most `limit`, each either reading its request
    (since when) or working on it (None). Thread-safe.

    `admit` gives a new connection a slot; when all are taken, the slot of the
    connection that has been reading longest, if for at least `evict_after_s`: that
    connection is shut down (its thread sees the end of its input and ends), so slow
    or idle clients cannot keep the others out. Connections that are working on a
    request are never cut off.
    """

    def __init__(self, limit: int, evict_after_s: float):
        self.limit, self.evict_after_s = limit, evict_after_s
        self._lock = threading.Lock()
        self._open: dict[socket.socket, tuple[float | None, str]] = {}

    def admit(self, sock: socket.socket, address: str) -> bool:
        """Whether `sock` gets a slot (it is then reading from now)."""
        with self._lock:
            if len(self._open) >= self.limit and not self._evict_oldest_reader():
                return False
            self._open[sock] = (time.monotonic(), address)
            return True

    def reading(self, sock: socket.socket) -> None:
        """`sock` waits for (or reads) its next request from now."""
        with self._lock:
            if sock in self._open:
                self._open[sock] = (time.monotonic(), self._open[sock][1])

    def working(self, sock: socket.socket) -> bool:
        """`sock` has read its request and works on it; False if it was cut off."""
        with self._lock:
            if sock not in self._open:
                return False
            self._open[sock] = (None, self._open[sock][1])
            return True

    def release(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.pop(sock, None)

    def _evict_oldest_reader(self) -> bool:
        now = time.monotonic()
        readers = [(since, s) for s, (since, _) in self._open.items() if since is not None]
        if not readers:
            return False
        since, victim = min(readers, key=lambda r: r[0])
        if now - since < self.evict_after_s:
            return False
        address = self._open.pop(victim)[1]
        try:
            victim.shutdown(socket.SHUT_RDWR)  # its thread's read returns: it ends
        except OSError:
            pass  # already closed by the client
        log.info(
            "%s: cut off: still sending its request after %.1f s while all %d connections "
            "were taken",
            printable(address),
            now - since,
            self.limit,
        )
        return True
