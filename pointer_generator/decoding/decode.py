"""Decode mode: batched beam search over the model (spec sections 1.8, 5 and 6).

* single_pass: every example of `data_path` once, in file order, with a fixed checkpoint;
  writes `reference/` and `decoded/` files, attention pages, then ROUGE_results.txt. An
  interrupted run resumes after the last complete example.
* otherwise: the original's endless "concurrent" decoding of random examples, logging
  article / reference / summary, writing `decode/attn_vis_data.json` and an attention
  page, and reloading the newest checkpoint every 60 s.
"""

from __future__ import annotations

import logging
import os
import time
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from pointer_generator.data import binfile
from pointer_generator.data.vocab import (
    START_ID,
    STOP_DECODING,
    STOP_ID,
    UNK_ID,
    Vocab,
    outputids2words,
)
from pointer_generator.decoding import attention_html, decode_output
from pointer_generator.decoding.beam_search import MIN_COMPACT_SIZE, batched_beam_search, tile_beams
from pointer_generator.decoding.config import DecodeConfig
from pointer_generator.hparams import HParams
from pointer_generator.models import final_candidates
from pointer_generator.models.pointer_generator import EncoderOutput, PointerGeneratorModel
from pointer_generator.runtime import interrupts
from pointer_generator.runtime.progress import CountProgress

log = logging.getLogger(__name__)

ATTENTION_PAGES_SUBDIR = "attention"
# One line per decoded example: index, mean p_gen over its steps, number of steps. Lines are
# appended, so a resumed decode may repeat an index; readers keep the last line.
P_GENS_FILE = "p_gens.tsv"


class Summary(NamedTuple):
    """One decoded example.

    words: output words, [STOP] excluded. attn: [steps, enc_len] attention per generated
    id (steps may be len(words) + 1, the step that produced [STOP]). p_gens: [steps].
    """

    words: list[str]
    attn: np.ndarray
    p_gens: np.ndarray
    score: float


