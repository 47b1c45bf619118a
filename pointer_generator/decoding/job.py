"""Decode mode: batched beam search over the model (spec sections 1.8, 5 and 6).

* single_pass: every example of `data_path` once, in file order, with a fixed checkpoint;
  writes `reference/` and `decoded/` files, attention pages, then ROUGE_results.txt (and
  with `--rouge_per_document` rouge_per_document.json). An interrupted run resumes after
  the last complete example.
* otherwise: the original's endless "concurrent" decoding of random examples, logging
  article / reference / summary, writing `decode/attn_vis_data.json` and an attention
  page, and reloading the newest checkpoint every 60 s.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time

import numpy as np

from pointer_generator.data import binfile
from pointer_generator.data.vocab import (
    Vocab,
)
from pointer_generator.decoding import attention_html, folder, inputs_record, shards
from pointer_generator.decoding.config import DecodeConfig, write_per_document
from pointer_generator.errors import OutputError
from pointer_generator.hparams import HParams
from pointer_generator.runtime import experiment_settings, interrupts, locks, owned_files
from pointer_generator.runtime.devices import local_mirrored_strategy
from pointer_generator.runtime.progress import CountProgress, status
from pointer_generator.search.beam_decoder import BeamSearchDecoder, Summary, _text
from pointer_generator.search.replicated import ReplicatedDecoder
from pointer_generator.summarizing.trained import load_weights, open_trained

log = logging.getLogger(__name__)

ATTENTION_PAGES_SUBDIR = "attention"
# One line per decoded example: index, mean p_gen over its steps, number of steps. Lines are
# appended, so a resumed decode may repeat an index; readers keep the last line.
P_GENS_FILE = folder.P_GENS_FILE


def example_strings(batch: dict, i: int) -> dict:
    """Python strings of row i of a pipeline batch: article, abstract, sentences, OOVs."""
    text = _text
    n_sents = int(batch["num_abstract_sents"][i])
    return {
        "article": text(batch["original_article"][i].numpy()),
        "abstract": text(batch["original_abstract"][i].numpy()),
        "abstract_sents": [text(s) for s in batch["abstract_sents"][i][:n_sents].numpy()],
        "art_oovs": [text(w) for w in batch["art_oovs"][i].numpy() if w],
    }


def attention_record(strings: dict, summary: Summary, vocab: Vocab, copies_words: bool) -> dict:
    """The original's attn_vis_data.json record for one decoded example."""
    article = folder.mark_oovs(strings["article"], vocab)
    abstract = folder.show_abs_oovs(
        strings["abstract"], vocab, strings["art_oovs"] if copies_words else None
    )
    p_gens = [[float(p)] for p in summary.p_gens] if copies_words else None
    return attention_html.attn_vis_data(
        article, summary.words, abstract, [row.tolist() for row in summary.attn], p_gens
    )


def decode_single_pass(
    decoder: BeamSearchDecoder,
    dataset,
    decode_dir: str,
    *,
    total: int | None = None,
    attention_pages: int = 100,
    html_safe: bool = False,
    run_rouge: bool = True,
    readable: bool = False,
    number=None,
    rouge_per_document: bool = False,
) -> str | None:
    """Decode every example of `dataset` once into `decode_dir` and score it with ROUGE.

    Resumes after the examples already complete in `decode_dir`. Writes an attention page
    for the first `attention_pages` examples, and with `readable` each summary as text.
    Returns the ROUGE_results.txt text (or None). `number` maps an example's index here
    to the one its attention page shows (a shard's examples, `shards.py`).
    `rouge_per_document`: also write rouge_per_document.json (`score`).
    """
    vocab = decoder.vocab
    done = folder.count_complete(decode_dir)
    if done:
        log.info("Resuming single-pass decode in %s after %d complete examples", decode_dir, done)
    if os.path.isdir(decode_dir):
        folder.remove_stale_temporaries(decode_dir)  # from a run killed mid-write
    progress = CountProgress(
        "decoded",
        total,
        unit="articles",
        already=done,
        first_wait="compiling the search for the first batch",
    )
    pages_dir = os.path.join(decode_dir, ATTENTION_PAGES_SUBDIR)
    owned_files.make_dir(decode_dir)
    p_gens_path = os.path.join(decode_dir, P_GENS_FILE)
    _drop_partial_last_line(p_gens_path)
    with owned_files.open_in_place(p_gens_path, "a") as p_gen_file:
        for ex, (batch, i, summary) in enumerate(
            decoder.decode_stream(dataset, skip=done), start=done
        ):
            interrupts.check()
            strings = example_strings(batch, i)
            # The p_gen line and the attention page come first and the decoded file last:
            # an example counts as complete (and is skipped by a resumed run) only once
            # everything of it is on disk. A resumed run may repeat a p_gen line.
            if decoder.copies_words and len(summary.p_gens):
                p_gen_file.write(
                    "%d\t%.6f\t%d\n" % (ex, float(np.mean(summary.p_gens)), len(summary.p_gens))
                )
                p_gen_file.flush()
            if ex < attention_pages:
                record = attention_record(strings, summary, vocab, decoder.copies_words)
                attention_html.write_attention_page(
                    os.path.join(pages_dir, "%06d.html" % ex),
                    record,
                    title=f"Example {number(ex) if number else ex}: "
                    + " ".join(summary.words[:12]),
                )
            if readable:
                folder.write_readable(summary.words, ex, decode_dir)
            folder.write_for_rouge(
                strings["abstract_sents"], summary.words, ex, decode_dir, html_safe=html_safe
            )
            progress.update(1)
    progress.close()
    if os.path.isdir(pages_dir):
        attention_html.write_index(pages_dir)
    if not run_rouge:
        return None
    return score(decode_dir, per_document=rouge_per_document)


