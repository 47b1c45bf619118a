"""Issue 42 (reliability, fourth round), items 3, 8, 9, 10 and 11: what `serve` does with
slow clients, hostile log text, deeply nested JSON, requests from other pages and costly
requests, and what every JSON reader and `export_info.json`'s reader do with bad files.

The servers here run a stub summarizer on 127.0.0.1 with small limits (deadlines of 1-2 s,
3 connections), so every test ends by itself in seconds.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import socket
import struct
import threading
import time
import urllib.error
import urllib.request

import pytest

import pointer_generator as pg
from pointer_generator.errors import DataError, FlagError
from tests import helpers

SERVER_LOG = "pointer_generator.serving.http_server"


class _Stub:
    """A summarizer that answers at once (or after `delay_s`): the server is tested."""

    def __init__(self, delay_s: float = 0.0):
        self.delay_s = delay_s
        self.calls = 0

    def summarize(self, texts):

        self.calls += 1
        time.sleep(self.delay_s)
        return [pg.SummaryResult.of(t.split()[:2], t.split(), [[1.0]], [0.5], -1.0) for t in texts]


@contextlib.contextmanager
def _server(delay_s: float = 0.0, **options):
    """(port, service) of a stub server on 127.0.0.1, shut down afterwards."""
    from pointer_generator.serving.http_server import SummaryService, make_server

    service = SummaryService(_Stub(delay_s), "stub", max_wait_s=0.0, **options)
    httpd = make_server(service, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1], service
    finally:
        httpd.shutdown()
        httpd.server_close()
        service.batcher.close()
        thread.join(10)


def _post(port, body: bytes, content_type: str | None = "application/json"):
    """(status, JSON answer) of POST /api/summarize."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/summarize", data=body, method="POST"
    )
    if content_type is not None:
        request.add_header("Content-Type", content_type)
    else:  # urllib adds a form type to every POST with a body unless told otherwise
        request.add_header("Content-Type", "")
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _health(port) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _raw(port, data: bytes, timeout: float = 10.0) -> bytes:
    """What the server answers to `data` sent as is, up to its closing the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        with contextlib.suppress(OSError):
            while chunk := s.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


SLOW_POST = (
    b"POST /api/summarize HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    b"Content-Length: 1000000\r\n\r\n"
)


class _Trickler:
    """A client that sends `head`, then one byte every `every_s` seconds, until the
    server closes the connection (`closed_after` says when) or `give_up_s` passes."""

    def __init__(self, port, head: bytes, every_s: float = 0.25, give_up_s: float = 8.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.head, self.every_s, self.give_up_s = head, every_s, give_up_s
        self.closed_after: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        start = time.monotonic()
        try:
            self.sock.sendall(self.head)
            while time.monotonic() - start < self.give_up_s and not self._stop.is_set():
                readable, _, _ = select.select([self.sock], [], [], self.every_s)
                if readable and not self.sock.recv(4096):
                    break  # closed by the server
                self.sock.sendall(b" ")
            else:
                return  # still connected when it gave up or was stopped
        except OSError:
            pass  # reset or closed by the server
        self.closed_after = time.monotonic() - start

    def stop(self):
        self._stop.set()
        self._thread.join(self.give_up_s + 5)
        self.sock.close()


# ------------------------------------------------------------ item 3: slow clients
@pytest.mark.parametrize(
    "head",
    [SLOW_POST, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n"],
    ids=["in_the_body", "in_the_headers"],
)
def test_a_trickling_client_is_cut_off_at_the_request_deadline(head):
    """One byte every 0.25 s kept a per-read timeout (1 s here) from ever firing: the
    request as a whole must now arrive within request_deadline_s (1.5 s here)."""
    with _server(read_timeout_s=1.0, request_deadline_s=1.5) as (port, _):
        client = _Trickler(port, head)
        try:
            client._thread.join(10)
            assert client.closed_after is not None, "still connected after 8 s"
            assert 1.2 < client.closed_after < 4.0, client.closed_after
        finally:
            client.stop()


def test_health_checks_get_through_while_slow_clients_hold_every_slot(caplog):
    """All 3 slots held by clients trickling their bodies: /healthz and a real request
    take the slots of the slowest readers (before: 503 for everyone until they left)."""
    caplog.set_level(logging.INFO, logger=SERVER_LOG)
    options = dict(max_connections=3, read_timeout_s=5.0, request_deadline_s=30.0)
    with _server(evict_after_s=0.3, **options) as (port, _):
        slow = [_Trickler(port, SLOW_POST, give_up_s=6.0) for _ in range(3)]
        try:
            time.sleep(0.8)  # all three are in and have been reading for over 0.3 s
            assert _health(port) == 200
            assert _post(port, b'{"text": "w1 w2 said ."}')[0] == 200
            time.sleep(0.5)
            # The health check's slot may be free again for the request, or not.
            cut = [c for c in slow if c.closed_after is not None]
            assert 1 <= len(cut) <= 2, [c.closed_after for c in slow]
            assert slow[-1].closed_after is None  # the newest was left alone
        finally:
            for c in slow:
                c.stop()
    cut_lines = [r.getMessage() for r in caplog.records if "cut off" in r.getMessage()]
    assert len(cut_lines) == len(cut) and "still sending its request" in cut_lines[0], cut_lines


def test_connections_working_on_a_request_are_never_cut_off():
    """A newcomer only takes the slot of a connection still sending its request: with
    every slot waiting for the model, another request gets 503 and the requests finish;
    a health check is still answered (before: 503, a busy server looked dead)."""
    with _server(delay_s=1.5, max_connections=2, evict_after_s=0.1) as (port, _):
        results = []
        workers = [
            threading.Thread(target=lambda: results.append(_post(port, b'{"text": "w1 w2"}')))
            for _ in range(2)
        ]
        for w in workers:
            w.start()
        time.sleep(0.6)  # both are waiting for the (slow) model
        answer = _raw(port, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200") and b'"status": "ok"' in answer, answer
        answer = _raw(port, SLOW_POST + b"\r\n")
        assert answer.startswith(b"HTTP/1.1 503") and b"too many connections" in answer
        for w in workers:
            w.join(20)
        assert [status for status, _ in results] == [200, 200]


def test_a_request_its_client_gave_up_on_is_not_decoded():
    """A request that timed out waiting for the model was still decoded later, for
    nobody: its future is cancelled and the batcher skips it."""
    with _server(delay_s=1.0, timeout_s=0.3) as (port, service):
        # One slow decode holds the worker; the two requests behind it time out queued.
        statuses = [_post(port, b'{"text": "w1 w2"}')[0] for _ in range(3)]
        time.sleep(2.5)
        calls = service.summarizer.calls
    assert statuses == [503, 503, 503]
    assert calls <= 2, calls  # before: 3, every abandoned request decoded


def test_only_requests_for_localhost_are_answered_on_a_loopback_address():
    """DNS rebinding: a page on another site whose name was made to resolve to 127.0.0.1
    is same-origin to the browser, which still sends that name as the Host header."""
    from pointer_generator.serving.http_server import host_allowed

    with _server() as (port, _):
        answer = _raw(port, b"GET /healthz HTTP/1.1\r\nHost: evil.example:%d\r\n\r\n" % port)
        assert answer.split(b" ", 2)[1] == b"421" and b"localhost only" in answer, answer
        for host in (b"localhost", b"127.0.0.1:%d" % port, b"[::1]:%d" % port):
            answer = _raw(port, b"GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n" % host)
            assert answer.split(b" ", 2)[1] == b"200", (host, answer[:60])
    assert host_allowed("evil.example", "0.0.0.0")  # exposed on purpose: any name
    assert not host_allowed("127.0.0.1.evil.example", "127.0.0.1")


def _reset_after(port, data: bytes):
    """Send `data`, then reset the connection (SO_LINGER 0) without reading an answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.sendall(data)
    s.close()


