"""Reading the original `.bin` chunk files with TensorFlow ops only (spec 2.4, 2.8).

A `.bin` file is a concatenation of records `[8-byte native int64 length N][N bytes of a
serialized tf.train.Example]`; it is not TFRecord, so `tf.data.TFRecordDataset` cannot
read it. Here a whole file is read with `tf.io.read_file`, the record offsets are found by
a `tf.while_loop` over the length prefixes, the records are cut out with one vectorised
`tf.strings.substr`, and `article` / `abstract` are parsed with `tf.io.parse_example`.
Everything is a graph op, so it runs inside tf.data's threads (no `py_function`).

Malformed files are reported in two layers:

* `validate_framing` (Python, at pipeline construction): reads only the 8-byte prefixes,
  so it is cheap even for the full training set, and raises `DataError` naming the file.
* Graph assertions (at iteration time): the same framing checks, plus "is this record an
  Example" and "does it have both features". Their messages carry a marker that
  `data_errors()` turns back into a `DataError` at the Python boundary.
"""

from __future__ import annotations

import codecs
import contextlib
import glob
import os
import re
import struct
import sys

import tensorflow as tf

from pointer_generator.errors import DataError

_PREFIX = struct.Struct("q")  # native order and size, as the original wrote it
_PREFIX_SIZE = _PREFIX.size
_LITTLE_ENDIAN = sys.byteorder == "little"
# TF strings (and so tf.io.read_file results) are indexed with int32 lengths.
MAX_FILE_BYTES = 2**31 - 1 - _PREFIX_SIZE

# Graph assertion messages are wrapped in these markers so that data_errors() can find
# them inside TensorFlow's "assertion failed: [...] [[node ...]]" text.
_MARK_OPEN, _MARK_CLOSE = "PGDataError<<", ">>"
_MARK_RE = re.compile(re.escape(_MARK_OPEN) + "(.*?)" + re.escape(_MARK_CLOSE), re.DOTALL)
# tf.io.parse_example's errors do not name the file: this finds it.
_FIND_IT = (
    "`python -m pointer_generator.cli.check_bin_files '<--data_path>'` names the file and record"
)
# tf.io.parse_example's error for a feature of another type than declared.
_WRONG_TYPE_RE = re.compile(r"Key: (\w+), Index: (\d+)\.\s+Data types don't match")


# ------------------------------------------------------------------------------ Python side
def list_files(data_path: str) -> list[str]:
    """Files matching the glob `data_path`, sorted lexicographically; DataError if none."""
    matches = sorted(glob.glob(data_path))
    if not matches:
        raise DataError(f"--data_path {data_path!r} matches no files")
    for m in matches:
        # Each endless pass re-globs with tf.io.matching_files, which cannot tell
        # directories apart, so they are refused here rather than failing later.
        if not os.path.isfile(m):
            raise DataError(f"--data_path {data_path!r} matches {m!r}, which is not a file")
    return matches


def validate_framing(path: str) -> int:
    """Check a file's record framing by reading only the length prefixes.

    Returns the number of records; raises DataError naming the file and the record.
    """
    try:
        size = os.path.getsize(path)
        f = open(path, "rb")
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror})") from None
    if size > MAX_FILE_BYTES:
        raise DataError(
            f"{path}: {size} bytes is too large for one TensorFlow string "
            "(split it into chunks, e.g. with binfile.write_chunked)"
        )
    pos, index = 0, 0
    with f:
        while pos < size:
            f.seek(pos)
            prefix = f.read(_PREFIX_SIZE)
            if len(prefix) < _PREFIX_SIZE:
                raise DataError(_truncated_prefix_msg(path, index, size - pos))
            (n,) = _PREFIX.unpack(prefix)
            pos += _PREFIX_SIZE
            if n < 0 or n > size - pos:
                raise DataError(_bad_length_msg(path, index, n, size - pos))
            pos += n
            index += 1
    return index


def validate_records(path: str) -> int:
    """`validate_framing`, then every record's protobuf structure read in Python
    (`binfile.decode_example`) before TensorFlow parses it: TensorFlow 2.21's Example
    parser stops the process with a segmentation fault on some malformed records (a bytes
    value whose length varint overflows, found by tests/test_fuzz.py), where one error
    line naming the file is due. About 0.1 s for 40 MB of records. Returns the number of
    records; raises DataError naming the file and the record."""
    from pointer_generator.data import binfile

    n = validate_framing(path)
    for index, raw in enumerate(binfile.iter_raw_records(path)):
        try:
            binfile.decode_example(raw)
        except ValueError as e:
            raise DataError(
                f"{path}: record {index} is not a serialized tf.train.Example ({e})"
            ) from None
    return n


