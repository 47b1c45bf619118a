"""What decoding writes: ROUGE files, the decode-dir name, OOV-marked text (spec 1.3, 6.1, 6.2).

Single-pass decode writes, for example k (0-based, file order),
`<decode_dir>/reference/%06d_reference.txt` (reference sentences, one a line) and
`<decode_dir>/decoded/%06d_decoded.txt` (decoded words split after every "." token, one
sentence a line); lines are joined with "\\n" and there is no trailing newline.

HTML safety: the original calls a helper meant to turn `<`/`>` into `&lt;`/`&gt;` but it
discards the results, so `<`/`>` are written unchanged. pyrouge wraps each line in an HTML
`<a>` element and ROUGE-1.5.5 reads a line's text only up to its first `<`, so with the
original behaviour a sentence loses everything from a `<` on (rare in CNN/DM, whose
tokenizer turns brackets into -lrb- etc.). We keep that behaviour by default, because it
is what produced the published numbers; `html_safe=True` applies the escaping the original
meant, which keeps the rest of the sentence but adds a token "lt"/"gt" to ROUGE's view.
"""

from __future__ import annotations

import contextlib
import os
import re

from pointer_generator.data.vocab import UNK_ID, Vocab
from pointer_generator.errors import FlagError
from pointer_generator.runtime import owned_files, staging

REFERENCE_SUBDIR = "reference"
DECODED_SUBDIR = "decoded"
REFERENCE_NAME = "%06d_reference.txt"
DECODED_NAME = "%06d_decoded.txt"


def split_sentences(decoded_words: list[str]) -> list[str]:
    """Join decoded words into sentences, ending one after every "." token.

    The period stays with its sentence; words after the last period form a final sentence.
    """
    sents, current = [], []
    for w in decoded_words:
        current.append(w)
        if w == ".":
            sents.append(" ".join(current))
            current = []
    if current:
        sents.append(" ".join(current))
    return sents