def test_a_client_that_goes_away_is_one_log_line(caplog, capfd):
    """Clients that closed or reset their connections gave tracebacks (62 of them after
    the slow-client test): each is now one INFO line, and the server serves on."""
    caplog.set_level(logging.INFO, logger=SERVER_LOG)
    body = b'{"text": "w1 w2 said ."}'
    request = (
        b"POST /api/summarize HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    with _server(delay_s=0.4, read_timeout_s=1.0, request_deadline_s=2.0) as (port, _):
        for _ in range(3):
            _reset_after(port, request)  # gone before its answer is written
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(request[:-5])  # closed in the middle of its body
        time.sleep(1.5)
        assert _post(port, body)[0] == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err, err[-2000:]
    messages = [r.getMessage() for r in caplog.records]
    assert not any(r.exc_info for r in caplog.records)
    assert not any("Traceback" in m for m in messages), messages
    gone = [m for m in messages if "connection closed" in m]
    assert len(gone) == 4 and all("\n" not in m for m in gone), messages
    assert any("went away after" in m for m in gone), gone


# ------------------------------------------------------------ item 8: log injection
def test_what_a_client_sent_is_logged_escaped(caplog):
    """A request line holding terminal escapes or a carriage return reached the log raw
    (the standard library escapes them, but the server's own log_message did not)."""
    caplog.set_level(logging.INFO, logger=SERVER_LOG)
    with _server() as (port, _):
        assert b" 404 " in _raw(port, b"GET /\x1b]0;owned\x07\x1b[2J HTTP/1.0\r\n\r\n")[:20]
        assert b" 400 " in _raw(port, b"GET /a\rFORGED - 200 OK HTTP/1.0\r\n\r\n")[:20]
        assert b"400" in _raw(port, b"GET /\xc2\x85\xe2\x80\xae HTTP/9\r\n\r\n")
    messages = [r.getMessage() for r in caplog.records]
    assert messages, "nothing was logged"
    for m in messages:
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in m), repr(m)
    text = "\n".join(messages)
    assert "\\x1b]0;owned\\x07\\x1b[2J" in text and "\\x0dFORGED" in text, text


