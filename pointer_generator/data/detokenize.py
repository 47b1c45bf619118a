"""Readable text from the model's tokens: the PTB tokenizer's escapes undone.

The model reads and writes lower-cased PTB tokens (`-lrb-`, `` `` ``, `n't`, `'s`, `--`).
`detokenize` joins a summary's tokens back into plain text a reader expects: brackets
and quotes restored, no space before punctuation or clitics, each sentence starting with
a capital letter, "i" as "I". What lower-casing removed from names cannot be restored
("london" stays lower case); `--tokens` on the command line shows the tokens themselves.
"""

from __future__ import annotations

# PTB escapes (as lower-cased by the original pipeline) and what they stand for.
_ESCAPES = {
    "-lrb-": "(",
    "-rrb-": ")",
    "-lsb-": "[",
    "-rsb-": "]",
    "-lcb-": "{",
    "-rcb-": "}",
    "``": "\u201c",
    "''": "\u201d",
    "`": "\u2018",
    "--": "\u2014",
}
# Attached to the word before them.
_NO_SPACE_BEFORE = {".", ",", ";", ":", "!", "?", ")", "]", "}", "%", "\u201d", "\u2019", "..."}
_CLITICS = {"'s", "'re", "'ve", "'ll", "'d", "'m", "n't", "'"}
# Attached to the word after them.
_NO_SPACE_AFTER = {"(", "[", "{", "\u201c", "\u2018", "$", "\u00a3"}
_SENTENCE_END = {".", "!", "?"}


def _unescape(tokens: list[str]) -> list[str]:
    out = []
    single_open = False
    for i, tok in enumerate(tokens):
        tok = _ESCAPES.get(tok, tok)
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok == "#" and nxt[:1].isdigit():
            tok = "\u00a3"  # the PTB tokenizer writes the pound sign as #
        if tok == "\u2018":
            single_open = True
        elif tok == "'" and single_open:
            tok, single_open = "\u2019", False
        out.append(tok)
    return out


def detokenize(tokens: list[str]) -> str:
    """One readable string from PTB tokens (a sentence or a whole summary)."""
    words = _unescape([t for t in tokens if t])
    text = ""
    capital = True
    attach = True  # no space before the next word
    for w in words:
        lower = w.lower()
        if not (attach or w in _NO_SPACE_BEFORE or lower in _CLITICS):
            text += " "
        if w == "i" or lower.startswith("i'"):
            w = "I" + w[1:]
        if capital and w[:1].isalpha():
            w = w[:1].upper() + w[1:]
            capital = False
        text += w
        attach = w in _NO_SPACE_AFTER
        if w in _SENTENCE_END:
            capital = True
    return text


def detokenize_sentences(sentences: list[list[str]]) -> list[str]:
    """`detokenize` of each sentence (one readable line per sentence)."""
    return [detokenize(s) for s in sentences]
