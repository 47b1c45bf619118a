"""`pointer-generator summarize`: summaries of the user's own raw text.

    pointer-generator summarize --log_root=L --exp_name=E [FILE ...]
        # one article per file; no FILE or "-" reads stdin

The texts are summarized by `pointer_generator.summarizing.article_texts.summarize_texts` (the
same tokenization as the training data, the same batched beam search as `--mode=decode`)
from the newest checkpoint of the experiment (or `--tf1_checkpoint`). The model flags
and the vocabulary come from the experiment (`settings.json`, written when it was
trained); an experiment of an older version needs them repeated.

The search (beam, summary lengths, trigram blocking, length penalty, block_unk) is the
experiment's saved one, <exp>/search.json, which `--mode=decode --save_search` writes (the
quick-start and the recipes' decode stages do), else the defaults below; a flag given wins.
A decode without --save_search changes nothing here. The first line on stderr says which
search runs and where it came from.
"""

from __future__ import annotations

import logging
import os
import sys

from pointer_generator.cli.help import SEARCH_HELP
from pointer_generator.data.text_files import decode_text, read_text
from pointer_generator.errors import DataError, FlagError
from pointer_generator.runtime.progress import status

# The most one input may hold: an article is kilobytes, and the model reads its first
# --max_enc_steps tokens; a larger input is a mistake (a whole corpus, /dev/zero).
MAX_INPUT_BYTES = 16 << 20

log = logging.getLogger(__name__)


def read_inputs(paths: list[str]) -> list[tuple[str, str]]:
    """(name, text) for every input; "-" is standard input. Errors name the file."""
    out = []
    for path in paths or ["-"]:
        if path == "-":
            out.append(("<stdin>", _read_stdin()))
            continue
        out.append((path, read_text(path, MAX_INPUT_BYTES)))
    return out


def _read_stdin() -> str:
    if sys.stdin is None or sys.stdin.closed:
        raise FlagError(
            "standard input is closed: give the articles as files (one article per file) "
            "or pipe the text in"
        )
    try:
        return decode_text(sys.stdin.buffer.read(MAX_INPUT_BYTES + 1), "<stdin>", MAX_INPUT_BYTES)
    except OSError as e:
        raise DataError(f"<stdin>: cannot read ({e.strerror})") from None


def help_flags() -> dict:
    """The flags that matter for summarize, by purpose, in the order `--help` lists them:
    the model group holds the model flags of the families that load the original's
    checkpoints (--tf1_checkpoint needs them given; an experiment stores its own)."""
    from pointer_generator.cli.family_flags import family_registry

    registry = family_registry()
    tf1 = [f for f in registry.all_families() if "tf1_checkpoint" in f.conversions]
    own = tuple(dict.fromkeys(name for f in tf1 for name in f.model_flags()))
    return {
        "experiment": ("log_root", "exp_name", "vocab_path", "vocab_size", "tf1_checkpoint"),
        "model (as trained)": ("model", "hidden_dim", "emb_dim", *own, "max_enc_steps"),
        "decoding": (*SEARCH_HELP, "decode_attention", "decode_batch_size"),
        "output": ("tokens",),
    }


def help_text(fv) -> str:
    """`pointer-generator summarize --help`: what it does, its flags by purpose."""
    from pointer_generator.cli.help import flag_lines

    example = (
        "Example:\n  pointer-generator summarize --log_root=logs --exp_name=myexp article.txt\n"
        "  cat article.txt | pointer-generator summarize --log_root=logs --exp_name=myexp"
    )
    return "\n".join([__doc__.strip(), "", *flag_lines(fv, help_flags()), example])


def _compiling_notice() -> str:
    """What a first search is waiting for, and whether the next run will wait again."""
    from pointer_generator.runtime import compile_cache

    kept = compile_cache.kept_folder()
    where = (
        f"kept in {kept}: the next run of these lengths skips it"
        if kept
        else "not kept across runs (POINTER_GENERATOR_COMPILE_CACHE)"
    )
    return f"Compiling the search for these article lengths (first use; {where}) ..."


