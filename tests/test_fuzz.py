"""Fuzzing with hypothesis (bounded example counts, every example under a time limit):
the `.bin` readers (pure Python, the framing check, the TensorFlow reader and the whole
input pipeline), the vocab reader and the PTB tokenizer either parse their input or
raise the project's own error type. They never fail with another exception and never
hang. Where two readers see the same file they must agree.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import tempfile
import time

import pytest
import tensorflow as tf
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import pointer_generator as pg
from pointer_generator.data import bin_dataset, binfile, ptb_tokenizer, stories
from pointer_generator.data import input_pipeline as ip
from pointer_generator.errors import DataError, VocabError
from tests import helpers


def fuzz(examples: int) -> settings:
    """Bounded: `examples` inputs per test, no per-example deadline (time_limit instead)."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


@contextlib.contextmanager
def time_limit(seconds: float):
    """Turn a hang into a test failure (SIGALRM; the tests run in the main thread)."""

    def expired(signum, frame):
        raise TimeoutError(f"no result within {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _write(data: bytes) -> str:
    fd, path = tempfile.mkstemp(suffix=".bin", prefix="fuzz_")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


@contextlib.contextmanager
def bin_file(data: bytes):
    path = _write(data)
    try:
        yield path
    finally:
        os.remove(path)


# ------------------------------------------------------------------------------ inputs
TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
PAIRS = st.lists(st.tuples(TEXT, TEXT), max_size=5)


def _file_of(pairs) -> bytes:
    return b"".join(binfile.encode_record(a, b) for a, b in pairs)


@st.composite
def damaged_files(draw):
    """A valid `.bin` file with one kind of damage, or bytes that never were one."""
    data = _file_of(draw(PAIRS))
    kind = draw(
        st.sampled_from(["truncate", "flip", "insert", "prefix", "append", "raw", "example"])
    )
    if kind == "raw":
        return draw(st.binary(max_size=300))
    if kind == "example":  # a framed record whose payload is anything (a bad protobuf)
        payload = draw(st.binary(max_size=80))
        return data + struct.pack("q", len(payload)) + payload
    if kind == "append":
        return data + draw(st.binary(min_size=1, max_size=40))
    if not data:
        return draw(st.binary(max_size=40))
    at = draw(st.integers(0, len(data) - 1))
    if kind == "truncate":
        return data[:at]
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=12)) + data[at:]
    prefix = struct.pack("q", draw(st.integers(-(2**63), 2**63 - 1)))  # "prefix"
    return prefix + data[8:] if at < 8 else data[:at] + prefix + data[at + 8 :]


# ------------------------------------------------------------------------------ .bin
def _varint_in_bytes_list() -> bytes:
    """A record whose `abstract` bytes_list holds a varint field (found by the test
    below: the decoder raised TypeError)."""
    field = binfile._len_field
    abstract = field(1, field(1, b"abstract") + field(2, field(1, b"\x08\x0a")))
    article = field(1, field(1, b"article") + field(2, field(1, field(1, b"w1"))))
    example_bytes = field(1, article + abstract)
    return struct.pack("q", len(example_bytes)) + example_bytes


@fuzz(300)
@given(damaged_files())
@example(_varint_in_bytes_list())
def test_python_reader_parses_or_raises_data_error(data):
    with bin_file(data) as path, time_limit(10):
        try:
            pairs = list(binfile.read_records(path))
        except DataError as e:
            assert path in str(e)
            return
    assert all(isinstance(a, str) and isinstance(b, str) for a, b in pairs)


@fuzz(300)
@given(damaged_files())
def test_framing_check_agrees_with_the_python_reader(data):
    with bin_file(data) as path, time_limit(10):
        try:
            want = len(list(binfile.iter_raw_records(path)))
        except DataError:
            want = None
        try:
            got = bin_dataset.validate_framing(path)
        except DataError as e:
            assert path in str(e)
            got = None
    assert got == want


@fuzz(200)
@given(PAIRS)
def test_python_reader_round_trips_what_was_written(pairs):
    with bin_file(_file_of(pairs)) as path:
        assert list(binfile.read_records(path)) == pairs


_read_bin_file = tf.function(
    bin_dataset.read_bin_file, input_signature=[tf.TensorSpec([], tf.string)]
)


