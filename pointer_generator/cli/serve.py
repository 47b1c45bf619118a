"""`pointer-generator serve`: a trained experiment behind an HTTP server.

    pointer-generator serve --log_root=L --exp_name=E [--serve_port=8000]
        [--serve_host=127.0.0.1] [--beam_size=4 ...] [--serve_max_batch=16]
    pointer-generator serve --saved_model=DIR [--serve_port=8000] ...

Open http://HOST:PORT/ for the page (paste an article; the summary and the attention
view), or POST {"text": "..."} / {"texts": [...]} to /api/summarize
(`pointer_generator/serving/http_server.py` documents the JSON). Requests of all
clients are decoded together in batches of up to --serve_max_batch texts; the search is
compiled for one text at every article length before serving, and with
--serve_warm_up_batches for every batch size too (else a batch of several texts is
searched as batches of one text: no request waits for a compile after "Serving").
The experiment is opened as `summarize` opens it: the model flags and the vocabulary
come from the experiment (settings.json), the search from its search.json, and every
decoding flag given applies (--beam_size, --min_dec_steps, --max_dec_steps,
--trigram_blocking, --length_penalty, --full_final_dist, --block_unk, --feature_weights,
--namas_features), so a text gets `summarize`'s summary.
With --saved_model the server runs a model written by `pointer-generator export`
(docs/export.md) instead: no experiment or vocabulary file is needed, and the decode
settings are those fixed at export (a decoding flag given with it is an error): a
SavedModel is a program that runs with your rights (its serving function runs during
the warm-up), so serve only models you trust.

The server answers this machine only (--serve_host=127.0.0.1) unless told otherwise; it
has no authentication and no TLS, so put it behind a proxy that has them before giving
it another address. /api/summarize takes only Content-Type: application/json, which a
page of another site cannot send without the browser asking first (CORS), and refuses
a request's texts over --serve_max_request_chars characters together (413). Ctrl-C
stops the server.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from pointer_generator.cli.help import SEARCH_HELP, SERVE_FLAGS
from pointer_generator.errors import FlagError
from pointer_generator.runtime.progress import status

log = logging.getLogger(__name__)

# What an export fixes in its graph besides the search (cli/export.py): the article
# length it reads and how its step attends. With --saved_model these flags, like the
# search flags, cannot apply: refused rather than ignored.
FIXED_AT_EXPORT = ("max_enc_steps", "decode_attention")

# The flags `serve --help` lists, by purpose.
HELP_FLAGS = {
    "experiment": ("log_root", "exp_name", "vocab_path", "tf1_checkpoint", "saved_model"),
    "decoding (with --saved_model: fixed at export, refused here)": (
        "max_enc_steps",
        "decode_attention",
        *SEARCH_HELP,
    ),
    "serve": SERVE_FLAGS,
}


def help_text(fv) -> str:
    """`pointer-generator serve --help`: what it does, its flags by purpose."""
    from pointer_generator.cli.help import flag_lines

    example = (
        "Example:\n  pointer-generator serve --log_root=logs --exp_name=pgen --trigram_blocking\n"
        "  pointer-generator serve --saved_model=exported/pgen/1"
    )
    return "\n".join([__doc__.strip(), "", *flag_lines(fv, HELP_FLAGS), example])


def check_flags(fv) -> None:
    """FlagError unless the flags name one model to serve, and (for an exported one)
    change nothing its export fixed."""
    from pointer_generator.cli import configs

    if not fv.saved_model and (not fv.log_root or not fv.exp_name):
        raise FlagError(
            "serve needs --log_root and --exp_name of a trained experiment, or "
            "--saved_model of an exported one"
        )
    if not fv.saved_model:
        return
    given = [n for n in ("log_root", "exp_name", "vocab_path") if fv[n].present]
    if given:
        raise FlagError(
            f"{', '.join('--' + n for n in given)} and --saved_model name two models: serve "
            "either an experiment (--log_root, --exp_name) or an exported model (--saved_model)"
        )
    fixed = configs.given_search_flags(fv) + [f"--{n}" for n in FIXED_AT_EXPORT if fv[n].present]
    if fixed:
        raise FlagError(
            f"{', '.join(fixed)}: an exported model's search settings were fixed when it was "
            "exported; export it again with them (pointer-generator export)"
        )
    # Any other flag of the project (a model's size, a family, a checkpoint, training's
    # settings) would be ignored by a SavedModel: refused, not ignored.
    from pointer_generator.cli import flags as flags_lib

    ignored = [
        f"--{n}"
        for n in flags_lib.project_flag_names()
        if fv[n].present and n not in (*SERVE_FLAGS, "saved_model")
    ]
    if ignored:
        raise FlagError(
            f"{', '.join(ignored)}: an exported model is served as it was exported (its "
            "model, vocabulary and search are inside it); drop "
            + ("them" if len(ignored) > 1 else "it")
        )


def summarizer_of(fv):
    """(the summarizer the flags ask for, its name, what to keep): the exported model, or
    the experiment opened as `summarize` opens it, with the search of the flags
    (`configs.search_settings`, as every command). What to keep: for a search built here
    from an experiment's checkpoint, `cli.kept.keep_search`'s arguments (`main` keeps
    it once it is serving, so the next start loads it instead of building the model and
    tracing the search), else None."""
    from pointer_generator.cli import configs, console, stored_settings
    from pointer_generator.summarizing.summarizer import Summarizer

    if fv.saved_model:
        console.import_tensorflow(keep_compiled=True)
        return Summarizer.from_saved_model(fv.saved_model, fv.serve_max_batch), fv.saved_model, None
    exp = stored_settings.apply_trained(fv, "serve")  # its model flags and vocabulary
    status(stored_settings.search_line(fv))
    console.import_tensorflow(keep_compiled=True)
    from pointer_generator.summarizing.summarizer import KeptSearchSummarizer
    from pointer_generator.summarizing.trained import open_trained

    name = f"{fv.log_root}/{fv.exp_name}"
    hps, settings = configs.hparams(fv), configs.search_settings(fv)
    if not fv.tf1_checkpoint:
        rows = fv.serve_max_batch
        kept = KeptSearchSummarizer.find(exp.root, hps, settings, fv.vocab_path, rows)
        if kept is not None:  # (no model to build, no search to trace)
            status(f"Using the search kept in {kept.where}")
            return kept, name, None
    trained = open_trained(exp.root, hps, fv.vocab_path, tf1_checkpoint=fv.tf1_checkpoint or None)
    # As pg.Summarizer: the whole search as one XLA computation (article_texts.py).
    decoder = trained.decoder(settings, jit_compile=True)
    keep = None
    summarizer = Summarizer(decoder, fv.serve_max_batch)
    if not fv.tf1_checkpoint:
        # The shapes warmed up before the search is kept, compiled in the kept one too.
        shapes = summarizer._ready
        keep = (exp.root, hps, settings, fv.vocab_path, decoder, trained.checkpoint, shapes)
    return summarizer, name, keep


def keep_while_serving(keep, idle=None, quiet_s: float = 2.0, poll_s: float = 0.25):
    """Keep the search (`cli.kept.keep_search(*keep)`) in a thread of its own, at the
    lowest CPU priority, once the server has been quiet for `quiet_s` (`idle()`: seconds
    since the last request ended, 0 while one runs; None: at once): keeping takes
    seconds (the search is traced again and written) and slows requests it overlaps. A
    failure is a warning, and serving goes on."""

    def run():
        from pointer_generator.cli.kept import keep_search

        try:
            # The lowest CPU priority for this thread (Linux: per thread): requests first.
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):
            pass
        while idle is not None and idle() < quiet_s:
            time.sleep(poll_s)
        try:
            keep_search(*keep)
        except Exception as e:  # noqa: BLE001  (serving must go on)
            log.warning("The search is not kept for the next start: %s", e)

    thread = threading.Thread(target=run, name="keep-search", daemon=True)
    thread.start()
    return thread


def main(argv: list[str]) -> int:
    from pointer_generator.cli import console
    from pointer_generator.cli import flags as flags_lib
    from pointer_generator.cli.help import wants_help

    fv = flags_lib.FLAGS
    if wants_help(argv):
        print(help_text(fv))
        return 0
    flags_lib.parse_subcommand("serve", argv)
    check_flags(fv)
    console.setup_logging()
    summarizer, name, keep = summarizer_of(fv)
    from pointer_generator.serving.http_server import SummaryService, make_server

    # Compiled now, so that the first requests do not wait for it.
    rows = (1,)
    if fv.serve_warm_up_batches:
        from pointer_generator.summarizing.article_texts import all_batch_rows

        rows = all_batch_rows(fv.serve_max_batch)
    status(
        "Compiling the search for each article length"
        + (f" and batches of {', '.join(map(str, rows))} texts" if len(rows) > 1 else "")
        + " ..."
    )
    t0 = time.time()
    shapes = summarizer.warm_up(rows)
    from pointer_generator.runtime import compile_cache

    kept = compile_cache.kept_folder()
    status(
        f"  {shapes} shapes compiled in {time.time() - t0:.1f} s"
        + (f" (kept in {kept}: the next start loads them)" if kept else "")
    )
    # A batch of a size not compiled is answered as batches of compiled sizes: no
    # request waits for a compile after "Serving".
    only = getattr(summarizer, "only_compiled_shapes", None)
    if only is not None:
        only()
    service = SummaryService(
        summarizer,
        name=name,
        max_batch=fv.serve_max_batch,
        max_wait_s=fv.serve_max_wait_ms / 1000.0,
        max_chars=fv.serve_max_chars,
        max_request_chars=fv.serve_max_request_chars,
    )
    try:
        server = make_server(service, fv.serve_host, fv.serve_port)
    except OSError as e:
        raise FlagError(
            f"cannot listen on {fv.serve_host}:{fv.serve_port} ({e.strerror or e}); "
            "choose another --serve_port"
        ) from None
    host, port = server.server_address[:2]
    if not _loopback(host):
        log.warning(
            "serving on %s: other machines can reach the server, which has no "
            "authentication or TLS (docs/serving.md)",
            host,
        )
    status(f"Serving {name} on http://{host}:{port}/ (Ctrl-C stops)")
    if keep:
        keep_while_serving(keep, service.idle_for)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        status("stopped")
    finally:
        server.server_close()
        service.batcher.close()
    return 0


def _loopback(host: str) -> bool:
    """Whether `host` (the address the server is bound to) answers this machine only."""
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


if __name__ == "__main__":  # the same as `pointer-generator serve`
    import sys

    from pointer_generator.cli.entry import run

    run([sys.argv[0], "serve", *sys.argv[1:]])
