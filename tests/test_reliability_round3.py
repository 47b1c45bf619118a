"""Reliability, third round (issue 27): what an adversarial user found outside the
tables of the first two rounds, each bug a class whose siblings are tested here too.

Training never deletes or rotates away a file it did not write (a relative --log_root,
a user's folder named like a save's leftover); an experiment keeps and checks its own
vocabulary; the server fails only the request whose text cannot be summarized; every
line-oriented reader splits at newlines only; every number of every command is
range-checked; sharded decodes share one checkpoint and finish when a shard is empty;
hand-edited settings, ABS+ weights, output paths and a deleted lock file are errors,
not wrong results. Runs are in process where the command line itself is not the point.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

from pointer_generator.errors import DataError, FlagError
from tests import helpers


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error: ")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny experiment trained to step 3 (model.ckpt-0 and -3)."""
    data = helpers.tiny_setup(tmp_path_factory.mktemp("round3"), n_train=12, n_val=5)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=3)) == 0
    return data


def _copy(data, name: str) -> str:
    """A copy of the trained experiment named `name`; returns its folder."""
    root = os.path.join(data.log_root, name)
    shutil.copytree(os.path.join(data.log_root, "exp"), root)
    return root


# ------------------------------------------------------------- 1. relative --log_root
def test_a_relative_log_root_rotates_only_its_own_checkpoints(tmp_path, monkeypatch, caplog):
    """Resuming with a relative --log_root (as the README writes it) joined the state
    file's paths twice and rotation deleted `./model.ckpt-3.*` of the working directory,
    while the real checkpoints were never rotated away."""
    data = helpers.tiny_setup(tmp_path, n_train=12, n_val=2)
    monkeypatch.chdir(tmp_path)
    decoys = {}
    for name in ("model.ckpt-3.index", "model.ckpt-3.data-00000-of-00001"):
        decoys[name] = f"a file of the user's: {name}".encode()
        (tmp_path / name).write_bytes(decoys[name])

    def run(steps):
        args = helpers.run_args(data, "rel", max_steps=steps, log_root="logs")
        assert helpers.run_main_in_process(args) == 0

    for steps in (3, 6, 9, 12):
        run(steps)
    for name, content in decoys.items():
        assert (tmp_path / name).read_bytes() == content
    train_dir = tmp_path / "logs" / "rel" / "train"
    assert helpers.checkpoint_steps(str(train_dir)) == [6, 9, 12]  # rotated: newest 3
    state = (train_dir / "checkpoint").read_text()
    assert "../" not in state and "logs/" not in state, state
    assert "missing or damaged" not in caplog.text


def test_state_file_entries_outside_the_folder_are_dropped_not_deleted(trained, tmp_path, caplog):
    """A state file written by the earlier bug (`"../../../model.ckpt-3"`): the training
    job drops the entry and never touches the file it names."""
    from pointer_generator.runtime import checkpointing

    root = _copy(trained, "foreign")
    train_dir = os.path.join(root, "train")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(
            os.path.join(train_dir, "model.ckpt-0" + suffix), outside / f"model.ckpt-1{suffix}"
        )
    rel = os.path.relpath(outside / "model.ckpt-1", train_dir)
    with open(os.path.join(train_dir, "checkpoint"), "w") as f:
        f.write(
            f'model_checkpoint_path: "model.ckpt-3"\nall_model_checkpoint_paths: "{rel}"\n'
            'all_model_checkpoint_paths: "model.ckpt-0"\n'
            'all_model_checkpoint_paths: "model.ckpt-3"\n'
        )
    with caplog.at_level("WARNING"):
        newest = checkpointing.recover_train_dir(train_dir)
    assert newest == os.path.join(train_dir, "model.ckpt-3")
    assert "not a checkpoint of this folder" in caplog.text
    state = open(os.path.join(train_dir, "checkpoint")).read()
    assert "elsewhere" not in state and "../" not in state
    assert sorted(os.listdir(outside)) == ["model.ckpt-1.data-00000-of-00001", "model.ckpt-1.index"]
    args = helpers.run_args(trained, "foreign", max_steps=9, save_checkpoint_secs=3600)
    assert helpers.run_main_in_process(args) == 0
    assert sorted(os.listdir(outside)) == ["model.ckpt-1.data-00000-of-00001", "model.ckpt-1.index"]


