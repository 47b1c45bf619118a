"""Raw article text -> the model's tokenized article, as TensorFlow string ops only.

An exported model (`pointer-generator export`, docs/export.md) takes raw text and must
tokenize it inside the graph, where the Python PTB tokenizer (`ptb_tokenizer.py`, a
longest-match lexer with look-ahead) cannot run. `graph_article` approximates it with a
fixed cascade of RE2 rewrites (`tf.strings.regex_replace`), written for what news text
contains: PTB quotes and brackets, clitics (`does n't`, `he 's`), sentence-final periods
against abbreviations and acronyms (`u.s.`, `mr.`, `jan.`), numbers (`10,000`, `1.5`,
`14:11`), dashes, ellipses, currency (`$`, `£` -> `#`), hyphenated words, URLs and
handles kept whole. Then, as `stories.article_and_abstract` does: lines stripped,
ASCII lower-casing, the missing-period fix, nothing after an `@highlight` line, lines
joined by one space.

It is not the Python tokenizer: rare constructions (SGML, smileys, phone numbers, swear
masks, `'twas`, a few context rules) differ. `experiments/benchmarks/export.py` measures
how often, on real stories; docs/export.md gives the figures.

Each rule is `(pattern, rewrite)`; the order matters (comments say why). Control
characters \\x01-\\x07 and \\x0e are placeholders that protect a character from later rules and
are restored at the end (the input's own control characters are deleted first, as the
PTB tokenizer deletes them).
"""

from __future__ import annotations

import tensorflow as tf

from pointer_generator.data import ptb_lexicon

# Placeholders, restored at the end.
_KEEP_PERIOD = "\x01"  # a period that belongs to its word (abbreviation, number)
_KEEP_COLON = "\x02"  # 14:11, http://
_KEEP_COMMA = "\x03"  # 10,000
_KEEP_APOS = "\x04"  # 'em, '90s
_ELLIPSIS = "\x05"  # ... as one token
_KEEP_AMP = "\x06"  # AT&T
_CLOSE_QUOTE = "\x07"  # '' (the closing double quote), out of the single quotes' way
_SPLIT = "\x0e"  # a token boundary that later rules must not see as a space ("There's")

# The lexicon's patterns are written for Python's `re` over a "shadow" text whose
# non-ASCII letters are two stand-ins; RE2 has Unicode classes instead.
_UPPER = r"\p{Lu}"
_SENT_STARTER = ptb_lexicon.SENT_STARTER
_ABBREV1 = ptb_lexicon.ABBREV1[:-2]  # without the final "\."
_ABBREV2 = ptb_lexicon.ABBREV2[:-2]
_ABBREV3 = ptb_lexicon.ABBREV3[:-2]
_ACRO = ptb_lexicon.ACRO
# Where an abbreviation may start: not inside a word, a number or after an apostrophe
# (`\b` would let "couldn't." end in the one-letter abbreviation "t.").
_START = "(^|[^\\pL\\pN'.\x01-\x07])"
_SPACE_CHARS = "\t\u00a0\u2000-\u200a\u3000"
_SYMBOLS = (
    "|~^\\\\\u00a6\u00a7\u00a8\u00a9\u00ac\u00ae\u00af\u00b0-\u00ba\u00d7\u00f7"
    "\u2016\u2017\u2020-\u2025\u2030-\u2038\u203b\u203c\u2100-\u214f\u2190-\u21ff"
    "\u2200-\u2bff"
)

# Brackets and their PTB tokens.
_BRACKETS = {"(": "lrb", ")": "rrb", "[": "lsb", "]": "rsb", "{": "lcb", "}": "rcb"}

