"""Jobs killed with `kill -9` resume (every wait is bounded; docs/reliability.md):

* training killed at random moments, one of them inside a checkpoint write, with an eval
  job reading the checkpoints concurrently: the restarted job resumes from the newest
  complete checkpoint and continues the step count, every checkpoint on disk stays
  readable, at most one save interval of work is lost, and the eval job never crashes or
  reads a half-written checkpoint; SIGTERM stops a job with a checkpoint of its step;
* a single-pass decode killed midway: the rerun produces the same files as an
  uninterrupted run; each example's decoded file is written last, and a torn p_gen line
  or a stale temporary left by the kill is dropped.

Set RELIABILITY_SEED to replay the random kill moments of a failed run.
"""

from __future__ import annotations

import contextlib
import glob
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.decoding import folder
from pointer_generator.runtime import checkpointing
from pointer_generator.runtime.experiment import Experiment
from tests import helpers

SEED = int(os.environ.get("RELIABILITY_SEED", random.SystemRandom().randrange(10**6)))


SAVE_SECS = 1  # --save_checkpoint_secs of the killed jobs (the smallest the flag allows)


SLOW_SAVE = 0.25  # seconds added at each marked point inside every checkpoint save


STARTUP_TIMEOUT = 150  # seconds for a job to start training (TensorFlow import, tracing)


ROTATION_TIMEOUT = 180  # seconds of training for the eval job to see a checkpoint rotated


KILLS = max(2, int(os.environ.get("RELIABILITY_KILLS", "3")))  # jobs killed in a row


# Runs the real command line; with PG_TEST_SLOW_SAVE set, each checkpoint save pauses (and
# says so on stdout) before its shard files are merged into the final ones, and before
# each update of the `checkpoint` state file (one before and one after deleting the
# oldest checkpoint). The pauses make a kill land inside a save often, and let the test
# kill at a chosen point of one.
CHILD = r"""
import faulthandler, os, runpy, signal, sys, time
# SIGUSR1 writes every thread's stack to PG_TEST_STACKS: where a job was when it overran
# a wait (a file, not stdout, where a busy job's output would bury them).
faulthandler.register(signal.SIGUSR1, file=open(os.environ["PG_TEST_STACKS"], "w"),
                      all_threads=True)
# Ctrl-C as at a terminal, even when the test run itself was started with SIGINT
# ignored (`nohup cmd &` from a script), which children inherit and Python honours.
signal.signal(signal.SIGINT, signal.default_int_handler)
pause = float(os.environ.get("PG_TEST_SLOW_SAVE", "0"))
if pause:
    from tensorflow.python.checkpoint import checkpoint_management
    from tensorflow.python.ops import gen_io_ops

    def marked(name, fn):
        def wrapper(*args, **kwargs):
            print(f"SAVE-PHASE {name}", flush=True)
            time.sleep(pause)
            return fn(*args, **kwargs)
        return wrapper

    gen_io_ops.merge_v2_checkpoints = marked("merge", gen_io_ops.merge_v2_checkpoints)
    checkpoint_management.update_checkpoint_state_internal = marked(
        "state", checkpoint_management.update_checkpoint_state_internal)
sys.argv = ["run_summarization", *sys.argv[1:]]
runpy.run_module("pointer_generator.run_summarization", run_name="__main__")
"""


STEP_LINE = re.compile(r"\bstep (\d+)(?:/\d+)? \| loss")


SAVED_LINE = re.compile(r"Saved checkpoint \S*model\.ckpt-(\d+)\b")


RESUMED_LINE = re.compile(r"Resuming from \S*model\.ckpt-(\d+) \(step (\d+)\)")


EVAL_LINE = re.compile(r"eval step (\d+) \(checkpoint model\.ckpt-(\d+)\)")


