"""The tf.data input pipeline: `.bin` chunk files -> padded batches (spec 2.8 and 3).

`make_dataset` yields dicts of tensors (B = batch size, T_enc = encoder length of the
batch, D = the summary length of the batch: max_dec_steps unless --decoder_buckets,
K = max_art_oovs, S = most abstract sentences in the batch):

  enc_batch               int32   [B, T_enc]  article ids (OOV -> 0), padded with 1
  enc_lens                int32   [B]
  enc_padding_mask        float32 [B, T_enc]
  enc_batch_extend_vocab  int32   [B, T_enc]  k-th distinct article OOV -> vocab size + k
  max_art_oovs            int32   []
  art_oovs                string  [B, K]      padded with b""
  dec_batch               int32   [B, D]      [START] + abstract ids, padded with 1
  target_batch            int32   [B, D]      abstract ids (+ [STOP] unless cut), padded 1
  dec_padding_mask        float32 [B, D]
  dec_lens                int32   [B]
  original_article        string  [B]
  original_abstract       string  [B]         sentences joined by one space
  abstract_sents          string  [B, S]      padded with b""
  num_abstract_sents      int32   [B]

T_enc is set by `hps.static_shapes` (`encoder_width`): by default the longest `enc_len`
in the batch rounded up to one of `hps.length_buckets` fixed lengths; max_enc_steps
with static_shapes=True (then K is hps.max_oovs and every numeric shape is static); the
longest `enc_len` itself with static_shapes=False (the original Batcher's padding).
D is max_dec_steps (the original's) unless `hps.decoder_buckets` > 1 (`decoder_width`).
The lengths and the grouping of examples: `data/padding.py`; docs/input_pipeline.md.
"""

from __future__ import annotations

import functools

import tensorflow as tf

from pointer_generator.data import bin_dataset, controls, example_ops
from pointer_generator.data.bin_dataset import data_errors  # noqa: F401  (re-exported)
from pointer_generator.data.padding import (  # noqa: F401  (re-exported)
    bucket_lengths,
    bucket_order,
    decoder_width,
    encoder_width,
    padded_lengths,
)
from pointer_generator.data.vocab import Vocab
from pointer_generator.errors import DataError, FlagError
from pointer_generator.hparams import MODES, HParams

STRING_KEYS = ("art_oovs", "original_article", "original_abstract", "abstract_sents")
BUCKET_CACHE_BATCHES = 100  # batches sorted together (spec 3.3)
READER_CYCLE = 16  # files read at once in endless mode (the original's 16 reader threads)
BLOCK_SIZE = 64  # examples processed per vectorised call

# Separate random streams derived from the seed (stateless, so runs are reproducible).
_FILE_ORDER_STREAM, _BATCH_ORDER_STREAM = 1, 2

# The stage functions use explicit tf.cond / tf.while_loop; skipping AutoGraph's source
# conversion saves seconds of start-up per pipeline.
_graph_fn = tf.autograph.experimental.do_not_convert


