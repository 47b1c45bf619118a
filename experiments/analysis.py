"""The paper's analysis measures for a set of summaries (See et al. 2017, Sections 7.1-7.2).

Input: a decode directory (`reference/NNNNNN_reference.txt` + `decoded/NNNNNN_decoded.txt`,
as single-pass decode and `experiments.lead3` write them), optionally the source articles
(`.bin` files read in the order single-pass decoding reads them: files sorted by name,
records in file order, empty articles skipped) and a vocabulary.

Definitions (every percentage is 0-100 and a *micro* average: the counts are summed over
all summaries of the set before dividing, so long summaries weigh more):

* **Tokens of a summary**: the words of all its lines (sentences) in order, split on ASCII
  whitespace. n-grams are taken over this whole sequence, so they may cross sentence
  boundaries. An empty summary has no n-grams and no sentences.
* **Sentences of a summary**: its non-empty lines, whitespace-normalised (decoded files
  hold one sentence a line, split after every "." token; reference files one highlight a
  line).
* **Duplicate n-grams** (paper Figure 4), n = 1..4: an n-gram *occurrence* is a duplicate
  if the same n-gram occurred earlier in the same summary. % = duplicates / all n-gram
  occurrences. Example: `a b a b a` has bigrams ab, ba, ab, ba: 2 duplicates of 4 = 50 %.
* **Duplicate sentences**: a sentence equal to an earlier sentence of the same summary.
* **Novel n-grams** (paper Figure 6): an n-gram occurrence of the summary that occurs
  nowhere in the (whole, untruncated) article. % = novel / all n-gram occurrences.
* **Copied whole article sentences** (the paper's measure, Section 7.2: 35 % for the
  pointer-generator + coverage, 1.3 % for the references): the summary's tokens and the
  (whole) article are both cut into sentences with the splitter lead-3 uses
  (`experiments.sentences`); a summary sentence is copied when it equals an article
  sentence token for token. % = copied / all summary sentences (of that splitter).
* **Novel sentences** (Figure 6's "sentences"): the complement of the above, 100 - copied.
* **Sentences found as an article span**: a summary line whose token sequence occurs
  somewhere in the article as a contiguous run of tokens, possibly inside a longer
  sentence. A weaker notion of copying than the paper's (on the paper's own released
  outputs it gives about 50 % where the paper reports 35 %); do not compare it with 35 %.
* **Unknown-token rate**: % of summaries containing the unknown token, `[UNK]` by
  default (`--unk_token UNK` or `<unk>` for outputs of other tools).
* **Copied article OOVs**: summary tokens that are out of the given vocabulary (with its
  `vocab_size` cut-off) and occur among the first `max_enc_steps` article tokens (the part
  the model reads, from which the pointer can copy); the unknown token itself never
  counts. Counted per occurrence; reported as the total, the mean per summary and the % of
  summaries with at least one.
* **Mean p_gen**: from the decode dir's `p_gens.tsv` (lines `index<TAB>mean p_gen<TAB>
  steps`; for a repeated index the last line counts): the mean over summaries of their
  mean, and the mean over all decoder steps (each summary's mean weighted by its steps).

Command line:

    python -m experiments.analysis --decode_dir DIR [--data_path 'D/chunked/test_*'] \
        [--vocab_path D/vocab --vocab_size 50000] [--unk_token '[UNK]'] [--out analysis.json]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from experiments.sentences import split_tokens
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.data.binfile import read_records
from pointer_generator.data.vocab import UNK_ID, UNK_TOKEN, Vocab, abstract2sents, ascii_split
from pointer_generator.decoding import folder
from pointer_generator.errors import PointerGeneratorError

NGRAM_ORDERS = (1, 2, 3, 4)
P_GENS_FILE = "p_gens.tsv"  # written by pointer_generator.decoding.job in single-pass mode
DEFAULT_MAX_ENC_STEPS = 400

_DECODED_RE = re.compile(r"(\d+)_decoded\.txt")
_REFERENCE_RE = re.compile(r"(\d+)_reference\.txt")


class AnalysisError(PointerGeneratorError):
    """The summaries or articles to analyse are missing or do not fit together."""


# ---------------------------------------------------------------------------------------
# Counting, per summary


def ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    """All n-gram occurrences of `tokens`, in order."""
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def duplicate_ngrams(tokens: list[str], n: int) -> tuple[int, int]:
    """(occurrences repeating an earlier n-gram of the same sequence, all occurrences)."""
    seen, dup = set(), 0
    grams = ngrams(tokens, n)
    for g in grams:
        if g in seen:
            dup += 1
        seen.add(g)
    return dup, len(grams)


def duplicate_sentences(sentences: list[str]) -> tuple[int, int]:
    """(sentences equal to an earlier sentence of the same summary, all sentences)."""
    seen, dup = set(), 0
    for s in sentences:
        if s in seen:
            dup += 1
        seen.add(s)
    return dup, len(sentences)


def novel_ngrams(tokens: list[str], n: int, article_ngrams: set) -> tuple[int, int]:
    """(n-gram occurrences absent from `article_ngrams`, all occurrences)."""
    grams = ngrams(tokens, n)
    return sum(1 for g in grams if g not in article_ngrams), len(grams)


def span_sentences(sentences: list[str], article_tokens: list[str]) -> tuple[int, int]:
    """(sentences found verbatim, as a contiguous token run, in the article, all)."""
    # Tokens never contain spaces, so a space-padded substring test is an exact test for
    # a contiguous token subsequence (no partial-word matches).
    padded = " " + " ".join(article_tokens) + " "
    found = sum(1 for s in sentences if " " + s + " " in padded)
    return found, len(sentences)


def copied_whole_sentences(
    tokens: list[str], article_sentences: set[tuple[str, ...]]
) -> tuple[int, int]:
    """(summary sentences equal to a whole article sentence, all summary sentences).

    `tokens`: the summary's tokens; they are cut with `experiments.sentences`, the
    splitter `article_sentences` (token tuples) must have been made with.
    """
    sents = split_tokens(tokens)
    return sum(1 for s in sents if tuple(s) in article_sentences), len(sents)


def copied_oovs(
    tokens: list[str], article_tokens: list[str], vocab: Vocab, unk_token: str = UNK_TOKEN
) -> int:
    """Occurrences of summary tokens that are OOV for `vocab` and appear in the article.

    `article_tokens` should already be truncated to what the model reads; `unk_token`
    (the summaries' spelling of the unknown word) never counts as a copy.
    """
    article = set(article_tokens)
    return sum(
        1
        for t in tokens
        if t != unk_token and t != UNK_TOKEN and vocab.word2id(t) == UNK_ID and t in article
    )


# ---------------------------------------------------------------------------------------
# Aggregation over a set of summaries


@dataclass
class _Counts:
    """Numerator/denominator pairs summed over summaries."""

    num: dict = field(default_factory=dict)
    den: dict = field(default_factory=dict)

    def add(self, key: str, pair: tuple[int, int]) -> None:
        self.num[key] = self.num.get(key, 0) + pair[0]
        self.den[key] = self.den.get(key, 0) + pair[1]

    def pct(self, key: str) -> float | None:
        d = self.den.get(key, 0)
        return 100.0 * self.num[key] / d if d else None


def summary_tokens(sentences: list[str]) -> list[str]:
    return [t for s in sentences for t in ascii_split(s)]


def measure(
    summaries: list[list[str]],
    articles: list[str] | None = None,
    vocab: Vocab | None = None,
    max_enc_steps: int = DEFAULT_MAX_ENC_STEPS,
    unk_token: str = UNK_TOKEN,
) -> dict:
    """The measures of the module doc for `summaries` (each a list of sentence strings).

    `articles[k]` is the source of `summaries[k]`; without articles the novelty, copying
    and OOV measures are None, without a vocab the OOV measures are None. `max_enc_steps`
    <= 0 means the whole article counts for copied OOVs. `unk_token`: how the summaries
    spell the unknown word.
    """
    if articles is not None and len(articles) != len(summaries):
        raise AnalysisError(f"{len(summaries)} summaries but {len(articles)} articles")
    counts = _Counts()
    unk = oov_total = with_oov = n_tokens = 0
    for k, raw_sents in enumerate(summaries):
        sents = [" ".join(ascii_split(s)) for s in raw_sents]
        sents = [s for s in sents if s]
        tokens = summary_tokens(sents)
        n_tokens += len(tokens)
        for n in NGRAM_ORDERS:
            counts.add(f"duplicate_{n}gram", duplicate_ngrams(tokens, n))
        counts.add("duplicate_sentence", duplicate_sentences(sents))
        if unk_token in tokens:
            unk += 1
        if articles is None:
            continue
        art = ascii_split(articles[k])
        for n in NGRAM_ORDERS:
            counts.add(f"novel_{n}gram", novel_ngrams(tokens, n, set(ngrams(art, n))))
        counts.add(
            "copied_sentence", copied_whole_sentences(tokens, {tuple(x) for x in split_tokens(art)})
        )
        counts.add("span_sentence", span_sentences(sents, art))
        if vocab is not None:
            seen = art[:max_enc_steps] if max_enc_steps > 0 else art
            c = copied_oovs(tokens, seen, vocab, unk_token)
            oov_total += c
            with_oov += c > 0
    n = len(summaries)
    out = {"summaries": n, "mean_tokens": n_tokens / n if n else None}
    for key in [f"duplicate_{g}gram" for g in NGRAM_ORDERS] + ["duplicate_sentence"]:
        out[key + "_pct"] = counts.pct(key)
    out["unk_summary_pct"] = 100.0 * unk / n if n else None
    for key in [f"novel_{g}gram" for g in NGRAM_ORDERS] + ["copied_sentence", "span_sentence"]:
        out[key + "_pct"] = counts.pct(key) if articles is not None else None
    copied = out["copied_sentence_pct"]
    out["novel_sentence_pct"] = None if copied is None else 100.0 - copied
    have_oov = articles is not None and vocab is not None
    out["copied_oov_tokens"] = oov_total if have_oov else None
    out["copied_oov_per_summary"] = (oov_total / n if n else None) if have_oov else None
    out["summaries_with_copied_oov_pct"] = (
        (100.0 * with_oov / n if n else None) if have_oov else None
    )
    return out


# ---------------------------------------------------------------------------------------
# Reading decode directories, articles and p_gens


def read_summary_dir(directory: str, pattern: re.Pattern) -> dict[int, list[str]]:
    """{example index: its non-empty lines} of the files in `directory` matching `pattern`."""
    if not os.path.isdir(directory):
        raise AnalysisError(f"{directory} is not a directory")
    out = {}
    for name in os.listdir(directory):
        m = pattern.fullmatch(name)
        if m:
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                out[int(m.group(1))] = [
                    line.strip() for line in f.read().split("\n") if line.strip()
                ]
    return out


def read_pairs(
    reference_dir: str, decoded_dir: str
) -> tuple[list[int], list[list[str]], list[list[str]]]:
    """(indices, decoded summaries, reference summaries) for every decoded file.

    Raises AnalysisError if a decoded summary has no reference or there is none at all.
    """
    decoded = read_summary_dir(decoded_dir, _DECODED_RE)
    refs = read_summary_dir(reference_dir, _REFERENCE_RE)
    if not decoded:
        raise AnalysisError(f"{decoded_dir} holds no NNNNNN_decoded.txt files")
    missing = sorted(set(decoded) - set(refs))
    if missing:
        raise AnalysisError(
            f"{len(missing)} decoded summaries have no reference in "
            f"{reference_dir}, e.g. {folder.REFERENCE_NAME % missing[0]}"
        )
    indices = sorted(decoded)
    return indices, [decoded[i] for i in indices], [refs[i] for i in indices]


def data_files(data_path: str) -> list[str]:
    """The files of a data glob in single-pass order (sorted by name)."""
    files = sorted(f for f in glob.glob(data_path) if os.path.isfile(f))
    if not files:
        raise AnalysisError(f"--data_path {data_path!r} matches no files")
    return files


def iter_examples(data_path: str) -> Iterator[tuple[str, str]]:
    """(article, abstract) in single-pass decode order; empty articles are skipped (as
    the original's example generator skips them, so indices match decode's)."""
    for path in data_files(data_path):
        for article, abstract in read_records(path):
            if article:
                yield article, abstract


def articles_for(
    indices: Iterable[int], data_path: str, references: list[list[str]] | None = None
) -> list[str]:
    """The articles of the examples `indices` (sorted), optionally checking that each
    example's abstract equals the reference file written for it."""
    wanted = list(indices)
    if not wanted:
        return []
    last = max(wanted)
    by_index = {}
    pos = {i: j for j, i in enumerate(wanted)}
    for k, (article, abstract) in enumerate(iter_examples(data_path)):
        if k in pos:
            by_index[k] = article
            if references is not None:
                expected = [" ".join(ascii_split(s)) for s in abstract2sents(abstract)]
                expected = [s for s in expected if s]
                got = [" ".join(ascii_split(s)) for s in references[pos[k]]]
                if got != expected:
                    raise AnalysisError(
                        f"reference of example {k} does not match example {k} of "
                        f"{data_path!r} (wrong --data_path, or a different order?): "
                        f"file has {got[:1]!r}..., data has {expected[:1]!r}..."
                    )
        if k >= last:
            break
    if len(by_index) < len(wanted):
        raise AnalysisError(
            f"{data_path!r} has fewer examples than the summaries: no "
            f"example {min(set(wanted) - set(by_index))}"
        )
    return [by_index[i] for i in wanted]


def read_p_gens(path: str) -> dict[int, tuple[float, int]]:
    """{index: (mean p_gen, steps)} of a p_gens.tsv file; the last line of an index wins."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            try:
                if len(parts) != 3:
                    raise ValueError
                out[int(parts[0])] = (float(parts[1]), int(parts[2]))
            except ValueError:
                raise AnalysisError(
                    f"{path}:{lineno}: expected 'index<TAB>mean p_gen<TAB>"
                    f"steps', got {line.rstrip()!r}"
                ) from None
    return out


def p_gen_summary(
    p_gens: dict[int, tuple[float, int]], indices: Iterable[int] | None = None
) -> dict:
    """Mean p_gen per summary and per decoder step (see module doc), over `indices`."""
    keys = [i for i in (p_gens if indices is None else indices) if i in p_gens]
    if not keys:
        return {"p_gen_summaries": 0, "p_gen_mean_per_summary": None, "p_gen_mean_per_step": None}
    steps = sum(p_gens[i][1] for i in keys)
    return {
        "p_gen_summaries": len(keys),
        "p_gen_mean_per_summary": sum(p_gens[i][0] for i in keys) / len(keys),
        "p_gen_mean_per_step": (
            sum(p_gens[i][0] * p_gens[i][1] for i in keys) / steps if steps else None
        ),
    }


def analyse(
    reference_dir: str,
    decoded_dir: str,
    data_path: str | None = None,
    vocab: Vocab | None = None,
    max_enc_steps: int = DEFAULT_MAX_ENC_STEPS,
    p_gens_path: str | None = None,
    check_references: bool = True,
    unk_token: str = UNK_TOKEN,
) -> dict:
    """All measures for the system summaries and the references of one decode output.

    Returns {"examples", "system": measures, "reference": measures, "p_gen": ... or None}.
    """
    indices, decoded, refs = read_pairs(reference_dir, decoded_dir)
    articles = None
    if data_path:
        articles = articles_for(indices, data_path, refs if check_references else None)
    result = {
        "examples": len(indices),
        "system": measure(decoded, articles, vocab, max_enc_steps, unk_token),
        "reference": measure(refs, articles, vocab, max_enc_steps, unk_token),
        "p_gen": None,
    }
    if p_gens_path and os.path.isfile(p_gens_path):
        result["p_gen"] = p_gen_summary(read_p_gens(p_gens_path), indices)
    return result


def analyse_decode_dir(decode_dir: str, **kwargs) -> dict:
    """`analyse` for a decode dir's reference/, decoded/ and p_gens.tsv."""
    if not os.path.isdir(decode_dir):
        raise AnalysisError(f"decode dir {decode_dir} does not exist")
    return analyse(
        os.path.join(decode_dir, folder.REFERENCE_SUBDIR),
        os.path.join(decode_dir, folder.DECODED_SUBDIR),
        p_gens_path=os.path.join(decode_dir, P_GENS_FILE),
        **kwargs,
    )


# ---------------------------------------------------------------------------------------
# Command line

MEASURE_LABELS = [
    ("mean_tokens", "mean length (tokens)"),
    *[(f"duplicate_{n}gram_pct", f"% duplicate {n}-grams") for n in NGRAM_ORDERS],
    ("duplicate_sentence_pct", "% duplicate sentences"),
    *[(f"novel_{n}gram_pct", f"% novel {n}-grams") for n in NGRAM_ORDERS],
    ("novel_sentence_pct", "% novel sentences"),
    ("copied_sentence_pct", "% copied whole article sentences"),
    ("span_sentence_pct", "% sentences found as an article span"),
    ("unk_summary_pct", "% summaries with the unknown token"),
    ("copied_oov_tokens", "copied article-OOV tokens"),
    ("copied_oov_per_summary", "copied article-OOVs per summary"),
    ("summaries_with_copied_oov_pct", "% summaries copying an OOV"),
]


def fmt(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def text_table(result: dict) -> str:
    lines = [f"{'measure':36s} {'system':>10s} {'reference':>10s}"]
    for key, label in MEASURE_LABELS:
        lines.append(
            f"{label:36s} {fmt(result['system'][key]):>10s} {fmt(result['reference'][key]):>10s}"
        )
    if result.get("p_gen"):
        for key, value in result["p_gen"].items():
            lines.append(f"{key:36s} {fmt(value):>10s}")
    return "\n".join(lines)


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.analysis", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--decode_dir", help="a decode dir (reference/, decoded/, p_gens.tsv)")
    parser.add_argument("--reference_dir", help="instead of --decode_dir")
    parser.add_argument("--decoded_dir", help="instead of --decode_dir")
    parser.add_argument(
        "--data_path",
        help="glob of the source .bin files, in the order "
        "they were decoded (needed for novelty and OOV measures)",
    )
    parser.add_argument("--vocab_path", help="vocab file (for the OOV measure)")
    parser.add_argument("--vocab_size", type=arg_types.non_negative_int, default=50000)
    parser.add_argument(
        "--max_enc_steps",
        type=arg_types.non_negative_int,
        default=DEFAULT_MAX_ENC_STEPS,
        help="article tokens the model read (OOV copies); 0 = all",
    )
    parser.add_argument(
        "--unk_token",
        default=UNK_TOKEN,
        help="how the summaries spell the unknown word (default %(default)s; "
        "released outputs of other tools write UNK or <unk>)",
    )
    parser.add_argument(
        "--no_check_references",
        action="store_true",
        help="do not check the reference files against the data",
    )
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args(argv)
    vocab = Vocab(args.vocab_path, args.vocab_size) if args.vocab_path else None
    common = dict(
        data_path=args.data_path,
        vocab=vocab,
        max_enc_steps=args.max_enc_steps,
        check_references=not args.no_check_references,
        unk_token=args.unk_token,
    )
    if args.decode_dir:
        result = analyse_decode_dir(args.decode_dir, **common)
    elif args.reference_dir and args.decoded_dir:
        result = analyse(args.reference_dir, args.decoded_dir, **common)
    else:
        parser.error("give --decode_dir, or both --reference_dir and --decoded_dir")
    print(f"{result['examples']} examples")
    print(text_table(result))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
        print(f"Written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
