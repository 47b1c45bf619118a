"""`pointer-generator export`: a trained experiment as a SavedModel.

    pointer-generator export --log_root=L --exp_name=E --export_dir=DIR
        [--beam_size=4 --min_dec_steps=35 --max_dec_steps=100 ...]

The SavedModel's `serving_default` signature takes a batch of raw article strings and
returns their summaries (and the summary tokens, attention and p_gen); tokenization, the
vocabulary, article OOVs and the batched beam search are inside the graph, with the
decode flags given here fixed in it. It loads with `tf.saved_model.load` or TensorFlow
Serving, without this package (docs/export.md). The model flags and the vocabulary come
from the experiment (settings.json); the newest checkpoint is exported (or
--tf1_checkpoint). DIR must not exist yet: nothing is overwritten.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time

from pointer_generator.cli.help import SEARCH_HELP
from pointer_generator.errors import FlagError, OutputError
from pointer_generator.runtime import owned_files, staging
from pointer_generator.runtime.progress import status

# The flags that matter for export, in the order `--help` lists them.
HELP_FLAGS = {
    "experiment": ("log_root", "exp_name", "vocab_path", "vocab_size", "tf1_checkpoint"),
    "export": ("export_dir",),
    "decoding (fixed in the SavedModel)": ("max_enc_steps", "decode_attention", *SEARCH_HELP),
}


def help_text(fv) -> str:
    from pointer_generator.cli.help import flag_lines

    example = (
        "Example:\n  pointer-generator export --log_root=logs --exp_name=pgen "
        "--export_dir=exported/pgen/1"
    )
    return "\n".join([__doc__.strip(), "", *flag_lines(fv, HELP_FLAGS), example])


def check_export_dir(path: str) -> str:
    """The absolute export folder; FlagError unless it is new and its parent can hold it."""
    if not path:
        raise FlagError("export needs --export_dir, the new folder to write the SavedModel to")
    path = os.path.abspath(path)
    if os.path.exists(path):
        raise FlagError(
            f"--export_dir {path} exists already; choose a new folder (export never "
            "overwrites; TensorFlow Serving reads numbered versions: .../NAME/2)"
        )
    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise FlagError(
            f"cannot create {parent} ({e.strerror}); choose another --export_dir"
        ) from None
    if not os.access(parent, os.W_OK):
        raise FlagError(f"{parent} is not writable; choose another --export_dir")
    return path


STAGING_KIND = "export"


def _move_into_place(tmp: str, export_dir: str) -> None:
    """Rename the finished export to `export_dir`, which must still not exist: an empty
    folder is made there first (exclusively), then replaced by the rename, so a folder
    created there meanwhile, by anyone, is never replaced."""
    try:
        os.mkdir(export_dir)
    except FileExistsError:
        raise FlagError(
            f"--export_dir {export_dir} was created while the model was being exported; "
            "nothing was written there: run the export again with a new folder"
        ) from None
    try:
        os.rename(tmp, export_dir)
    except OSError as e:
        # Something was put into the empty folder in the moment between: leave it be.
        with contextlib.suppress(OSError):
            os.rmdir(export_dir)
        raise FlagError(
            f"--export_dir {export_dir} was filled while the model was being exported "
            f"({e.strerror}); nothing was written there: run the export again with a new folder"
        ) from None


def fixed_decode_settings(settings, hps, feature_weights: str = "") -> dict:
    """export_info.json's "decode": what the SavedModel's search was built with (the
    search settings it was given, the article length and attention of its step), the
    feature-weight file by its path."""
    decode = {"max_enc_steps": hps.max_enc_steps, "decode_attention": hps.decode_attention}
    for name in SEARCH_HELP:
        value = getattr(settings, name)
        if name == "feature_weights":
            value = feature_weights or None
        elif name == "length_penalty":
            value = value or 0.0  # (None: the original's ranking, as the flag's 0)
        if value is not None:
            decode[name] = value
    return decode


def main(argv: list[str]) -> int:
    from pointer_generator.cli import configs, console, stored_settings
    from pointer_generator.cli import flags as flags_lib
    from pointer_generator.cli.help import wants_help

    fv = flags_lib.FLAGS
    if wants_help(argv):
        print(help_text(fv))
        return 0
    flags_lib.parse_subcommand("export", argv)
    console.setup_logging()
    exp = stored_settings.apply_trained(fv, "export")  # its model flags and vocabulary
    status(stored_settings.search_line(fv))
    export_dir = check_export_dir(fv.export_dir)

    console.import_tensorflow(keep_compiled=True)
    from pointer_generator.serving.saved_model import export_saved_model
    from pointer_generator.summarizing.trained import open_trained

    trained = open_trained(
        exp.root, configs.hparams(fv), fv.vocab_path, tf1_checkpoint=fv.tf1_checkpoint or None
    )
    hps, vocab, checkpoint = trained.hps, trained.vocab, trained.checkpoint
    decoder = trained.decoder(configs.search_settings(fv), jit_compile=True)
    info = {
        "experiment": os.path.abspath(os.path.join(fv.log_root, fv.exp_name)),
        "checkpoint": os.path.abspath(checkpoint),
        "model": hps.model,
        "vocab_size": vocab.size(),
        "decode": fixed_decode_settings(decoder.settings, hps, fv.feature_weights),
        "exported": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    # Written in a staging folder beside the target and renamed into place: an
    # interrupted export leaves no half-written model at DIR, and the staging folder of
    # an export that was killed is removed by the next export there (runtime/staging.py).
    parent = os.path.dirname(export_dir)
    staging.remove_stale(parent, STAGING_KIND)
    tmp = staging.make(parent, STAGING_KIND)
    start = time.time()
    try:
        try:
            with console.notice_if_slow(
                "Tracing the search into the SavedModel and writing it (seconds) ...",
                stream=sys.stdout,
            ):
                export_saved_model(decoder, tmp, info)
        except Exception as e:
            reason = owned_files.write_failure(e)
            if reason is None:
                raise
            raise OutputError(
                f"cannot write the SavedModel beside {export_dir} ({reason}); nothing was "
                "written there: free space (or fix the permissions) and export again"
            ) from None
        _move_into_place(tmp, export_dir)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp)  # our own staging folder, never the user's
    status(
        f"Exported {checkpoint} to {export_dir} in {time.time() - start:.0f} s "
        "(signatures: serving_default for raw text, summarize_tokens for tokenized text)"
    )
    return 0


if __name__ == "__main__":  # the same as `pointer-generator export`
    import sys

    from pointer_generator.cli.entry import run

    run([sys.argv[0], "export", *sys.argv[1:]])
