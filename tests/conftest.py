"""Shared fixtures: the real data in ../shared/data, skipped with a reason where absent."""

import os
import signal

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get(
    "POINTER_GENERATOR_SHARED_DATA", os.path.join(os.path.dirname(REPO_ROOT), "shared", "data")
)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Compiled searches are not kept across the suite's processes (runtime/compile_cache.py):
# the tests of that cache turn it on in folders of their own.
os.environ.setdefault("POINTER_GENERATOR_COMPILE_CACHE", "off")


def pytest_configure(config):
    # A run started with SIGINT ignored (`nohup`, `cmd &` in a script) would hand that on
    # to every process a test starts, and the tests that press Ctrl-C in a child (or in
    # this process) expect it taken, as at a terminal; those of a job started with `&`
    # ignore it in that child themselves.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def shared_file(name: str) -> str:
    """Path of a file in ../shared/data; skips the calling test if it is not there."""
    path = os.path.join(SHARED_DATA, name)
    if not os.path.exists(path):
        pytest.skip(f"real data {path} is absent (tests read ../shared/data beside the repo)")
    return path


@pytest.fixture
def vocab_200k_path():
    return shared_file("vocab_200k")


@pytest.fixture
def cnndm_sample_path():
    return shared_file("cnndm_sample.jsonl.gz")


@pytest.fixture
def raw_csv_path():
    return shared_file("raw_train_sample_100.csv")


@pytest.fixture
def url_lists_dir():
    return shared_file("url_lists")
