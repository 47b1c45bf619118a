"""The contract every model family keeps, in code: `ModelFamily`, so that the search, the
trainer, the eval job and the runtime never ask which family they hold.

A family is a `ModelFamily` object registered under its `--model` name
(`models/family_registry.py`: the built-in ones, `family_registry.register`, or a plugin named by
`POINTER_GENERATOR_FAMILIES`). It says:

* its settings: `options`, its own settings (`FamilyOption`s: each a command-line flag,
  stored with the experiment, shown in --help's model group, in `HParams.options`; read
  them with `config(hps)`, its frozen config dataclass, or `option_values(hps)`,
  defaults filled), `own_flags` (HParams fields only it reads: the pointer-generator's
  switches), `fixed_settings` (what it cannot change: a family without a pointer has
  `pointer_gen=False, coverage=False`), `unused_settings` (settings of every model its
  models never read: refused when given), `defaults(values)` (where its defaults
  differ from the flags'), `predating` (what an experiment made before a flag ran
  with), `changed_in_training` (model flags a training run may change), `check(hps)`
  (settings it refuses);
* its model: `build(hps, vocab_size)`, a built Keras model (every weight created) that
  provides
  - `model(batch)` -> a dict with at least `step_nll` [B, T] (the NLL of every target
    word) and whatever the family's `loss_terms` reads;
  - the search: `search_start(inputs: SearchInputs, beam_size, full_final_dist)` ->
    `SearchStart` (its step function with one signature for every family, the initial
    carry and the per-article tensors);
  - checkpoints: `checkpoint_mismatches(shapes)`; `parameter_summary()`;
* its loss: `loss_terms(hps, out, batch)` -> `LossTerms`, sums and what each is divided by
  (examples or target tokens), which the trainer and the eval job only add up;
  `objective(hps, means, sums)`, what training minimises; `reductions`, the
  --loss_reduction values it has; `scalars(hps)`, the metrics beyond `loss` it reports,
  `scalar_tags` (their TensorBoard tags where not their names), `logged(hps)` (those
  shown in the progress and eval lines);
* its search: `SEARCH_OPTIONS`, the options beyond the common ones its models support
  ([UNK] blocked, ABS+'s features, n-best lists), `search_option_note`;
* its decode output: `copies_words(hps)` (summaries may hold article words outside the
  vocabulary, and p_gen means something);
* its checkpoints: `implied_settings(shapes)`, `embedding_key(shapes)` (None when a
  checkpoint is not of this family), `loads_original` / `load_original` (the original
  release's TF1 checkpoints), `CONVERSIONS` (its one-off conversions, each a
  `Conversion` with a train-mode flag of its own: --convert_to_coverage_model).
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple

from pointer_generator.errors import FlagError

OPTION_TYPES = (bool, int, float, str)


class FamilyOption(NamedTuple):
    """One setting of a model family's own: the flag `--<name>`, a key of
    `HParams.options`, stored with the experiment like every model flag.

    default: its value when not given (its type, one of bool, int, float, str, is the
      option's); help: the flag's help; choices: the values allowed (strings), if only
      some; low: the smallest value allowed (numbers), excluded when `open_low`.
    """

    name: str
    default: bool | int | float | str
    help: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    open_low: bool = False

    @property
    def type(self) -> type:
        return type(self.default)

    def problem(self, value) -> str | None:
        """Why `value` is not one of this option's ("must be ..."), or None."""
        want = self.type
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            return f"must be {want.__name__}, got {value!r}"
        if self.choices and value not in self.choices:
            return f"must be one of {', '.join(self.choices)}, got {value!r}"
        if want is float and not math.isfinite(value):
            return f"must be a finite number, got {value}"
        if self.low is not None and (value < self.low or (self.open_low and value == self.low)):
            if self.low == 1 and not self.open_low:
                return f"must be positive, got {value}"
            return f"must be {'>' if self.open_low else '>='} {self.low:g}, got {value}"
        return None


class SearchInputs(NamedTuple):
    """The encoder inputs of a batch of B articles, as the input pipeline makes them.

    enc_batch: int32 [B, enc_len] ids ([UNK] for article OOVs); enc_padding_mask: float32
    [B, enc_len]; enc_batch_extend_vocab: int32 [B, enc_len] ids with article OOVs as
    vocab_size + k; max_art_oovs: int32 scalar.
    """

    enc_batch: Any
    enc_padding_mask: Any
    enc_batch_extend_vocab: Any
    max_art_oovs: Any


class SearchStart(NamedTuple):
    """What the batched search runs (`search.beam_search.batched_beam_search`).

    step: step(tokens [N], carry, articles) -> (probabilities [N, V'] or
      `top_k.Candidates`, attention [N, enc_len], p_gen [N], new carry), N = rows of
      `articles` * beam_size (row s*K + k is hypothesis k of article s);
    carry: nested tensors [B*K, ...], every beam of an article starting alike;
    articles: nested tensors [B, ...], one row per article (the search drops the rows of
      finished articles).
    """

    step: Callable
    carry: Any
    articles: Any


def tile_beams(nested: Any, beam_size: int) -> Any:
    """Repeat every row `beam_size` times: [B, ...] -> [B*K, ...], row b*K + k = row b."""
    import tensorflow as tf  # here: the command line reads families before TensorFlow

    return tf.nest.map_structure(
        lambda x: tf.repeat(tf.convert_to_tensor(x), beam_size, axis=0), nested
    )


def parameter_summary(model, kind: str) -> str:
    """`<kind> model with N trainable parameters (vocab V)`, the start-up line."""
    import tensorflow as tf

    n = sum(int(tf.size(v)) for v in model.trainable_variables)
    return f"{kind} model with {n:,} trainable parameters (vocab {model.vocab_size:,})"


def embedding_mismatches(shape, vocab_size: int, emb_dim: int) -> list[str]:
    """The phrases for a word-embedding table of `shape` that does not fit the flags."""
    problems = []
    if len(shape) == 2 and shape[0] != vocab_size:
        problems.append(
            f"it has a vocabulary of {shape[0]} words but the vocab file and --vocab_size "
            f"give {vocab_size}"
        )
    if len(shape) == 2 and shape[1] != emb_dim:
        problems.append(f"it has emb_dim={shape[1]} but --emb_dim={emb_dim}")
    return problems


class Conversion(NamedTuple):
    """A one-off conversion (train mode, `--<flag>`): a model of the family with the
    `target` settings starts from the newest checkpoint of one with the `source`
    settings; the weights only the target has (`added(key)`, on checkpoint keys) keep
    their initial values. The converted checkpoint is written beside its source with
    `suffix`, and training resumes from it. The original's --convert_to_coverage_model
    is one (training/conversions.py runs it).

    what_is_added: the added weights in words ("coverage weights (w_c)"); then: what to
    run next, for the log ("now run training with --coverage=1"); help: the flag's help.
    """

    flag: str
    source: Mapping
    target: Mapping
    added: Callable[[str], bool]
    what_is_added: str
    suffix: str
    then: str
    help: str


# What a switch a family may fix off is called in "--model=abs has no pointer".
SWITCH_NOUNS = {"pointer_gen": "pointer"}

# What a loss term's sum is divided by (`LossTerms.per`).
EXAMPLES = "examples"
TOKENS = "tokens"


class LossTerms(NamedTuple):
    """One batch's loss terms as sums, and what each sum is divided by.

    sums: {name: scalar tensor}, e.g. {"loss": sum of the target words' NLL};
    per: {name: EXAMPLES or TOKENS}: the term's value is its sum over the global batch
      (or the whole evaluated set) divided by the number of examples or of real target
      tokens in it. The trainer divides a replica's sums by the global counts, the eval
      job adds sums over batches and divides at the end: neither knows the family.
    """

    sums: dict
    per: dict


def term_means(terms: LossTerms, counts: Mapping) -> dict:
    """{name: sum / counts[per[name]]}: every term's value given the counts
    ({EXAMPLES: n, TOKENS: m}, tensors or floats)."""
    return {name: total / counts[terms.per[name]] for name, total in terms.sums.items()}


def token_nll_sum(out: dict, batch: dict):
    """The NLL summed over the batch's real target tokens (perplexity's numerator)."""
    import tensorflow as tf

    return tf.reduce_sum(out["step_nll"] * batch["dec_padding_mask"])


class ModelFamily(abc.ABC):
    """A model family: its settings, its model, its loss, its reports, its checkpoints.

    Subclass it, set `name` (the --model value) and `summary` (for --help), implement
    `build`, and override what differs from the defaults here: a family without a
    pointer or coverage whose loss is the mean NLL per target token (the original's
    baseline sequence loss), reporting only `loss`.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    # Its own settings: flags, stored with the experiment, `HParams.options` (read them
    # with `option_values`).
    options: ClassVar[tuple[FamilyOption, ...]] = ()
    # HParams fields that only this family reads (the original's switches).
    own_flags: ClassVar[tuple[str, ...]] = ()
    # Settings the family cannot change: the command line and the settings resolver apply
    # them over whatever was given (an HParams made in Python must hold them itself).
    fixed_settings: ClassVar[Mapping] = {"pointer_gen": False, "coverage": False}
    # What an experiment whose settings predate one of its flags ran with, where the
    # flag's default has changed since ({field: value}).
    predating: ClassVar[Mapping] = {}
    # Model flags a training run may change on an existing experiment (the others must
    # agree with what the experiment stored).
    changed_in_training: ClassVar[tuple[str, ...]] = ()
    # Settings every model has a flag for that its models do not read (the
    # pointer-generator's --decode_attention for ABS): given, they are one error.
    unused_settings: ClassVar[tuple[str, ...]] = ()
    # Flags of every model its models do not read that an HParams made in Python may hold
    # at any value (speed switches the test configurations set for every family): refused
    # on the command line only.
    unused_flags: ClassVar[tuple[str, ...]] = ()
    # Its one-off conversions (`Conversion`: each a train-mode flag of its own).
    CONVERSIONS: ClassVar[tuple[Conversion, ...]] = ()
    # Whether it can start from the original release's checkpoints (--tf1_checkpoint,
    # `load_original`).
    loads_original: ClassVar[bool] = False
    # The --loss_reduction values it trains with (the mean per target token by default).
    reductions: ClassVar[tuple[str, ...]] = ("mean",)
    # {scalar: TensorBoard tag} for those of its `scalars` not written under their names.
    scalar_tags: ClassVar[Mapping] = {}
    # Its model class, where it has one.
    model_class: ClassVar[type | None] = None
    # The search options its models support beyond the common ones: "block_unk" (never
    # [UNK]), "features" (ABS+'s), "nbest" (n-best lists, for ABS+'s tuning); and what
    # the refusal of another says after the flag ("is not ...").
    SEARCH_OPTIONS: ClassVar[frozenset] = frozenset()
    search_option_note: ClassVar[str] = "is not a search option of this model family"

    def model_flags(self) -> tuple[str, ...]:
        """Its model flags, stored with an experiment: its HParams fields and options."""
        return tuple(self.own_flags) + tuple(o.name for o in self.options)

    def option_values(self, hps) -> dict:
        """{option: value} of every option of this family: the one `hps` holds (its
        `options`), else the option's default."""
        given = dict(hps.options)
        return {o.name: given.get(o.name, o.default) for o in self.options}

    def config_class(self) -> type:
        """Its settings as a frozen dataclass, `<Name>Config`: a field per HParams field
        only it reads (`own_flags`, typed as in HParams) and per option (with its type and
        default)."""
        cls = self.__dict__.get("_config_class")
        if cls is None:
            from pointer_generator.hparams import HParams

            known = {f.name: f for f in dataclasses.fields(HParams)}
            title = "".join(part.title() for part in self.name.split("_")) + "Config"
            fields = [
                (n, known[n].type, dataclasses.field(default=known[n].default))
                for n in self.own_flags
            ] + [(o.name, o.type, dataclasses.field(default=o.default)) for o in self.options]
            cls = dataclasses.make_dataclass(title, fields, frozen=True)
            self.__dict__["_config_class"] = cls
        return cls

    def config(self, hps):
        """Its settings of `hps` as its `config_class`, defaults filled."""
        own = {n: getattr(hps, n) for n in self.own_flags}
        return self.config_class()(**own, **self.option_values(hps))

    def defaults(self, values: Mapping) -> dict:
        """{field: value} where this family's defaults differ from the flags', given the
        settings so far (`values`: what was given or stored); applied where nothing was
        given."""
        return {}

    def check(self, hps) -> None:
        """Raise FlagError for settings this family cannot run with (here: an option
        of another family or outside its range, a --loss_reduction it does not have). A
        subclass calls it first."""
        mine = {o.name: o for o in self.options}
        for name, value in hps.options:
            if name not in mine:
                raise FlagError(
                    f"--{name} is no setting of --model={self.name} (its own: "
                    f"{', '.join(mine) or 'none'})"
                )
            problem = mine[name].problem(value)
            if problem:
                raise FlagError(f"--{name} {problem}")
        from pointer_generator.hparams import HParams

        for name in self.unused_settings:  # (given away from its default: ignored)
            if getattr(hps, name, None) != getattr(HParams, name, None):
                raise FlagError(
                    f"--{name} is no setting of --model={self.name} (its models do not "
                    "read it): drop it"
                )
        # The command line and the settings resolver apply them; an HParams made in
        # Python must hold them (ABS with pointer_gen=True would get the pointer's
        # extended-id targets from the input pipeline).
        for name, value in self.fixed_settings.items():
            if getattr(hps, name, value) != value:
                raise FlagError(
                    f"{self.fixed_setting_message(name, value)} (in Python: "
                    f"HParams(model={self.name!r}, {name}={value!r}, ...))"
                )
        if hps.loss_reduction not in self.reductions:
            raise FlagError(
                f"--loss_reduction={hps.loss_reduction} is not one of --model={self.name}'s "
                f"({', '.join(self.reductions)})"
            )

    @abc.abstractmethod
    def build(self, hps, vocab_size: int):
        """The family's Keras model for `hps`, every weight created."""

    # ------------------------------------------------------------------ loss and reports
    def loss_terms(self, hps, out: dict, batch: dict) -> LossTerms:
        """The mean NLL per real target token (`out["step_nll"]` [B, T])."""
        return LossTerms({"loss": token_nll_sum(out, batch)}, {"loss": TOKENS})

    def objective(self, hps, means: Mapping, sums: Mapping):
        """What training minimises, from the terms' values (`means`) and sums."""
        return means["loss"]

    def scalars(self, hps) -> tuple[str, ...]:
        """The metrics beyond `loss` this family reports (each a key of `loss_terms`'
        sums, or `total_loss`, the objective)."""
        return ()

    def logged(self, hps) -> tuple[str, ...]:
        """Those of its `scalars` shown beside the loss in the progress and eval log
        lines."""
        return ()

    # ------------------------------------------------------------------ search and output
    def search_options(self) -> frozenset:
        """The search options its models support beyond the common ones
        (`SEARCH_OPTIONS`)."""
        return frozenset(self.SEARCH_OPTIONS)

    def copies_words(self, hps) -> bool:
        """Whether summaries can hold article words outside the vocabulary (shown with
        the article's OOVs) and p_gen is meaningful."""
        return False

    # ------------------------------------------------------------------ checkpoints
    def implied_settings(self, shapes: Mapping) -> dict | None:
        """The flags a checkpoint ({key: shape}) of this family implies (with "model"
        where it cannot be told from the family's others); None if it is not one."""
        return None

    def embedding_key(self, shapes: Mapping) -> str | None:
        """The checkpoint key of the word embedding (TensorBoard's projector), if any."""
        return None

    @property
    def conversions(self) -> frozenset:
        """The one-off checkpoint operations it supports, by flag: "tf1_checkpoint" where
        it `loads_original`, and its `CONVERSIONS`' flags."""
        flags = {c.flag for c in self.CONVERSIONS}
        return frozenset(flags | ({"tf1_checkpoint"} if self.loads_original else set()))

    def conversion(self, flag: str) -> Conversion | None:
        """Its `Conversion` run by `--<flag>`, if it has one."""
        return next((c for c in self.CONVERSIONS if c.flag == flag), None)

    def fixed_setting_message(self, name: str, value) -> str:
        """The error for a flag given against one of its `fixed_settings`."""
        if value is False:
            return f"--model={self.name} has no {SWITCH_NOUNS.get(name, name)}: drop --{name}"
        shown = int(value) if isinstance(value, bool) else value
        return f"--model={self.name} always has --{name}={shown}: drop --{name}"

    def load_original(self, model, path: str, *, with_optimizer: bool, converting: bool):
        """Load the original release's checkpoint at `path` into the built `model` (a
        family with "tf1_checkpoint" in `conversions`); returns what was loaded
        (`models/tf1_checkpoint.Tf1Checkpoint`: global_step, adagrad_slots, ...).
        with_optimizer: also its Adagrad slots where it has them; converting: the model
        is a `Conversion`'s target, whose added weights the checkpoint lacks."""
        raise FlagError(
            f"--tf1_checkpoint holds a model of the original release; --model={self.name} "
            "cannot start from it"
        )

    def __repr__(self) -> str:
        return f"<model family {self.name!r}>"
