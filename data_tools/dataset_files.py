"""Readers of CNN/Daily Mail as people download it today, for `data_tools.convert`:

* `parquet`: Hugging Face `cnn_dailymail` 3.0.0 (`abisee/cnn_dailymail`) parquet files,
  columns `article`, `highlights` (newline-separated), `id`;
* `arrow`: the same dataset as the `datasets` library caches it (`.arrow` files, Arrow IPC
  stream or file format);
* `tfrecord`: TensorFlow Datasets `cnn_dailymail` TFRecord files (`tf.train.Example`s
  with `article` and `highlights` bytes features).

`--input` is a file or a glob (`'train-*.parquet'`, `'cnn_dailymail-train.tfrecord*'`),
read in sorted order. Each record becomes a `convert.Record` and goes through the same
pipeline as the original's stories (PTB tokenization, lower-casing, the missing-period
fix, `<s>`/`</s>` sentence tags). Parquet and Arrow need `pyarrow` (the `hf` extra:
`pip install pointer-generator[hf]`); TFRecord files are read with TensorFlow (framing and
CRCs checked) and their `tf.train.Example`s with the project's own small parser.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator

from pointer_generator.data.binfile import decode_example
from pointer_generator.errors import DataError


def input_files(pattern: str) -> list[str]:
    files = sorted(f for f in glob.glob(pattern) if os.path.isfile(f))
    if not files:
        raise DataError(f"{pattern}: no such file (or no file matches the glob)")
    return files


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.ipc
        import pyarrow.parquet
    except ImportError:
        raise DataError(
            "reading parquet/arrow files needs pyarrow: pip install 'pointer-generator[hf]' "
            "(or pip install pyarrow)"
        ) from None
    return pyarrow


def _table_records(table, path: str, make_record) -> Iterator:
    names = set(table.column_names)
    if "article" not in names:
        raise DataError(
            f"{path}: no 'article' column (columns: {', '.join(sorted(names))}); "
            "is it the cnn_dailymail dataset?"
        )
    columns = [c for c in ("article", "highlights", "id") if c in names]
    row_number = 0  # over the whole file: record batches each count from 0
    for batch in table.select(columns).to_batches():
        for row in batch.to_pylist():
            yield make_record(row, f"{path} row {row_number}")
            row_number += 1


def read_parquet(pattern: str, make_record) -> Iterator:
    pa = _pyarrow()
    for path in input_files(pattern):
        try:
            table = pa.parquet.read_table(path)
        except (pa.ArrowException, OSError) as e:
            raise DataError(f"{path}: not a readable parquet file ({e})") from None
        yield from _table_records(table, path, make_record)


def read_arrow(pattern: str, make_record) -> Iterator:
    pa = _pyarrow()
    for path in input_files(pattern):
        table = None
        for opener in (pa.ipc.open_stream, pa.ipc.open_file):
            try:
                with pa.memory_map(path) as source:
                    table = opener(source).read_all()
                break
            except (pa.ArrowException, OSError):
                continue
        if table is None:
            raise DataError(f"{path}: not an Arrow IPC stream or file (a datasets .arrow file)")
        yield from _table_records(table, path, make_record)


# ------------------------------------------------------------------ TFRecord
def tfrecords(path: str) -> Iterator[bytes]:
    """The records of one TFRecord file (TensorFlow reads the framing and checks the
    CRCs; a damaged file is one DataError naming it)."""
    from pointer_generator.cli import console

    console.import_tensorflow()  # without its start-up notices before our own lines
    import tensorflow as tf

    count = 0
    try:
        for record in tf.data.TFRecordDataset(path):
            count += 1
            yield record.numpy()
    except tf.errors.OpError as e:
        reason = (e.message or type(e).__name__).strip().splitlines()[0]
        raise DataError(f"{path}: not a readable TFRecord file ({reason})") from None
    if count == 0 and os.path.getsize(path) > 0:
        # TensorFlow ends a file shorter than one record header without an error.
        raise DataError(f"{path}: not a readable TFRecord file (no complete record)")


def read_tfrecord(pattern: str, make_record) -> Iterator:
    for path in input_files(pattern):
        if path.endswith((".gz", ".zlib")):
            raise DataError(f"{path}: compressed TFRecord files are not read; decompress it")
        for i, payload in enumerate(tfrecords(path)):
            try:
                features = decode_example(payload)
            except (ValueError, IndexError, KeyError) as e:
                raise DataError(f"{path} record {i}: not a tf.train.Example ({e})") from None
            yield make_record(_text_features(features, f"{path} record {i}"), f"{path} record {i}")


def _text_features(features: dict, where: str) -> dict:
    """The text fields of a parsed Example; DataError for one that is there but is not
    a single bytes value (an int64 `article`, several highlights values)."""
    row = {}
    for name in ("article", "highlights", "id"):
        if name not in features:
            continue
        values = features[name]
        if len(values) != 1:
            what = (
                "is not a bytes (text) feature, or is empty"
                if not values
                else (f"holds {len(values)} values")
            )
            raise DataError(f"{where}: the '{name}' feature {what}; expected one text value")
        row[name] = values[0].decode("utf-8", errors="replace")
    return row