class Job:
    """A child process whose output lines are collected, with their arrival times, by a
    thread (so waiting for a line never blocks past its timeout)."""

    def __init__(self, args: list[str], **env):
        fd, self.stacks_path = tempfile.mkstemp(suffix=".stacks")
        os.close(fd)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=helpers.subprocess_env(PG_TEST_STACKS=self.stacks_path, **env),
            cwd=helpers.REPO_ROOT,
            start_new_session=True,
        )
        self.started = time.time()
        self.lines: list[tuple[float, str]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append((time.time(), line.rstrip("\n")))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, pattern: re.Pattern, timeout: float, after: float = 0.0):
        """The first line matching `pattern` that arrived after time `after`."""
        deadline = time.time() + timeout
        with self._changed:
            while True:
                for t, line in self.lines:
                    if t >= after and pattern.search(line):
                        return t, pattern.search(line)
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise AssertionError(
                        f"job ended (status {self.proc.returncode}) before "
                        f"{pattern.pattern!r}:\n{self.tail()}"
                    )
                left = deadline - time.time()
                if left <= 0:
                    raise AssertionError(
                        f"no {pattern.pattern!r} within {timeout} s:\n{self.tail()}"
                    )
                self._changed.wait(min(left, 0.5))

    def matches(self, pattern: re.Pattern, before: float = float("inf")):
        """[(time, match)] of every line matching `pattern` that arrived before `before`."""
        with self._changed:
            found = [(t, pattern.search(line)) for t, line in self.lines if t < before]
        return [(t, m) for t, m in found if m]

    def text(self) -> str:
        with self._changed:
            return "\n".join(line for _, line in self.lines)

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.text().splitlines()[-n:])

    def kill9(self) -> float:
        """SIGKILL the job; returns the moment of the kill."""
        t = time.time()
        self.proc.send_signal(signal.SIGKILL)
        self.stop()
        self._reader.join(timeout=30)
        return t

    def wait(self, timeout: float) -> int:
        """The job's exit status; AssertionError with its stacks if it overruns `timeout`."""
        code = stacks = None
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)  # faulthandler: the stacks, to a file
            time.sleep(3)
            with open(self.stacks_path) as f:
                stacks = f.read()
        finally:
            self.stop()
        self._reader.join(timeout=30)
        if code is None:
            raise AssertionError(
                f"job still running after {timeout} s; its last output:\n"
                f"{self.tail()}\nits stacks:\n{stacks}"
            )
        return code

    def stop(self):
        """Kill the job if it still runs, and remove its stacks file."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.stacks_path)


def _checkpoint_step(prefix: str) -> int:
    reader = tf.train.load_checkpoint(prefix)
    return int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))


def _newest_complete(train_dir: str) -> int:
    """The step of the newest `model.ckpt-N` on disk that reads completely (-1: none)."""
    from pointer_generator.runtime import checkpoint_scan

    steps = [
        _checkpoint_step(p[: -len(".index")])
        for p in glob.glob(os.path.join(train_dir, "model.ckpt-*.index"))
        if checkpoint_scan.damage(p[: -len(".index")]) is None
    ]
    return max(steps, default=-1)


def disk_problems(train_dir: str) -> list[str]:
    """Everything wrong with the checkpoints on disk after a kill.

    Every `model.ckpt-<step>.index` must be a complete checkpoint (every tensor readable,
    the step inside equal to the name). The state file must name a readable newest
    checkpoint; an older entry may lack its files only while being rotated away.
    """
    problems = []
    for index in sorted(glob.glob(os.path.join(train_dir, "model.ckpt-*.index"))):
        prefix = index[: -len(".index")]
        try:
            reader = tf.train.load_checkpoint(prefix)
            for key, dtype in reader.get_variable_to_dtype_map().items():
                if dtype == tf.variant:  # the data position: no NumPy form, read it raw
                    tf.raw_ops.RestoreV2(
                        prefix=prefix, tensor_names=[key], shape_and_slices=[""], dtypes=[dtype]
                    )
                else:
                    reader.get_tensor(key)
            if _checkpoint_step(prefix) != int(prefix.rsplit("-", 1)[1]):
                problems.append(f"{prefix}: step inside does not match the name")
        except Exception as e:  # anything here is a finding
            problems.append(f"{prefix}: unreadable ({type(e).__name__}: {e})")
    state = tf.train.get_checkpoint_state(train_dir)
    if state is None:
        return problems + ["no readable 'checkpoint' state file"]
    newest = os.path.join(train_dir, os.path.basename(state.model_checkpoint_path))
    if not os.path.exists(newest + ".index"):
        problems.append(f"the state file names {newest}, which is not on disk")
    newest_step = int(newest.rsplit("-", 1)[1])
    for path in state.all_model_checkpoint_paths:
        step = int(path.rsplit("-", 1)[1])
        if (
            not os.path.exists(os.path.join(train_dir, os.path.basename(path)) + ".index")
            and step >= newest_step
        ):
            problems.append(f"the state file lists {path}, which is not on disk")
    return problems


@pytest.fixture(scope="module")
def kill_scenario(tmp_path_factory):
    """KILLS training jobs killed with SIGKILL in a row (a random moment; inside a
    checkpoint save; a random moment), a job that trains until the eval job has read a
    checkpoint rotated away later and is then stopped with SIGTERM, a final job that runs
    to --max_steps, and one eval job reading the checkpoints all along. Returns what
    happened, for the tests below."""
    rng = random.Random(SEED)
    root = tmp_path_factory.mktemp("kill")
    data = helpers.tiny_setup(root, n_train=40, n_val=12)
    exp = Experiment(os.path.join(data.log_root, "kill"))
    common = dict(vocab_path=data.vocab_path, log_root=data.log_root, exp_name="kill")
    train_args = helpers.cli_args(
        mode="train",
        data_path=data.train_path,
        save_checkpoint_secs=SAVE_SECS,
        max_steps=0,
        log_every_n_steps=1,  # (the test reads every step's line)
        **common,
    )
    eval_args = helpers.cli_args(
        mode="eval",
        data_path=data.val_path,
        eval_interval_secs=0.2,
        max_eval_iterations=0,
        **common,
    )
    rounds, jobs = [], []
    os.makedirs(exp.root)  # eval refuses an experiment that does not exist yet
    eval_job = Job(eval_args)  # it waits for the first checkpoint
    try:
        for r in range(KILLS):
            job = Job(train_args, PG_TEST_SLOW_SAVE=str(SLOW_SAVE))
            jobs.append(job)
            job.wait_for(STEP_LINE, STARTUP_TIMEOUT)
            if r == 0:  # the eval job is under way before the first kill
                eval_job.wait_for(EVAL_LINE, STARTUP_TIMEOUT)
            if r == 1:
                # Inside a save: at a random point of a random one of its pauses.
                phase = rng.choice(["merge", "state"])
                job.wait_for(re.compile(f"SAVE-PHASE {phase}"), 60, after=time.time())
                time.sleep(rng.uniform(0, SLOW_SAVE))
                how = f"inside a save ({phase} pause)"
            else:
                time.sleep(rng.uniform(0.3, 2.0))
                how = "at a random moment"
            t_kill = job.kill9()
            state = tf.train.get_checkpoint_state(exp.train_dir)
            saved = [(t, int(m.group(1))) for t, m in job.matches(SAVED_LINE)]
            resumed = job.matches(RESUMED_LINE)
            # (time, step) where this job started: resumed, or the fresh start's save.
            start = (resumed[0][0], int(resumed[0][1].group(2))) if resumed else saved[0]
            rounds.append(
                types.SimpleNamespace(
                    job=job,
                    how=how,
                    t_kill=t_kill,
                    problems=disk_problems(exp.train_dir),
                    state_newest=int(state.model_checkpoint_path.rsplit("-", 1)[1]),
                    complete_newest=_newest_complete(exp.train_dir),
                    start=start,
                    saved=saved,
                    steps={int(m.group(1)): t for t, m in job.matches(STEP_LINE)},
                    temp_dirs=glob.glob(os.path.join(exp.train_dir, "*_temp*")),
                )
            )
        # Training goes on until the eval job has read a checkpoint that rotation then
        # deleted (on a slow machine the kills may leave too few saves for that); SIGTERM
        # then stops it with a checkpoint.
        rotating = Job(train_args)
        jobs.append(rotating)
        rotating.wait_for(STEP_LINE, STARTUP_TIMEOUT)
        deadline = time.time() + ROTATION_TIMEOUT
        while not _read_then_deleted(eval_job, exp.train_dir):
            assert time.time() < deadline, (
                f"no checkpoint read by eval was rotated away "
                f"within {ROTATION_TIMEOUT} s:\n"
                f"{eval_job.tail()}\n{rotating.tail()}"
            )
            assert rotating.proc.poll() is None, rotating.tail()
            time.sleep(0.2)
        rotating.proc.send_signal(signal.SIGTERM)
        rotating_status = rotating.wait(timeout=60)
        newest = checkpointing.latest_checkpoint(exp.train_dir)
        max_steps = _checkpoint_step(newest) + 10
        final = Job(
            helpers.cli_args(
                mode="train",
                data_path=data.train_path,
                save_checkpoint_secs=SAVE_SECS,
                max_steps=max_steps,
                log_every_n_steps=1,
                **common,
            )
        )
        jobs.append(final)
        final_status = final.wait(timeout=STARTUP_TIMEOUT + 60)
        eval_alive = eval_job.proc.poll() is None
        # It would evaluate forever; Ctrl-C ends it, at once (process_exit).
        eval_job.proc.send_signal(signal.SIGINT)
        eval_status = eval_job.wait(timeout=60)
    finally:
        for job in [*jobs, eval_job]:
            job.stop()
    return types.SimpleNamespace(
        exp=exp,
        rounds=rounds,
        jobs=jobs,
        rotating=rotating,
        rotating_status=rotating_status,
        final=final,
        final_status=final_status,
        max_steps=max_steps,
        eval_job=eval_job,
        eval_alive=eval_alive,
        eval_status=eval_status,
    )


def _read_then_deleted(eval_job: Job, train_dir: str) -> list[int]:
    """Steps of the checkpoints the eval job evaluated that are no longer on disk."""
    kept = helpers.checkpoint_steps(train_dir)
    return sorted({int(m.group(2)) for _, m in eval_job.matches(EVAL_LINE)} - set(kept))


def _where(scenario, r) -> str:
    return (
        f"(RELIABILITY_SEED={SEED}; kill {r + 1} {scenario.rounds[r].how}; its output "
        f"ends:\n{scenario.rounds[r].job.tail(15)}\nthe restart's output ends:\n"
        f"{scenario.jobs[r + 1].tail(15)})"
    )


def test_killed_training_resumes_from_the_newest_checkpoint_and_continues_the_step(kill_scenario):
    s = kill_scenario
    for r, rnd in enumerate(s.rounds):
        restart = s.jobs[r + 1]
        _, resumed = restart.wait_for(RESUMED_LINE, 1)
        step = int(resumed.group(2))
        saved_before = max((n for t, n in rnd.saved), default=0)
        # The newest complete checkpoint when the job died: the one the state file
        # named, or a newer one whose files were all written when the kill came before
        # the state update. It is at least the newest one the job reported saved (it may
        # have died after saving but before saying so).
        newest = max(rnd.state_newest, rnd.complete_newest)
        assert step == int(resumed.group(1)) == newest, _where(s, r)
        assert saved_before <= step <= max(rnd.steps, default=0), _where(s, r)
        # The step counter continues from there.
        _, first = restart.wait_for(STEP_LINE, 1)
        assert int(first.group(1)) == step + 1, _where(s, r)
    # SIGTERM: the job stops after its step with a checkpoint of it, and exits normally.
    assert s.rotating_status == 0, s.rotating.tail()
    last_step = max(int(m.group(1)) for _, m in s.rotating.matches(STEP_LINE))
    saved = [int(m.group(1)) for _, m in s.rotating.matches(SAVED_LINE)]
    assert saved and saved[-1] == last_step, s.rotating.tail()
    _, resumed = s.final.wait_for(RESUMED_LINE, 1)
    assert int(resumed.group(2)) == last_step, s.final.tail()
    assert s.final_status == 0, s.final.tail()
    assert _checkpoint_step(checkpointing.latest_checkpoint(s.exp.train_dir)) == s.max_steps
    assert "Traceback" not in "".join(job.text() for job in s.jobs)


def test_a_kill_leaves_every_checkpoint_on_disk_readable(kill_scenario):
    s = kill_scenario
    for r, rnd in enumerate(s.rounds):
        assert rnd.problems == [], _where(s, r)
    assert disk_problems(s.exp.train_dir) == []
    # A save cut short leaves only a `_temp` directory behind, never a checkpoint; the
    # next job removes it.
    for r, rnd in enumerate(s.rounds):
        if rnd.temp_dirs:
            assert "left by a save that did not finish" in s.jobs[r + 1].text(), _where(s, r)
    assert glob.glob(os.path.join(s.exp.train_dir, "*_temp*")) == []
    # No checkpoint the state file does not name (a save killed after writing its files
    # but before naming them): the restarted job removed it.
    state = tf.train.get_checkpoint_state(s.exp.train_dir)
    listed = sorted(int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths)
    assert helpers.checkpoint_steps(s.exp.train_dir) == listed
    assert len(listed) == 3


def test_at_most_one_save_interval_of_work_is_lost(kill_scenario):
    """The work lost is the training time between the step the restart resumed from and
    the kill. A save starts at the first step boundary SAVE_SECS after the previous one
    started, so the loss is at most one interval, the longest save and the longest step
    in between (the first step of a job includes its tracing), plus 1 s for scheduling
    on a loaded machine."""
    s = kill_scenario
    for r, rnd in enumerate(s.rounds):
        _, resumed = s.jobs[r + 1].wait_for(RESUMED_LINE, 1)
        step = int(resumed.group(2))
        times = dict(rnd.steps)
        times[rnd.start[1]] = rnd.start[0]
        reached = times[step]  # when training reached the resumed step
        order = sorted(times)
        longest = max(
            (times[b] - times[a] for a, b in zip(order, order[1:], strict=False) if b > step),
            default=0.0,
        )
        # A save follows its step's progress line; it ends with "Saved checkpoint".
        longest_save = max(
            [t - rnd.steps[n] for t, n in rnd.saved if n in rnd.steps] + [3 * SLOW_SAVE]
        )
        bound = SAVE_SECS + longest_save + longest + 1.0
        lost = rnd.t_kill - reached
        assert lost <= bound, f"{lost:.2f} s of training lost (bound {bound:.2f} s) " + _where(s, r)


def test_eval_job_beside_killed_training_never_crashes_or_reads_a_partial_checkpoint(kill_scenario):
    s = kill_scenario
    job = s.eval_job
    assert s.eval_alive, job.tail()  # it was still running when training had finished
    assert s.eval_status == 130 and job.text().endswith("interrupted"), job.tail()
    assert "Traceback" not in job.text()
    assert not [line for line in job.text().splitlines() if line.startswith("error: ")]
    evaluated = [(int(m.group(1)), int(m.group(2))) for _, m in job.matches(EVAL_LINE)]
    # Each evaluation reports the step stored inside the checkpoint it loaded: equal to
    # the step in its name only if the whole file was read.
    assert evaluated and all(a == b for a, b in evaluated), evaluated
    # It followed the training jobs, and read checkpoints that were deleted later on.
    steps = sorted({b for _, b in evaluated})
    assert len(steps) >= 3, (steps, job.tail())
    kept = helpers.checkpoint_steps(s.exp.train_dir)
    assert [n for n in steps if n not in kept], (steps, kept)
    for best in glob.glob(os.path.join(s.exp.eval_dir, "bestmodel-*.index")):
        prefix = best[: -len(".index")]
        assert _checkpoint_step(prefix) == int(prefix.rsplit("-", 1)[1])


NON_UTF8_INDEX = 3  # the example of the decode test set whose text is not UTF-8


def _decode_setup(root, n_examples: int):
    """Vocab, a test set (example NON_UTF8_INDEX has text that is not UTF-8) and an
    experiment with a checkpoint of random (large) weights, so that every article gets
    its own summary."""
    from pointer_generator.data import binfile

    data = helpers.tiny_setup(root, n_train=4, n_val=4)
    records = [
        binfile.encode_record(a, b)
        for a, b in helpers.make_pairs(n_examples - 1, data.words, seed=9)
    ]
    bad = binfile.encode_example(
        {"article": b"w7 \xff\xfe w8 w9 .", "abstract": b"<s> w7 \xc3 . </s>"}
    )
    records.insert(NON_UTF8_INDEX, struct.pack("q", len(bad)) + bad)
    os.makedirs(os.path.join(str(root), "data"), exist_ok=True)
    with open(os.path.join(str(root), "data", "test_000.bin"), "wb") as f:
        f.write(b"".join(records))
    data.test_path = os.path.join(str(root), "data", "test_*")
    trainer = pg.Trainer(helpers.hparams(), 100)
    for v in trainer.model.trainable_variables:
        v.assign(tf.random.stateless_uniform(v.shape, (7, len(v.path)), -0.6, 0.6))
    trainer.step.assign(5)
    exp = Experiment(os.path.join(data.log_root, "plain"))
    checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step).save()
    shutil.copytree(exp.root, os.path.join(data.log_root, "killed"))
    return data


def _files(directory: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, directory)] = open(path, "rb").read()
    return out


def _p_gens(text: bytes) -> dict[int, tuple[str, str]]:
    out = {}
    for line in text.decode("utf-8").splitlines():
        index, mean, steps = line.split("\t")
        out[int(index)] = (mean, steps)
    return out


def test_interrupted_single_pass_decode_resumes_to_the_same_files(tmp_path):
    n = 80
    rng = random.Random(SEED)
    data = _decode_setup(tmp_path, n)

    def args(exp_name):
        # Static shapes: one trace of the beam search instead of one per article length,
        # which would make the decode slow enough to dominate the test.
        return helpers.cli_args(
            mode="decode",
            single_pass=True,
            data_path=data.test_path,
            vocab_path=data.vocab_path,
            log_root=data.log_root,
            exp_name=exp_name,
            decode_batch_size=2,
            attention_pages=6,
            max_dec_steps=6,
            static_shapes=True,
            max_oovs=20,
        )

    name = "decode_test_20maxenc_2beam_2mindec_6maxdec_ckpt-5"
    plain_dir = os.path.join(data.log_root, "plain", name)
    killed_dir = os.path.join(data.log_root, "killed", name)
    plain, killed = Job(args("plain")), Job(args("killed"))  # side by side
    try:
        kill_at = rng.randrange(n // 5, n // 2)
        deadline = time.time() + STARTUP_TIMEOUT
        while folder.count_complete(killed_dir) < kill_at:
            assert time.time() < deadline and killed.proc.poll() is None, killed.tail()
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.05))
        killed.kill9()
        done_at_kill = folder.count_complete(killed_dir)
        assert done_at_kill < n, "the decode ended before it was killed; use more examples"
        assert plain.wait(timeout=STARTUP_TIMEOUT) == 0, plain.tail()
        rerun = Job(args("killed"))
        assert rerun.wait(timeout=STARTUP_TIMEOUT) == 0, rerun.tail()
    finally:
        for job in (plain, killed):
            job.stop()
    assert f"after {done_at_kill} complete examples" in rerun.text()
    # The optimizer values of a training checkpoint are not restored: no warnings for it.
    assert "could not be found in the restored object" not in plain.text()

    want, got = _files(plain_dir), _files(killed_dir)
    # The record of the inputs names each experiment's own checkpoint path.
    assert want.pop("decode_inputs.json") != got.pop("decode_inputs.json")
    # A resumed run may repeat the p_gen line of an example it redid: the last one counts.
    want_p_gens, got_p_gens = _p_gens(want.pop("p_gens.tsv")), _p_gens(got.pop("p_gens.tsv"))
    assert sorted(want_p_gens) == list(range(n)) and got_p_gens == want_p_gens
    assert sorted(got) == sorted(want)  # no file missing, none extra, no temporary left
    assert [k for k in want if got[k] != want[k]] == []
    assert sum(k.startswith("decoded/") for k in want) == n
    assert "ROUGE_results.txt" in want and "attention/index.html" in want
    # Text that is not UTF-8 is decoded (shown with U+FFFD), with a warning naming it.
    reference = want["reference/%06d_reference.txt" % NON_UTF8_INDEX].decode("utf-8")
    assert reference == "w7 \ufffd ."
    assert (
        f"{data.test_path[:-1]}000.bin: 1 example(s) whose text is not valid UTF-8 "
        f"(first: record {NON_UTF8_INDEX})"
    ) in plain.text()


class _FakeDecoder:
    """decode_single_pass's view of a decoder, without a model: fixed summaries."""

    # Its summaries copy article words (the pointer-generator's), so p_gens are written.
    copies_words = True

    def __init__(self, vocab):
        self.hps = helpers.hparams(max_dec_steps=6)
        self.vocab = vocab

    def decode_batch(self, batch):
        out = []
        for n in batch["enc_lens"].numpy():
            words = ["w5", "w6", "."]
            out.append(
                pg.Summary(
                    words,
                    np.full((4, int(n)), 1.0 / int(n), np.float32),
                    np.full((4,), 0.25, np.float32),
                    -1.0,
                )
            )
        return out

    def decode_stream(self, batches, skip=0):
        from pointer_generator.search.beam_decoder import decode_batches

        return decode_batches(self.decode_batch, batches, skip)