RULES: tuple[tuple[str, str], ...] = (
    # -- normalising: line breaks, spaces, characters the PTB tokenizer deletes
    ("\r\n?|[\u2028\u2029\x0b\x0c\u0085]", "\n"),
    (f"[{_SPACE_CHARS}]|(?i:&nbsp;)", " "),
    ("[\x00-\x08\x0e-\x1f\x7f\u00ad\u200b\u200e\u200f\ufeff]", ""),
    ("(?i:&amp;)", "&"),
    # -- quotes: curly ones carry their direction; a straight " opens before a word
    ("[\u201c\u201e\u00ab\u0084\u0093]", " `` "),
    ("[\u201d\u00bb\u0094]", f" {_CLOSE_QUOTE} "),
    ("[\u2018\u201b\u0091]", " ` "),
    ("[\u2019\u00b4\u0092]", "'"),
    (r'(?:"|\'\')([\pL\pN$])', r" `` \1"),
    ("\"|''", f" {_CLOSE_QUOTE} "),
    # PTB's own bracket tokens in the input (already tokenized text) stay brackets (no
    # spaces added here: the abbreviation rules below read the input's own spacing)
    *((f"-(?i:{name})-", bracket) for bracket, name in _BRACKETS.items()),
    # -- single quotes, on the raw text (their rules look at the characters after
    # them). Words of their own: 'em, '90s, O'Brien, d'Ivoire, Eto'o; n't and 's split
    # off; any other ' opens a quote before a letter and a non-space (or a lone a/i/u),
    # else closes one.
    (r"(^|\s)'((?i:em|till|til|cause)|[2-9]0(?i:s)|\pN\pN)([^\pL]|$)", rf"\1{_KEEP_APOS}\2\3"),
    (r"([\pL])((?i:n))'((?i:t))(\W|$)", rf"\1{_SPLIT}\2{_KEEP_APOS}\3\4"),
    (r"([\pL\pN])'((?i:s|re|ve|ll|d|m))([^\pL]|$)", rf"\1{_SPLIT}{_KEEP_APOS}\2\3"),
    # ... and where they stand alone already (tokenized input: "it 's", "could n't")
    (r"(^|\s)'((?i:s|re|ve|ll|d|m))([^\pL]|$)", rf"\1{_KEEP_APOS}\2\3"),
    (r"(^|\s)((?i:n))'((?i:t))(\W|$)", rf"\1\2{_KEEP_APOS}\3\4"),
    (r"\b([A-HJ-XZn])'(\pL\pL)", rf"\1{_KEEP_APOS}\2"),
    (r"\b([dDoOlL])'([\pL\pN])", rf"\1{_KEEP_APOS}\2"),
    (r"\b(\pL+[aeiouyAEIOUY])'([aeiouA-Z])", rf"\1{_KEEP_APOS}\2"),
    (r"'(\pL[^\s]|[AaIiUu]\s)", r" ` \1"),
    ("'", " ' "),
    # -- periods that stay with their word, decided on the raw spacing. An acronym or a
    # sentence-ending abbreviation before a sentence starter gives its period away.
    (rf"{_START}({_ACRO})\.([ \n]+(?:{_SENT_STARTER})[ \n?!])", r"\1\2 .\3"),
    (rf"{_START}({_ABBREV1})\.([ \n](?:[ \n]|{_UPPER}|<))", r"\1\2 .\3"),
    (rf"(?s){_START}({_ABBREV1})\.(.?)$", r"\1\2 .\3"),
    (rf"{_START}({_ABBREV1})\.", rf"\1\2{_KEEP_PERIOD}"),
    (rf"{_START}({_ABBREV3})\.( ?\d)", rf"\1\2{_KEEP_PERIOD}\3"),
    (rf"{_START}({_ABBREV2})\.", rf"\1\2{_KEEP_PERIOD}"),
    # "etc.," and "Inc.;": a word's period before , ; : stays with it
    (r"(\pL[\pL\pN]*)\.([,;:])", rf"\1{_KEEP_PERIOD}\2"),
    (r"(\pN)\.(\pN)", rf"\1{_KEEP_PERIOD}\2"),
    (r"(^|\s)\.(\pN)", rf"\1{_KEEP_PERIOD}\2"),
    ("\\.\\.\\.\\.([ \n]+\\pL)", f" {_ELLIPSIS} .\\1"),  # "end.... The": ... and .
    ("\\.\\.\\.+|\u2026|\u0085", f" {_ELLIPSIS} "),
    # -- numbers and addresses that keep their , and :
    (r"(\pN),(\pN)", rf"\1{_KEEP_COMMA}\2"),
    (r"(\pN):(\pN)", rf"\1{_KEEP_COLON}\2"),
    # "9.30pm": a number with a decimal point or separator ends before letters
    (rf"(\pN[{_KEEP_PERIOD}{_KEEP_COLON}{_KEEP_COMMA}]\pN+)(\pL)", r"\1 \2"),
    ("://", f"{_KEEP_COLON}//"),
    # -- brackets, dashes, punctuation, symbols: tokens of their own
    # (PTB's -LRB- and friends are written at the end, out of the hyphen rules' way)
    (r"[(){}\[\]]", r" \0 "),
    ("[\u2013\u2014\u2015\u0096\u0097]|(?i:&(?:mdash|ndash);)", " -- "),
    ("-{2,4}", " -- "),
    (r"([\pL\pN])-(\s|$)", r"\1 -\2"),
    (r"(^|\s)-(\pL)", r"\1- \2"),
    ("[?!]+", r" \0 "),
    ("[,;:]", r" \0 "),
    ("%", " % "),
    (r"([A-Z])&([A-Z])", rf"\1{_KEEP_AMP}\2"),
    ("&", " & "),
    (r"\+([^\pN]|$)", r" + \1"),
    ("=+", r" \0 "),
    (r"\*+", r" \0 "),
    ("[<>]", r" \0 "),
    (f"[{_SYMBOLS}]", r" \0 "),
    (r"([A-Z]*\$)", r" \1 "),
    ("[\u00a3]", " # "),
    ("[\u20ac\u00a4\u20a0\u20b9\u0080]", " $ "),
    ("\u00a2", " cents "),
    ("\u00bc", " 1/4 "),
    ("\u00bd", " 1/2 "),
    ("\u00be", " 3/4 "),
    ("\u2153", " 1/3 "),
    ("\u2154", " 2/3 "),
    (r"(#+)([^\pL_]|$)", r" \1 \2"),
    # -- assimilations: "cannot" -> "can not", "gonna" -> "gon na"
    (r"\b((?i:can))((?i:not))\b", r"\1 \2"),
    (r"\b((?i:gon|wan|got|lem|gim|dun))((?i:na|ta|me|no))\b", r"\1 \2"),
    # -- a / starting a word is a token (u.s./canada); inside one it stays (9/11, URLs)
    (rf"(^|\s|{_KEEP_PERIOD})/([^\s/])", r"\1 / \2"),
    # -- every other period ends its word (one followed by a letter is inside a word)
    (r"\.([^\pL]|$)", r" . \1"),
    (r"\.([^\pL]|$)", r" . \1"),  # again: a match ate the period after it
    # -- PTB's brackets, placeholders back
    *((f"\\{bracket}", f"-{name.upper()}-") for bracket, name in _BRACKETS.items()),
    (_SPLIT, " "),
    (_KEEP_PERIOD, "."),
    (_KEEP_COLON, ":"),
    (_KEEP_COMMA, ","),
    (_KEEP_APOS, "'"),
    (_ELLIPSIS, "..."),
    (_KEEP_AMP, "&"),
    (_CLOSE_QUOTE, "''"),
)

