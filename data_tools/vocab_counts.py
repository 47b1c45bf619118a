"""The vocabulary file: word counts over the training set (spec section 2.6).

Tokens are the article split on single spaces plus the abstract split on single spaces with
`<s>`/`</s>` removed; each token is stripped of ASCII whitespace and empty tokens are dropped.
The most frequent words are written as `word count` lines. The original broke ties in Python 2
dict order, which cannot be reproduced; here ties are broken by the word's code points, so
the file depends only on the counts.
"""

from __future__ import annotations

from collections import Counter

from pointer_generator.data.binfile import AtomicWriter
from pointer_generator.data.vocab import RESERVED_WORDS, SENTENCE_END, SENTENCE_START, ascii_strip

DEFAULT_VOCAB_SIZE = 200_000


def vocab_tokens(article: str, abstract: str) -> list[str]:
    """The tokens one example contributes to the vocabulary counts."""
    tokens = article.split(" ") + [
        t for t in abstract.split(" ") if t not in (SENTENCE_START, SENTENCE_END)
    ]
    tokens = [ascii_strip(t) for t in tokens]
    return [t for t in tokens if t]


class VocabCounter:
    """Accumulates word counts over (article, abstract) pairs and writes the vocab file."""

    def __init__(self):
        self.counts: Counter[str] = Counter()

    def add(self, article: str, abstract: str) -> None:
        self.counts.update(vocab_tokens(article, abstract))

    def most_common(self, max_size: int = DEFAULT_VOCAB_SIZE) -> list[tuple[str, int]]:
        """Top `max_size` (word, count), count descending, ties by code point order.

        Reserved tokens ([UNK], <s>, ...) are left out: the Vocab reader refuses them, and
        raw text containing a literal `<s>` tag would otherwise produce one.
        """
        items = [(w, c) for w, c in self.counts.items() if w not in RESERVED_WORDS]
        items.sort(key=lambda wc: (-wc[1], wc[0]))
        return items[:max_size]

    def write(self, path: str, max_size: int = DEFAULT_VOCAB_SIZE) -> int:
        """Write `word count` lines to `path` atomically; returns the number of lines."""
        items = self.most_common(max_size)
        with AtomicWriter(path) as f:
            f.write("".join(f"{w} {c}\n" for w, c in items).encode("utf-8"))
        return len(items)
