"""Sentence splitting of tokenized, lower-cased text (lead-3 and the analysis measures).

The paper does not give a rule; this is ours. A sentence ends after a `.`, `!` or `?`
token; tokens right after it that are further end marks or closing quotes/brackets still
belong to it, e.g. `he said `` stop . '' then` gives `he said `` stop . ''` and `then`.
Closing brackets count in both spellings: PTB's `-rrb-` `-rsb-` `-rcb-` (what this
project's tokenizer writes) and the literal `)` `]` `}` (what other tools' released
outputs and un-escaped data hold). `...` does not end a sentence (it is mostly
mid-sentence in news text). Words after the last end mark form a final sentence. Tokens
are split on ASCII whitespace only, like the rest of the data path.
"""

from __future__ import annotations

from pointer_generator.data.vocab import ascii_split

SENTENCE_END_TOKENS = frozenset({".", "!", "?"})
# In PTB-tokenized text opening quotes are `` and `, so '' and ' after an end mark close it.
CLOSING_TOKENS = frozenset({"''", "'", '"', "-rrb-", "-rsb-", "-rcb-", ")", "]", "}"})


def split_tokens(tokens: list[str]) -> list[list[str]]:
    """`tokens` cut into sentences (the rule of the module doc)."""
    sents, current = [], []
    i = 0
    while i < len(tokens):
        current.append(tokens[i])
        if tokens[i] in SENTENCE_END_TOKENS:
            while i + 1 < len(tokens) and (
                tokens[i + 1] in SENTENCE_END_TOKENS or tokens[i + 1] in CLOSING_TOKENS
            ):
                i += 1
                current.append(tokens[i])
            sents.append(current)
            current = []
        i += 1
    if current:
        sents.append(current)
    return sents


def split_text(text: str) -> list[list[str]]:
    """The sentences of a whitespace-tokenized text, as token lists."""
    return split_tokens(ascii_split(text))
