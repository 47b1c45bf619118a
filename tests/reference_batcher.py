"""Pure-Python batcher written from spec sections 2.8 and 3.1-3.2; a test oracle only.

It works on UTF-8 bytes like the original's Python 2 strings (Python 3 `bytes.split()` and
`bytes.strip()` know ASCII whitespace only, as Python 2 did), and shares no code with the
pipeline: only the word -> id mapping is taken from a `Vocab`.
"""

from __future__ import annotations

import numpy as np

UNK, PAD, START, STOP = 0, 1, 2, 3


class RefVocab:
    """Word (bytes) -> id, from a `pointer_generator.data.vocab.Vocab`."""

    def __init__(self, vocab):
        self.ids = {w.encode("utf-8"): i for i, w in enumerate(vocab.words)}
        self.size = len(self.ids)

    def id(self, word: bytes) -> int:
        return self.ids.get(word, UNK)


def sentences(abstract: bytes) -> list[bytes]:
    """Text between each `<s>` and the following `</s>`, scanning left to right."""
    out, cur = [], 0
    while True:
        start = abstract.find(b"<s>", cur)
        if start == -1:
            return out
        end = abstract.find(b"</s>", start + 3)
        if end == -1:
            return out
        out.append(abstract[start + 3 : end].strip())
        cur = end + 4


def _dec_pair(seq: list[int], max_len: int) -> tuple[list[int], list[int]]:
    inp = [START] + list(seq)
    target = list(seq)
    if len(inp) > max_len:
        inp = inp[:max_len]
        target = target[:max_len]
    else:
        target.append(STOP)
    assert len(inp) == len(target)
    return inp, target


def make_example(
    article: bytes,
    abstract: bytes,
    vocab: RefVocab,
    max_enc: int,
    max_dec: int,
    pointer_gen: bool,
    max_oovs: int | None = None,
) -> dict:
    """One example as in spec 3.1 (max_oovs: only the first max_oovs OOVs get ids)."""
    sents = sentences(abstract)
    abstract_text = b" ".join(sents)
    art_words = article.split()[:max_enc]
    enc = [vocab.id(w) for w in art_words]
    oovs: list[bytes] = []
    enc_ext = []
    for w, i in zip(art_words, enc, strict=True):
        if i == UNK:
            if w not in oovs:
                oovs.append(w)
            k = oovs.index(w)
            i = vocab.size + k if max_oovs is None or k < max_oovs else UNK
        enc_ext.append(i)
    if max_oovs is not None:
        oovs = oovs[:max_oovs]
    abs_words = abstract_text.split()
    abs_ids = [vocab.id(w) for w in abs_words]
    abs_ext = [
        vocab.size + oovs.index(w) if i == UNK and w in oovs else i
        for w, i in zip(abs_words, abs_ids, strict=True)
    ]
    dec_input, target = _dec_pair(abs_ids, max_dec)
    if pointer_gen:
        _, target = _dec_pair(abs_ext, max_dec)
    return {
        "article": article,
        "abstract": abstract_text,
        "sents": sents,
        "oovs": oovs,
        "enc": enc,
        "enc_ext": enc_ext,
        "dec_input": dec_input,
        "target": target,
    }


def make_examples(
    pairs,
    vocab: RefVocab,
    max_enc: int,
    max_dec: int,
    pointer_gen: bool,
    max_oovs: int | None = None,
) -> list[dict]:
    """Examples of (article, abstract) byte pairs in order, articles without a word
    (empty or ASCII whitespace only: Python 2's `split()`) skipped."""
    return [
        make_example(a, b, vocab, max_enc, max_dec, pointer_gen, max_oovs)
        for a, b in pairs
        if a.split()
    ]


def _pad(rows, width, value, dtype):
    out = np.full((len(rows), width), value, dtype=dtype)
    for r, row in enumerate(rows):
        out[r, : len(row)] = row
    return out


def make_batch(
    examples: list[dict], max_dec: int, enc_width: int | None = None, oov_width: int | None = None
) -> dict:
    """Batch arrays of spec 3.2; widths default to the longest row of the batch."""
    enc_lens = np.array([len(e["enc"]) for e in examples], np.int32)
    dec_lens = np.array([len(e["dec_input"]) for e in examples], np.int32)
    t_enc = enc_width if enc_width is not None else int(enc_lens.max())
    n_oovs = [len(e["oovs"]) for e in examples]
    k = oov_width if oov_width is not None else max(n_oovs)
    n_sents = [len(e["sents"]) for e in examples]
    return {
        "enc_batch": _pad([e["enc"] for e in examples], t_enc, PAD, np.int32),
        "enc_lens": enc_lens,
        "enc_padding_mask": _pad([[1] * n for n in enc_lens], t_enc, 0, np.float32),
        "enc_batch_extend_vocab": _pad([e["enc_ext"] for e in examples], t_enc, PAD, np.int32),
        "max_art_oovs": np.int32(max(n_oovs)),
        "art_oovs": _pad([e["oovs"] for e in examples], k, b"", object),
        "dec_batch": _pad([e["dec_input"] for e in examples], max_dec, PAD, np.int32),
        "target_batch": _pad([e["target"] for e in examples], max_dec, PAD, np.int32),
        "dec_padding_mask": _pad([[1] * n for n in dec_lens], max_dec, 0, np.float32),
        "dec_lens": dec_lens,
        "original_article": np.array([e["article"] for e in examples], object),
        "original_abstract": np.array([e["abstract"] for e in examples], object),
        "abstract_sents": _pad([e["sents"] for e in examples], max(n_sents), b"", object),
        "num_abstract_sents": np.array(n_sents, np.int32),
    }