def _truncated_prefix_msg(path, index, left) -> str:
    return (
        f"{path}: record {index} is truncated: {left} bytes left where an "
        f"{_PREFIX_SIZE}-byte length prefix was expected"
    )


def _bad_length_msg(path, index, n, left) -> str:
    return (
        f"{path}: record {index} claims {n} bytes but only {left} remain in the file "
        "(truncated, or not a .bin file)"
    )


@contextlib.contextmanager
def data_errors():
    """Turn the pipeline's graph assertion failures into `DataError`.

    Wrap the iteration of a dataset from this package:

        with data_errors():
            for batch in dataset: ...

    Other TensorFlow errors pass through unchanged.
    """
    try:
        yield
    except tf.errors.OpError as e:
        found = _MARK_RE.search(e.message or "")
        if found:
            raise DataError(_c_unescape(found.group(1))) from None
        if "Could not parse example input" in (e.message or ""):
            # Only reachable for bytes that pass the header check below but are still
            # not a protobuf; TF's message does not name the file.
            raise DataError(
                "a .bin record is not a serialized tf.train.Example "
                f"(TensorFlow: {e.message[:300]})"
            ) from None
        wrong_type = _WRONG_TYPE_RE.search(e.message or "")
        if wrong_type:
            # An int64 or float feature where bytes are expected; TF's message gives the
            # record index in its file but not the file.
            key, index = wrong_type.groups()
            raise DataError(
                f"a .bin record's {key!r} feature is not a bytes feature (record "
                f"{index} of its file; {_FIND_IT})"
            ) from None
        if isinstance(e, tf.errors.InvalidArgumentError) and "ParseExample" in (e.message or ""):
            # Any other protobuf tf.io.parse_example rejects (bytes that pass the header
            # check but are not a valid Example, e.g. a feature of an unknown kind).
            raise DataError(
                "a .bin record is not a valid tf.train.Example (TensorFlow: "
                f"{_op_reason(e.message)}; {_FIND_IT})"
            ) from None
        raise
    except UnicodeDecodeError as e:
        # TensorFlow quotes the bad record in its error message, and that message cannot
        # even be turned into a Python exception when the bytes are not UTF-8.
        if _raised_in_tensorflow(e):
            raise DataError(
                "a .bin record is not a valid tf.train.Example (TensorFlow's "
                f"error message about it is not even text; {_FIND_IT})"
            ) from None
        raise


def _op_reason(message: str) -> str:
    """The line of a TensorFlow op error that says what is wrong (the one before the
    `[[{{node ...}}]]` line), without the Python traceback of where the op was made."""
    lines = [line.strip() for line in message.splitlines()]
    for i, line in enumerate(lines):
        if line.startswith("[[{{node") and i and lines[i - 1]:
            return lines[i - 1][:300]
    return lines[0][:300] if lines else ""


def _raised_in_tensorflow(error: BaseException) -> bool:
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and f"{os.sep}tensorflow{os.sep}" in tb.tb_frame.f_code.co_filename


def _c_unescape(text: str) -> str:
    """Undo the C escaping TensorFlow applies to assertion data (quotes, non-ASCII)."""
    return codecs.escape_decode(text.encode("utf-8"))[0].decode("utf-8", errors="replace")


# ------------------------------------------------------------------------------- graph side
def assert_data(ok, message):
    """Graph assertion whose failure data_errors() reports as DataError(message)."""
    return tf.debugging.Assert(ok, [tf.strings.join([_MARK_OPEN, message, _MARK_CLOSE])])


def _str(x):
    return tf.strings.as_string(x)


def _pad(content):
    # Zero padding lets fixed-width reads start at any position < size without a branch.
    return tf.strings.join([content, b"\0" * _PREFIX_SIZE])


