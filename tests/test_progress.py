"""The one counted-items progress line (decoding, data tools) and the record count that
gives decoding its total."""

import io

from pointer_generator.data.binfile import count_records, write_bin
from pointer_generator.runtime import progress


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_count_progress_rate_eta_and_a_resumed_start(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    out = io.StringIO()
    p = progress.CountProgress("decoded", 10, unit="articles", already=4, stream=out)
    clock.now += 30.0
    p.update(1)  # the first results: the wait (compilation) is no measure of speed
    assert p.line() == "decoded: 5/10 articles (measuring speed; started 00:30 ago)"
    clock.now += 2.0
    p.update(2)  # 2 articles in 2 s since the first: 1 article/s; 3 left -> ETA 3 s
    assert p.line() == "decoded: 7/10 articles (1.00 articles/s, ETA 00:03)"
    clock.now += 3.0
    p.update(3)
    p.close()
    # Non-terminal output: a line per interval and the final one, which gives the time
    # and the rate of the whole run.
    assert out.getvalue().splitlines()[-1] == "decoded: 10/10 articles (0.17 articles/s, 00:35)"


def test_count_progress_fast_rates_are_whole_numbers_and_nothing_done_prints_nothing():
    out = io.StringIO()
    p = progress.CountProgress("tokenizing train", None, stream=out)
    p.close()
    assert out.getvalue() == ""
    p.update(1)
    p._marks[0] = (p._marks[0][0] - 1.0, 1)
    p.update(250)
    assert p.line().startswith("tokenizing train: 251 (2")  # ~250/s, no decimals


def test_count_records_reads_only_the_framing(tmp_path):
    path = str(tmp_path / "a.bin")
    write_bin(path, [("a b", "<s> c </s>"), ("d", "<s> e </s>"), ("f g h", "")])
    assert count_records(path) == 3
    (tmp_path / "empty.bin").write_bytes(b"")
    assert count_records(str(tmp_path / "empty.bin")) == 0