# ------------------------------------------------------------- 2. `_temp` folders
def test_only_a_saves_own_leftover_folder_is_removed(trained, caplog):
    """The glob was `*_temp*`: a training start deleted `my_templates/` and
    `notes_temporary/` with the user's files in them."""
    root = _copy(trained, "temps")
    train_dir = os.path.join(root, "train")
    users = {
        "my_templates/a.txt": "mine",
        "notes_temporary/b.txt": "mine too",
        "model.ckpt-9_temp/notes.txt": "named like a leftover, but holds a user's file",
        "x_temp/part-00000-of-00001.index": "not a checkpoint prefix",
    }
    for rel, text in users.items():
        os.makedirs(os.path.join(train_dir, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(train_dir, rel), "w") as f:
            f.write(text)
    leftover = os.path.join(train_dir, "model.ckpt-7_temp")
    os.makedirs(leftover)
    for name in ("part-00000-of-00001.index", "part-00000-of-00001.data-00000-of-00001"):
        open(os.path.join(leftover, name), "wb").close()
    with caplog.at_level("INFO"):
        args = helpers.run_args(trained, "temps", max_steps=4)
        assert helpers.run_main_in_process(args) == 0
    for rel, text in users.items():
        with open(os.path.join(train_dir, rel)) as f:
            assert f.read() == text
    assert not os.path.exists(leftover)
    assert "model.ckpt-7_temp, left by a save that did not finish" in caplog.text
    assert "my_templates" not in caplog.text and "notes_temporary" not in caplog.text


# ------------------------------------------------------------- 3. the vocabulary
def test_the_experiment_keeps_and_checks_its_own_vocabulary(trained, tmp_path, capfd):
    """Re-making the data folder rewrote `vocab`, and decode used the new file silently
    (ROUGE-1 0.955 -> 0.501); a moved experiment lost a relative vocabulary path."""
    root = _copy(trained, "vocab_exp")
    settings = json.load(open(os.path.join(root, "settings.json")))
    assert settings["vocab"]["copy"] == "vocab"
    with open(os.path.join(root, "vocab"), "rb") as a, open(trained.vocab_path, "rb") as b:
        assert a.read() == b.read()
    decode = helpers.run_args(trained, "vocab_exp", mode="decode", single_pass=True,
                              beam_size=2, max_dec_steps=4, vocab_path="")  # fmt: skip
    decode = [a for a in decode if not a.startswith("--vocab_path")]
    assert helpers.run_main_in_process(decode) == 0
    folder = os.path.join(root, [d for d in os.listdir(root) if d.startswith("decode_")][0])
    first = _decoded(folder)
    os.rename(folder, folder + ".first")
    capfd.readouterr()
    # The data folder is made again: its vocabulary changes; the experiment's does not.
    moved_vocab = str(tmp_path / "vocab.orig")
    shutil.move(trained.vocab_path, moved_vocab)
    try:
        with open(trained.vocab_path, "w") as f:
            f.write("".join(f"other{i} {100 - i}\n" for i in range(60)))
        assert helpers.run_main_in_process(decode) == 0
        assert _errors(capfd.readouterr().err) == []
        assert _decoded(folder) == first and len(first) == 5  # the same summaries
        # --vocab_path naming the changed file is refused.
        given = [*decode, f"--vocab_path={trained.vocab_path}"]
        assert helpers.run_main_in_process(given) == 2
        errors = _errors(capfd.readouterr().err)
        assert len(errors) == 1 and "is not the vocabulary this experiment was trained" in errors[0]
        assert os.path.join(root, "vocab") in errors[0]
        # The experiment's own copy, edited: one error naming it.
        with open(os.path.join(root, "vocab"), "a") as f:
            f.write("extra 1\n")
        assert helpers.run_main_in_process(decode) == 2
        errors = _errors(capfd.readouterr().err)
        assert len(errors) == 1 and errors[0].startswith(
            f"error: {os.path.join(root, 'vocab')} is not"
        )
    finally:
        os.replace(moved_vocab, trained.vocab_path)


def _decoded(folder: str) -> dict:
    sub = os.path.join(folder, "decoded")
    return {n: open(os.path.join(sub, n)).read() for n in sorted(os.listdir(sub))}


def test_a_moved_experiment_still_works(trained, tmp_path, capfd):
    src = _copy(trained, "to_move")
    new_root = tmp_path / "elsewhere" / "logs"
    new_root.mkdir(parents=True)
    shutil.move(src, new_root / "moved")
    import pointer_generator as pg

    saved = trained.vocab_path + ".away"
    os.replace(trained.vocab_path, saved)  # the data folder is gone too
    try:
        summarizer = pg.Summarizer.from_experiment(str(new_root), "moved", beam_size=2)
        assert summarizer.summarize(["w3 w4 w5 said . w6 w7 ."])[0].tokens
    finally:
        os.replace(saved, trained.vocab_path)


def test_an_older_experiment_without_a_copy_checks_the_vocabulary_it_names(trained, capfd):
    root = _copy(trained, "old_style")
    path = os.path.join(root, "settings.json")
    settings = json.load(open(path))
    del settings["vocab"]["copy"]
    json.dump(settings, open(path, "w"))
    os.remove(os.path.join(root, "vocab"))
    decode = [a for a in helpers.run_args(trained, "old_style", mode="decode", single_pass=True)
              if not a.startswith("--vocab_path")]  # fmt: skip
    saved = open(trained.vocab_path, "rb").read()
    try:
        with open(trained.vocab_path, "ab") as f:
            f.write(b"zzz 1\n")
        assert helpers.run_main_in_process(decode) == 2
        errors = _errors(capfd.readouterr().err)
        assert len(errors) == 1 and "changed since this experiment was trained" in errors[0]
    finally:
        open(trained.vocab_path, "wb").write(saved)


# ------------------------------------------------------------- 10. settings.json
@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s.update(flags=[1, 2]), '"flags" must be an object'),
        (lambda s: s.update(vocab="x"), '"vocab" must be an object'),
        (
            lambda s: s["flags"].update(hidden_dim="abc"),
            '"hidden_dim" must be an integer, got "abc"',
        ),
        (lambda s: s["flags"].update(hidden_dim=None), '"hidden_dim" must be an integer, got null'),
        (lambda s: s["flags"].update(hidden_dim=24.7), '"hidden_dim" must be an integer, got 24.7'),
        (lambda s: s["flags"].update(pointer_gen=1), '"pointer_gen" must be true or false'),
        (lambda s: s["flags"].update(secret=1), "'secret', which is not a model setting"),
        (lambda s: s["flags"].update(hidden_dim=-8), "--hidden_dim must be positive, got -8"),
        (lambda s: s.clear(), '"flags" must be an object'),
    ],
    ids=[
        "flags_list",
        "vocab_str",
        "str",
        "null",
        "float",
        "int_bool",
        "unknown",
        "negative",
        "empty",
    ],  # fmt: skip
)
def test_a_hand_edited_settings_file_is_one_error_line(trained, capfd, edit, message):
    name = f"settings_{len(os.listdir(trained.log_root))}"
    root = _copy(trained, name)
    path = os.path.join(root, "settings.json")
    settings = json.load(open(path))
    edit(settings)
    json.dump(settings, open(path, "w"))
    decode = [a for a in helpers.run_args(trained, name, mode="decode", single_pass=True)
              if not a.startswith(("--vocab_path", "--hidden_dim"))]  # fmt: skip
    assert helpers.run_main_in_process(decode) == 2
    errors = _errors(capfd.readouterr().err)
    assert len(errors) == 1 and message in errors[0], errors
    if "--hidden_dim" not in message:
        assert path in errors[0]
    import pointer_generator as pg

    with pytest.raises(FlagError, match=message.replace("(", r"\(").replace("[", r"\[")):
        pg.Summarizer.from_experiment(trained.log_root, name)


