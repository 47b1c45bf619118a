"""`pointer-generator serve` (issue 21, item 3): the real server on a free port, its JSON
endpoint under concurrent requests (batched across clients), bad requests answered with
a 4xx JSON error while it keeps serving, and the page driven in headless Chromium."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

import pointer_generator as pg
from pointer_generator.serving.http_server import SummaryService, make_server
from tests import helpers

TEXT = "W3 w4 w5 w6 said . w7 w8 w9 w10 ."
OTHERS = [
    f"The w{i} w{i + 1} w{i + 2} and w{i + 3} . w{i + 4} w{i + 5} ." for i in range(11, 40, 3)
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = helpers.tiny_setup(tmp_path_factory.mktemp("serve"), n_train=8, n_val=2)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=3)) == 0
    summarizer = pg.Summarizer.from_experiment(
        data.log_root, "exp", beam_size=2, min_dec_steps=2, max_dec_steps=5
    )
    service = SummaryService(summarizer, "exp", max_batch=8, max_wait_s=0.05, max_chars=2000)
    httpd = make_server(service, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield url, summarizer, service
    httpd.shutdown()
    httpd.server_close()
    service.batcher.close()


def _post(url: str, body: bytes, headers=None) -> tuple[int, dict]:
    request = urllib.request.Request(url + "/api/summarize", data=body, method="POST")
    for k, v in (headers or {"Content-Type": "application/json"}).items():
        request.add_header(k, v)
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_json_endpoint_equals_the_python_api(server):
    url, summarizer, _ = server
    status, body = _post(url, json.dumps({"texts": [TEXT, OTHERS[0]]}).encode())
    assert status == 200
    want = summarizer.summarize([TEXT, OTHERS[0]])
    for got, w in zip(body["summaries"], want, strict=True):
        assert got["tokens"] == w.tokens and got["summary"] == w.text
        assert len(got["attention"]) == len(w.tokens) and len(got["p_gens"]) == len(w.tokens)
        # Each value is the float32 value rounded to 6 decimals, as Python's round does.
        assert got["attention"] == [[round(float(v), 6) for v in row] for row in w.attention]
        assert got["p_gens"] == [round(float(v), 6) for v in w.p_gens]
    with urllib.request.urlopen(url + "/healthz", timeout=30) as r:
        assert json.loads(r.read())["status"] == "ok"


def test_concurrent_clients_are_batched_together(server):
    url, summarizer, service = server
    want = {t: r.tokens for t, r in zip(OTHERS, summarizer.summarize(OTHERS), strict=True)}
    before = len(service.batcher.batch_sizes)
    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(lambda t: (t, _post(url, json.dumps({"text": t}).encode())), OTHERS * 2)
        )
    for text, (status, body) in answers:
        assert status == 200 and body["summaries"][0]["tokens"] == want[text]
    sizes = service.batcher.batch_sizes[before:]
    assert sum(sizes) == len(OTHERS) * 2 and max(sizes) > 1  # several clients per batch


@pytest.mark.parametrize(
    "body, headers, status, message",
    [
        (b"", None, 400, "not JSON"),
        (b'{"text": "   "}', None, 400, "text 0 is empty"),
        (b'{"text": "caf\xe9"}', None, 400, "not UTF-8"),
        (b"[1, 2]", None, 400, 'send a JSON object with "text"'),
        (b'{"texts": "abc"}', None, 400, '"texts" a list of strings'),
        (json.dumps({"text": "w " * 1500}).encode(), None, 413, "the limit is 2,000"),
    ],
)
def test_bad_requests_get_a_json_error_and_the_server_goes_on(
    server, body, headers, status, message
):
    url, _, _ = server
    got, answer = _post(url, body, headers)
    assert got == status and message in answer["error"]
    assert _post(url, json.dumps({"text": TEXT}).encode())[0] == 200


def test_other_paths_and_methods(server):
    url, _, _ = server
    for path, code in (("/nope", 404), ("/api/summarize", 405)):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url + path, timeout=30)
        assert e.value.code == code and "error" in json.loads(e.value.read())


def test_the_page_in_headless_chromium(server, tmp_path):
    from tests.test_attention_html import _chromium, _require_chromium

    _require_chromium()
    url, summarizer, _ = server
    page = f"{url}/?text={urllib.parse.quote(TEXT)}"
    dom = _chromium(tmp_path, page, "--virtual-time-budget=20000", "--dump-dom")
    want = summarizer.summarize([TEXT])[0]
    assert 'data-done="1"' in dom, dom[-2000:]
    assert want.text.replace("&", "&amp;") in dom
    assert "srcdoc=" in dom and "pg-data" in dom  # the attention view, loaded in the frame


@pytest.mark.parametrize("name", ["serve", "tune_features", "summarize", "export"])
def test_subcommand_modules_run_as_python_m(name):
    """`python -m pointer_generator.cli.<name>` is `pointer-generator <name>` (it used to
    exit 0 without doing anything)."""
    proc = helpers.run_python(["-m", f"pointer_generator.cli.{name}", "--help"], timeout=120)
    assert proc.returncode == 0 and f"pointer-generator {name}" in proc.stdout
    proc = helpers.run_python(["-m", f"pointer_generator.cli.{name}", "--nonsense=1"], timeout=120)
    assert proc.returncode == 2 and "error:" in proc.stderr


def test_the_batcher_waits_only_for_requests_on_their_way():
    """A lone request is decoded at once, not after max_wait_s; requests the server is
    still receiving (`arriving`) are waited for and share the batch."""
    import threading
    import time

    from pointer_generator.serving.batcher import RequestBatcher

    on_the_way = [0]
    batcher = RequestBatcher(
        lambda texts: [t.upper() for t in texts], 8, 30.0, arriving=lambda: on_the_way[0]
    )
    try:
        start = time.monotonic()
        assert batcher.submit(["a"]).result(timeout=20) == ["A"]
        assert time.monotonic() - start < 20  # not the 30 s wait
        assert batcher.batch_sizes == [1]
        # One more request is being received: the first waits for it.
        on_the_way[0] = 1
        first = batcher.submit(["b"])

        def second_arrives():
            time.sleep(0.3)
            on_the_way[0] = 0
            batcher.submit(["c", "d"])

        threading.Thread(target=second_arrives).start()
        assert first.result(timeout=20) == ["B"]
        assert batcher.batch_sizes == [1, 3]
    finally:
        batcher.close()
