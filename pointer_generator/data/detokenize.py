"""Readable text from the model's tokens: the PTB tokenizer's escapes undone.

The model reads and writes lower-cased PTB tokens (`-lrb-`, `` `` ``, `n't`, `'s`, `--`).
`detokenize` joins a summary's tokens back into plain text a reader expects: brackets
and quotes restored, no space before punctuation or clitics, each sentence starting with
a capital letter, "i" as "I", a repeated period dropped. Lower-casing removed the
capitals of names; when the article's raw text is at hand (`summarize`, `pg.Summarizer`,
`serve`), `case_map` learns each word's casing from it and `detokenize(..., casing=)`
puts it back ("maria santos" -> "Maria Santos"); decoding a `.bin` file cannot (its
text is lower-cased). `--tokens` on the command line shows the tokens themselves.
"""

from __future__ import annotations

from collections import Counter

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


def case_map(tokens: list[str]) -> dict[str, str]:
    """lower-case word -> its casing in a text's (tokenized, not lower-cased) `tokens`, for
    the words that are not lower case there: the form seen most often away from a
    sentence's start (where every word is capitalized); a word seen only at sentence
    starts, or mostly in lower case, is left out (stays lower case)."""
    forms: dict[str, Counter] = {}
    start = True
    for tok in tokens:
        if not start and tok[:1].isalpha():
            forms.setdefault(tok.lower(), Counter())[tok] += 1
        if tok in _SENTENCE_END:
            start = True
        elif tok[:1].isalnum():
            start = False
    out = {}
    for lower, counts in forms.items():
        form, _ = counts.most_common(1)[0]
        if form != lower:
            out[lower] = form
    return out


def text_casing(raw_text: str) -> dict[str, str]:
    """`case_map` of a raw article, tokenized as the data tools tokenize it."""
    from pointer_generator.data.ptb_tokenizer import tokenize_text

    return case_map(tokenize_text(raw_text).split())


def detokenize(tokens: list[str], casing: dict[str, str] | None = None) -> str:
    """One readable string from PTB tokens (a sentence or a whole summary); `casing`
    (`case_map` of the article) restores the article's capitals."""
    words = _unescape([t for t in tokens if t])
    text = ""
    capital = True  # the next word starts a sentence
    attach = True  # no space before the next word
    previous = ""
    for w in words:
        if w in _SENTENCE_END and previous in _SENTENCE_END:
            continue  # "the.." -> "the."
        if casing:
            w = casing.get(w, w)
        lower = w.lower()
        if not (attach or w in _NO_SPACE_BEFORE or lower in _CLITICS):
            text += " "
        if w == "i" or lower.startswith("i'"):
            w = "I" + w[1:]
        if capital and w[:1].isalpha():
            w = w[:1].upper() + w[1:]
        text += w
        attach = w in _NO_SPACE_AFTER
        if w in _SENTENCE_END:
            capital = True
        elif w[:1].isalnum():
            capital = False  # a sentence that starts with "6.2" keeps "earthquake"
        previous = w
    return text


def detokenize_sentences(sentences: list[list[str]]) -> list[str]:
    """`detokenize` of each sentence (one readable line per sentence)."""
    return [detokenize(s) for s in sentences]