class BeamSearchDecoder:
    """Runs batched beam search for batches of distinct articles.

    Args:
      model: a built PointerGeneratorModel with weights loaded.
      vocab: the vocabulary the model was trained with.
      hps: beam_size, max_dec_steps, min_dec_steps, pointer_gen are read.
      trigram_blocking, length_penalty: optional extras (off = the original's search).
      jit_compile: compile the whole search with XLA.
      top_k: the search's top-k function over a whole distribution (default
        `top_k.chunked_top_k`).
      full_final_dist: build the whole extended-vocabulary distribution at every step
        and search it, as the original; by default (and unless trigram blocking needs
        it) only the entries that can be in its top 2K are computed
        (final_candidates.py: same summaries up to float rounding, faster).
      min_compact_size: finished articles leave the batch (halving it) down to this
        many rows (`beam_search.batched_beam_search`); None = never (the batch's last
        article decides how long every row is computed).

    `decode_batch` decodes one pipeline batch; `decode_stream` decodes a stream of them
    batch by batch.
    """

    def __init__(
        self,
        model: PointerGeneratorModel,
        vocab: Vocab,
        hps: HParams,
        *,
        trigram_blocking: bool = False,
        length_penalty: float | None = None,
        jit_compile: bool = False,
        top_k=None,
        full_final_dist: bool = False,
        min_compact_size: int | None = MIN_COMPACT_SIZE,
    ):
        self.model, self.vocab, self.hps = model, vocab, hps
        self.jit_compile = jit_compile
        self.min_compact_size = min_compact_size
        self.top_k = top_k
        self.full_final_dist = full_final_dist or trigram_blocking
        self.trigram_blocking = trigram_blocking
        self.length_penalty = length_penalty
        self._search = tf.function(
            self._search_graph, reduce_retracing=True, jit_compile=jit_compile
        )

    def _articles(self, enc: EncoderOutput, enc_batch_extend_vocab, enc_padding_mask) -> dict:
        """The per-article tensors [B, ...] the step function reads (`_step_fn`): the
        encoder tensors stay one row per article (the attention reads them once for all
        K beams); the small per-row tensors are tiled to the B*K rows in each step."""
        articles = {
            "states": enc.states,
            "features": enc.features,
            "mask": enc.padding_mask,
            "ext": enc_batch_extend_vocab,
        }
        if not self.full_final_dist and self.hps.pointer_gen:
            articles["words"] = final_candidates.article_index(
                enc_batch_extend_vocab, enc_padding_mask
            )
        return articles

    def _step_fn(self, max_art_oovs, projection):
        """step_fn(tokens, carry, articles) of the searches over `model.decode_step`;
        projection: `model.candidate_projection()`, or None for the whole distribution."""
        model, k = self.model, self.hps.beam_size

        def step_fn(tokens, carry, art):
            art_enc = EncoderOutput(art["states"], art["features"], art["mask"], None, None)
            setup = None
            if projection is not None:
                words = (
                    final_candidates.tile_article_words(art["words"], k)
                    if self.hps.pointer_gen
                    else None
                )
                setup = final_candidates.CandidateSetup(projection, words, 2 * k)
            ext = None if setup is not None else tile_beams(art["ext"], k)
            return model.decode_step(art_enc, ext, max_art_oovs, tokens, carry, setup)

        return step_fn

    def _search_graph(self, enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs):
        model, hps, k = self.model, self.hps, self.hps.beam_size
        enc = model.encode(enc_batch, enc_padding_mask)
        carry = tile_beams(model.initial_carry(enc), k)
        articles = self._articles(enc, enc_batch_extend_vocab, enc_padding_mask)
        projection = None if self.full_final_dist else model.candidate_projection()
        # A Python int when the batch size is static; a tensor once retracing relaxed it.
        batch_size = enc_batch.shape[0]
        if batch_size is None:
            batch_size = tf.shape(enc_batch)[0]
        return batched_beam_search(
            self._step_fn(max_art_oovs, projection),
            carry,
            batch_size=batch_size,
            beam_size=k,
            vocab_size=self.vocab.size(),
            max_dec_steps=hps.max_dec_steps,
            min_dec_steps=hps.min_dec_steps,
            start_id=START_ID,
            stop_id=STOP_ID,
            unk_id=UNK_ID,
            trigram_blocking=self.trigram_blocking,
            length_penalty=self.length_penalty,
            top_k=self.top_k,
            articles=articles,
            min_compact_size=self.min_compact_size,
        )

    def decode_batch(self, batch: dict) -> list[Summary]:
        """Beam-search every article of a pipeline batch; returns one Summary per row."""
        out = self._search(
            batch["enc_batch"],
            batch["enc_padding_mask"],
            batch["enc_batch_extend_vocab"],
            batch["max_art_oovs"],
        )
        out = {k: v.numpy() for k, v in out.items()}
        enc_lens = batch["enc_lens"].numpy()
        art_oovs = batch["art_oovs"].numpy()
        results = []
        for i in range(len(enc_lens)):
            n = int(out["lengths"][i])
            results.append(
                self._summary(
                    out["tokens"][i, :n],
                    out["attn_dists"][i, :n],
                    out["p_gens"][i, :n],
                    float(out["scores"][i]),
                    int(enc_lens[i]),
                    art_oovs[i],
                )
            )
        return results

    def _summary(self, ids, attn, p_gens, score: float, enc_len: int, art_oovs) -> Summary:
        """A Summary from a search's generated ids [n], attention [n, >= enc_len], p_gens."""
        oovs = [_text(w) for w in art_oovs if w] if self.hps.pointer_gen else None
        words = outputids2words([int(t) for t in ids], self.vocab, oovs)
        if STOP_DECODING in words:
            words = words[: words.index(STOP_DECODING)]
        return Summary(words, attn[:, :enc_len], p_gens, score)

    def decode_stream(self, batches, skip: int = 0):
        """Decode every article of an iterable of pipeline batches, batch by batch;
        yields (batch, row, Summary) in input order, leaving out the first `skip`
        articles (a resumed single pass)."""
        return decode_batches(self.decode_batch, batches, skip)


