"""What decode mode does besides the model's hyper-parameters (`HParams`) and its search
(`SearchSettings`).

Built from the command line by `pointer_generator.cli.configs.decode_config`; fields are
named after the flags they come from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pointer_generator.search.settings import SearchSettings


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
    decode_shards: int = 1
    decode_shard: int = 0
    distribution_strategy: str = "default"