# ------------------------------------------------------------- 4. serving
class _StubSummarizer:
    """Summarizer's interface with its text check, failing a batch that holds a text
    the check lets through but the model cannot take (as the graph tokenizer may)."""

    def __init__(self):
        from pointer_generator.decoding.summarizer import check_text

        self.check_text = check_text
        self.calls = []

    def summarize(self, texts):
        self.calls.append(list(texts))
        for i, t in enumerate(texts):
            if "POISON" in t:
                raise DataError(f"text {i + 1}: no article text to summarize")
        from pointer_generator.decoding.summarizer import SummaryResult

        return [SummaryResult.of(t.split()[:2], t.split(), [[1.0]], [0.5], -1.0) for t in texts]


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


# ------------------------------------------------------------- 5. line splitting
SEPARATORS = ["\u2028", "\u2029", "\u0085", "\v", "\f", "\x1c", "\x1d", "\x1e"]


def test_parallel_files_split_at_newlines_only(tmp_path, capfd):
    """`str.splitlines()` broke lines at U+2028 and friends: two 3-line files gave
    "4 examples written" and every later pair was misaligned."""
    from data_tools import sumdata
    from pointer_generator.data.binfile import read_records
    from pointer_generator.data.text_files import text_lines

    articles = [f"a{i} w{i}{sep}x{i} y" for i, sep in enumerate(SEPARATORS[:3])]
    titles = [f"t{i}" for i in range(3)]
    (tmp_path / "a.txt").write_text("\n".join(articles) + "\n", encoding="utf-8")
    (tmp_path / "t.txt").write_text("\r\n".join(titles) + "\r\n", encoding="utf-8")
    out = tmp_path / "out"
    code = sumdata.main(["--articles", str(tmp_path / "a.txt"), "--titles", str(tmp_path / "t.txt"),
                         "--out_dir", str(out), "--set_name", "test"])  # fmt: skip
    assert code == 0 and "3 examples written" in capfd.readouterr().out
    pairs = list(read_records(str(out / "test.bin")))
    assert [p[1] for p in pairs] == [f"<s> t{i} </s>" for i in range(3)]
    assert [p[0].split()[0] for p in pairs] == ["a0", "a1", "a2"]
    for sep in SEPARATORS:
        assert text_lines(f"one{sep}two\nthree\n") == [f"one{sep}two", "three"]
    assert text_lines("a\r\nb") == ["a", "b"] and text_lines("") == []


