"""Everything that decides what a search writes: `SearchSettings`, the one place search
options are defined and checked. Decode mode, `summarize`, `serve`, `export`,
`tune_features` and the Python API all pass one to the search; the command line builds
it from the flags in one place (`cli/configs.search_settings`), each field from the flag
of its name (`SEARCH_FLAGS`). The batched search's own view of it,
`rules.SearchRules`, derives from it (the same fields, the same checks, and the
vocabulary's facts)."""

from __future__ import annotations

import dataclasses

from pointer_generator.data.vocab import START_ID, STOP_ID, UNK_ID


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """The settings of a beam search.

    beam_size: K hypotheses per article. min_dec_steps / max_dec_steps: a [STOP] before
      step min_dec_steps is discarded; at most max_dec_steps ids.
    trigram_blocking: forbid a repeated trigram in a summary (not in the original).
    length_penalty: None ranks by average log-probability (the original); a number is
      the exponent of GNMT's length normalisation.
    full_final_dist: build the whole extended-vocabulary distribution at every step, as
      the original (default: only the entries that can be in its top 2K, the same
      summaries up to float rounding, faster; trigram blocking implies it).
    block_unk: never generate [UNK] (the earlier families; the ABS papers' search).
    feature_weights: ABS+'s feature weights {feature: weight} (None = none);
      namas_features: the official code's skip-gram tables and padded input.
    """

    beam_size: int = 4
    min_dec_steps: int = 35
    max_dec_steps: int = 100
    trigram_blocking: bool = False
    length_penalty: float | None = None
    full_final_dist: bool = False
    block_unk: bool = False
    feature_weights: dict | None = None
    namas_features: bool = False

    def __post_init__(self):
        for name in ("beam_size", "max_dec_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.min_dec_steps < 0:
            raise ValueError(f"min_dec_steps must be >= 0, got {self.min_dec_steps}")
        # As the flag's range (cli/flag_bounds.py); `not >=` refuses NaN too.
        if self.length_penalty is not None and not self.length_penalty >= 0:
            raise ValueError(f"length_penalty must be >= 0 or None, got {self.length_penalty}")

    @classmethod
    def from_hparams(cls, hps, **options) -> SearchSettings:
        """The original's search for a model of `hps`: summaries up to the length it was
        trained for (its max_dec_steps), the original's beam and minimum length, with
        `options` (any field) on top."""
        return cls(**{"max_dec_steps": hps.max_dec_steps, **options})

    def replace(self, **changes) -> SearchSettings:
        return dataclasses.replace(self, **changes)

    @property
    def whole_distribution(self) -> bool:
        """Whether each step must build the whole final distribution."""
        return self.full_final_dist or self.trigram_blocking

    def search_options(self) -> list[tuple[str, str]]:
        """(family search option, flag) of the options beyond the common ones that these
        settings ask of a model's family (models/family.py)."""
        used = []
        if self.block_unk:
            used.append(("block_unk", "--block_unk"))
        if self.feature_weights is not None:
            used.append(("features", "--feature_weights (ABS+)"))
        return used

    def search_keywords(self, vocab_size: int) -> dict:
        """The keyword arguments of `beam_search.batched_beam_search` these settings give
        for a vocabulary of `vocab_size` words (also those of `rules.SearchRules`,
        which the search makes of them)."""
        return dict(
            beam_size=self.beam_size,
            vocab_size=vocab_size,
            max_dec_steps=self.max_dec_steps,
            min_dec_steps=self.min_dec_steps,
            start_id=START_ID,
            stop_id=STOP_ID,
            unk_id=UNK_ID,
            trigram_blocking=self.trigram_blocking,
            length_penalty=self.length_penalty,
        )

    def record(self) -> dict:
        """The options a decode folder records besides the model's lengths and beam
        (decoding/inputs_record.py; the same record as before this class existed, so earlier
        folders still resume)."""
        out = {
            "trigram_blocking": self.trigram_blocking,
            "length_penalty": self.length_penalty or 0.0,
            "block_unk": self.block_unk,
            "namas_features": self.namas_features,
        }
        if self.feature_weights is not None:
            out["feature_weights"] = dict(self.feature_weights)
        return out


# The flags of a search, one per field of `SearchSettings`, each named as its field
# (`cli/configs.search_settings` reads them; `serve --saved_model` refuses them).
SEARCH_FLAGS = tuple(f.name for f in dataclasses.fields(SearchSettings))