# After tokenizing: lines as `stories.article_and_abstract` builds an article.
_LINE_RULES: tuple[tuple[str, str], ...] = (
    ("(?m)^[ \t\r\x0b\x0c]+|[ \t\r\x0b\x0c]+$", ""),
    ("(?s)(^|\n)@highlight.*", ""),
    # The missing-period fix: a line not ending in . ! ? ' ` " ) gets " ."
    ("(?m)([^.!?'`\")\n])$", r"\1 ."),
    ("[ \n]+", " "),
    ("^ | $", ""),
)


def tokenize_texts(texts: tf.Tensor) -> tf.Tensor:
    """PTB-style tokens of raw texts, lines kept: string [n] -> string [n] (tokens
    separated by spaces, lines by newlines; case kept)."""
    for pattern, rewrite in RULES:
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return tf.strings.regex_replace(texts, " +", " ")


def graph_article(texts: tf.Tensor) -> tf.Tensor:
    """The model's article of each raw text: string [n] -> string [n] (lower-cased PTB
    tokens joined by one space, as `stories.texts_to_examples` makes it; "" for a text
    with no words)."""
    return article_of_tokens(tokenize_texts(texts))


def article_of_tokens(tokenized: tf.Tensor) -> tf.Tensor:
    """`graph_article` of texts already through `tokenize_texts`: string [n] -> string [n]."""
    out = tf.strings.lower(tokenized)  # ASCII only, as the original's bytes
    for pattern, rewrite in _LINE_RULES:
        out = tf.strings.regex_replace(out, pattern, rewrite)
    return out