def decode_batches(decode_batch, batches, skip: int = 0):
    """(batch, row, Summary) of every article after the first `skip`, decoding batch by
    batch with `decode_batch(batch) -> [Summary]`."""
    index = 0
    for batch in batches:
        n = int(batch["enc_lens"].shape[0])
        if index + n > skip:
            for i, summary in enumerate(decode_batch(batch)):
                if index + i >= skip:
                    yield batch, i, summary
        index += n


def _text(x: bytes) -> str:
    # Text that is not UTF-8 flows through the pipeline as bytes (as in the original, whose
    # Python 2 strings were bytes; the pipeline warns about it); here it is shown with U+FFFD.
    return x.decode("utf-8", errors="replace")


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


def attention_record(strings: dict, summary: Summary, vocab: Vocab, pointer_gen: bool) -> dict:
    """The original's attn_vis_data.json record for one decoded example."""
    article = decode_output.mark_oovs(strings["article"], vocab)
    abstract = decode_output.show_abs_oovs(
        strings["abstract"], vocab, strings["art_oovs"] if pointer_gen else None
    )
    p_gens = [[float(p)] for p in summary.p_gens] if pointer_gen else None
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
) -> str | None:
    """Decode every example of `dataset` once into `decode_dir` and score it with ROUGE.

    Resumes after the examples already complete in `decode_dir`. Writes an attention page
    for the first `attention_pages` examples. Returns the ROUGE_results.txt text (or None).
    """
    hps, vocab = decoder.hps, decoder.vocab
    done = decode_output.count_complete(decode_dir)
    if done:
        log.info("Resuming single-pass decode in %s after %d complete examples", decode_dir, done)
    if os.path.isdir(decode_dir):
        decode_output.remove_stale_temporaries(decode_dir)  # from a run killed mid-write
    progress = CountProgress("decoded", total, unit="articles", already=done)
    pages_dir = os.path.join(decode_dir, ATTENTION_PAGES_SUBDIR)
    os.makedirs(decode_dir, exist_ok=True)
    p_gens_path = os.path.join(decode_dir, P_GENS_FILE)
    _drop_partial_last_line(p_gens_path)
    with open(p_gens_path, "a", encoding="utf-8") as p_gen_file:
        for ex, (batch, i, summary) in enumerate(
            decoder.decode_stream(dataset, skip=done), start=done
        ):
            interrupts.check()
            strings = example_strings(batch, i)
            # The p_gen line and the attention page come first and the decoded file last:
            # an example counts as complete (and is skipped by a resumed run) only once
            # everything of it is on disk. A resumed run may repeat a p_gen line.
            if hps.pointer_gen and len(summary.p_gens):
                p_gen_file.write(
                    "%d\t%.6f\t%d\n" % (ex, float(np.mean(summary.p_gens)), len(summary.p_gens))
                )
                p_gen_file.flush()
            if ex < attention_pages:
                record = attention_record(strings, summary, vocab, hps.pointer_gen)
                attention_html.write_attention_page(
                    os.path.join(pages_dir, "%06d.html" % ex),
                    record,
                    title=f"Example {ex}: " + " ".join(summary.words[:12]),
                )
            decode_output.write_for_rouge(
                strings["abstract_sents"], summary.words, ex, decode_dir, html_safe=html_safe
            )
            progress.update(1)
    progress.close()
    if os.path.isdir(pages_dir):
        attention_html.write_index(pages_dir)
    if not run_rouge:
        return None
    from pointer_generator.evaluation import rouge

    results = rouge.rouge_eval(
        os.path.join(decode_dir, decode_output.REFERENCE_SUBDIR),
        os.path.join(decode_dir, decode_output.DECODED_SUBDIR),
    )
    return rouge.rouge_log(results, decode_dir)


