"""CNN/Daily Mail as people download it today (issue 21, item 4): Hugging Face parquet and
arrow files and TensorFlow Datasets TFRecord files into `.bin` files in one command, with
the same tokenization and sentence tags as the original's pipeline (the same records as
JSONL give byte-identical output). A bad row or record is named over the whole file."""

from __future__ import annotations

import json
import os

import pytest

from data_tools import convert
from pointer_generator.data.binfile import read_records
from pointer_generator.errors import DataError

RECORDS = [
    {
        "id": "a1",
        "article": "(CNN) -- The mayor said on Monday that the bridge, built in 1932, "
        'would close.\nRepairs will take "two years" at least',
        "highlights": "Bridge built in 1932 will close\nRepairs to take two years",
    },
    {
        "id": "b2",
        "article": "LONDON, England (Reuters) -- Shares rose 3% on Tuesday. Analysts "
        "were surprised",
        "highlights": "Shares rose 3%",
    },
]


def _convert(tmp_path, fmt: str, pattern: str) -> list[tuple[str, str]]:
    out = tmp_path / f"out_{fmt}"
    args = [f"--input={pattern}", f"--format={fmt}", f"--out_dir={out}", "--set_name=test"]
    assert convert.main(args) == 0
    return list(read_records(str(out / "test.bin")))


@pytest.fixture
def expected(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    pairs = _convert(tmp_path, "jsonl", str(path))
    assert pairs[0][1].startswith("<s> bridge built in #") is False  # no digit masking here
    assert (
        pairs[0][1]
        == "<s> bridge built in 1932 will close . </s> <s> repairs to take two years . </s>"
    )
    return pairs


def test_hugging_face_parquet_and_arrow(tmp_path, expected):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.ipc
    import pyarrow.parquet

    table = pa.table({k: [r[k] for r in RECORDS] for k in ("article", "highlights", "id")})
    # Two parquet shards, as the hub stores the split: the glob reads both, in order.
    pyarrow.parquet.write_table(table.slice(0, 1), tmp_path / "test-00000-of-00002.parquet")
    pyarrow.parquet.write_table(table.slice(1, 1), tmp_path / "test-00001-of-00002.parquet")
    assert _convert(tmp_path, "parquet", str(tmp_path / "test-*.parquet")) == expected
    with pa.OSFile(str(tmp_path / "cnn_dailymail-test.arrow"), "wb") as sink:
        with pyarrow.ipc.new_stream(sink, table.schema) as writer:  # datasets' cache format
            writer.write_table(table)
    assert _convert(tmp_path, "arrow", str(tmp_path / "*.arrow")) == expected


def test_tensorflow_datasets_tfrecord(tmp_path, expected):
    import tensorflow as tf

    path = tmp_path / "cnn_dailymail-test.tfrecord-00000-of-00001"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for r in RECORDS:
            feature = {
                k: tf.train.Feature(bytes_list=tf.train.BytesList(value=[r[k].encode()]))
                for k in ("article", "highlights")
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
    assert (
        _convert(tmp_path, "tfrecord", str(tmp_path / "cnn_dailymail-test.tfrecord*")) == expected
    )


def test_bad_downloaded_files_are_one_error_line(tmp_path, capfd):
    pytest.importorskip("pyarrow")
    (tmp_path / "x.parquet").write_bytes(b"not parquet")
    (tmp_path / "x.tfrecord").write_bytes(b"\x01\x02garbage")
    for fmt, name, message in (
        ("parquet", "x.parquet", "x.parquet: not a readable parquet file"),
        ("arrow", "x.parquet", "x.parquet: not an Arrow IPC stream or file"),
        ("tfrecord", "x.tfrecord", "x.tfrecord: not a readable TFRecord file"),
        ("parquet", "missing-*.parquet", "missing-*.parquet: no such file"),
    ):
        args = [f"--input={tmp_path / name}", f"--format={fmt}", f"--out_dir={tmp_path / 'o'}"]
        assert convert.main(args) == 2
        err = capfd.readouterr().err
        assert message in err and "Traceback" not in err
        assert not os.path.exists(tmp_path / "o" / "train.bin")


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
