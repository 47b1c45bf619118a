"""The Gigaword preprocessing rules of the ABS release (spec abs-ras.md §4.1), shared by
the raw-Gigaword builder and the CNN/Daily Mail proxy task.

* `mask_digits`: every digit becomes `#` (NAMAS `process_agiga.py`).
* `first_sentence`: tokens up to and including the first `.` (or, for the proxy task,
  `!`/`?`) token, a closing `''` kept with it.
* `rejection`: NAMAS `filter.py`'s rules, in its order: the article has a `.` token; no
  bad word in the title; 10 < article tokens < 100; 3 < title tokens < 50; a shared word
  longer than 3 characters. The bad words are matched per token by default; NAMAS tests
  `bad in title.lower()` on the title *string*, so `ap` also rejects "japan" (the
  `substring=True` switch).
* `dictionary`: words seen at least `min_count` times (NAMAS: 5), counted separately for
  articles and titles.
* `pull`: NAMAS `pull.py`: lower-case, words outside the dictionary become `<unk>` (the
  project's [UNK] once converted), titles lose the punctuation of TITLE_DROP (which keeps
  NAMAS's `-llb-` typo, so `-lrb-` stays).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

BAD_WORDS = (
    "update#",
    "update",
    "recasts",
    "undated",
    "grafs",
    "corrects",
    "retransmitting",
    "updates",
    "dateline",
    "writethru",
    "recaps",
    "inserts",
    "incorporates",
    "adv##",
    "ld-writethru",
    "djlfx",
    "edits",
    "byline",
    "repetition",
    "background",
    "thruout",
    "quotes",
    "attention",
    "ny###",
    "overline",
    "embargoed",
    "ap",
    "gmt",
    "adds",
    "embargo",
    "urgent",
    "?",
    " i ",
    " : ",
    " - ",
    " by ",
    "-lrb-",
    "-rrb-",
)
# As whole tokens (the space-padded entries mean a token in NAMAS's string test).
BAD_TOKENS = frozenset(b.strip() for b in BAD_WORDS)
TITLE_DROP = frozenset(
    ['"', "'", "''", "!", "=", "-", "--", ",", "?", ".", "``", "`", "-rrb-", "-llb-", "\\/"]
)
UNK = "<unk>"
_DIGIT = re.compile(r"\d")


def mask_digits(text: str) -> str:
    return _DIGIT.sub("#", text)


def first_sentence(tokens: list[str], ends: Iterable[str] = (".",)) -> list[str]:
    """Tokens up to and including the first sentence-ending token (and a `''` after it);
    all tokens when there is none."""
    ends = set(ends)
    for i, t in enumerate(tokens):
        if t in ends:
            j = i + 1
            if j < len(tokens) and tokens[j] == "''":
                j += 1
            return tokens[:j]
    return list(tokens)


def has_bad_word(title: list[str], substring: bool = False) -> bool:
    if substring:
        text = " ".join(title).lower()
        return any(bad in text for bad in BAD_WORDS)
    return any(t.lower() in BAD_TOKENS for t in title)


# The filter's reasons, in the order NAMAS applies the rules.
REASONS = ("no '.' token", "bad word in title", "article length", "title length", "no shared word")


def rejection(article: list[str], title: list[str], substring: bool = False) -> str | None:
    """Why NAMAS's filter drops the pair (one of REASONS), or None to keep it."""
    if "." not in article:
        return REASONS[0]
    if has_bad_word(title, substring):
        return REASONS[1]
    if not 10 < len(article) < 100:
        return REASONS[2]
    if not 3 < len(title) < 50:
        return REASONS[3]
    long_words = {w.lower() for w in article if len(w) > 3}
    if not any(w.lower() in long_words for w in title):
        return REASONS[4]
    return None


def dictionary(lines: Iterable[list[str]], min_count: int = 5) -> Counter:
    """{word: count} of the lower-cased words seen at least `min_count` times."""
    counts = Counter(w.lower() for tokens in lines for w in tokens)
    return Counter({w: c for w, c in counts.items() if c >= min_count})


def pull(tokens: list[str], words, title: bool = False) -> list[str]:
    """Lower-case, `<unk>` for words outside `words`, and for titles drop TITLE_DROP."""
    out = []
    for t in tokens:
        t = t.lower()
        if title and t in TITLE_DROP:
            continue
        out.append(t if t in words else UNK)
    return out