def test_weight_files_and_prefix_references_split_at_newlines_only(tmp_path):
    from experiments import prefix
    from pointer_generator.decoding.extractive_features import read_weights

    path = tmp_path / "w.txt"
    path.write_text("# tuned \x1c by hand\nuni 1.5\n\nbogus 2\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"w.txt:4: expected"):
        read_weights(str(path))
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ref1.txt").write_text("one\u2028half\ntwo\n", encoding="utf-8")
    assert prefix._extra_references(str(refs)) == [["one\u2028half", "two"]]


# ------------------------------------------------------------- 6. numbers
def test_every_numeric_flag_has_a_range():
    from pointer_generator.cli import flags as flags_lib
    from pointer_generator.cli.flag_bounds import BOUNDS

    numeric = {
        name
        for name, flag in flags_lib.FLAGS._flags().items()
        if name == flag.name
        and type(flag.parser).__name__ in ("IntegerParser", "FloatParser")
        and flags_lib.FLAGS.find_module_defining_flag(name).startswith("pointer_generator")
    }
    assert numeric == set(BOUNDS), (numeric - set(BOUNDS), set(BOUNDS) - numeric)
    defaults = helpers.flag_defaults()
    for name, bound in BOUNDS.items():
        assert bound.problem(defaults[name]) is None, name  # every default is valid


def test_nan_inf_and_values_below_range_are_refused_for_every_flag():
    from pointer_generator.cli.flag_bounds import BOUNDS, check_numbers

    for name, bound in BOUNDS.items():
        bad = [float("nan"), float("inf"), float("-inf")]
        if bound.low is not None:
            bad.append(bound.low if bound.open_low else bound.low - 1)
        if bound.high is not None:
            bad.append(bound.high + 1)
        for value in bad:
            namespace = helpers.flag_namespace(**{name: value})
            with pytest.raises(FlagError, match=f"^--{name} must be"):
                check_numbers(namespace)


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["serve", "--saved_model=/x", "--serve_max_wait_ms=nan"],
            "--serve_max_wait_ms must be a finite",
        ),
        (
            ["serve", "--saved_model=/x", "--serve_max_wait_ms=inf"],
            "--serve_max_wait_ms must be a finite",
        ),
        (
            ["serve", "--saved_model=/x", "--serve_max_wait_ms=-1"],
            "--serve_max_wait_ms must be in [0, 60000]",
        ),
        (["serve", "--saved_model=/x", "--log_root=/l", "--exp_name=e"], "name two models"),
        (["summarize", "--length_penalty=nan"], "--length_penalty must be a finite"),
        (["export", "--beam_size=0"], "--beam_size must be positive"),
        (["tune_features", "--random_starts=-2"], "--random_starts must be >= 0"),
        (["--mode=train", "--lr=inf"], "--lr must be a finite number"),
        (["--mode=decode", "--eval_interval_secs=1e300"], "--eval_interval_secs must be in"),
        (["--mode=train", "--seed=-1"], "--seed must be in [0, 4294967295]"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_the_commands_refuse_bad_numbers_in_one_line(args, message):
    proc = helpers.run_python(["-m", "pointer_generator.cli.entry", *args], timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert lines == [lines[0]] and lines[0].startswith("error: ") and message in lines[0], lines


def _argparse_commands():
    return [
        "pointer_generator.cli.quickstart",
        "data_tools.make_datafiles",
        "data_tools.toy_data",
        "data_tools.convert",
        "data_tools.sumdata",
        "data_tools.gigaword_raw",
        "data_tools.proxy_task",
        "pointer_generator.evaluation.rouge",
        "experiments.lead3",
        "experiments.prefix",
        "experiments.report",
        "experiments.analysis",
        "experiments.paper.run_recipe",
        "experiments.cpu_scale.run_all",
        "experiments.cpu_scale.split_sample",
        "experiments.families.run_proxy",
        "experiments.families.report",
        "experiments.benchmarks.pipeline",
        "experiments.benchmarks.train_step",
        "experiments.benchmarks.decode",
        "experiments.benchmarks.families",
        "experiments.benchmarks.serve",
        "experiments.benchmarks.export",
    ]


@pytest.mark.parametrize("module", _argparse_commands())
def test_every_argparse_number_is_range_checked(module, monkeypatch):
    """Each command's parser, caught as its main parses `--help`: no plain int/float."""
    import importlib

    from pointer_generator.cli import arg_types

    parsers = []

    class Caught(BaseException):  # not an Exception: the commands' wrapper lets it through
        pass

    def parse_args(self, args=None, namespace=None):
        parsers.append(self)
        raise Caught

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_args)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", parse_args)
    mod = importlib.import_module(module)
    with pytest.raises((Caught, SystemExit)):
        mod.main(["--help"])
    assert parsers, module
    for action in parsers[0]._actions:
        assert action.type not in (int, float), f"{module} {action.option_strings}"
        if action.type is not None and getattr(action.type, "__module__", "") != "builtins":
            if action.type.__name__.endswith(("_int", "_float")):
                assert action.type in arg_types.CHECKED


@pytest.mark.parametrize(
    "args",
    [["--vocab_size", "0"], ["--chunk_size", "-5"], ["--num_workers", "nan"]],
    ids=["vocab_size_0", "chunk_size_negative", "workers_nan"],
)
def test_converters_refuse_meaningless_sizes(tmp_path, args):
    text = tmp_path / "a.txt"
    text.write_text("Some article text.", encoding="utf-8")
    proc = helpers.run_python(
        ["-m", "data_tools.convert", "--format", "text", "--input", str(text), "--out_dir",
         str(tmp_path / "out"), *args], timeout=120,
    )  # fmt: skip
    assert (
        proc.returncode == 2 and "must be" in proc.stderr and f"argument {args[0]}" in proc.stderr
    )
    assert not (tmp_path / "out" / "vocab").exists()


def test_min_dec_steps_above_the_experiments_max_is_refused(trained, capfd):
    decode = helpers.run_args(trained, "exp", mode="decode", single_pass=True, min_dec_steps=9)
    decode = [a for a in decode if not a.startswith("--max_dec_steps")]  # stored: 8
    assert helpers.run_main_in_process(decode) == 2
    errors = _errors(capfd.readouterr().err)
    assert len(errors) == 1 and "--min_dec_steps=9 is above --max_dec_steps=8" in errors[0]
    import pointer_generator as pg

    with pytest.raises(FlagError, match="min_dec_steps=9 is above max_dec_steps=8"):
        pg.Summarizer.from_experiment(trained.log_root, "exp", min_dec_steps=9)


# ------------------------------------------------------------- 7. sharded decode
def _decode_shards(data, exp, count, extra=()):
    args = helpers.run_args(data, exp, mode="decode", single_pass=True, beam_size=2,
                            min_dec_steps=1, max_dec_steps=4, decode_batch_size=2)  # fmt: skip
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pointer_generator.cli.run_summarization",
                *args,
                *extra,
                f"--decode_shards={count}",
                f"--decode_shard={i}",
            ],
            env=helpers.subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for i in range(count)
    ]
    return [(p.communicate(timeout=600)[0], p.returncode) for p in procs]


