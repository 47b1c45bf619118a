"""What an experiment remembers of how it was made: `settings.json` and its own copy of
the vocabulary.

    <log_root>/<exp_name>/settings.json   {"flags": {model and length flags},
                                           "vocab": {"path": the file trained with,
                                                     "sha256": its content's digest,
                                                     "copy": "vocab"}}
    <log_root>/<exp_name>/vocab           that vocabulary, copied when training started
    <log_root>/<exp_name>/search.json     the search it is meant to be used with, saved on
                                          purpose (`--mode=decode --save_search`)

An experiment is self-contained: moved, copied, or with its data folder rebuilt (a second
`data_tools.convert` into the same folder rewrites `vocab`), it still reads the
vocabulary it was trained with, and the digest is checked every time the vocabulary is
used, so a changed file is one error instead of summaries made with other words.

The file is written by the training job; anyone may edit it by hand, so every read
checks its shape and types (`read`), naming the file and the entry on a problem.

Every user of a trained experiment gets its settings from one resolver, `resolve`: the
command line (cli/stored_settings.py: eval, decode, summarize, export, tune_features, a
resumed training run) and the Python API (summarizing/trained.stored_settings:
`pg.Summarizer.from_experiment`, `serve`). So one experiment is one model everywhere:
the values of flags its settings predate, its family's fixed settings and defaults, the
saved search, the checked vocabulary and the contradictions refused are the same
whichever way it is opened.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Protocol

from pointer_generator.errors import FlagError, OutputError
from pointer_generator.runtime import json_files, owned_files

SETTINGS_FILE = "settings.json"
VOCAB_COPY = "vocab"
_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "bool | None": bool}
# Fields whose stored value may also be null (static_shapes: null = length buckets).
_NULLABLE = ("bool | None",)


def file_digest(path: str) -> str | None:
    """The SHA-256 of a file's content (hex), or None when it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def settings_path(root: str) -> str:
    return os.path.join(root, SETTINGS_FILE)


def read(root: str, families: FamilyQuestions) -> dict | None:
    """The checked settings of the experiment at `root`, or None when it has no
    settings.json (an experiment of an older version, or none yet). `families`: the
    family registry, which says the types of the families' options.

    Raises FlagError naming the file and what is wrong with it: not JSON, no "flags" or
    "vocab" object, a flag that is not a model setting or whose value has the wrong
    type (`"hidden_dim": "abc"`, `null`, `24.7`).
    """
    path = settings_path(root)
    if not os.path.isfile(path):
        return None
    try:
        stored = json_files.read_object(path)
    except ValueError as e:
        raise _bad(path, str(e)) from None
    flags, vocab = stored.get("flags"), stored.get("vocab")
    if not isinstance(flags, dict):
        raise _bad(path, '"flags" must be an object of flag names and values')
    if not isinstance(vocab, dict) or not isinstance(vocab.get("path"), str):
        raise _bad(path, '"vocab" must be an object with the vocabulary\'s "path"')
    sha = vocab.get("sha256")
    if not (sha is None or (isinstance(sha, str) and len(sha) == 64)):
        raise _bad(path, '"vocab"."sha256" must be a SHA-256 digest (64 hex digits)')
    if "copy" in vocab and vocab["copy"] != VOCAB_COPY:
        raise _bad(path, f'"vocab"."copy" must be "{VOCAB_COPY}"')
    types = {**_field_types(), **families.option_types()}
    nullable = _nullable_fields()
    for name, value in flags.items():
        if name not in types:
            raise _bad(path, f'"flags" holds {name!r}, which is not a model setting')
        if value is None and name in nullable:
            continue
        want = types[name]
        # JSON has one number type: 2 is a fine float, but 24.7 is no int, true no int.
        ok = (isinstance(value, want) and not (want is int and isinstance(value, bool))) or (
            want is float and isinstance(value, int) and not isinstance(value, bool)
        )
        if not ok:
            raise _bad(path, f'"{name}" must be {_article(want.__name__)}, got {json.dumps(value)}')
    return stored


def _article(type_name: str) -> str:
    return {"int": "an integer", "float": "a number", "bool": "true or false"}.get(
        type_name, "a string"
    )


def _bad(path: str, why: str) -> FlagError:
    return FlagError(
        f"{path} is unreadable ({why}); restore it (the training run writes it again when "
        "it resumes), or remove it and give every model flag on the command line"
    )


def _field_types() -> dict[str, type]:
    from pointer_generator.hparams import HParams

    # (`options`, the family's own settings, are stored one by one: `option_types`.)
    return {f.name: _TYPES[str(f.type)] for f in dataclasses.fields(HParams) if f.name != "options"}