def main(argv: list[str]) -> int:

    from pointer_generator.cli import configs, console, stored_settings
    from pointer_generator.cli import flags as flags_lib

    fv = flags_lib.FLAGS
    from pointer_generator.cli.help import wants_help

    if wants_help(argv):
        print(help_text(fv))
        return 0
    rest = ["summarize", *flags_lib.parse_subcommand("summarize", argv, positional=True)]
    console.setup_logging()
    exp = stored_settings.apply_trained(fv, "summarize")  # its model flags and vocabulary
    status(stored_settings.search_line(fv), sys.stderr)
    inputs = read_inputs(rest[1:])
    names = [name for name, _ in inputs]
    texts = [text for _, text in inputs]
    from pointer_generator.data.stories import articles_of_texts

    examples = articles_of_texts(texts, names)  # checked before TensorFlow starts

    console.import_tensorflow(keep_compiled=True)
    hps, settings = configs.hparams(fv), configs.search_settings(fv)
    keep = None
    summaries = _kept_summaries(fv, exp.root, hps, settings, examples)
    if summaries is None:
        from pointer_generator.summarizing.article_texts import summarize_examples
        from pointer_generator.summarizing.trained import open_trained

        trained = open_trained(
            exp.root, hps, fv.vocab_path, tf1_checkpoint=fv.tf1_checkpoint or None
        )
        # As pg.Summarizer: the whole search as one XLA computation (article_texts.py).
        decoder = trained.decoder(settings, jit_compile=True)
        shapes: set = set()  # the batch shapes run, compiled in the kept search too
        with console.notice_if_slow(_compiling_notice()):
            done = summarize_examples(decoder, examples, fv.decode_batch_size, shapes)
        summaries = [s.words for s in done]
        keep = (decoder, trained.checkpoint, shapes) if not fv.tf1_checkpoint else None
    _print_summaries(fv, names, texts, summaries)
    if keep:
        from pointer_generator.cli.kept import keep_search

        keep_search(exp.root, hps, settings, fv.vocab_path, *keep)
    return 0


def _kept_summaries(fv, root: str, hps, settings, examples) -> list | None:
    """Each example's summary words by the search a former run kept, or None where none
    is kept for the newest checkpoint and these settings."""
    from pointer_generator.runtime import checkpointing
    from pointer_generator.runtime.experiment import TRAIN_SUBDIR
    from pointer_generator.summarizing import kept_search

    if fv.tf1_checkpoint or kept_search.root() is None:
        return None
    checkpoint = checkpointing.latest_checkpoint(os.path.join(root, TRAIN_SUBDIR))
    if checkpoint is None:
        return None
    key = kept_search.digest(checkpoint, hps, settings, fv.vocab_path)
    search = kept_search.load(key)
    if search is None:
        return None
    # (the line the first-call benchmark times from, as on the other path)
    where = kept_search.path_for(key)
    log.info("Loaded checkpoint %s (its search as kept in %s)", checkpoint, where)
    articles = [article for article, _ in examples]
    return kept_search.summarize_articles(search, articles, fv.decode_batch_size)


def _print_summaries(fv, names: list[str], texts: list[str], summaries: list) -> None:
    from pointer_generator.data.detokenize import detokenize, text_casing
    from pointer_generator.decoding import folder

    many = len(names) > 1
    for name, text, words in zip(names, texts, summaries, strict=True):
        if many:
            print(f"==> {name} <==")
        sentences = folder.split_sentences(words)
        if not fv.tokens:
            casing = text_casing(text)  # the article's capitals, put back
            sentences = [detokenize(s.split(), casing) for s in sentences]
        print("\n".join(sentences))
        if many:
            print()
    sys.stdout.flush()


if __name__ == "__main__":  # the same as `pointer-generator summarize`
    import sys

    from pointer_generator.cli.entry import run

    run([sys.argv[0], "summarize", *sys.argv[1:]])
