"""Reading and writing the original release's `.bin` files (spec section 2.4).

A file is a plain concatenation of records, each an 8-byte native-order signed length
(struct format 'q', little-endian int64 on x86) followed by that many bytes of a
serialized `tf.train.Example` with two single-value bytes features, `article` and
`abstract`. This is not TFRecord (no CRCs).

The Example is encoded and decoded here by hand (it is a tiny protobuf subset) so that data
tools and tests do not need to import TensorFlow, and so that the bytes are identical to
what the original wrote: `article` entry first, then `abstract`.
"""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
from collections.abc import Iterable, Iterator

from pointer_generator.errors import DataError

_LEN_FMT = "q"  # native, as the original wrote it
_LEN_SIZE = struct.calcsize(_LEN_FMT)


# ----------------------------------------------------------------------------- protobuf
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _len_field(field: int, payload: bytes) -> bytes:
    return _varint((field << 3) | 2) + _varint(len(payload)) + payload


def encode_example(features: dict[str, bytes]) -> bytes:
    """Serialize {name: bytes} as a `tf.train.Example` of single-value bytes features.

    Entries are written in the dict's order (the original inserted article, then abstract).
    """
    entries = b""
    for key, value in features.items():
        feature = _len_field(1, _len_field(1, value))  # Feature{bytes_list{value}}
        entries += _len_field(1, _len_field(1, key.encode("utf-8")) + _len_field(2, feature))
    return _len_field(1, entries)  # Example{features}


def _read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if pos >= end:
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, object]]:
    """Yield (field number, wire type, value) of a message; LEN values as (start, end)."""
    pos = start
    while pos < end:
        key, pos = _read_varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, pos = _read_varint(buf, pos, end)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        elif wire == 2:
            n, pos = _read_varint(buf, pos, end)
            value, pos = (pos, pos + n), pos + n
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > end:
            raise ValueError("field runs past the end of its message")
        yield field, wire, value


def decode_example(data: bytes) -> dict[str, list[bytes]]:
    """Parse a serialized `tf.train.Example`: {feature name: list of bytes values}.

    Non-bytes features map to an empty list. Raises ValueError on malformed bytes.
    """
    out: dict[str, list[bytes]] = {}
    for f, w, v in _fields(data, 0, len(data)):
        if f != 1 or w != 2:
            continue
        for f2, w2, entry in _fields(data, *v):
            if f2 != 1 or w2 != 2:
                continue
            key, values = None, []
            for f3, w3, kv in _fields(data, *entry):
                if f3 == 1 and w3 == 2:
                    key = data[kv[0] : kv[1]].decode("utf-8")
                elif f3 == 2 and w3 == 2:
                    values = []
                    for f4, w4, lst in _fields(data, *kv):
                        if f4 == 1 and w4 == 2:  # bytes_list
                            values = [
                                data[v[0] : v[1]]
                                for f5, w5, v in _fields(data, *lst)
                                if f5 == 1 and w5 == 2
                            ]
            if key is None:
                raise ValueError("feature map entry without a key")
            out[key] = values
    return out


# ----------------------------------------------------------------------------- records
def encode_record(article: str, abstract: str) -> bytes:
    """One `.bin` record: length prefix + Example with `article` and `abstract`."""
    ex = encode_example({"article": article.encode("utf-8"), "abstract": abstract.encode("utf-8")})
    return struct.pack(_LEN_FMT, len(ex)) + ex