def _nullable_fields() -> set[str]:
    from pointer_generator.hparams import HParams

    return {f.name for f in dataclasses.fields(HParams) if str(f.type) in _NULLABLE}


def vocabulary(root: str, stored: dict) -> str:
    """The vocabulary file the experiment at `root` was trained with, checked.

    Its own copy when it has one, else (an experiment made before copies were kept) the
    file it was trained from. Raises FlagError when that file is gone or its content is
    not what training used (the digest in settings.json).
    """
    vocab, path = stored["vocab"], settings_path(root)
    if vocab.get("copy"):
        copy = os.path.join(root, vocab["copy"])
        if not os.path.isfile(copy):
            raise FlagError(
                f"{copy}, this experiment's copy of its vocabulary, is gone; put it back (a "
                f"copy of {vocab['path']} as it was when training began), or give --vocab_path"
            )
        if vocab.get("sha256") and file_digest(copy) != vocab["sha256"]:
            raise FlagError(
                f"{copy} is not the vocabulary this experiment was trained with (its "
                f"SHA-256 differs from the one in {path}); put back the original file"
            )
        return copy
    source = vocab["path"]
    if not os.path.isfile(source):
        raise FlagError(
            f"the vocabulary this experiment was trained with, {source}, is gone "
            f"(stored in {path}); give --vocab_path with a copy of it"
        )
    if vocab.get("sha256") and file_digest(source) != vocab["sha256"]:
        raise FlagError(
            f"{source} changed since this experiment was trained with it (its SHA-256 "
            f"differs from the one in {path}: was the data folder made again?); put back "
            "the file it was trained with, or give --vocab_path with a copy of it"
        )
    return source


def check_given_vocabulary(root: str, stored: dict, given: str) -> None:
    """FlagError when a --vocab_path given with a trained experiment has other content."""
    digest, sha = file_digest(given), stored["vocab"].get("sha256")
    if digest is not None and sha and digest != sha:
        own = os.path.join(root, stored["vocab"].get("copy") or "")
        keeps = (
            f"the experiment keeps its own copy, {own}"
            if stored["vocab"].get("copy")
            else f"it was trained with {stored['vocab']['path']}"
        )
        raise FlagError(
            f"--vocab_path {given} is not the vocabulary this experiment was trained with "
            f"(other content than the SHA-256 in {settings_path(root)}); drop the flag "
            f"({keeps}), or train a new experiment (another --exp_name)"
        )


def write(root: str, settings: dict | None) -> None:
    """Store `settings` as `root/settings.json`, with a copy of its vocabulary as
    `root/vocab` (both atomically; unchanged content is not rewritten). Only the
    training job, which holds train/'s lock, calls this."""
    if settings is None:
        return
    settings = json.loads(json.dumps(settings))  # a copy we may extend
    vocab = settings["vocab"]
    _store_vocabulary(root, vocab)
    vocab["copy"] = VOCAB_COPY
    path = settings_path(root)
    text = json.dumps(settings, indent=1, sort_keys=True) + "\n"
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    _write_atomically(path, lambda: owned_files.replace_file(path, text))


def _store_vocabulary(root: str, vocab: dict) -> None:
    copy = os.path.join(root, VOCAB_COPY)
    if os.path.lexists(copy):
        if file_digest(copy) == vocab["sha256"]:
            return
        raise FlagError(
            f"{copy} exists but is not the vocabulary this run trains with "
            f"({vocab['path']}); it is this experiment's copy of the vocabulary it was "
            "trained with: train a new experiment (another --exp_name), or move it away"
        )
    _write_atomically(copy, lambda: owned_files.copy_file(vocab["path"], copy))


def _write_atomically(path: str, write) -> None:
    """Run `write()`, which replaces `path` through a temporary (runtime/owned_files.py:
    the umask's mode, never through a link); a failure is an OutputError naming `path`."""
    try:
        write()
    except OSError as e:
        raise OutputError(f"cannot write {path} ({e.strerror or e})") from None


