"""The flags of decoding across processes (`--decode_shards`), of `pointer-generator
serve` and of `pointer-generator export`. Part of `flags.define_flags`."""

from __future__ import annotations

from absl import flags


def define(fv: flags.FlagValues) -> None:
    flags.DEFINE_integer(
        "decode_shards",
        1,
        "decode --single_pass: split the examples over this many processes or machines "
        "(each run with its --decode_shard); the last to finish merges the folder and "
        "runs ROUGE.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "decode_shard", 0, "decode --single_pass: which shard this process decodes.", flag_values=fv
    )
    flags.DEFINE_string(
        "serve_host",
        "127.0.0.1",
        "serve: the address to listen on; the default answers this machine only (0.0.0.0: "
        "every network; the server has no authentication or TLS).",
        flag_values=fv,
    )
    flags.DEFINE_integer("serve_port", 8000, "serve: the port (0 = a free one).", flag_values=fv)
    flags.DEFINE_integer(
        "serve_max_batch", 16, "serve: the most texts decoded together.", flag_values=fv
    )
    flags.DEFINE_float(
        "serve_max_wait_ms",
        10.0,
        "serve: how long a request waits for others being received to share its batch.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "serve_max_chars", 100_000, "serve: the longest text accepted.", flag_values=fv
    )
    flags.DEFINE_integer(
        "serve_max_request_chars",
        500_000,
        "serve: the most characters of one request's texts together (default 500,000: "
        "64 articles of 7,800 characters, or 5 of the longest); a request over it gets "
        "413, so that one client cannot hold the server for minutes.",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "serve_warm_up_batches",
        False,
        "serve: before serving, compile the search for batches of several texts too (2, 4, "
        "... up to --serve_max_batch, at every article length); start-up takes that many "
        "times longer. Without it, a batch of a size not compiled is answered as batches "
        "of one text (no request waits for a compile; concurrent clients' texts are then "
        "searched one by one).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "saved_model",
        "",
        "serve: serve a model written by `pointer-generator export` (its folder) instead "
        "of an experiment; the decode settings are those fixed at export (a decoding flag "
        "given with it is an error). A SavedModel is a program that runs with your rights "
        "(serve runs it before serving): serve only models you trust.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "export_dir",
        "",
        "export: the new folder the SavedModel is written to (it must not exist yet).",
        flag_values=fv,
    )