# A decode of at least this many articles in which no more than this share of the
# summaries are distinct gets a warning: issue 29's ABS wrote 3 for 200 articles.
REPEATS_MIN_ARTICLES = 10
REPEATS_MAX_DISTINCT_SHARE = 0.5


def repeated_summaries(decode_dir: str) -> str | None:
    """A warning when most summaries of a decode folder are the same few, a sign of a
    model that ignores its input; None otherwise."""
    decoded_dir = os.path.join(decode_dir, folder.DECODED_SUBDIR)
    if not os.path.isdir(decoded_dir):
        return None
    texts = []
    for name in sorted(os.listdir(decoded_dir)):
        if name.endswith("_decoded.txt") and not name.startswith("."):
            with open(os.path.join(decoded_dir, name), encoding="utf-8", errors="replace") as f:
                texts.append(f.read().strip())
    distinct = len(set(texts))
    if len(texts) < REPEATS_MIN_ARTICLES or distinct > REPEATS_MAX_DISTINCT_SHARE * len(texts):
        return None
    return (
        f"only {distinct} distinct summaries for {len(texts)} articles: the model may "
        "ignore its input (measure it with --mode=eval --single_pass --input_gap; "
        "docs/families.md)"
    )


def score(decode_dir: str, per_document: bool = False) -> str | None:
    """ROUGE of a decode folder (written to ROUGE_results.txt); None when the references
    are empty (data made without abstracts). Warns first when most summaries repeat.
    `per_document`: also every summary's ROUGE-1, -2, -L in rouge_per_document.json
    (`config.write_per_document`; the averages are unchanged)."""
    from pointer_generator.evaluation import rouge

    warning = repeated_summaries(decode_dir)
    if warning:
        log.warning("%s", warning)

    ref_dir = os.path.join(decode_dir, folder.REFERENCE_SUBDIR)
    empty = rouge.empty_references(ref_dir)
    if empty:
        # Test data without abstracts (e.g. `data_tools.convert --format text`): the
        # summaries are the result; there is nothing to score them against.
        log.warning(
            "ROUGE not run: %d of the references are empty (e.g. %s.txt), as in data "
            "made without abstracts; the decoded summaries are in %s",
            len(empty),
            empty[0],
            os.path.join(decode_dir, folder.DECODED_SUBDIR),
        )
        return None
    results = rouge.rouge_eval(
        os.path.join(decode_dir, folder.REFERENCE_SUBDIR),
        os.path.join(decode_dir, folder.DECODED_SUBDIR),
        per_document=per_document,
    )
    text = rouge.rouge_log(results, decode_dir)
    if per_document:
        path = write_per_document(results, decode_dir)
        log.info("Wrote per-document ROUGE scores to %s", path)
    return text


def _drop_partial_last_line(path: str) -> None:
    """Cut a line that an interrupted run left half-written at the end of `path`."""
    try:
        with owned_files.open_in_place(path, "r+b") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
    except FileNotFoundError:
        pass


def log_example(strings: dict, summary: Summary, vocab: Vocab, copies_words: bool) -> str:
    """The original's concurrent-decode screen output for one example."""
    article = folder.mark_oovs(strings["article"], vocab)
    abstract = folder.show_abs_oovs(
        strings["abstract"], vocab, strings["art_oovs"] if copies_words else None
    )
    text = (
        f"\nARTICLE:  {article}\nREFERENCE SUMMARY: {abstract}\n"
        f"GENERATED SUMMARY: {' '.join(summary.words)}\n"
    )
    print(text, flush=True)
    return text


# ------------------------------------------------------------------------------ mode job
RELOAD_SECS = 60  # the original reloads the newest checkpoint every 60 s of decoding
WAIT_SECS = 10  # and retries every 10 s while there is none


