"""`pointer-generator summarize`: summaries of the user's own raw text.

    pointer-generator summarize --log_root=L --exp_name=E --vocab_path=V [model flags] \
        [FILE ...]          # one article per file; no FILE or "-" reads stdin

The text is tokenized, lower-cased and period-fixed exactly like the training data
(`pointer_generator.data.stories.texts_to_examples`), written to a temporary `.bin` file,
and decoded with the same batched beam search as `--mode=decode`, from the newest checkpoint of the
experiment (or `--tf1_checkpoint`). The model flags (sizes, `--pointer_gen`,
`--coverage`, `--vocab_size`, the decode flags) must be the ones it was trained with.
"""

from __future__ import annotations

import os
import sys
import tempfile

from pointer_generator.errors import DataError, FlagError


def read_inputs(paths: list[str]) -> list[tuple[str, str]]:
    """(name, text) for every input; "-" is standard input. Errors name the file."""
    out = []
    for path in paths or ["-"]:
        if path == "-":
            out.append(("<stdin>", sys.stdin.read()))
            continue
        try:
            with open(path, encoding="utf-8") as f:
                out.append((path, f.read()))
        except FileNotFoundError:
            raise DataError(f"{path}: no such file") from None
        except UnicodeDecodeError as e:
            raise DataError(f"{path}: not UTF-8 text ({e})") from None
        except OSError as e:
            raise DataError(f"{path}: cannot read ({e.strerror})") from None
    return out


def main(argv: list[str]) -> int:
    from absl import flags as absl_flags

    from pointer_generator.cli import flags as flags_lib

    fv = flags_lib.FLAGS
    try:
        rest = fv(["pointer-generator summarize"] + list(argv))
    except absl_flags.Error as e:
        raise FlagError(str(e)) from None
    inputs = read_inputs(rest[1:])
    if not fv.log_root or not fv.vocab_path:
        raise FlagError(
            "summarize needs --log_root, --exp_name and --vocab_path of a trained experiment"
        )

    from pointer_generator.data.stories import texts_to_examples

    examples = texts_to_examples([text for _, text in inputs])
    for (name, _), (article, _) in zip(inputs, examples, strict=True):
        if not article.strip():
            raise DataError(f"{name}: no article text to summarize")

    import tensorflow as tf  # noqa: F401 - only after the cheap checks above

    from pointer_generator.data.binfile import write_bin
    from pointer_generator.data.input_pipeline import data_errors, make_dataset
    from pointer_generator.data.vocab import Vocab
    from pointer_generator.decoding import decode
    from pointer_generator.hparams import HParams
    from pointer_generator.models.pointer_generator import PointerGeneratorModel
    from pointer_generator.runtime.experiment import open_experiment

    exp = open_experiment(fv.log_root, fv.exp_name, "decode")
    hps = HParams.from_flags(fv).replace(mode="decode")
    vocab = Vocab(fv.vocab_path, fv.vocab_size)
    model = PointerGeneratorModel(hps, vocab.size()).build_weights()
    decode.load_weights(model, exp.train_dir, fv.tf1_checkpoint or None, wait=False)
    decoder = decode.BeamSearchDecoder(
        model,
        vocab,
        hps,
        trigram_blocking=getattr(fv, "trigram_blocking", False),
        length_penalty=getattr(fv, "length_penalty", None) or None,
        full_final_dist=getattr(fv, "full_final_dist", False),
    )
    batch_size = min(getattr(fv, "decode_batch_size", 32), len(examples))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "summarize_000.bin")
        write_bin(path, examples)
        index = 0
        with data_errors():
            dataset = make_dataset(path, vocab, hps.replace(batch_size=batch_size), "decode", True)
            for batch in dataset:
                for summary in decoder.decode_batch(batch):
                    name = inputs[index][0]
                    if len(inputs) > 1:
                        print(f"==> {name} <==")
                    print("\n".join(decode.decode_output.split_sentences(summary.words)))
                    if len(inputs) > 1:
                        print()
                    index += 1
    return 0