def test_more_shards_than_examples_still_merge(tmp_path):
    data = helpers.tiny_setup(tmp_path, n_train=8, n_val=2)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=2)) == 0
    results = _decode_shards(data, "exp", 3)
    outputs = [out for out, _ in results]
    assert all(code == 0 for _, code in results), outputs
    assert sum("has no examples" in out for out in outputs) == 1
    assert sum("Merged 3 shards: 2 examples" in out for out in outputs) == 1, outputs
    exp = os.path.join(data.log_root, "exp")
    folder = [d for d in os.listdir(exp) if d.startswith("decode_")]
    assert len(folder) == 1
    assert sorted(os.listdir(os.path.join(exp, folder[0], "decoded"))) == [
        f"{i:06d}_decoded.txt" for i in range(2)
    ]
    assert not os.path.exists(os.path.join(exp, "decode_shard_pins", ""))  # unpinned


def test_shards_share_the_first_shards_checkpoint(tmp_path, capfd):
    """Shards that loaded different checkpoints (training going on) wrote different
    `..._ckpt-N` folders and never merged."""
    data = helpers.tiny_setup(tmp_path, n_train=8, n_val=4)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=2)) == 0
    decode = helpers.run_args(data, "exp", mode="decode", single_pass=True, beam_size=2,
                              min_dec_steps=1, max_dec_steps=4, decode_batch_size=2)  # fmt: skip
    assert helpers.run_main_in_process([*decode, "--decode_shards=2", "--decode_shard=0"]) == 0
    first = capfd.readouterr().out
    assert "Pinned" in first and "model.ckpt-2" in first
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=4)) == 0
    assert helpers.run_main_in_process([*decode, "--decode_shards=2", "--decode_shard=1"]) == 0
    second = capfd.readouterr().out
    assert "pinned by the first shard" in second and "newer now" in second
    assert "Merged 2 shards: 4 examples" in second
    exp = os.path.join(data.log_root, "exp")
    folders = [d for d in os.listdir(exp) if d.startswith("decode_")]
    assert len(folders) == 1 and folders[0].endswith("ckpt-2")