def count_examples(data_path: str) -> int | None:
    """Number of records in the files of a glob (None if one cannot be read)."""
    import glob

    try:
        return sum(binfile.count_records(path) for path in glob.glob(data_path))
    except OSError:
        return None


def decode_forever(
    decoder: BeamSearchDecoder, dataset, decode_dir: str, train_dir: str, max_examples: int = 0
) -> int:
    """The original's concurrent decoding: log random examples and write the attention
    data of each, reloading the newest checkpoint every 60 s. Returns examples decoded
    (only ends when `max_examples` > 0 is reached or the data runs out)."""
    owned_files.make_dir(decode_dir)
    vocab = decoder.vocab
    last_load, count = time.time(), 0
    for batch in dataset:
        for i, summary in enumerate(decoder.decode_batch(batch)):
            interrupts.check()
            strings = example_strings(batch, i)
            log_example(strings, summary, vocab, decoder.copies_words)
            record = attention_record(strings, summary, vocab, decoder.copies_words)
            attention_html.write_attn_vis_json(
                os.path.join(decode_dir, "attn_vis_data.json"), record
            )
            attention_html.write_attention_page(os.path.join(decode_dir, "attention.html"), record)
            count += 1
            if max_examples and count >= max_examples:
                return count
        if time.time() - last_load > RELOAD_SECS:
            load_weights(decoder.model, train_dir)
            last_load = time.time()
    return count


def run_decode_mode(hps: HParams, vocab: Vocab, cfg: DecodeConfig) -> None:
    """Decode mode (`--mode=decode`): single-pass files + ROUGE, or concurrent decoding."""
    from pointer_generator.data.input_pipeline import data_errors, make_dataset
    from pointer_generator.runtime.experiment import open_experiment

    exp = open_experiment(cfg.log_root, cfg.exp_name, "decode")
    if cfg.save_search:  # asked for: the search of `summarize`, `serve`, ... from now on
        values = {k: getattr(cfg.search, k) for k in experiment_settings.SAVED_SEARCH}
        values["length_penalty"] = values["length_penalty"] or 0.0  # as the flag: 0 = none
        path = experiment_settings.save_search(exp.root, values)
        status(f"Saved this search as the experiment's: {path}")
    strategy = None
    if cfg.distribution_strategy == "mirrored":
        strategy = local_mirrored_strategy()
        status(f"Decoding on {strategy.num_replicas_in_sync} devices")
    pin = pinned = None
    if cfg.single_pass and cfg.decode_shards > 1 and not cfg.tf1_checkpoint:
        pinned, pin = _pin_shard_checkpoint(exp, cfg, vocab, hps)
    trained = open_trained(
        exp.root,
        hps,
        vocab,
        checkpoint=pinned,
        tf1_checkpoint=cfg.tf1_checkpoint or None,
        wait=not cfg.single_pass,
        strategy=strategy,  # mirrored weights under the strategy
        announce=True,
    )
    ckpt = trained.checkpoint
    decoder = trained.decoder(cfg.search, jit_compile=cfg.xla)
    if strategy is not None:
        decoder = ReplicatedDecoder(decoder, strategy)
    batch_hps = hps.replace(batch_size=cfg.decode_batch_size)
    with data_errors():
        dataset = make_dataset(
            cfg.data_path, vocab, batch_hps, "decode", cfg.single_pass, seed=hps.seed
        )
        if cfg.single_pass:
            base = os.path.join(
                exp.root,
                folder.decode_dir_name(cfg.data_path, hps, cfg.search, ckpt),
            )
            record = inputs_record.describe(cfg.data_path, vocab, hps, ckpt, cfg.search)
            decode_dir = inputs_record.folder_for(base, record)
            if cfg.decode_shards > 1:
                return _decode_shard(decoder, vocab, batch_hps, cfg, decode_dir, pin)
            locks.acquire(decode_dir, "single-pass decode", "decode another checkpoint or data")
            status(f"Decoding {cfg.data_path} into {decode_dir}")
            try:
                with _write_errors(decode_dir, "run the same command again: it resumes"):
                    decode_single_pass(
                        decoder,
                        dataset,
                        decode_dir,
                        total=count_examples(cfg.data_path),
                        attention_pages=cfg.attention_pages,
                        readable=cfg.readable_summaries,
                        rouge_per_document=cfg.rouge_per_document,
                    )
            finally:
                locks.release(decode_dir)
        else:
            decode_dir = os.path.join(exp.root, "decode")
            with _write_errors(decode_dir, "run it again"):
                decode_forever(decoder, dataset, decode_dir, exp.train_dir, cfg.max_decode_examples)