@fuzz(120)
@given(st.one_of(damaged_files(), PAIRS.map(_file_of)))
# Found by this test: TensorFlow's error message quotes the record and is not UTF-8 (a
# UnicodeDecodeError from inside TensorFlow); a feature of an unknown kind ("Unsupported
# datatype"); an int64 feature where bytes are expected.
@example(
    b"%\x00\x00\x00\x00\x00\x00\x00\n#\xff\xff\xff\xff\xff\xff\xff\xff"
    b"cle\x12\x04\n\x02\n\x00\n\x10\n\x08abstract\x12\x04\n\x02\n\x00"
)
@example(
    b"%\x00\x00\x00\x00\x00\x00\x00\n#\n\x0f\n\x07article\x12\x04\x0b\x02\n"
    b"\x00\n\x10\n\x08abstract\x12\x04\n\x02\n\x00"
)
@example(
    b"%\x00\x00\x00\x00\x00\x00\x00\n#\n\x0f\n\x07article\x12\x04\x1a\x02\n"
    b"\x00\n\x10\n\x08abstract\x12\x04\n\x02\n\x00"
)
# Found by this test in a Debian 12 run: a bytes value whose length varint overflows made
# TensorFlow's parser crash the process (a segmentation fault); `make_dataset` reads every
# record's structure in Python first (`bin_dataset.validate_records`), as here.
@example(
    b",\x00\x00\x00\x00\x00\x00\x00\n*\n\x16\n\x07article\x12\x0b\n\t\n\x07\xc2\xa9\xc3\xa8"
    b"\xc3\xbc\x0f\n\x10\n\x08abstract\x12\x04\n\x02\n\x00E\x00\x00\x00\x00\x00\x00\x00\nC"
    b"\n\x1b\n\x07article\x12\x10\n\x0e\n\xdb\xe5\xff\xff\xff\xff\xff\xff\x896\xc2\xb8\x0b"
    b"\n$\n\x08abstract\x12\x18\n\x16\n\x14a=Q\xc2\xbe\xf3\x94\xbb\x8bM\xf3\x81\xa3\x8a"
    b"\xf1\x9e\xa5\x80\x1dF"
)
def test_tensorflow_reader_parses_or_raises_data_error(data):
    with bin_file(data) as path, time_limit(30):
        try:
            want = list(binfile.read_records(path))
        except DataError:
            want = None
        try:
            bin_dataset.validate_records(path)  # as make_dataset does before the reader
            with ip.data_errors():
                out = _read_bin_file(tf.constant(path))
            got = list(zip(out["article"].numpy(), out["abstract"].numpy(), strict=True))
        except DataError:
            got = None
    if want is not None and data == _file_of(want):
        # A file as the writers make it: the TensorFlow reader gives the same texts.
        assert got == [(a.encode("utf-8"), b.encode("utf-8")) for a, b in want]
    if got is None:
        # Its errors point users to `python -m pointer_generator.cli.check_bin_files` when
        # TensorFlow cannot name the file: that checker must find every problem too.
        assert want is None