# ------------------------------------------------------------------ the experiment's search
SEARCH_FILE = "search.json"
# What `summarize`, `serve`, `export`, `tune_features` and `pg.Summarizer` search with when
# not told otherwise: the search the experiment's maker chose on purpose (`--mode=decode
# --save_search`; the quick-start and the recipes' decode stages give it). A decode that
# only tries a search leaves it alone: before, every decode rewrote it (a decode with the
# flag defaults made a toy model decoded with --min_dec_steps=10 write 35 words later).
# {setting: type}; a setting missing from the file keeps its default.
SAVED_SEARCH = {
    "beam_size": int,
    "min_dec_steps": int,
    "max_dec_steps": int,
    "trigram_blocking": bool,
    "length_penalty": float,
    "block_unk": bool,
}
# Older experiments: every decode wrote its beam and lengths here; still read, never written.
LEGACY_DECODE_FILE = "last_decode.json"
_LEGACY_SETTINGS = ("beam_size", "min_dec_steps", "max_dec_steps")


def search_path(root: str) -> str:
    return os.path.join(root, SEARCH_FILE)


def save_search(root: str, values: Mapping) -> str:
    """Store `values`' search settings (`SAVED_SEARCH`) as the experiment's search,
    `root/search.json`; returns its path."""
    text = json.dumps({k: SAVED_SEARCH[k](values[k]) for k in SAVED_SEARCH}, indent=1) + "\n"
    path = search_path(root)
    _write_atomically(path, lambda: owned_files.replace_file(path, text))
    return path


def read_saved_search(root: str) -> tuple[dict, str | None]:
    """(the experiment's saved search {setting: value}, the file it came from): search.json,
    else an older experiment's last_decode.json, else ({}, None). A file that is not what
    `save_search` wrote is a FlagError naming it."""
    for name, keys in ((SEARCH_FILE, tuple(SAVED_SEARCH)), (LEGACY_DECODE_FILE, _LEGACY_SETTINGS)):
        path = os.path.join(root, name)
        if os.path.isfile(path):
            return _read_search(path, keys), path
    return {}, None


def _read_search(path: str, keys: tuple[str, ...]) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            values = json_files.load(f)
    except (OSError, ValueError) as e:
        values = getattr(e, "strerror", None) or str(e)
    # search.json may hold any of its settings (a hand-written one); the older file, all
    # three it always held.
    ok = isinstance(values, dict) and set(values) <= set(keys)
    ok = ok and (path.endswith(SEARCH_FILE) or set(values) == set(keys))
    if ok:
        ok = all(_search_value_ok(k, v) for k, v in values.items())
        # (no summary could end before its minimum length)
        ok = ok and values.get("min_dec_steps", 0) <= values.get("max_dec_steps", math.inf)
    if not ok:
        why = (
            values
            if isinstance(values, str)
            else f"not {', '.join(keys)} of their types and ranges"
        )
        raise FlagError(
            f"{path} is unreadable ({why}); remove it (decode with --save_search writes "
            "the experiment's search again) or fix it"
        )
    return dict(values)


def _search_value_ok(name: str, value) -> bool:
    kind = SAVED_SEARCH[name]
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        return False
    return math.isfinite(value) and value >= (1 if name in ("beam_size", "max_dec_steps") else 0)


def describe_search(values: Mapping, source: str | None, given: Sequence[str] = ()) -> str:
    """One line saying which search a command runs and where it comes from (`summarize`,
    `serve`, `export` print it at start)."""

    def show(value) -> str:  # as the flags are written
        return str(value).lower() if isinstance(value, bool) else str(value)

    shown = ", ".join(f"{k}={show(values[k])}" for k in SAVED_SEARCH if k in values)
    if source:
        where = f"the experiment's search ({source})"
    else:
        where = "the defaults (this experiment saved no search: decode with --save_search)"
    extra = f"; given: {', '.join('--' + g for g in given)}" if given else ""
    return f"search: {shown} from {where}{extra}"


# ------------------------------------------------------------------ the one resolver
# The flags a training run stores (cli/stored_settings.content). The model's shape
# (`model_flags`: these, and every family's own flags) must agree with every later
# command: a given flag that contradicts it is an error. The lengths and the padding are
# defaults only (decoding longer summaries than training used is normal).
GENERIC_MODEL_FLAGS = ("model", "hidden_dim", "emb_dim", "vocab_size", "optimizer")
LENGTH_FLAGS = ("max_enc_steps", "max_dec_steps")
PADDING_FLAGS = ("static_shapes", "length_buckets", "decoder_buckets")


class FamilyQuestions(Protocol):
    """What the resolver asks about the model families: the registry
    (`pointer_generator.models.family_registry`, which the callers pass: runtime/ does not
    import models/)."""

    def settings(self, values: Mapping) -> tuple[dict, dict]:
        """(fixed, defaults) of the family `values["model"]` names."""

    def model_flags(self) -> tuple[str, ...]:
        """Every family's own model flags."""

    def predating(self, values: Mapping) -> dict:
        """{flag: value} an experiment of the family `values["model"]` whose settings
        predate the flag ran with."""

    def option_types(self) -> dict:
        """{option: type} of the families' own settings (`HParams.options`)."""

    def changed_in_training(self, values: Mapping) -> tuple[str, ...]:
        """The model flags a training run may change on the experiment of family
        `values["model"]` (the pointer-generator's coverage, turned on half way)."""