def record_spans(path, content, padded):
    """Offsets and lengths of the serialized Examples in a `.bin` file's bytes.

    Args:
      path: scalar string, the file name (for error messages).
      content: scalar string, the whole file; `padded`: the same plus 8 zero bytes.
    Returns:
      (starts [n_records] int64, lengths [n_records] int64, assert op).
    """
    size = tf.cast(tf.strings.length(content), tf.int64)
    k = tf.constant(_PREFIX_SIZE, tf.int64)

    def read_prefix(pos):
        return tf.io.decode_raw(
            tf.strings.substr(padded, pos, k), tf.int64, little_endian=_LITTLE_ENDIAN
        )[0]

    # The loop is the only sequential part; it carries as few values as possible because
    # each loop variable costs executor work per record. A bad prefix jumps to size + 1,
    # which ends the loop and is diagnosed afterwards.
    def body(pos, prefixes):
        nxt = pos + k + read_prefix(pos)
        nxt = tf.where((nxt < pos + k) | (nxt > size), size + 1, nxt)
        return nxt, prefixes.write(prefixes.size(), pos)

    end, prefixes = tf.while_loop(
        lambda pos, _: pos < size,
        body,
        (tf.constant(0, tf.int64), tf.TensorArray(tf.int64, 0, dynamic_size=True)),
    )
    prefix_pos = tf.reshape(prefixes.stack(), [-1])

    def fail():
        bad = tf.size(prefix_pos, out_type=tf.int64) - 1
        at = prefix_pos[bad]
        left = size - at - k
        msg = tf.cond(
            left < 0,
            lambda: tf.strings.join(
                [
                    path,
                    ": record ",
                    _str(bad),
                    " is truncated: ",
                    _str(left + k),
                    f" bytes left where an {_PREFIX_SIZE}-byte length prefix was expected",
                ]
            ),
            lambda: tf.strings.join(
                [
                    path,
                    ": record ",
                    _str(bad),
                    " claims ",
                    _str(read_prefix(at)),
                    " bytes but only ",
                    _str(left),
                    " remain in the file (truncated, or not a .bin file)",
                ]
            ),
        )
        with tf.control_dependencies([assert_data(False, msg)]):
            return tf.constant(False)

    check = tf.cond(tf.equal(end, size), lambda: tf.constant(True), fail)
    lens = tf.concat([prefix_pos[1:], [end]], 0) - prefix_pos - k
    return prefix_pos + k, lens, check


def _example_header_ok(padded, starts, lens):
    """[n] bool: record is empty or begins like a serialized tf.train.Example.

    A serialized Example is field 1 (`features`, tag byte 0x0a) followed by its varint
    length, and that field spans the rest of the record. Checking this catches garbage
    before `tf.io.parse_example`, whose own error would not name the file.
    """
    six = tf.fill(tf.shape(starts), tf.constant(6, tf.int64))
    head = tf.io.decode_raw(tf.strings.substr(padded, starts, six), tf.uint8)
    head = tf.reshape(tf.cast(head, tf.int64), [-1, 6])  # [n, 6]: tag byte + up to 5 varint bytes
    tag, varint = head[:, 0], head[:, 1:]
    more = varint >= 128  # continuation bits
    ends = tf.logical_not(more)
    terminated = tf.reduce_any(ends, axis=1)
    n_bytes = tf.argmax(tf.cast(ends, tf.int32), axis=1, output_type=tf.int64) + 1
    weights = tf.bitwise.left_shift(tf.ones([5], tf.int64), tf.range(0, 35, 7, tf.int64))
    used = tf.range(5, dtype=tf.int64)[None, :] < n_bytes[:, None]
    value = tf.reduce_sum(tf.where(used, tf.bitwise.bitwise_and(varint, 127) * weights, 0), axis=1)
    return (lens == 0) | ((tag == 0x0A) & terminated & (1 + n_bytes + value == lens))


def _first_bad(ok):
    """Index of the first False in `ok` ([n] bool); n when there is none."""
    return tf.argmin(tf.concat([tf.cast(ok, tf.int32), [0]], 0), output_type=tf.int64)


def read_bin_file(path):
    """Parse one `.bin` file into its text fields, with every check applied.

    Args:
      path: scalar string tensor.
    Returns:
      dict of [n_records] tensors: `article`, `abstract` (string), `record` (int64, the
      record index in the file, for messages).
    """
    content = tf.io.read_file(path)
    padded = _pad(content)
    starts, lens, framing_ok = record_spans(path, content, padded)
    with tf.control_dependencies([framing_ok]):
        header_ok = _example_header_ok(padded, starts, lens)
        bad = _first_bad(header_ok)
        is_example = assert_data(
            tf.reduce_all(header_ok),
            tf.strings.join(
                [path, ": record ", _str(bad), " is not a serialized tf.train.Example"]
            ),
        )
    with tf.control_dependencies([is_example]):
        serialized = tf.strings.substr(content, starts, lens)
        parsed = tf.io.parse_example(
            serialized,
            {"article": tf.io.RaggedFeature(tf.string), "abstract": tf.io.RaggedFeature(tf.string)},
        )
    checks = []
    for name in ("article", "abstract"):
        present = parsed[name].row_lengths() > 0
        checks.append(
            assert_data(
                tf.reduce_all(present),
                tf.strings.join(
                    [
                        path,
                        ": record ",
                        _str(_first_bad(present)),
                        f" has no {name!r} bytes feature",
                    ]
                ),
            )
        )
    with tf.control_dependencies(checks):
        # Each feature holds one value; like the original, a longer list uses the first.
        out = {
            name: tf.gather(parsed[name].values, parsed[name].row_starts())
            for name in ("article", "abstract")
        }
        out["record"] = tf.range(tf.size(starts, out_type=tf.int64))
    return out


