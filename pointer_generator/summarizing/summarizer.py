"""`pg.Summarizer`: a trained experiment as a Python object that summarizes raw texts.

    import pointer_generator as pg

    summarizer = pg.Summarizer.from_experiment("logs", "pgen", beam_size=4)
    for result in summarizer.summarize(["First article ...", "Second article ..."]):
        print(result.text)  # readable summary
        result.attention  # [summary tokens, article tokens]
        result.p_gens  # [summary tokens] (ones for the earlier families)

`pg.Summarizer.from_saved_model("exported/pgen/1")` gives the same interface over a model
written by `pointer-generator export` (docs/export.md): the SavedModel tokenizes and
searches by itself, so neither the experiment nor its vocabulary file is needed.

`from_experiment` reads the model flags and the vocabulary the experiment was trained with
(its `settings.json`, as every command does), builds the model and loads the newest
checkpoint that reads completely (or `checkpoint=`, e.g. an eval job's best model).
`summarize` tokenizes the texts like the training data and decodes them in batches with
the same batched beam search as `--mode=decode` and `pointer-generator summarize` (its
summaries are `summarize`'s), as one XLA computation: its float rounding can differ from
`--mode=decode`'s and swap two nearly tied hypotheses (`jit_compile=False`: decode's).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import threading

import numpy as np

from pointer_generator.errors import FlagError
from pointer_generator.search.settings import SEARCH_FLAGS, SearchSettings


def given_search(search: SearchSettings | None, options: dict) -> dict:
    """{field: value} of the search settings `from_experiment` was given: every field of
    `search`, then `options` (fields of SearchSettings; feature_weights may name a weight
    file, read here). FlagError naming an option that is no field."""
    unknown = sorted(set(options) - set(SEARCH_FLAGS))
    if unknown:
        raise FlagError(
            f"unknown decode options {unknown}; from_experiment takes search=SearchSettings"
            f"(...) and its fields {', '.join(SEARCH_FLAGS)}, and max_enc_steps"
        )
    given = {name: getattr(search, name) for name in SEARCH_FLAGS} if search else {}
    given.update(options)
    weights = given.get("feature_weights")
    if isinstance(weights, str):  # a weight file ("": none, as the flag's default)
        from pointer_generator.search.extractive_features import read_weights

        given["feature_weights"] = read_weights(weights) if weights else None
    return given


@dataclasses.dataclass(frozen=True)
class SummaryResult:
    """One text's summary.

    text: readable (detokenized) summary; tokens: the model's summary tokens; sentences:
    its sentences (tokens joined by spaces); article_tokens: the article as the model
    read it (tokenized, lower-cased, truncated to max_enc_steps); attention: float32
    [len(tokens), len(article_tokens)]; p_gens: float32 [len(tokens)]; score: the mean
    log-probability the search ranked it by.
    """

    text: str
    tokens: list[str]
    sentences: list[str]
    article_tokens: list[str]
    attention: np.ndarray
    p_gens: np.ndarray
    score: float

    @classmethod
    def of(
        cls, words, article_tokens, attention, p_gens, score, raw_text: str | None = None
    ) -> SummaryResult:
        """The result of summary `words` (readable text and sentences made from them;
        the text with the casing of `raw_text`, the article as given)."""
        from pointer_generator.data.detokenize import detokenize, text_casing
        from pointer_generator.decoding.folder import split_sentences

        words = list(words)
        return cls(
            text=detokenize(words, text_casing(raw_text) if raw_text else None),
            tokens=words,
            sentences=split_sentences(words),
            article_tokens=list(article_tokens),
            attention=np.asarray(attention),
            p_gens=np.asarray(p_gens),
            score=float(score),
        )


def check_text(text: str) -> tuple[str, str]:
    """DataError unless `text` is a str with words to summarize once tokenized; returns
    its example (article, abstract) as `articles_of_texts` makes it."""
    from pointer_generator.data.stories import articles_of_texts
    from pointer_generator.errors import DataError

    if not isinstance(text, str):
        raise DataError(f"a text to summarize must be a str, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise DataError(
            f"not valid Unicode: a lone surrogate (U+{ord(text[e.start]):04X}) at character "
            f"{e.start}"
        ) from None
    try:
        return articles_of_texts([text])[0]
    except DataError:
        raise DataError("no article text to summarize (no words once tokenized)") from None


class CheckedTexts:
    """The examples of the texts `Summarizer.check_text` tokenized lately, for the
    `summarize` call that follows: `serve` checks each text before it joins a batch, and
    tokenizing it again there cost a lone client's request up to a millisecond and a
    half (an 800-word article). Thread-safe (the server checks texts on its connection
    threads, the batcher summarizes them on its own); at most `size` texts are kept,
    the oldest dropped first."""

    def __init__(self, size: int = 64):
        self.size = size
        self._examples: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def put(self, text: str, example: tuple[str, str]) -> None:
        with self._lock:
            self._examples[text] = example
            self._examples.move_to_end(text)
            while len(self._examples) > self.size:
                self._examples.popitem(last=False)

    def take(self, text: str) -> tuple[str, str] | None:
        with self._lock:
            return self._examples.pop(text, None)

    def examples(self, texts) -> tuple[list, list[tuple[str, str]]]:
        """(texts as a list, their examples): the checked ones' kept tokens, the others
        tokenized now (`articles_of_texts`, errors naming "text N")."""
        from pointer_generator.data.stories import articles_of_texts

        texts = [texts] if isinstance(texts, str) else list(texts)
        examples = [self.take(t) if isinstance(t, str) else None for t in texts]
        todo = [i for i, e in enumerate(examples) if e is None]
        if todo:
            made = articles_of_texts([texts[i] for i in todo], [f"text {i + 1}" for i in todo])
            for i, example in zip(todo, made, strict=True):
                examples[i] = example
        return texts, examples


class Summarizer:
    """A model, its vocabulary and a search, ready for raw texts.

    Args:
      decoder: a `BeamSearchDecoder` over a loaded model.
      batch_size: articles decoded together.
    """

    def __init__(self, decoder, batch_size: int = 16):
        self.decoder = decoder
        self.batch_size = batch_size
        self._checked = CheckedTexts()
        # The batch shapes (rows, article length) the search has run: compiled.
        self._ready: set[tuple[int, int]] = set()
        self.compiled_shapes_only = False
        self._keep_args: tuple | None = None  # `kept_search.keep_decoder`'s, for `keep`

    def only_compiled_shapes(self) -> None:
        """From now on, run a batch of a shape not compiled yet as smaller batches of
        compiled shapes, where there are some for its article length (`serve` after its
        warm-up: one text of every length, so no request waits for a compile; a batch of
        another size is then several searches, not one)."""
        self.compiled_shapes_only = True

    @classmethod
    def from_experiment(
        cls,
        log_root: str,
        exp_name: str,
        *,
        checkpoint: str | None = None,
        vocab_path: str | None = None,
        batch_size: int = 16,
        search: SearchSettings | None = None,
        max_enc_steps: int | None = None,
        jit_compile: bool = True,
        kept: bool = True,
        **search_options,
    ) -> Summarizer | KeptSearchSummarizer:
        """The experiment `<log_root>/<exp_name>` as trained, searched with `search` (a
        `pg.SearchSettings`; by default the experiment's saved search, <exp>/search.json)
        and `search_options` on top: any field of `SearchSettings` (beam_size,
        min_dec_steps, max_dec_steps, trigram_blocking, length_penalty, full_final_dist,
        block_unk, feature_weights: a dict or the path of a weight file, namas_features).
        max_enc_steps: read this many article tokens instead of the experiment's number.

        jit_compile: the whole search as one XLA computation (`article_texts.INTERACTIVE`):
        a few texts at a time spend most of a search in per-step overhead otherwise.

        kept: where `pointer-generator summarize` kept the search of the newest checkpoint
        with these settings (`summarizing/kept_search.py`), use it: no model is built and no
        search traced (a `KeptSearchSummarizer`, the same interface and summaries)."""
        from pointer_generator.summarizing.trained import open_trained, stored_settings

        given = given_search(search, search_options)
        # A given max_dec_steps is the model's summary length too (as on the command line).
        model_given = {k: given[k] for k in ("max_dec_steps",) if k in given}
        if max_enc_steps is not None:
            model_given["max_enc_steps"] = max_enc_steps
        root = os.path.join(log_root, exp_name)
        hps, stored_search, vocab = stored_settings(root, vocab_path, **{**given, **model_given})
        settings = SearchSettings(**{"max_dec_steps": hps.max_dec_steps, **stored_search})
        if "min_dec_steps" in given and settings.min_dec_steps > settings.max_dec_steps:
            raise FlagError(
                f"min_dec_steps={settings.min_dec_steps} is above max_dec_steps="
                f"{settings.max_dec_steps} (no summary could end): lower it, or raise "
                "max_dec_steps"
            )
        if kept and checkpoint is None and jit_compile:
            found = KeptSearchSummarizer.find(root, hps, settings, vocab, batch_size)
            if found is not None:
                return found
        trained = open_trained(root, hps, vocab, checkpoint=checkpoint)
        out = cls(trained.decoder(settings, jit_compile=jit_compile), batch_size)
        if checkpoint is None and jit_compile:  # the searches `find` looks for, above
            keep = (root, hps, settings, vocab, out.decoder, trained.checkpoint, out._ready)
            out._keep_args = keep  # with the shapes run by `keep`'s time: compiled for the next
        return out

    def keep(self) -> str | None:
        """Keep this search for the next process (`summarizing/kept_search.py`): a later
        `from_experiment` with the same checkpoint and settings loads it instead of
        building the model and tracing the search. Takes seconds. Returns its folder, or
        None: kept already, searches not kept (POINTER_GENERATOR_COMPILE_CACHE=off), or not
        opened by `from_experiment` with the newest checkpoint and `jit_compile`."""
        from pointer_generator.summarizing import kept_search

        return None if self._keep_args is None else kept_search.keep_decoder(*self._keep_args)

    @staticmethod
    def from_saved_model(export_dir: str, batch_size: int = 16) -> SavedModelSummarizer:
        """A model exported by `pointer-generator export`, with `summarize` as here."""
        return SavedModelSummarizer(export_dir, batch_size)

    def check_text(self, text: str) -> None:
        """DataError when `text` has nothing to summarize (no words once tokenized:
        markup such as `&nbsp;`, only `@highlight`, invisible characters). The text's
        tokens are kept for the `summarize` call that follows."""
        self._checked.put(text, check_text(text))

    def warm_up(self, rows: tuple[int, ...] = (1,)) -> int:
        """Compile the search for every article length bucket at each batch size of
        `rows` now rather than at the first text of that shape (`serve` calls it before
        it says it is serving). Returns the number of shapes compiled."""
        from pointer_generator.data.input_pipeline import padded_lengths
        from pointer_generator.summarizing.article_texts import warm_up

        hps = self.decoder.hps
        # None: every batch its own length, none known in advance; the longest then.
        lengths = padded_lengths(hps) or [hps.max_enc_steps]
        rows = [min(r, self.batch_size) for r in rows]
        return warm_up(self.decoder, lengths, rows, self._ready)

    def summarize(self, texts: list[str]) -> list[SummaryResult]:
        """One SummaryResult per raw text, in order (an empty text is a DataError)."""
        from pointer_generator.summarizing.article_texts import summarize_examples

        texts, examples = self._checked.examples(texts)
        summaries = summarize_examples(
            self.decoder, examples, self.batch_size, self._ready, self.compiled_shapes_only
        )
        out = []
        max_enc = self.decoder.hps.max_enc_steps
        for text, (article, _), summary in zip(texts, examples, summaries, strict=True):
            words = list(summary.words)
            article_tokens = article.split()[:max_enc]
            out.append(
                SummaryResult.of(
                    words,
                    article_tokens,
                    summary.attn[: len(words), : len(article_tokens)],
                    summary.p_gens[: len(words)],
                    summary.score,
                    raw_text=text,
                )
            )
        return out


class KeptSearchSummarizer:
    """`Summarizer`'s interface over a search an earlier process kept
    (`summarizing/kept_search.py`: the model's weights, vocabulary and beam search as one
    graph, made by `pointer-generator summarize`): texts are tokenized here as for
    `Summarizer` and searched by that graph, with the same summaries.

    Args:
      search: the kept search's `summarize_tokens` signature.
      hps: the experiment's hyper-parameters (its length buckets, for `warm_up`).
      batch_size: texts searched together.
      where: the kept search's folder.
    """

    def __init__(self, search, hps, batch_size: int = 16, where: str = ""):
        self._search, self.hps, self.batch_size, self.where = search, hps, batch_size, where
        self._checked = CheckedTexts()
        self._ready: set[tuple[int, int]] = set()  # (rows, article length) run
        self.compiled_shapes_only = False

    def only_compiled_shapes(self) -> None:
        """As `Summarizer.only_compiled_shapes`."""
        self.compiled_shapes_only = True

    def keep(self) -> None:
        """As `Summarizer.keep`: None, this search is a kept one already."""

    def _shape(self, articles: list[str]) -> tuple[int, int]:
        """(rows, article length) the kept graph pads `articles` to: rows to a power of
        two (`saved_model.padded_rows`), the length to its bucket (`encoder_width`)."""
        from pointer_generator.data.input_pipeline import padded_lengths

        rows = 1
        while rows < len(articles):
            rows *= 2
        longest = max(min(len(a.split()), self.hps.max_enc_steps) for a in articles)
        lengths = padded_lengths(self.hps)
        width = min([n for n in lengths if n >= longest] or lengths[-1:]) if lengths else longest
        return rows, width

    @classmethod
    def find(cls, root: str, hps, settings, vocab_path: str, batch_size: int = 16):
        """The kept search of the experiment `root`'s newest checkpoint with these
        settings, or None where there is none (or it cannot be read)."""
        from pointer_generator.runtime import checkpointing
        from pointer_generator.runtime.experiment import TRAIN_SUBDIR
        from pointer_generator.summarizing import kept_search

        if kept_search.root() is None:
            return None
        checkpoint = checkpointing.latest_checkpoint(os.path.join(root, TRAIN_SUBDIR))
        if checkpoint is None:
            return None
        key = kept_search.digest(checkpoint, hps, settings, vocab_path)
        search = kept_search.load(key)
        if search is None:
            return None
        return cls(search, hps, batch_size, kept_search.path_for(key))

    def check_text(self, text: str) -> None:
        """As `Summarizer.check_text`."""
        self._checked.put(text, check_text(text))

    def warm_up(self, rows: tuple[int, ...] = (1,)) -> int:
        """As `Summarizer.warm_up`: a dummy article of each length bucket at each batch
        size of `rows`. Returns the number of shapes run."""
        from pointer_generator.data.input_pipeline import padded_lengths

        lengths = padded_lengths(self.hps) or [self.hps.max_enc_steps]
        shapes = 0
        for n in sorted({min(r, self.batch_size) for r in rows}):
            for length in lengths:
                self._run([" ".join(["the"] * length)] * n)
                shapes += 1
        return shapes

    def _run(self, articles: list[str]) -> dict:
        import tensorflow as tf

        out = self._search(articles=tf.constant(articles))
        self._ready.add(self._shape(articles))
        return {k: v.numpy() for k, v in out.items()}

    def _chunks(self, articles: list[str]) -> list[list[str]]:
        """`articles` in the chunks searched together: batch_size at a time, and with
        `only_compiled_shapes` a chunk of a shape not run yet split into the largest
        run row count of its length, where there is one."""
        from pointer_generator.summarizing.article_texts import smaller_ready_rows

        out = []
        for start in range(0, len(articles), self.batch_size):
            chunk = articles[start : start + self.batch_size]
            size = None
            if self.compiled_shapes_only:
                size = smaller_ready_rows(self._shape(chunk), self._ready)
            if size:
                out += [chunk[i : i + size] for i in range(0, len(chunk), size)]
            else:
                out.append(chunk)
        return out

    def summarize(self, texts: list[str]) -> list[SummaryResult]:
        """One SummaryResult per raw text, in order (an empty text is a DataError)."""
        texts, examples = self._checked.examples(texts)
        results = []
        for chunk in self._chunks([article for article, _ in examples]):
            start = len(results)
            results += graph_results(self._run(chunk), texts[start : start + len(chunk)], start)
        return results


def graph_results(out: dict, raw_texts: list[str], start: int = 0) -> list[SummaryResult]:
    """One SummaryResult per row of an exported search's outputs (numpy arrays of its
    `summarize_tokens` / `serving_default` signatures) for `raw_texts`, texts `start + 1`
    ... of the call (an article with no words is a DataError naming it)."""
    from pointer_generator.errors import DataError

    results = []
    for i, raw in enumerate(raw_texts):
        n, m = int(out["num_tokens"][i]), int(out["article_length"][i])
        if m == 0:
            raise DataError(f"text {start + i + 1}: no article text to summarize")
        results.append(
            SummaryResult.of(
                [w.decode("utf-8") for w in out["tokens"][i, :n]],
                [w.decode("utf-8") for w in out["article_tokens"][i, :m]],
                out["attention"][i, :n, :m],
                out["p_gens"][i, :n],
                out["scores"][i],
                raw_text=raw,
            )
        )
    return results


# Written by `serving.saved_model.export_saved_model` in an export's assets: what it was
# exported from, its settings, and the article lengths its graph pads to.
EXPORT_INFO_FILE = "export_info.json"


class SavedModelSummarizer:
    """`Summarizer`'s interface over an exported SavedModel (`serving_default`: raw text
    in, tokens, attention and p_gens out; its decode settings were fixed at export).

    Args:
      export_dir: the folder `pointer-generator export` wrote.
      batch_size: texts sent to the model together.
    """

    def __init__(self, export_dir: str, batch_size: int = 16):
        import tensorflow as tf

        if not os.path.isfile(os.path.join(export_dir, "saved_model.pb")):
            raise FlagError(
                f"{export_dir} holds no SavedModel (no saved_model.pb): give a folder "
                "written by `pointer-generator export`"
            )
        from pointer_generator.summarizing import export_info

        # Checked before the (slow) load: a hand-edited entry is one error naming it.
        self._info = export_info.read(os.path.join(export_dir, "assets", EXPORT_INFO_FILE))
        self._model = tf.saved_model.load(export_dir)
        self._serve = self._model.signatures["serving_default"]
        self.batch_size = batch_size

    def check_text(self, text: str) -> None:
        """As `Summarizer.check_text` (the tokenizer in the graph follows the same rules;
        a text it still finds empty fails in `summarize`)."""
        check_text(text)

    def warm_up(self, rows: tuple[int, ...] = (1,)) -> int:
        """As `Summarizer.warm_up`: one dummy text of each article length the graph pads
        to (export_info.json's `encoder_lengths`) at each batch size of `rows`. Returns
        the number of shapes run: 0 for an export that does not list its lengths."""
        import tensorflow as tf

        lengths = self._info.get("encoder_lengths")
        shapes = 0
        for n in sorted({min(r, self.batch_size) for r in rows}):
            for length in lengths or []:
                self._serve(texts=tf.constant([" ".join(["the"] * length)] * n))
                shapes += 1
        return shapes

    def summarize(self, texts: list[str]) -> list[SummaryResult]:
        """One SummaryResult per raw text, in order (a text with no words is a
        DataError, as with `Summarizer`)."""
        import tensorflow as tf

        from pointer_generator.errors import DataError

        if isinstance(texts, str):
            texts = [texts]
        results = []
        for i, text in enumerate(texts):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:  # TensorFlow strings are UTF-8
                raise DataError(
                    f"text {i + 1}: not valid Unicode: a lone surrogate at character {e.start}"
                ) from None
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            out = {k: v.numpy() for k, v in self._serve(texts=tf.constant(chunk)).items()}
            results += graph_results(out, chunk, start)
        return results