def _pin_shard_checkpoint(exp, cfg: DecodeConfig, vocab, hps) -> tuple[str, str]:
    """The checkpoint every shard of this decode uses: the one the first shard pinned,
    else the newest intact one, pinned now. Returns (checkpoint, pin file)."""
    from pointer_generator.errors import CheckpointError
    from pointer_generator.runtime import checkpointing

    newest = checkpointing.latest_checkpoint(exp.train_dir)
    if newest is None:
        raise CheckpointError(
            f"no checkpoint in {exp.train_dir}{checkpointing.none_intact_note(exp.train_dir)}; "
            "train a model first (or give --tf1_checkpoint)"
        )
    record = inputs_record.describe(cfg.data_path, vocab, hps, newest, cfg.search)
    del record["checkpoint"]
    pin = shards.pin_file(exp.root, record, cfg.decode_shards)
    ckpt, pinned_here = shards.pinned_checkpoint(pin, newest)
    if pinned_here:
        status(f"Pinned {ckpt} for all {cfg.decode_shards} shards ({pin})")
    else:
        note = "" if ckpt == newest else f"; newer now: {newest}"
        status(f"Using {ckpt}, pinned by the first shard ({pin}{note})")
        scan = checkpointing.checkpoint_scan
        if scan.foreign(exp.train_dir, [os.path.normpath(ckpt)], scan.TRAIN_NAMES):
            raise CheckpointError(
                f"the decode shards' pin file {pin} names {ckpt}, which is not a checkpoint "
                f"of {exp.train_dir}; remove the pin file and the decode folder's shards/, "
                "and run every shard again"
            )
        if scan.damage(ckpt) is not None:
            raise CheckpointError(
                f"the decode shards share checkpoint {ckpt} (pinned by the first shard in "
                f"{pin}), which is gone or damaged, rotated away by training perhaps; "
                "shards decoded with it cannot be merged with others: remove the pin file "
                "and the decode folder's shards/, and run every shard again"
            )
    return ckpt, pin


def _decode_shard(
    decoder, vocab, batch_hps, cfg: DecodeConfig, decode_dir: str, pin: str | None
) -> None:
    """Decode shard `cfg.decode_shard` of `cfg.decode_shards`; the last one to finish
    merges them all into `decode_dir` and scores it (shards.py)."""
    from pointer_generator.data.input_pipeline import make_dataset

    n, i = cfg.decode_shards, cfg.decode_shard
    directory = shards.shard_dir(decode_dir, i, n)
    total = count_examples(cfg.data_path)
    mine = None if total is None else len(range(i, total, n))
    # Every level below the experiment: a linked shards/ would take the shard elsewhere.
    owned_files.make_dir(directory, root=os.path.dirname(decode_dir))
    locks.acquire(directory, "decode shard", f"run each --decode_shard once (this is {i} of {n})")
    try:
        with _write_errors(directory, "run the same command again: it resumes"):
            if mine == 0:
                status(
                    f"Shard {i} of {n} has no examples ({cfg.data_path} holds {total}); "
                    "nothing to decode"
                )
            else:
                status(f"Decoding shard {i} of {n} of {cfg.data_path} into {directory}")
                dataset = make_dataset(cfg.data_path, vocab, batch_hps, "decode", True,
                                       seed=batch_hps.seed, num_replicas=n, replica_index=i,
                                       by_example=True)  # fmt: skip
                decode_single_pass(decoder, dataset, directory, total=mine,
                                   attention_pages=-(-cfg.attention_pages // n),
                                   run_rouge=False, readable=cfg.readable_summaries,
                                   number=lambda j: j * n + i)  # fmt: skip
            shards.mark_done(directory, folder.count_complete(directory))
    finally:
        locks.release(directory)
    if not shards.finished(decode_dir, n):
        status(f"Shard {i} of {n} done; the last shard to finish merges them")
        return
    try:
        locks.acquire(decode_dir, "merge of the decode shards", "it is being merged already")
    except locks.DirectoryBusyError:
        return  # another shard finished at the same moment and merges
    try:
        if not os.path.isdir(os.path.join(decode_dir, shards.SHARDS_SUBDIR)):
            return  # merged already
        with _write_errors(decode_dir, "merge again by running the last shard's command"):
            merged = shards.merge(decode_dir, n)
            if pin:
                shards.unpin(pin)
            pages = os.path.join(decode_dir, ATTENTION_PAGES_SUBDIR)
            if os.path.isdir(pages):
                attention_html.write_index(pages)
            status(f"Merged {n} shards: {merged} examples in {decode_dir}")
            text = score(decode_dir, per_document=cfg.rouge_per_document)
            if text:
                print(text.lstrip("\n"), end="", flush=True)
    finally:
        locks.release(decode_dir)


@contextlib.contextmanager
def _write_errors(decode_dir: str, then: str):
    """A failed write of the decode outputs (full disk, read-only) as one OutputError."""
    try:
        yield
    except OSError as e:
        raise OutputError(
            f"cannot write the decode outputs in {decode_dir}: {e.strerror or e}; "
            f"free space (or fix the permissions) and {then}"
        ) from None