# ------------------------------------------------------------- 8, 9. ABS+ weights
@pytest.mark.parametrize("value", ["1e39", "1e308", "-1e7", "nan", "inf"])
def test_feature_weights_that_overflow_float32_are_refused(tmp_path, value):
    from pointer_generator.decoding.extractive_features import read_weights

    path = tmp_path / "w.txt"
    path.write_text(f"uni {value}\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"w.txt:1: the weight .* is out of range"):
        read_weights(str(path))
    path.write_text("uni 1e6\nlm 1\n", encoding="utf-8")
    assert read_weights(str(path))["uni"] == 1e6


def test_new_output_files_are_checked_first_and_never_overwritten(tmp_path):
    from pointer_generator.runtime import staging

    existing = tmp_path / "w.txt"
    existing.write_text("the user's", encoding="utf-8")
    for path, message in (
        (tmp_path, "is a folder"),
        (existing, "exists already"),
        (tmp_path / "no" / "w.txt", "does not exist"),
    ):
        with pytest.raises(FlagError, match=message):
            staging.check_new_file(str(path), "weights_out")
    target = tmp_path / "new.txt"
    staging.check_new_file(str(target), "weights_out")
    staging.write_new_file(str(target), "uni 1\n", "weights_out")
    assert target.read_text() == "uni 1\n"
    with pytest.raises(FlagError, match="appeared while this ran"):
        staging.write_new_file(str(existing), "uni 2\n", "weights_out")
    assert existing.read_text() == "the user's"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".new")]  # kept, not lost


