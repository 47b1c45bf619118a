"""Every line-oriented reader splits at newlines only (`data/text_files.text_lines`):
U+2028, U+2029, U+0085, a vertical tab, a form feed and U+001C-U+001E inside a line stay
in it, in `data_tools.sumdata`'s parallel files, ABS+ weight files and the PREFIX
baseline's extra references (docs/reliability.md).
"""

from __future__ import annotations

import pytest

from pointer_generator.errors import DataError

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
    from pointer_generator.search.extractive_features import read_weights

    path = tmp_path / "w.txt"
    path.write_text("# tuned \x1c by hand\nuni 1.5\n\nbogus 2\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"w.txt:4: expected"):
        read_weights(str(path))
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ref1.txt").write_text("one\u2028half\ntwo\n", encoding="utf-8")
    assert prefix._extra_references(str(refs)) == [["one\u2028half", "two"]]