def make_html_safe(text: str) -> str:
    """What the original's helper meant to do: escape `<` and `>` for pyrouge's HTML."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


P_GENS_FILE = "p_gens.tsv"  # per example: index, mean p_gen, steps


# Decode files are written as every file the project replaces: atomically, through a
# temporary of the call's own (runtime/staging.py).
atomic_write_text = staging.replace_file


# The temporary names atomic_write_text uses: `.<name>.<pid>-<8 hex digits>.tmp`.
_TEMPORARY_RE = re.compile(r"^\..+\.\d+-[0-9a-f]{8}\.tmp$")


def remove_stale_temporaries(directory: str) -> int:
    """Delete the temporaries a killed writer left in `directory` and its sub-directories
    (only one decode job writes a decode directory); returns how many were removed."""
    removed = 0
    for dirpath, _, names in os.walk(directory):
        for name in names:
            if _TEMPORARY_RE.match(name):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(dirpath, name))
                    removed += 1
    return removed


def write_for_rouge(
    reference_sents: list[str],
    decoded_words: list[str],
    ex_index: int,
    decode_dir: str,
    html_safe: bool = False,
) -> None:
    """Write example `ex_index`'s reference and decoded files for ROUGE (see module doc).

    The reference file is written first, so `count_complete` can use the decoded file's
    presence as the sign that the example is done. `html_safe=False` is the original's
    (no-op helper) behaviour.
    """
    if ex_index < 0:
        raise ValueError(f"ex_index must be >= 0, got {ex_index}")
    decoded_sents = split_sentences(decoded_words)
    if html_safe:
        reference_sents = [make_html_safe(s) for s in reference_sents]
        decoded_sents = [make_html_safe(s) for s in decoded_sents]
    ref_dir = os.path.join(decode_dir, REFERENCE_SUBDIR)
    dec_dir = os.path.join(decode_dir, DECODED_SUBDIR)
    owned_files.make_dir(ref_dir)
    owned_files.make_dir(dec_dir)
    atomic_write_text(os.path.join(ref_dir, REFERENCE_NAME % ex_index), "\n".join(reference_sents))
    atomic_write_text(os.path.join(dec_dir, DECODED_NAME % ex_index), "\n".join(decoded_sents))


READABLE_SUBDIR = "readable"


def write_readable(decoded_words: list[str], ex_index: int, decode_dir: str) -> None:
    """`readable/NNNNNN.txt`: the summary as text a reader expects (one sentence a line)."""
    from pointer_generator.data.detokenize import detokenize

    sentences = [detokenize(s.split()) for s in split_sentences(decoded_words)]
    out = os.path.join(decode_dir, READABLE_SUBDIR)
    owned_files.make_dir(out)
    atomic_write_text(os.path.join(out, "%06d.txt" % ex_index), "\n".join(sentences) + "\n")


def count_complete(decode_dir: str) -> int:
    """Number n of examples fully written: both files exist for every index 0..n-1.

    A resumed single-pass decode skips the first n examples and rewrites from n on (files
    beyond a gap, if any, are overwritten in turn).
    """

    def names(sub):
        d = os.path.join(decode_dir, sub)
        return set(os.listdir(d)) if os.path.isdir(d) else set()

    refs, decs = names(REFERENCE_SUBDIR), names(DECODED_SUBDIR)
    n = 0
    while REFERENCE_NAME % n in refs and DECODED_NAME % n in decs:
        n += 1
    return n


def dataset_label(data_path: str) -> str:
    """`train`, `val` or `test` by the original's substring test, in that order.

    Faithful quirk (spec 9.4): "train" wins if it occurs anywhere in the path, and e.g. a
    directory named "interval" makes any path "val".
    """
    for label in ("train", "val", "test"):
        if label in data_path:
            return label
    raise FlagError(
        f"--data_path {data_path!r} contains none of 'train', 'val', 'test'; "
        "the decode directory name needs one of them to label the dataset"
    )


def checkpoint_number(ckpt_name: str) -> str:
    """Text after the last "-" of a checkpoint path's file name, e.g. `238410` from
    `.../train/model.ckpt-238410` or `230000_cov_init` from `model.ckpt-230000_cov_init`."""
    base = os.path.basename(ckpt_name.rstrip("/"))
    if "-" not in base:
        raise FlagError(f"checkpoint name {ckpt_name!r} has no '-<step>' part")
    return base.rsplit("-", 1)[1]


def decode_dir_name(data_path: str, hps, settings, ckpt_name: str) -> str:
    """`decode_<ds>_<E>maxenc_<B>beam_<m>mindec_<M>maxdec_ckpt-<N>` (spec 1.3).

    `hps` gives max_enc_steps (and mixed_precision), `settings` (a `SearchSettings`) the
    beam and the lengths; `ckpt_name` is the loaded checkpoint path (or just its name).
    Decoding options the original lacked are appended so their outputs never mix with
    faithful ones: `_triblock`, `_lp<value>`, `_bf16` (hps.mixed_precision), `_blockunk`,
    and ABS+'s `_absplus-<weights digest>` (`extractive_features.features_suffix`).
    """
    from pointer_generator.search.extractive_features import features_suffix

    name = "decode_%s_%imaxenc_%ibeam_%imindec_%imaxdec_ckpt-%s" % (
        dataset_label(data_path),
        hps.max_enc_steps,
        settings.beam_size,
        settings.min_dec_steps,
        settings.max_dec_steps,
        checkpoint_number(ckpt_name),
    )
    if settings.trigram_blocking:
        name += "_triblock"
    if settings.length_penalty is not None:
        name += "_lp%r" % float(settings.length_penalty)
    if getattr(hps, "mixed_precision", False):
        name += "_bf16"
    if settings.block_unk:
        name += "_blockunk"
    return name + features_suffix(settings.feature_weights, settings.namas_features)


def mark_oovs(text: str, vocab: Vocab) -> str:
    """The text with every out-of-vocabulary word shown as `__word__` (article logging)."""
    return " ".join(f"__{w}__" if w and vocab.word2id(w) == UNK_ID else w for w in text.split(" "))


def show_abs_oovs(abstract: str, vocab: Vocab, article_oovs: list[str] | None) -> str:
    """The abstract with OOVs marked: `__w__` if the pointer can copy w from the article,
    `!!__w__!!` if w is absent from the article; baseline (`article_oovs=None`): `__w__`."""
    out = []
    for w in abstract.split(" "):
        if w and vocab.word2id(w) == UNK_ID:
            if article_oovs is None or w in article_oovs:
                w = f"__{w}__"
            else:
                w = f"!!__{w}__!!"
        out.append(w)
    return " ".join(out)


def example_log_text(
    article: str,
    abstract: str,
    decoded_words: list[str],
    vocab: Vocab,
    article_oovs: list[str] | None,
) -> str:
    """The concurrent decoder's per-example screen log (spec 6.1): the article with OOVs
    marked, the reference with `show_abs_oovs` marks (`article_oovs=None` for the
    baseline), and the generated summary joined by spaces."""
    return (
        f"ARTICLE:  {mark_oovs(article, vocab)}\n"
        f"REFERENCE SUMMARY: {show_abs_oovs(abstract, vocab, article_oovs)}\n"
        f"GENERATED SUMMARY: {' '.join(decoded_words)}"
    )
