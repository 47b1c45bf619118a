"""What `serve` does with requests it cannot serve (docs/reliability.md): a text that
cannot be summarized fails only its own request, whatever batch it shares; the batcher
survives and /healthz says so; methods other than GET and POST get a 405; clients that
connect and send nothing are cut off, and connections are capped.

The server runs a stub summarizer on 127.0.0.1 (the isolation of a bad text is what is
tested, not the model); `post_concurrently` is used by test_export.py too.
"""

from __future__ import annotations

import json
import threading

import pytest

import pointer_generator as pg
from pointer_generator.errors import DataError, FlagError


class _StubSummarizer:
    """Summarizer's interface with its text check, failing a batch that holds a text
    the check lets through but the model cannot take (as the graph tokenizer may)."""

    def __init__(self):
        from pointer_generator.summarizing.summarizer import check_text

        self.check_text = check_text
        self.calls = []

    def summarize(self, texts):
        self.calls.append(list(texts))
        for i, t in enumerate(texts):
            if "POISON" in t:
                raise DataError(f"text {i + 1}: no article text to summarize")
        return [pg.SummaryResult.of(t.split()[:2], t.split(), [[1.0]], [0.5], -1.0) for t in texts]


def _stub_service(**options):
    from pointer_generator.serving.http_server import SummaryService, make_server

    # The batcher always waits 0.3 s, so that concurrent requests share batches even
    # though the stub decodes at once (the isolation of a bad text is what is tested).
    service = SummaryService(
        _StubSummarizer(),
        "stub",
        max_batch=16,
        max_wait_s=0.3,
        wait_for_arrivals_only=False,
        **options,
    )
    httpd = make_server(service, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}", service, httpd


@pytest.fixture
def stub_server():
    url, service, httpd = _stub_service()
    yield url, service, httpd
    httpd.shutdown()
    httpd.server_close()
    service.batcher.close()


def _post(url, payload, method="POST"):
    import urllib.error
    import urllib.request

    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    request = urllib.request.Request(url + "/api/summarize", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        body = e.read()
        return e.code, json.loads(body) if body else {}


def post_concurrently(url, payloads) -> list:
    """(status, JSON body) of each payload, all sent at once by as many clients."""
    results = [None] * len(payloads)

    def send(i):
        results[i] = _post(url, payloads[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(payloads))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


@pytest.mark.parametrize(
    "bad, status, message",
    [
        ("&nbsp;", 422, "text 0: no article text to summarize"),
        ("@highlight", 422, "text 0: no article text to summarize"),
        ("\u200b", 422, "text 0: no article text to summarize"),
        ("\u0000", 422, "text 0: no article text to summarize"),
        ("\ud800 w5", 400, "text 0 is not valid Unicode: a lone surrogate (U+D800) at character 0"),
        ("w4 POISON w5", 422, "no article text"),  # passes the check, fails the model
    ],
    ids=["nbsp", "highlight", "zero_width", "nul", "surrogate", "model_refuses"],
)
def test_a_text_that_cannot_be_summarized_fails_only_its_own_request(
    stub_server, bad, status, message
):
    url, service, _ = stub_server
    good = [f"w{i} w{i + 1} said . w{i + 2} ." for i in range(5)]
    results = post_concurrently(url, [{"text": t} for t in good] + [{"text": bad}])
    for (code, body), text in zip(results[:-1], good, strict=True):
        assert code == 200, body
        assert body["summaries"][0]["tokens"] == text.split()[:2]
    assert results[-1][0] == status and message in results[-1][1]["error"]
    assert any(len(call) > 1 for call in service.summarizer.calls)  # they did share batches


def test_the_batcher_survives_and_health_says_so(stub_server):
    import urllib.request

    url, service, _ = stub_server
    with urllib.request.urlopen(url + "/healthz", timeout=30) as r:
        assert json.loads(r.read())["status"] == "ok"
    from pointer_generator.serving.batcher import RequestBatcher

    for wait in (float("nan"), float("inf"), -1.0):
        with pytest.raises(FlagError, match="max_wait_s"):
            RequestBatcher(lambda texts: texts, 4, wait)


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_other_methods_get_a_405(stub_server, method):
    url, _, _ = stub_server
    code, body = _post(url, b"{}", method=method)
    assert code == 405
    if method != "HEAD":
        assert "not served" in body["error"]


def test_stalled_clients_are_cut_off_and_capped():
    """No read timeout: 300 stalled sockets held 326 threads."""
    import socket
    import time

    url, service, httpd = _stub_service(read_timeout_s=1.0, max_connections=4)
    try:
        port = httpd.server_address[1]
        stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
        time.sleep(0.3)
        extra = socket.create_connection(("127.0.0.1", port))
        extra.settimeout(10)
        assert b" 503 " in extra.recv(200).split(b"\r\n")[0]  # over max_connections: at once
        extra.close()
        time.sleep(1.7)  # read_timeout_s=1: the stalled ones are cut off ...
        for s in stalled:
            s.settimeout(5)
            assert s.recv(100) == b""  # closed by the server
            s.close()
        assert _post(url, {"text": "w1 w2 said ."})[0] == 200  # ... and it serves on
    finally:
        httpd.shutdown()
        httpd.server_close()
        service.batcher.close()