def test_printable_escapes_controls_and_invisible_reordering():
    from pointer_generator.serving.connections import printable

    assert printable("a\x1b[2Jb\r\nc\x85") == "a\\x1b[2Jb\\x0d\\x0ac\\x85"
    assert printable("x\u202eevil\u2028y\\") == "x\\u202eevil\\u2028y\\\\"
    assert printable("Zürich 日本 café") == "Zürich 日本 café"  # printable text stays


# ------------------------------------------------------------ item 9: deep nesting
DEEP = "[" * 100_000


def test_a_deeply_nested_body_is_a_400():
    """Before: 500 `internal error: maximum recursion depth exceeded`."""
    with _server() as (port, _):
        for body in (DEEP, '{"text": ' + DEEP):
            status, answer = _post(port, body.encode())
            assert status == 400, answer
            assert "nested too deeply" in answer["error"], answer
        assert _post(port, b'{"text": "w1 w2 said ."}')[0] == 200


def test_convert_of_a_deeply_nested_json_file_is_one_error_line(tmp_path):
    """Before: exit 3 with a RecursionError."""
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    proc = helpers.run_python(
        ["-m", "data_tools.convert", "--format", "json", f"--input={deep}",
         f"--out_dir={tmp_path / 'out'}"],
        timeout=120,
    )  # fmt: skip
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(f"error: {deep}: cannot be read as JSON")
    assert "nested too deeply" in lines[0]


def _read_recipe_state(path):
    from experiments.paper.run_recipe import State

    return State(str(path))


def _read_recipe(path):
    from experiments.paper import recipe

    return recipe.load(str(path))


def _read_jsonl(path):
    from data_tools.convert import read_jsonl

    return list(read_jsonl(str(path)))


def _read_sample(path):
    from experiments.cpu_scale.split_sample import read_sample

    return read_sample(str(path))


def _read_export_info(path):
    from pointer_generator.summarizing import export_info

    return export_info.read(str(path))


def _read_settings(path):
    from pointer_generator.models import family_registry
    from pointer_generator.runtime import experiment_settings

    return experiment_settings.read(str(path.parent), family_registry)


def _read_saved_search(path):
    from pointer_generator.runtime import experiment_settings

    return experiment_settings.read_saved_search(str(path.parent))


def _recipe_error():
    from experiments.paper.recipe import RecipeError

    return RecipeError


@pytest.mark.parametrize(
    "reader, error, name",
    [
        (_read_jsonl, lambda: DataError, "data.jsonl"),
        (_read_sample, lambda: DataError, "sample.jsonl"),
        (_read_recipe_state, _recipe_error, "recipe_state.json"),
        (_read_recipe, _recipe_error, "my_recipe.json"),
        (_read_export_info, lambda: FlagError, "export_info.json"),
        (_read_settings, lambda: FlagError, "settings.json"),
        (_read_saved_search, lambda: FlagError, "search.json"),
        (_read_saved_search, lambda: FlagError, "last_decode.json"),
    ],
    ids=["convert_jsonl", "cpu_scale_sample", "recipe_state", "recipe", "export_info",
         "settings", "search", "last_decode"],
)  # fmt: skip
def test_every_json_reader_turns_deep_nesting_into_its_own_error(tmp_path, reader, error, name):
    """Each reader's own error naming the file (before: RecursionError, exit 3)."""
    path = tmp_path / name
    path.write_text(DEEP + "\n")
    with pytest.raises(error()) as e:
        reader(path)
    assert "nested too deeply" in str(e.value) and str(path) in str(e.value), str(e.value)