@pytest.fixture
def fake_decode(tmp_path):
    from pointer_generator.decoding import job

    data = helpers.tiny_setup(tmp_path, n_train=4, n_val=7)
    vocab = pg.Vocab(data.vocab_path, 100)
    decoder = _FakeDecoder(vocab)

    def run(decode_dir, **kwargs):
        dataset = pg.make_dataset(
            data.val_path, vocab, decoder.hps.replace(batch_size=3), "decode", True
        )
        job.decode_single_pass(
            decoder, dataset, decode_dir, run_rouge=False, attention_pages=4, **kwargs
        )

    return run


def test_decode_writes_everything_of_an_example_before_it_counts_as_done(
    tmp_path, fake_decode, monkeypatch
):
    """A kill can come between any two writes; the decoded file (which makes an example
    complete, so that a resumed run skips it) must be the last one."""
    from pointer_generator.decoding import job

    decode_dir = str(tmp_path / "dec")
    real_write = folder.write_for_rouge
    checked = []

    def write_last(reference_sents, decoded_words, ex_index, directory, **kwargs):
        with open(os.path.join(directory, job.P_GENS_FILE), encoding="utf-8") as f:
            on_disk = [int(line.split("\t")[0]) for line in f]
        assert on_disk[-1:] == [ex_index], (on_disk, ex_index)  # its p_gen line, flushed
        page = os.path.join(directory, "attention", "%06d.html" % ex_index)
        assert os.path.exists(page) == (ex_index < 4)
        checked.append(ex_index)
        real_write(reference_sents, decoded_words, ex_index, directory, **kwargs)

    monkeypatch.setattr(folder, "write_for_rouge", write_last)
    fake_decode(decode_dir)
    assert checked == list(range(7))


def test_resumed_decode_drops_a_torn_p_gen_line_and_stale_temporaries(tmp_path, fake_decode):
    decode_dir = str(tmp_path / "dec")
    fake_decode(decode_dir)
    whole = open(os.path.join(decode_dir, "p_gens.tsv"), encoding="utf-8").read()
    # An interrupted run: examples 5 and 6 not written, the line of 5 torn half-way (a
    # full disk), a temporary of a file being written when the process died.
    for k in (5, 6):
        os.remove(os.path.join(decode_dir, "decoded", "%06d_decoded.txt" % k))
    lines = whole.splitlines(keepends=True)
    with open(os.path.join(decode_dir, "p_gens.tsv"), "w", encoding="utf-8") as f:
        f.write("".join(lines[:5]) + lines[5][:3])
    stale = os.path.join(decode_dir, "decoded", ".000005_decoded.txt.4242-0badc0de.tmp")
    open(stale, "w").close()

    fake_decode(decode_dir)

    assert open(os.path.join(decode_dir, "p_gens.tsv"), encoding="utf-8").read() == whole
    assert not os.path.exists(stale)
    assert folder.count_complete(decode_dir) == 7