def test_files_written_by_several_processes_at_once_never_fail(tmp_path):
    """Decode shards write the same decode_inputs.json at once: each write goes through
    its own temporary file (a shared `path.tmp` made one shard's rename fail with
    FileNotFoundError, exit 3, about one full test run in three). Threads race the same
    way: every write succeeds, the file holds one whole text, no temporary is left."""
    from concurrent.futures import ThreadPoolExecutor

    from pointer_generator.runtime import staging

    path = str(tmp_path / "decode_inputs.json")
    texts = [json.dumps({"writer": i, "pad": "x" * 5000}) for i in range(8)]

    def write(i):
        for _ in range(100):
            staging.replace_file(path, texts[i])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(8)))  # re-raises any writer's error
    with open(path, encoding="utf-8") as f:
        assert f.read() in texts
    assert os.listdir(tmp_path) == ["decode_inputs.json"]
    with pytest.raises(OSError):
        staging.replace_file(str(tmp_path / "no" / "such.json"), "{}")


def test_tune_features_checks_weights_out_before_decoding(trained, tmp_path):
    root = _copy(trained, "abs_like")
    path = os.path.join(root, "settings.json")
    settings = json.load(open(path))
    settings["flags"].update(model="abs", pointer_gen=False)
    json.dump(settings, open(path, "w"))
    existing = tmp_path / "weights.txt"
    existing.write_text("mine\n")
    for out, message in ((tmp_path, "is a folder"), (existing, "exists already")):
        proc = helpers.run_python(
            ["-m", "pointer_generator.cli.entry", "tune_features", f"--log_root={trained.log_root}",
             "--exp_name=abs_like", f"--data_path={trained.val_path}", f"--weights_out={out}"],
            timeout=120,
        )  # fmt: skip
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert "round" not in proc.stderr  # refused before any decoding
    assert existing.read_text() == "mine\n"