@pytest.mark.parametrize("content", [DEEP, "[1, 2]"], ids=["deep", "a_list"])
def test_files_read_only_for_a_hint_are_ignored_when_unreadable(tmp_path, content):
    """Files whose content is only a hint (a decode folder's record of its inputs, a
    lock's holder, ROUGE's finished-copy marker) count as absent, as when not JSON."""
    from pointer_generator.decoding import inputs_record
    from pointer_generator.evaluation import rouge_install
    from pointer_generator.runtime import locks

    (tmp_path / inputs_record.RECORD_FILE).write_text(content)
    assert inputs_record._read(str(tmp_path)) is None
    assert inputs_record.differences(None, {"data": 1}) == ["no record of its inputs"]
    (tmp_path / "lock").write_text(content)
    assert locks._holder(str(tmp_path / "lock")) == "a process whose details could not be read"
    (tmp_path / rouge_install._MARKER).write_text(content)
    assert rouge_install._is_ready(str(tmp_path), "0" * 64) is False


def test_a_deeply_nested_tf_config_is_a_flag_error(monkeypatch):
    from pointer_generator.training import distribution

    monkeypatch.setenv("TF_CONFIG", DEEP)
    with pytest.raises(FlagError, match="TF_CONFIG is not valid JSON .*nested too deeply"):
        distribution.make_strategy("multi_worker_mirrored")


# ------------------------------------------------------ item 10: export_info.json
VALID_INFO = {
    "experiment": "/logs/pgen",
    "checkpoint": "/logs/pgen/train/model.ckpt-9",
    "model": "pointer_generator",
    "vocab_size": 50000,
    "decode": {"beam_size": 4, "min_dec_steps": 35, "max_dec_steps": 100,
               "max_enc_steps": 400, "trigram_blocking": False, "length_penalty": 0.0,
               "block_unk": False},
    "exported": "2026-11-27T10:00:00+0000",
    "encoder_lengths": [100, 200, 300, 400],
}  # fmt: skip


def _fake_export(tmp_path, info) -> str:
    """A folder with a saved_model.pb (empty: never loaded, the info is checked first)
    and `info` (a dict, or the text itself) as assets/export_info.json."""
    folder = tmp_path / "exported"
    (folder / "assets").mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(b"")
    text = info if isinstance(info, str) else json.dumps(info)
    (folder / "assets" / "export_info.json").write_text(text)
    return str(folder)


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"encoder_lengths": "abc"}, '"encoder_lengths" must be null or a list of positive'),
        ({"encoder_lengths": [0, 400]}, '"encoder_lengths" must be'),
        ({"encoder_lengths": [300, 200]}, "in increasing order"),
        ({"encoder_lengths": [100, 10**9]}, "none over max_enc_steps (400), got [100, 1000000000]"),
        ({"encoder_lengths": [1.5]}, '"encoder_lengths" must be'),
        ({"vocab_size": -1}, '"vocab_size" must be a positive integer, got -1'),
        ({"vocab_size": True}, '"vocab_size" must be a positive integer, got true'),
        ({"model": 7}, '"model" must be a string, got 7'),
        ({"decode": []}, '"decode" must be an object of decode settings'),
        ({"decode": {"beam_size": "4"}}, '"decode.beam_size" must be a positive integer'),
        ({"decode": {"length_penalty": 1e999}}, '"decode.length_penalty" must be a finite'),
        ({"decode": {"block_unk": 1}}, '"decode.block_unk" must be true or false, got 1'),
        ({"decode": {"beams": 4}}, '"decode" holds "beams", which is not a decode setting'),
        ({"encoder_length": [400]}, '"encoder_length" is not an entry of this file'),
        ("[1, 2]", "it holds no JSON object"),
        ("{not json", "Expecting property name"),
        (DEEP, "nested too deeply"),
    ],
    ids=["lengths_text", "length_zero", "lengths_decreasing", "length_over_max",
         "length_float", "vocab_size_negative", "vocab_size_bool", "model_number",
         "decode_list", "decode_text_number", "decode_infinite", "decode_bool_number",
         "decode_unknown", "unknown_entry", "not_an_object", "not_json", "deep"],
)  # fmt: skip
def test_a_hand_edited_export_info_is_one_error(tmp_path, edit, message):
    """Before: `{"encoder_lengths": "abc"}` made serve --saved_model exit 3 (TypeError)."""

    info = edit if isinstance(edit, str) else {**VALID_INFO, **edit}
    folder = _fake_export(tmp_path, info)
    with pytest.raises(FlagError) as e:
        pg.SavedModelSummarizer(folder)
    text = str(e.value)
    path = os.path.join(folder, "assets", "export_info.json")
    assert text.startswith(f"{path} is unreadable ("), text
    assert message in text and "export the model again" in text, text


