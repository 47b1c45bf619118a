"""What decode mode does besides the model's hyper-parameters (`HParams`) and its search
(`SearchSettings`).

Built from the command line by `pointer_generator.cli.configs.decode_config`; fields are
named after the flags they come from.

`write_per_document` writes the per-document ROUGE file of `--rouge_per_document` (also
`score_rouge --per_document`); it is here, a module without TensorFlow, so that the
ROUGE command can share it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from pointer_generator.runtime import owned_files
from pointer_generator.search.settings import SearchSettings

# <decode dir>/rouge_per_document.json: {"000012": {"1": [R, P, F], "2": [...], "l": [...]}}
PER_DOCUMENT_FILE = "rouge_per_document.json"
PER_DOCUMENT_MEASURES = ("1", "2", "l")


@dataclass(frozen=True)
class DecodeConfig:
    """Decode mode's job settings.

    data_path: glob of the `.bin` files to decode.
    log_root, exp_name: the experiment directory `<log_root>/<exp_name>`.
    single_pass: decode every example once with a fixed checkpoint, then ROUGE (else the
      original's endless concurrent decoding).
    tf1_checkpoint: decode with an original TF1 checkpoint instead of train/'s newest.
    search: the beam search's settings.
    decode_batch_size: articles decoded together (each with its own beam).
    attention_pages: single pass: attention pages for the first N examples.
    max_decode_examples: concurrent decoding stops after N examples (0 = never).
    xla: compile the whole search with XLA.
    readable_summaries: single pass: also write detokenized summaries in `readable/`.
    rouge_per_document: single pass: also write every summary's ROUGE-1, -2, -L to
      `rouge_per_document.json` (`write_per_document`).
    save_search: save the search as the experiment's (`experiment_settings.save_search`).
    decode_shards, decode_shard: single pass: decode this shard of that many (processes
      or machines), merged by the last to finish (`shards.py`).
    distribution_strategy: "mirrored" splits each batch over this machine's devices
      (`replicated.py`); "default" decodes on one.
    """

    data_path: str = ""
    log_root: str = ""
    exp_name: str = ""
    single_pass: bool = False
    tf1_checkpoint: str = ""
    search: SearchSettings = field(default_factory=SearchSettings)
    decode_batch_size: int = 32
    attention_pages: int = 100
    max_decode_examples: int = 0
    xla: bool = False
    readable_summaries: bool = False
    rouge_per_document: bool = False
    save_search: bool = False
    decode_shards: int = 1
    decode_shard: int = 0
    distribution_strategy: str = "default"


def write_per_document(results: dict, directory: str) -> str:
    """Write `results["per_document"]` of `rouge_eval(..., per_document=True)` to
    `directory`/rouge_per_document.json: {decode file number as 6 digits: {"1", "2",
    "l": [R, P, F]}}, ids in order. Returns the file's path."""
    scores = results["per_document"]
    record = {
        "%06d" % doc: {m: list(scores[doc][m]) for m in PER_DOCUMENT_MEASURES}
        for doc in sorted(scores)
    }
    path = os.path.join(directory, PER_DOCUMENT_FILE)
    owned_files.replace_file(path, json.dumps(record) + "\n")
    return path
