"""Pointer-generator networks for summarization (See et al., 2017) in TensorFlow 2 / Keras.

The public API (docs/api.md). Names are imported on first use, so `import
pointer_generator` does not start TensorFlow:

    HParams, TrainConfig, EvalConfig, DecodeConfig   configuration
    Vocab, make_dataset, model_inputs                  data
    PointerGeneratorModel, load_tf1_checkpoint         the model and the original's weights
    Trainer                                            one distributed training step
    BeamSearchDecoder, Summary, SearchSettings         batched beam-search decoding
    summarize_texts                                    raw texts in, summaries out
    Summarizer, SummaryResult                          a trained experiment, for raw texts
    SavedModelSummarizer                               the same over an exported model
    rouge_eval, rouge_log                              official ROUGE-1.5.5
    ModelFamily, FamilyOption, SearchStart,            a model family of your own
    register_family                                    (docs/architecture.md)
    PointerGeneratorError                              the base of every error raised
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_API = {
    "HParams": "pointer_generator.hparams",
    "TrainConfig": "pointer_generator.training.config",
    "EvalConfig": "pointer_generator.evaluation.config",
    "DecodeConfig": "pointer_generator.decoding.config",
    "Vocab": "pointer_generator.data.vocab",
    "make_dataset": "pointer_generator.data.input_pipeline",
    "model_inputs": "pointer_generator.data.input_pipeline",
    "PointerGeneratorModel": "pointer_generator.models.pointer_generator",
    "load_tf1_checkpoint": "pointer_generator.models.tf1_checkpoint",
    "Trainer": "pointer_generator.training.trainer",
    "BeamSearchDecoder": "pointer_generator.search.beam_decoder",
    "Summary": "pointer_generator.search.beam_decoder",
    "SearchSettings": "pointer_generator.search.settings",
    "summarize_texts": "pointer_generator.summarizing.article_texts",
    "Summarizer": "pointer_generator.summarizing.summarizer",
    "SummaryResult": "pointer_generator.summarizing.summarizer",
    "SavedModelSummarizer": "pointer_generator.summarizing.summarizer",
    "rouge_eval": "pointer_generator.evaluation.rouge",
    "rouge_log": "pointer_generator.evaluation.rouge",
    "PointerGeneratorError": "pointer_generator.errors",
    "ModelFamily": "pointer_generator.models.family",
    "FamilyOption": "pointer_generator.models.family",
    "SearchStart": "pointer_generator.models.family",
    "register_family": "pointer_generator.models.family_registry",
}
__all__ = sorted(_API)
# Modules that do not import TensorFlow.
_WITHOUT_TENSORFLOW = (
    "pointer_generator.hparams",
    "pointer_generator.errors",
    "pointer_generator.models.family",
    "pointer_generator.models.family_registry",
)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'pointer_generator' has no attribute {name!r}")
    if _API[name] not in _WITHOUT_TENSORFLOW:
        # As quiet as the command line: TensorFlow's start-up notices (CUDA drivers,
        # cuInit, CPU instructions) held back, unless POINTER_GENERATOR_TF_LOGS=1; and, as
        # `summarize` and `serve`, compiled searches kept for the next process
        # (runtime/compile_cache.py; POINTER_GENERATOR_COMPILE_CACHE=off: not).
        from pointer_generator.cli.console import import_tensorflow

        import_tensorflow(keep_compiled=True)
    value = getattr(importlib.import_module(_API[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