def _drop_partial_last_line(path: str) -> None:
    """Cut a line that an interrupted run left half-written at the end of `path`."""
    try:
        with open(path, "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
    except FileNotFoundError:
        pass


def log_example(strings: dict, summary: Summary, vocab: Vocab, pointer_gen: bool) -> str:
    """The original's concurrent-decode screen output for one example."""
    article = decode_output.mark_oovs(strings["article"], vocab)
    abstract = decode_output.show_abs_oovs(
        strings["abstract"], vocab, strings["art_oovs"] if pointer_gen else None
    )
    text = (
        f"\nARTICLE:  {article}\nREFERENCE SUMMARY: {abstract}\n"
        f"GENERATED SUMMARY: {' '.join(summary.words)}\n"
    )
    print(text, flush=True)
    return text


# ----------------------------------------------------------------------------- mode main
RELOAD_SECS = 60  # the original reloads the newest checkpoint every 60 s of decoding
WAIT_SECS = 10  # and retries every 10 s while there is none


def load_weights(
    model: PointerGeneratorModel,
    train_dir: str,
    tf1_path: str | None = None,
    wait: bool = True,
    max_wait_secs: float | None = None,
) -> str:
    """Load the newest checkpoint of `train_dir` (or an original TF1 checkpoint) into model.

    Waits (every 10 s, like the original) while train/ has no checkpoint yet, up to
    `max_wait_secs`. Returns the loaded checkpoint's path.
    """
    from pointer_generator.errors import CheckpointError
    from pointer_generator.runtime import checkpointing

    if tf1_path:
        from pointer_generator.models import tf1_checkpoint

        return tf1_checkpoint.load_tf1_checkpoint(model, tf1_path).path
    start = time.time()
    while True:
        interrupts.check()
        path = checkpointing.latest_checkpoint(train_dir)
        if path is not None:
            try:
                checkpointing.restore(tf.train.Checkpoint(model=model), path, model)
                log.info("Loaded checkpoint %s", path)
                return path
            except checkpointing.TRANSIENT_ERRORS:
                pass  # being written or deleted by the training job right now
        if not wait or (max_wait_secs is not None and time.time() - start > max_wait_secs):
            raise CheckpointError(
                f"no checkpoint in {train_dir}; train a model first (or give --tf1_checkpoint)"
            )
        log.info("No checkpoint in %s yet; retrying in %d s", train_dir, WAIT_SECS)
        time.sleep(WAIT_SECS)


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
    os.makedirs(decode_dir, exist_ok=True)
    hps, vocab = decoder.hps, decoder.vocab
    last_load, count = time.time(), 0
    for batch in dataset:
        for i, summary in enumerate(decoder.decode_batch(batch)):
            interrupts.check()
            strings = example_strings(batch, i)
            log_example(strings, summary, vocab, hps.pointer_gen)
            record = attention_record(strings, summary, vocab, hps.pointer_gen)
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


def main(hps: HParams, vocab: Vocab, cfg: DecodeConfig) -> None:
    """Decode mode (`--mode=decode`): single-pass files + ROUGE, or concurrent decoding."""
    from pointer_generator.data.input_pipeline import data_errors, make_dataset
    from pointer_generator.runtime.experiment import open_experiment

    exp = open_experiment(cfg.log_root, cfg.exp_name, "decode")
    model = PointerGeneratorModel(hps, vocab.size()).build_weights()
    print(model.parameter_summary(), flush=True)
    ckpt = load_weights(model, exp.train_dir, cfg.tf1_checkpoint or None)
    decoder = BeamSearchDecoder(
        model,
        vocab,
        hps,
        trigram_blocking=cfg.trigram_blocking,
        length_penalty=cfg.length_penalty or None,
        jit_compile=cfg.xla,
        full_final_dist=cfg.full_final_dist,
    )
    batch_hps = hps.replace(batch_size=cfg.decode_batch_size)
    with data_errors():
        dataset = make_dataset(
            cfg.data_path, vocab, batch_hps, "decode", cfg.single_pass, seed=hps.seed
        )
        if cfg.single_pass:
            decode_dir = os.path.join(
                exp.root,
                decode_output.decode_dir_name(
                    cfg.data_path, hps, ckpt, decoder.trigram_blocking, decoder.length_penalty
                ),
            )
            print(f"Decoding {cfg.data_path} into {decode_dir}", flush=True)
            decode_single_pass(
                decoder,
                dataset,
                decode_dir,
                total=count_examples(cfg.data_path),
                attention_pages=cfg.attention_pages,
            )
        else:
            decode_forever(
                decoder,
                dataset,
                os.path.join(exp.root, "decode"),
                exp.train_dir,
                cfg.max_decode_examples,
            )