def iter_raw_records(path: str) -> Iterator[bytes]:
    """Yield the serialized Examples of a `.bin` file; DataError on a truncated file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror})") from None
    pos, index = 0, 0
    while pos < len(data):
        if pos + _LEN_SIZE > len(data):
            raise DataError(
                f"{path}: record {index} is truncated: {len(data) - pos} bytes "
                f"left where an {_LEN_SIZE}-byte length prefix was expected"
            )
        (n,) = struct.unpack_from(_LEN_FMT, data, pos)
        pos += _LEN_SIZE
        if n < 0 or pos + n > len(data):
            raise DataError(
                f"{path}: record {index} claims {n} bytes but only "
                f"{len(data) - pos} remain in the file (truncated or not a .bin "
                "file)"
            )
        yield data[pos : pos + n]
        pos += n
        index += 1


def count_records(path: str) -> int:
    """Records in one `.bin` file, reading only the length prefixes (for progress totals;
    `read_records` checks the framing). Raises OSError if the file cannot be read."""
    total, pos = 0, 0
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        while pos + _LEN_SIZE <= size:
            f.seek(pos)
            (n,) = struct.unpack(_LEN_FMT, f.read(_LEN_SIZE))
            pos += _LEN_SIZE + n
            total += 1
    return total


def read_records(path: str) -> Iterator[tuple[str, str]]:
    """Yield (article, abstract) text pairs of a `.bin` file, in file order.

    Raises DataError naming the file and record index for anything malformed.
    """
    for index, raw in enumerate(iter_raw_records(path)):
        try:
            ex = decode_example(raw)
        except ValueError as e:
            raise DataError(f"{path}: record {index} is not a tf.train.Example ({e})") from None
        fields = []
        for name in ("article", "abstract"):
            values = ex.get(name)
            if not values:
                raise DataError(f"{path}: record {index} has no {name!r} bytes feature")
            try:
                fields.append(values[0].decode("utf-8"))
            except UnicodeDecodeError as e:
                raise DataError(f"{path}: record {index}: {name} is not UTF-8 ({e})") from None
        yield fields[0], fields[1]


class AtomicWriter:
    """Binary file written under a temporary name and renamed into place on success.

    Use as a context manager; on an exception the temporary file is removed, so no partial
    output is ever left under the final name.
    """

    def __init__(self, path: str):
        self.path = path
        self._f = None
        self._tmp = None

    def __enter__(self):
        d = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(d, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(
            prefix=os.path.basename(self.path) + ".", suffix=".tmp", dir=d
        )
        # mkstemp creates the file private (0600); give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self._tmp, 0o666 & ~umask)
        self._f = os.fdopen(fd, "wb")
        return self._f

    def __exit__(self, exc_type, exc, tb):
        renamed = False
        try:
            self._f.close()  # a full disk may show only now, when the buffer is written
            if exc_type is None:
                os.replace(self._tmp, self.path)
                renamed = True
        finally:
            if not renamed:
                with contextlib.suppress(OSError):
                    os.remove(self._tmp)
        return False


def write_bin(path: str, pairs: Iterable[tuple[str, str]]) -> int:
    """Write (article, abstract) pairs to `path` atomically; returns the number written."""
    n = 0
    with AtomicWriter(path) as f:
        for article, abstract in pairs:
            f.write(encode_record(article, abstract))
            n += 1
    return n


def write_chunked(
    out_dir: str, set_name: str, pairs: Iterable[tuple[str, str]], chunk_size: int = 1000
) -> list[str]:
    """Write `<out_dir>/<set_name>_NNN.bin` files of `chunk_size` records each.

    Unlike the original, no empty trailing chunk is written when the count is an exact
    multiple of `chunk_size` (spec section 9, item 6).
    """
    paths, buf = [], []

    def flush():
        path = os.path.join(out_dir, "%s_%03d.bin" % (set_name, len(paths)))
        write_bin(path, buf)
        paths.append(path)
        buf.clear()

    for pair in pairs:
        buf.append(pair)
        if len(buf) == chunk_size:
            flush()
    if buf:
        flush()
    return paths


def check_file(path: str) -> tuple[str, int]:
    """(the report line of one file, the number of examples the pipeline cannot use as
    meant). Raises DataError for a malformed file. The checker of
    `python -m pointer_generator.cli.check_bin_files`."""
    n = no_words = untagged = 0
    first: dict[str, int] = {}
    for index, (article, abstract) in enumerate(read_records(path)):
        n += 1
        if not article.encode("utf-8").split():
            no_words += 1
            first.setdefault("article", index)
        if abstract.encode("utf-8").split() and "<s>" not in abstract:
            untagged += 1
            first.setdefault("abstract", index)
    notes = []
    if no_words:
        notes.append(
            f"{no_words} with an article of no words (first: record {first['article']}; "
            "skipped when read)"
        )
    if untagged:
        notes.append(
            f"{untagged} whose abstract has no <s> ... </s> tags (first: record "
            f"{first['abstract']}; their target would be only [STOP])"
        )
    if notes:
        return f"{path}: {n} records; CHECK FAILED: " + "; ".join(notes), no_words + untagged
    return f"{path}: {n} records, all valid", 0


if __name__ == "__main__":  # (the command moved: say where instead of exiting 0 silently)
    from pointer_generator.exit_codes import command_moved

    command_moved("pointer_generator.cli.check_bin_files")