@pytest.fixture(scope="module")
def tiny_vocab(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fuzz_vocab") / "vocab")
    helpers.write_vocab(path)
    return pg.Vocab(path, 100)


@fuzz(12)
@given(
    data=st.one_of(damaged_files(), PAIRS.map(_file_of)), mode=st.sampled_from(["train", "decode"])
)
def test_input_pipeline_gives_batches_or_a_data_error(tiny_vocab, data, mode):
    """The whole pipeline, example building included, on damaged files and any text."""
    hps = helpers.hparams(batch_size=2)
    with bin_file(data) as path, time_limit(60):
        try:
            with ip.data_errors():
                dataset = ip.make_dataset(path, tiny_vocab, hps, mode, single_pass=True)
                batches = list(dataset.take(5))
        except DataError:
            return
    for batch in batches:
        assert batch["enc_batch"].shape[0] <= 2
        assert int(tf.reduce_max(batch["enc_lens"])) <= hps.max_enc_steps


# ------------------------------------------------------------------------------ vocab
VOCAB_LINES = st.lists(
    st.one_of(
        st.tuples(
            st.text(st.characters(codec="utf-8"), min_size=1, max_size=8), st.integers(0, 10**6)
        ).map(lambda wc: f"{wc[0]} {wc[1]}".encode()),
        st.binary(max_size=20),
        st.sampled_from([b"[UNK] 5", b"<s> 4", b"w1", b"", b"a b c", b"\xff\xfe 3"]),
    ),
    max_size=12,
)


@fuzz(200)
@given(lines=VOCAB_LINES, size=st.integers(0, 20))
def test_vocab_reader_loads_or_raises_vocab_error(lines, size):
    with bin_file(b"\n".join(lines)) as path, time_limit(10):
        try:
            vocab = pg.Vocab(path, size)
        except VocabError as e:
            assert path in str(e)
            return
    words = vocab.words
    assert len(set(words)) == len(words) and words[:4] == ["[UNK]", "[PAD]", "[START]", "[STOP]"]
    assert not size or len(words) <= max(size, 4)


# ------------------------------------------------------------------------------ tokenizer
# Characters and pieces that the tokenizer's rules treat specially: quotes, dashes,
# abbreviations, numbers, URLs and e-mail addresses, SGML entities, clitics.
TRICKY_CHARS = list(
    ".,-'`\"()[]{}&;:!?$%@#/\\_*+=<>~|^ \n\t\r\u00a0\u2019\u2018\u201c\u201d"
    "\u2026\u00ad\u2013\u2014\u00a3\u20ac0123456789aAbBnNtTsSUeé"
)
TRICKY_PIECES = [
    "U.S.",
    "U.S",
    "http://",
    "https://www.",
    "www.",
    ".com",
    "n't",
    "N'T",
    "'s",
    "'ll",
    "--",
    "...",
    ". . .",
    "&amp;",
    "&apos;",
    "&lt;",
    "1,000",
    "3.5",
    "a.m.",
    "p.m",
    "e-mail",
    "@",
    "Mr.",
    "Jan.",
    "-LRB-",
    "(",
    ")",
    "cannot",
    "gonna",
    "'em",
    "''",
    "``",
    "2/3",
    "$5",
    "10%",
    "@highlight",
    " ",
    "\n",
]
TOKENIZER_TEXT = st.one_of(
    st.text(st.sampled_from(TRICKY_CHARS), max_size=120),
    st.lists(st.sampled_from(TRICKY_PIECES + TRICKY_CHARS), max_size=40).map("".join),
    st.text(max_size=80),  # any Unicode but lone surrogates ...
    st.text(
        st.one_of(st.characters(categories=["Cs"]), st.sampled_from(TRICKY_CHARS)), max_size=40
    ),  # ... which text read with errors="surrogateescape" can hold
)


@fuzz(400)
@given(TOKENIZER_TEXT)
def test_tokenizer_always_tokenizes(text):
    with time_limit(10):
        lines = ptb_tokenizer.tokenize(text)
        printed = ptb_tokenizer.tokenize_text(text)
    assert isinstance(lines, list) and all(isinstance(t, str) and t for line in lines for t in line)
    assert printed == "\n".join(" ".join(line) for line in lines)
    assert not any(c in t for line in lines for t in line for c in " \t\n\r")


@fuzz(100)
@given(article=TOKENIZER_TEXT, highlights=st.lists(TOKENIZER_TEXT, max_size=3))
@example(article="", highlights=["</S>"])  # a literal tag in a highlight (found by fuzzing)
@example(article="a", highlights=["x <s> y", "</s>"])
def test_raw_stories_always_give_an_article_and_a_tagged_abstract(article, highlights):
    with time_limit(10):
        processed = stories.process_raw_story(stories.story_text(article, highlights))
    story = processed.story
    assert isinstance(story.article, str) and processed.untokenizable >= 0
    sentences = story.abstract.split(" </s>")
    assert story.abstract == "" or all(
        s.startswith("<s> ") or s.startswith(" <s> ") for s in sentences[:-1]
    )


@pytest.mark.parametrize(
    "text",
    [
        "." * 20000,
        "a." * 10000,
        "-" * 20000,
        "'" * 20000,
        "`" * 20000,
        "1," * 10000,
        "1." * 10000,
        "http://" + "a/" * 8000,
        "www." + "a." * 8000,
        "&amp;" * 4000,
        "U.S." * 5000,
        "a-" * 10000,
        "\u00ad" * 20000,
        "(" * 20000,
        "a'" * 10000,
        "n't" * 6000,
        "@" * 20000,
        "a@b." * 5000,
        "$" * 20000,
        "Mr." * 6000,
    ],
    ids=lambda t: repr(t[:8]),
)
def test_tokenizer_takes_linear_time_on_long_repetitive_input(text):
    """20,000 characters of one tricky pattern (the worst case of backtracking regular
    expressions) tokenize in well under the time of a pathological scan."""
    start = time.time()
    with time_limit(20):
        lines = ptb_tokenizer.tokenize(text)
    assert len(lines) == 1
    assert time.time() - start < 10
