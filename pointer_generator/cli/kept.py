"""Keeping a trained search for the next process (`summarizing/kept_search.py`) with the
SavedModel writer of `serving` and a notice where it takes long: shared by `summarize`
and `serve`."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def keep_search(
    root: str, hps, settings, vocab_path: str, decoder, checkpoint: str, shapes=()
) -> None:
    """Keep `decoder`'s search (the model of `checkpoint`, experiment `root`) for the next
    process with the same checkpoint and settings, compiled for the batch `shapes` this
    process ran (`kept_search.keep_decoder`); nothing
    when searches are not kept or it is kept already. A wait over a few seconds says what
    it does."""
    from pointer_generator.cli import console
    from pointer_generator.summarizing import kept_search

    if kept_search.root() is None:
        return
    notice = f"Keeping the search for the next run in {kept_search.root()} ..."
    with console.notice_if_slow(notice):
        path = kept_search.keep_decoder(
            root, hps, settings, vocab_path, decoder, checkpoint, shapes
        )
    if path:
        log.info("Kept the search in %s", path)