def make_dataset(
    data_path: str,
    vocab: Vocab,
    hps: HParams,
    mode: str,
    single_pass: bool,
    *,
    seed=None,
    num_replicas: int = 1,
    replica_index: int = 0,
    beam_copies: bool = False,
    by_example: bool = False,
    control: str | None = None,
) -> tf.data.Dataset:
    """Batches of `.bin` examples for `mode` ('train', 'eval' or 'decode').

    Args:
      data_path: glob of `.bin` files (e.g. `finished_files/chunked/train_*`).
      vocab: the vocabulary (its size is the base of the extended OOV ids).
      hps: uses batch_size, max_enc_steps, max_dec_steps, pointer_gen, seed,
        static_shapes, max_oovs.
      mode: train/eval batches are length-bucketed (pools of 100 batches sorted by
        enc_len, batch order shuffled); decode batches hold distinct examples in read order.
      single_pass: read the files once in sorted order, no shuffling, keep the final
        partial batch (also with static_shapes: its batch dimension is then smaller, the
        only dimension that is not fixed), then stop. Otherwise repeat forever, each pass
        in a new shuffled file order.
      seed: seed of every shuffle; None uses hps.seed.
      num_replicas, replica_index: read only this replica's share (by file when there
        are at least as many files as replicas, else by example; `by_example`: always
        by example, replica r reading examples r, r + n, r + 2n, ... of the sorted pass,
        as sharded decoding needs).
      beam_copies: decode mode only: each batch is batch_size copies of one example, like
        the original decoder's batches.
      control: a single pass only: "articles" or "summaries", a control of the eval
        job's --input_gap (`data/controls.py`: each example with another's article, or
        its decoder fed another's summary words).
    """
    _check_options(mode, single_pass, num_replicas, replica_index, beam_copies, control)
    seed = hps.seed if seed is None else seed
    files = bin_dataset.list_files(data_path)
    for f in files:
        bin_dataset.validate_records(f)  # (TensorFlow's parser can crash on a bad record)
    by_file = len(files) >= num_replicas and not by_example

    texts = _texts(data_path, files, single_pass, seed, by_file, num_replicas, replica_index)
    if not by_file and num_replicas > 1:
        # Every replica reads the same order (same seed), so striding partitions it.
        texts = texts.shard(num_replicas, replica_index)
    shift = controls.offset(texts) if control else 0
    if control == "articles":
        texts = controls.other_articles(texts, shift)
    if mode != "decode":
        _check_tagged(files)
    # Endless reading of nothing would spin; a single pass over nothing would end in
    # an empty result (no decoded files, a 0/0 loss) far from the cause.
    if by_file:
        _check_not_empty(files[replica_index::num_replicas], data_path, 1, 0)
    else:
        _check_not_empty(files, data_path, num_replicas, replica_index)

    build = _builder(vocab, hps)
    examples = (
        texts.batch(BLOCK_SIZE)
        .map(
            _graph_fn(lambda block: build(block["article"], block["abstract"])),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        .unbatch()
    )
    if control == "summaries":
        examples = controls.other_decoder_inputs(examples, shift)

    b = hps.batch_size
    if beam_copies:
        groups = examples.flat_map(_graph_fn(lambda ex: tf.data.Dataset.from_tensors(ex).repeat(b)))
        groups = groups.ragged_batch(b, drop_remainder=True)
    elif mode in ("train", "eval") and not single_pass:
        groups = _bucketed(examples, b, seed, hps)
    else:
        # A single pass keeps every example: dropping the final partial batch would
        # silently leave examples out of a decode or an evaluation.
        groups = examples.ragged_batch(
            b, drop_remainder=hps.static_shapes is True and not single_pass
        )
    fixed_batch = None if single_pass and not beam_copies else hps.batch_size
    pad = _graph_fn(lambda g: _pad_batch(g, hps, fixed_batch))
    return groups.map(pad, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(
        tf.data.AUTOTUNE
    )


def examples_batch(
    examples: list[tuple[str, str]], vocab: Vocab, hps: HParams, rows: int | None = None
) -> dict:
    """One padded decode batch (the module docstring's dict, as eager tensors) of
    tokenized (article, abstract) pairs, built by the pipeline's own stages without a
    `tf.data` pipeline: building and starting one costs about a second, which is most
    of an interactive summary's time (`summarizing/article_texts.py`).

    Args:
      examples: 1 or more pairs with non-empty articles.
      rows: pad the batch to this many rows by repeating the last example, so that a
        compiled search sees a few fixed batch sizes; the caller drops the extra rows.
    """
    if not examples or any(not a.split() for a, _ in examples):
        raise DataError("examples_batch needs examples with non-empty articles")
    if rows is not None and rows < len(examples):
        raise FlagError(f"rows={rows} is fewer than the {len(examples)} examples")
    padded = list(examples) + [examples[-1]] * ((rows or len(examples)) - len(examples))
    return _batch_maker(vocab, hps)(
        tf.constant([a.encode("utf-8") for a, _ in padded]),
        tf.constant([b.encode("utf-8") for _, b in padded]),
    )


@functools.lru_cache(maxsize=8)
def _batch_maker(vocab, hps: HParams):
    """The pipeline's example builder and `_pad_batch` as one function, traced once per
    settings (eager ragged ops cost tens of ms; two calls cost 0.4 ms more than one)."""
    build = _builder(vocab, hps)

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    def make(article, abstract):
        return _pad_batch(build(article, abstract), hps, None)

    return make


def distributed_dataset_fn(
    data_path: str, vocab: Vocab, hps: HParams, mode: str, single_pass: bool, **kwargs
):
    """`dataset_fn(input_context)` for `strategy.distribute_datasets_from_function`.

    `hps.batch_size` is the global batch; each input pipeline makes per-replica batches
    of its own share of the data.
    """

    def dataset_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
        per_replica = ctx.get_per_replica_batch_size(hps.batch_size)
        return make_dataset(
            data_path,
            vocab,
            hps.replace(batch_size=per_replica),
            mode,
            single_pass,
            num_replicas=ctx.num_input_pipelines,
            replica_index=ctx.input_pipeline_id,
            **kwargs,
        )

    return dataset_fn


def model_inputs(batch: dict) -> dict:
    """The batch without its string fields (for `tf.function` train/eval steps)."""
    return {k: v for k, v in batch.items() if k not in STRING_KEYS}


def batch_strings(batch: dict, i: int) -> dict:
    """Python strings of example `i` of a batch (eager tensors or numpy arrays).

    Returns {'article': str, 'abstract': str, 'abstract_sents': [str], 'art_oovs': [str]}.
    Bytes that are not UTF-8 are decoded with U+FFFD replacements.
    """

    def row(key):
        x = batch[key][i]
        return x.numpy() if hasattr(x, "numpy") else x

    def text(b: bytes) -> str:
        return b.decode("utf-8", errors="replace")

    n_sents = int(row("num_abstract_sents"))
    return {
        "article": text(row("original_article")),
        "abstract": text(row("original_abstract")),
        "abstract_sents": [text(s) for s in row("abstract_sents")[:n_sents]],
        # OOV words are never empty, so b"" is only padding.
        "art_oovs": [text(w) for w in row("art_oovs") if w],
    }


# ------------------------------------------------------------------------------ stages
def _texts(data_path, files, single_pass, seed, by_file, num_replicas, replica_index):
    """Dataset of {'article', 'abstract'} scalars: one sorted pass, or endless passes.

    Each endless pass re-globs `data_path` (like the original, new chunk files get
    picked up), shuffles the file order and reads READER_CYCLE files at a time, each
    front to back. Passes do not overlap, so every pass is exactly one epoch.
    """

    def mine(names):
        return names[replica_index::num_replicas] if by_file else names

    def read(names, cycle):
        return tf.data.Dataset.from_tensor_slices(names).interleave(
            _read_file,
            cycle_length=cycle,
            block_length=1,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )

    if single_pass:
        return read(mine(files), 1)

    @_graph_fn
    def one_pass(index):
        names = mine(tf.io.matching_files(data_path))  # sorted by the op
        check = bin_dataset.assert_data(
            tf.size(names) > 0,
            f"--data_path {data_path!r} matches no files for replica {replica_index} of "
            f"{num_replicas} (any more)",
        )
        with tf.control_dependencies([check]):
            names = tf.random.experimental.stateless_shuffle(
                names, _stream_seed(seed, _FILE_ORDER_STREAM, index)
            )
        return read(names, READER_CYCLE)

    return tf.data.Dataset.counter().flat_map(one_pass)


def _check_options(mode, single_pass, num_replicas, replica_index, beam_copies, control):
    if mode not in MODES:
        raise FlagError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not 0 <= replica_index < num_replicas:
        raise FlagError(f"replica_index {replica_index} is not in [0, {num_replicas})")
    if beam_copies and mode != "decode":
        raise FlagError("beam_copies batches are for decode mode only")
    if control not in (None, *controls.CONTROLS):
        raise FlagError(f"control must be one of {', '.join(controls.CONTROLS)}, got {control!r}")
    if control and not single_pass:
        raise FlagError(f"the {control} control pairs the examples of one single pass")


def _stream_seed(seed, stream, index):
    return tf.random.experimental.stateless_fold_in(
        tf.constant([seed, stream], tf.int64), tf.cast(index, tf.int64)
    )


# The stage functions below are traced once per process (or per vocab and settings) and
# shared by every pipeline: tracing costs seconds, which adds up in tests and tools that
# build several pipelines.
@tf.function(autograph=False, input_signature=[tf.TensorSpec([], tf.string)])
def _read_texts(path):
    ex = bin_dataset.read_bin_file(path)
    ex = bin_dataset.warn_untagged_abstracts(path, bin_dataset.warn_non_utf8(path, ex))
    ex = bin_dataset.drop_empty_articles(path, ex)
    return ex["article"], ex["abstract"]


def _builder(vocab, hps: HParams):
    """`_example_builder` for `hps` (OOVs capped at max_oovs only with static shapes)."""
    max_oovs = hps.max_oovs if hps.static_shapes is True else None
    return _example_builder(vocab, hps.max_enc_steps, hps.max_dec_steps, hps.pointer_gen, max_oovs)


@functools.lru_cache(maxsize=8)
def _example_builder(vocab, max_enc_steps, max_dec_steps, pointer_gen, max_oovs):
    """tf.function: (article [n], abstract [n]) -> example_ops.build_examples(...)."""
    table = example_ops.vocab_table(vocab)

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    def build(article, abstract):
        return example_ops.build_examples(
            article,
            abstract,
            table,
            vocab.size(),
            max_enc_steps,
            max_dec_steps,
            pointer_gen,
            max_oovs,
        )

    return build


@_graph_fn
def _read_file(path):
    """Dataset of {'article', 'abstract'} scalars of one file, empty articles skipped."""
    article, abstract = _read_texts(path)
    return tf.data.Dataset.from_tensor_slices({"article": article, "abstract": abstract})


def _check_not_empty(files, data_path, num_shards, shard):
    """An endless pipeline over data with no usable example would spin forever.

    Reads the files in order only until the first usable example (normally one file).
    """
    probe = tf.data.Dataset.from_tensor_slices(files).flat_map(_read_file)
    with data_errors():
        for _ in probe.shard(num_shards, shard).take(1):
            return
    raise DataError(
        f"--data_path {data_path!r}: no example with a non-empty article"
        + (f" for replica {shard} of {num_shards}" if num_shards > 1 else "")
    )


def _check_tagged(files) -> None:
    """Training or evaluating on abstracts without `<s>` tags teaches only [STOP]: an
    error when no abstract of the first file that has examples holds one."""
    for path in files:
        with data_errors():
            _, abstracts = _read_texts(path)
        if int(tf.size(abstracts)) == 0:
            continue
        if int(bin_dataset.count_tagged_abstracts(abstracts)) == 0:
            raise DataError(
                f"{path}: no abstract has <s> ... </s> sentence tags, so every target would "
                "be just [STOP]; make the .bin files with data_tools (convert or "
                "make_datafiles), which tags every abstract sentence"
            )
        return


def _bucketed(examples, batch_size, seed, hps: HParams):
    pool = batch_size * BUCKET_CACHE_BATCHES
    by_summary = hps.decoder_buckets > 1 and hps.static_shapes is not True
    enc_bounds = bucket_lengths(hps.max_enc_steps, hps.length_buckets)

    @_graph_fn
    def sort_pool(index, ex):
        order = bucket_order(
            ex["enc_input"].row_lengths(),
            batch_size,
            _stream_seed(seed, _BATCH_ORDER_STREAM, index),
            dec_lens=ex["dec_len"] if by_summary else None,
            enc_bounds=enc_bounds,
        )
        return {k: tf.gather(v, order) for k, v in ex.items()}

    # Re-batching the reordered pool cuts it into exactly the sorted groups. A pool holds
    # a whole number of batches, so none is partial: saying so (drop_remainder) gives the
    # batches a static batch dimension, which the train step's graph is ~9% faster with
    # (docs/performance.md, "A static batch dimension").
    return (
        examples.ragged_batch(pool, drop_remainder=True)
        .enumerate()
        .map(sort_pool, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .unbatch()
        .ragged_batch(batch_size, drop_remainder=True)
    )


def _pad_batch(g, hps: HParams, fixed_batch: int | None) -> dict:
    """Ragged group of examples -> the padded batch dict of the module docstring.

    With static_shapes every dimension is fixed, the batch one to `fixed_batch` (None: a
    single pass, whose final batch may be smaller)."""
    static = hps.static_shapes is True
    pad = example_ops.PAD_VALUES

    def dense(key, width):
        if not isinstance(width, tf.Tensor):
            return g[key].to_tensor(default_value=pad[key], shape=[None, width])
        x = g[key].to_tensor(default_value=pad[key])
        return tf.pad(x, [[0, 0], [0, width - tf.shape(x)[1]]], constant_values=pad[key])

    enc_lens = tf.cast(g["enc_input"].row_lengths(), tf.int32)
    dec_lens = g["dec_len"]
    enc_width = encoder_width(enc_lens, hps)
    enc_batch = dense("enc_input", enc_width)
    dec_width = decoder_width(dec_lens, hps)
    art_oovs = dense("art_oovs", hps.max_oovs if static else None)
    sents = dense("abstract_sents", None)
    batch = {
        "enc_batch": enc_batch,
        "enc_lens": enc_lens,
        "enc_padding_mask": tf.sequence_mask(enc_lens, tf.shape(enc_batch)[1], tf.float32),
        "enc_batch_extend_vocab": dense("enc_input_extend_vocab", enc_width),
        "max_art_oovs": tf.cast(
            tf.reduce_max(tf.concat([g["art_oovs"].row_lengths(), [0]], 0)), tf.int32
        ),
        "art_oovs": art_oovs,
        "dec_batch": g["dec_input"][:, :dec_width],
        "target_batch": g["target"][:, :dec_width],
        "dec_padding_mask": tf.sequence_mask(dec_lens, dec_width, tf.float32),
        "dec_lens": dec_lens,
        "original_article": g["article"],
        "original_abstract": g["abstract"],
        "abstract_sents": sents,
        "num_abstract_sents": tf.cast(g["abstract_sents"].row_lengths(), tf.int32),
    }
    if static:
        b = fixed_batch
        for key in ("enc_batch", "enc_padding_mask", "enc_batch_extend_vocab"):
            batch[key] = tf.ensure_shape(batch[key], [b, hps.max_enc_steps])
        for key in ("dec_batch", "target_batch", "dec_padding_mask"):
            batch[key] = tf.ensure_shape(batch[key], [b, hps.max_dec_steps])
        batch["art_oovs"] = tf.ensure_shape(batch["art_oovs"], [b, hps.max_oovs])
        for key in (
            "enc_lens",
            "dec_lens",
            "original_article",
            "original_abstract",
            "num_abstract_sents",
        ):
            batch[key] = tf.ensure_shape(batch[key], [b])
    return batch