# ------------------------------------------------------------- 11. export's staging
def test_a_killed_exports_staging_folder_is_removed_and_a_late_folder_kept(tmp_path):
    import socket

    from pointer_generator.cli import export
    from pointer_generator.runtime import staging

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".export-{socket.gethostname()}-{dead.pid}-abc"
    stale.mkdir()
    (stale / "saved_model.pb").write_bytes(b"half")
    mine = tmp_path / f".export-{socket.gethostname()}-{os.getpid()}-live"
    mine.mkdir()
    users = tmp_path / ".export-notes"
    users.mkdir()
    staging.remove_stale(str(tmp_path), "export")
    assert not stale.exists() and mine.exists() and users.exists()
    # A folder made at --export_dir while exporting: an error line, the folder untouched.
    target = tmp_path / "model"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(FlagError, match="was created while the model was being exported"):
        export._move_into_place(str(mine), str(target))
    assert (target / "keep.txt").read_text() == "mine" and mine.exists()


# ------------------------------------------------------------- smaller ones
def test_deleting_the_lock_file_lets_no_second_writer_in(tmp_path):
    from pointer_generator.runtime import locks

    directory = str(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom pointer_generator.runtime import locks\n"
         "locks.acquire(sys.argv[1], 'training job', 'x')\nprint('locked', flush=True)\n"
         "time.sleep(600)\n", directory],
        stdout=subprocess.PIPE, text=True, env=helpers.subprocess_env(), cwd=helpers.REPO_ROOT,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        os.remove(os.path.join(directory, locks.LOCK_FILE))
        with pytest.raises(locks.DirectoryBusyError, match="another training job is writing"):
            locks.acquire(directory, "training job", "x")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    locks.acquire(directory, "training job", "x")
    locks.release(directory)


def test_summarize_of_an_endless_input_is_one_error(trained):
    proc = helpers.run_python(
        ["-m", "pointer_generator.cli.entry", "summarize", f"--log_root={trained.log_root}",
         "--exp_name=exp", "/dev/zero"], timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "error: /dev/zero: larger than 16 MiB" in proc.stderr


def test_parquet_and_tfrecord_errors_name_the_right_record(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from data_tools import convert, dataset_files
    from pointer_generator.data.binfile import encode_example

    rows = [{"article": f"Article {i} .", "highlights": "A summary ."} for i in range(7)]
    rows[5]["article"] = None
    table = pa.Table.from_batches(
        [pa.RecordBatch.from_pylist(rows[:3]), pa.RecordBatch.from_pylist(rows[3:])]
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=3)
    with pytest.raises(DataError, match=r"t.parquet row 5"):
        list(
            dataset_files.read_parquet(
                str(path), lambda row, where: convert._record(row, where, False)
            )
        )
    import tensorflow as tf

    def tfrecord(name, *examples):
        path = tmp_path / name
        with tf.io.TFRecordWriter(str(path)) as w:
            for example in examples:
                w.write(example if isinstance(example, bytes) else example.SerializeToString())
        return str(path)

    good = encode_example({"article": b"One .", "highlights": b"S ."})
    int64 = tf.train.Example()
    int64.features.feature["article"].int64_list.value.append(3)
    several = tf.train.Example()
    several.features.feature["article"].bytes_list.value.extend([b"a", b"b"])
    make = lambda row, where: row  # noqa: E731
    rows_read = dataset_files.read_tfrecord(tfrecord("a.tfrecord", good, int64), make)
    assert next(rows_read)["article"] == "One ."
    with pytest.raises(DataError, match=r"record 1: the 'article' feature is not a bytes"):
        next(rows_read)
    with pytest.raises(DataError, match=r"record 0: the 'article' feature holds 2 values"):
        list(dataset_files.read_tfrecord(tfrecord("b.tfrecord", several), make))