def test_what_export_writes_passes_the_check(tmp_path):
    """The reader's table of decode settings is the export's (a new decode flag of the
    export would otherwise make every new export unreadable)."""
    from pointer_generator.cli import export
    from pointer_generator.summarizing import export_info

    assert set(export_info.DECODE_TYPES) == set(
        export.HELP_FLAGS["decoding (fixed in the SavedModel)"]
    )
    path = tmp_path / "export_info.json"
    for info in (VALID_INFO, {**VALID_INFO, "encoder_lengths": None}, {}):
        path.write_text(json.dumps(info))
        assert export_info.read(str(path)) == info
    assert export_info.read(str(tmp_path / "none.json")) == {}  # an earlier version's


def test_serve_of_a_hand_edited_export_is_one_error_line(tmp_path):
    folder = _fake_export(tmp_path, {**VALID_INFO, "encoder_lengths": "abc"})
    proc = helpers.run_python(
        ["-m", "pointer_generator.cli.serve", f"--saved_model={folder}", "--serve_port=0"],
        timeout=180,
    )
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "export_info.json is unreadable" in lines[0] and '"encoder_lengths"' in lines[0]


# ------------------------------------------------------ item 11: trust and cost
@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
     "application/json; charset=latin-1", "application/jsonp"],
)  # fmt: skip
def test_a_body_not_sent_as_json_is_a_415(content_type):
    """A page of any site could POST text/plain here without asking (no CORS preflight)
    and have its text summarized; only application/json is taken now."""
    with _server() as (port, _):
        status, answer = _post(port, b'{"text": "w1 w2 said ."}', content_type)
        assert status == 415, answer
        assert "send the body as Content-Type: application/json" in answer["error"]
        for good in ("application/json", "Application/JSON; charset=UTF-8"):
            assert _post(port, b'{"text": "w1 w2 said ."}', good)[0] == 200


def test_the_page_sends_json_and_is_not_framed_by_other_sites():
    from importlib import resources

    page = resources.files("pointer_generator").joinpath("assets", "serve_page.html")
    assert '"Content-Type": "application/json"' in page.read_text("utf-8")
    with _server() as (port, _):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            assert r.headers["X-Frame-Options"] == "DENY"


def test_a_request_over_its_character_budget_is_a_413():
    """64 texts of 100,000 characters each were accepted and held the server for
    minutes; the texts of a request together are capped (max_request_chars)."""
    with _server(max_chars=40, max_request_chars=50) as (port, _):
        texts = ["w1 w2 w3 said . " * 2] * 2  # 32 characters each, 64 together
        status, answer = _post(port, json.dumps({"texts": texts}).encode())
        assert status == 413, answer
        assert answer["error"] == (
            "the texts have 64 characters together; the limit is 50 characters a request"
        )
        assert _post(port, json.dumps({"texts": texts[:1]}).encode())[0] == 200


def test_serve_max_request_chars_is_a_checked_flag():
    proc = helpers.run_python(
        ["-m", "pointer_generator.cli.serve", "--saved_model=/x", "--serve_max_request_chars=0"],
        timeout=120,
    )
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2 and lines == [
        "error: --serve_max_request_chars must be positive, got 0"
    ], proc.stderr[-2000:]
    from pointer_generator.cli import serve

    assert serve._loopback("127.0.0.1") and serve._loopback("::1")
    assert serve._loopback("localhost") and not serve._loopback("0.0.0.0")