def raw_records(path):
    """[n_records] string: the serialized Examples of one file, byte for byte."""
    content = tf.io.read_file(path)
    starts, lens, check = record_spans(path, content, _pad(content))
    with tf.control_dependencies([check]):
        return tf.strings.substr(content, starts, lens)


# ASCII whitespace, the separators of the words (`tf.strings.split`, Python 2's split).
_NO_WORDS = r"[ \t\n\r\x0b\x0c]*"
_HAS_SENTENCE_TAG = r"\C*<s>\C*"


def drop_empty_articles(path, examples):
    """Drop records whose article has no word (spec 2.8: the original skipped empty ones;
    whitespace only is as empty), logging a per-file count.

    The count is printed to stderr by the graph (`tf.print`), once per file that has any.
    """
    keep = ~tf.strings.regex_full_match(examples["article"], _NO_WORDS)
    n_empty = tf.reduce_sum(tf.cast(tf.logical_not(keep), tf.int32))
    warn = tf.cond(n_empty > 0, lambda: _warn(path, n_empty), lambda: tf.constant(False))
    with tf.control_dependencies([warn]):
        return {k: tf.boolean_mask(v, keep) for k, v in examples.items()}


# RE2 (UTF-8 mode) matches this class only with code points decoded from valid UTF-8 (no
# surrogates, nothing past U+10FFFF, no overlong forms), so a full match is exactly Python's
# strict `bytes.decode("utf-8")` check (tests/test_data_errors.py), and fast.
_VALID_UTF8 = r"[\x{0}-\x{D7FF}\x{E000}-\x{10FFFF}]*"


def warn_non_utf8(path, examples):
    """Warn once per file (per pass) about records whose text is not valid UTF-8.

    Such text is used as it is, bytes and all, as the original (Python 2 byte strings)
    did: the invalid words become OOVs and show as U+FFFD in decoded text. The warning
    goes to stderr: `WARNING: pointer_generator input pipeline: <file>: N example(s)
    whose text is not valid UTF-8 (first: record R); ...`.
    """
    ok = tf.strings.regex_full_match(
        examples["article"], _VALID_UTF8
    ) & tf.strings.regex_full_match(examples["abstract"], _VALID_UTF8)
    return _warn_about(
        path,
        examples,
        ~ok,
        "whose text is not valid UTF-8",
        "; the bytes are used as they are (invalid ones show as U+FFFD in decoded text)",
    )


def warn_untagged_abstracts(path, examples):
    """Warn once per file (per pass) about abstracts with words but no `<s>` tag: the
    original reads only the text between `<s>` and `</s>`, so their target is just
    [STOP]. (An empty abstract, as `summarize` makes, is not warned about.)"""
    untagged = ~tf.strings.regex_full_match(
        examples["abstract"], _NO_WORDS
    ) & ~tf.strings.regex_full_match(examples["abstract"], _HAS_SENTENCE_TAG)
    return _warn_about(
        path,
        examples,
        untagged,
        "whose abstract has no <s> ... </s> sentence tags",
        ": their target is only [STOP]; make .bin files with data_tools, which tags every "
        "abstract sentence",
    )


def _warn_about(path, examples, bad, what: str, consequence: str):
    """`examples`, after printing (to stderr, once per file and pass, only if any)
    `WARNING: pointer_generator input pipeline: <path>: N example(s) <what> (first:
    record R)<consequence>` for the records where `bad` [n] is true."""
    n_bad = tf.reduce_sum(tf.cast(bad, tf.int32))

    def warn():
        first = tf.gather(examples["record"], _first_bad(~bad))
        message = tf.strings.join(
            [
                "WARNING: pointer_generator input pipeline: ",
                path,
                ": ",
                _str(n_bad),
                f" example(s) {what} (first: record ",
                _str(first),
                ")" + consequence,
            ]
        )
        with tf.control_dependencies([tf.print(message, output_stream=sys.stderr)]):
            return tf.constant(True)

    done = tf.cond(n_bad > 0, warn, lambda: tf.constant(False))
    with tf.control_dependencies([done]):
        return {k: tf.identity(v) for k, v in examples.items()}


def count_tagged_abstracts(abstracts) -> tf.Tensor:
    """int32: how many of `abstracts` [n] hold a `<s>` sentence tag."""
    return tf.reduce_sum(
        tf.cast(tf.strings.regex_full_match(abstracts, _HAS_SENTENCE_TAG), tf.int32)
    )


def _warn(path, n):
    with tf.control_dependencies(
        [
            tf.print(
                "WARNING: pointer_generator input pipeline:",
                path,
                ": skipped",
                n,
                "example(s) with an empty article (no words)",
                output_stream=sys.stderr,
            )
        ]
    ):
        return tf.constant(True)