def model_flags(families: FamilyQuestions) -> tuple[str, ...]:
    """The flags that decide the model's shape: the generic ones and every family's own
    (`ModelFamily.own_flags`)."""
    own = tuple(f for f in families.model_flags() if f not in GENERIC_MODEL_FLAGS)
    return GENERIC_MODEL_FLAGS + own


@dataclasses.dataclass(frozen=True)
class Resolved:
    """An experiment's settings as every command and the Python API use them.

    stored: its checked settings.json (None: an experiment of an older version, which
      kept none); values: {setting: value} for each setting the experiment decides that
      the caller did not give (HParams fields); vocab_path: its vocabulary, checked (the
      given one if any; None when neither is known); search_source: the file the saved
      search came from (None: none, or not asked for).
    """

    root: str
    stored: dict | None
    values: dict
    vocab_path: str | None
    search_source: str | None = None


def resolve(
    root: str,
    given: dict | None = None,
    *,
    families: FamilyQuestions,
    mode: str = "decode",
    vocab_path: str | None = None,
    saved_search: bool = False,
) -> Resolved:
    """The settings of the experiment at `root` for a caller that sets `given`
    ({setting: value}: the flags given on the command line, the API's options);
    `families` answers the questions about model families (the registry,
    `pointer_generator.models.family_registry`).

    `values` holds, for the settings not given: the stored flags; for a flag the
    settings predate, the value the experiment ran with (`families.predating`); with
    `saved_search`, the experiment's saved search (summarize, export, serve and the API;
    `--mode=decode --save_search` writes it: `search_source` names the file); and the model
    family's own defaults.
    FlagError: a given model flag contradicts the stored one (but, in train mode, those
    the family lets training change: `families.changed_in_training`), a vocabulary that
    is gone or changed, an unreadable file.
    """
    given = given or {}
    stored = read(root, families)
    values: dict = {}
    if stored is not None:
        values = stored_values(stored, families)
        changeable = families.changed_in_training(values) if mode == "train" else ()
        _check_agreement(root, values, given, model_flags(families), changeable)
        vocab_path = _checked_vocabulary(root, stored, vocab_path)
    source = None
    if saved_search:
        search, source = read_saved_search(root)
        values.update(search)
    if stored is not None:
        _add_family_settings(values, families)
    kept = {k: v for k, v in values.items() if k not in given}
    return Resolved(root, stored, kept, vocab_path, source)


def stored_values(stored: dict, families: FamilyQuestions) -> dict:
    """The stored flags, with the values of those the settings predate, as the
    experiment's family says (`families.predating(flags)`)."""
    flags = stored["flags"]
    return {**flags, **{k: v for k, v in families.predating(flags).items() if k not in flags}}


def _check_agreement(
    root: str,
    values: dict,
    given: dict,
    shape_flags: tuple[str, ...],
    changeable: tuple[str, ...] = (),
) -> None:
    """One FlagError listing every given model flag that contradicts the experiment
    (but those in `changeable`, which a training run may change)."""
    contradictions = [
        f"--{name}={_show(given[name])} contradicts this experiment's {name}={_show(value)}"
        for name, value in values.items()
        if name in given and name in shape_flags and name not in changeable and given[name] != value
    ]
    if contradictions:
        raise FlagError(
            "; ".join(contradictions) + f" (stored in {settings_path(root)} when it was "
            "trained); drop the flag, or train a new experiment (another --exp_name)"
        )


def _show(value) -> str:
    return str(int(value)) if isinstance(value, bool) else str(value)


def _checked_vocabulary(root: str, stored: dict, given: str | None) -> str:
    """The experiment's own vocabulary (checked against its digest), or `given`, which
    must have the same content."""
    if given is not None:
        check_given_vocabulary(root, stored, given)
        return given
    return vocabulary(root, stored)


def _add_family_settings(values: dict, families: FamilyQuestions) -> None:
    """The settings the experiment's family fixes (ABS and RAS: no pointer, no
    coverage), and its own defaults where the experiment stores nothing; the command
    line applies the same through cli/flag_checks.apply_model_family."""
    fixed, defaults = families.settings(values)
    values.update(fixed)
    for name, value in defaults.items():
        values.setdefault(name, value)
