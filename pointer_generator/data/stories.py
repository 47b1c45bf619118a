"""Article / abstract construction from one tokenized story (spec section 2.3).

A story is text in the DMQA `.story` layout: article paragraphs, then each highlight after a
line starting with `@highlight`. After tokenization every line is stripped, lower-cased and
given the "missing period" fix; the article is the article lines joined by single spaces and
the abstract is each highlight wrapped as `<s> ... </s>`, joined by single spaces.

Text semantics. The original ran on Python 2 byte strings, so by default this module mimics
them: `strip()` and `lower()` touch ASCII characters only, and only the single-byte end
tokens (. ! ? ' ` " and `)`) stop the period fix. `unicode_text=True` gives Python 3 `str`
semantics instead (Unicode lower-casing; a line ending in U+2019 or U+201D counts as ended),
which changes a small fraction of lines (spec section 10).
"""

from __future__ import annotations

from dataclasses import dataclass

from pointer_generator.data.ptb_tokenizer import PTBTokenizer
from pointer_generator.data.vocab import SENTENCE_END, SENTENCE_START, ascii_strip
from pointer_generator.errors import DataError

HIGHLIGHT_MARKER = "@highlight"
# The end tokens as the original lists them: period, !, ?, '...', apostrophe, backtick,
# double quote, U+2019, U+201D, closing parenthesis. It compares them with the *last character*
# of a line, so '...' never matches; under Python 2 the two Unicode entries never matched a
# byte either. These are the ones that really stop the fix:
BYTE_END_CHARS = frozenset(".!?'`\")")
UNICODE_END_CHARS = BYTE_END_CHARS | {"\u2019", "\u201d"}


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only, as Python 2 `str.lower()` did on UTF-8 bytes."""
    if text.isascii():
        return text.lower()
    return text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def fix_missing_period(line: str, unicode_text: bool = False) -> str:
    """Append " ." to a line that does not end in an end token (spec 2.3 step 3).

    Lines containing `@highlight` and empty lines are left alone. A line ending in the PTB
    token `-rrb-` ends in '-', so it gets the period too, as in the original.
    """
    if HIGHLIGHT_MARKER in line or not line:
        return line
    ends = UNICODE_END_CHARS if unicode_text else BYTE_END_CHARS
    if line[-1] in ends:
        return line
    return line + " ."


@dataclass(frozen=True)
class Story:
    """The (article, abstract) pair of one story, plus what the summary needs to know."""

    article: str
    abstract: str
    num_highlights: int
    has_highlight_marker: bool


def article_and_abstract(tokenized: str, unicode_text: bool = False) -> Story:
    """Build the article and abstract of one tokenized, not yet lower-cased story.

    `tokenized` is the tokenizer's output: lines of space-separated tokens, split on "\\n"
    only (as Python 2 file iteration did). Blank lines are skipped; the first `@highlight`
    line switches to highlights for good (the flag is never reset, as in the original).
    """
    lower = str.lower if unicode_text else ascii_lower
    strip = str.strip if unicode_text else ascii_strip
    article_lines, highlights = [], []
    in_highlights = False
    for raw_line in tokenized.split("\n"):
        line = fix_missing_period(lower(strip(raw_line)), unicode_text)
        if not line:
            continue
        if line.startswith(HIGHLIGHT_MARKER):
            in_highlights = True
        elif in_highlights:
            line = _without_sentence_tags(line, unicode_text)
            if line:
                highlights.append(line)
        else:
            article_lines.append(line)
    abstract = " ".join(f"{SENTENCE_START} {h} {SENTENCE_END}" for h in highlights)
    return Story(" ".join(article_lines), abstract, len(highlights), in_highlights)


def _without_sentence_tags(line: str, unicode_text: bool) -> str:
    """A highlight without literal `<s>` / `</s>` tokens, which would break the abstract's
    sentence tags (the original wrote them through; a deviation listed in docs/data.md)."""
    words = line.split(" ")
    if SENTENCE_START not in words and SENTENCE_END not in words:
        return line
    kept = " ".join(w for w in words if w not in (SENTENCE_START, SENTENCE_END)).strip()
    return fix_missing_period(kept, unicode_text) if kept else ""


def story_text(article: str, highlights: list[str]) -> str:
    """A raw article and its highlights laid out as a DMQA `.story` file."""
    parts = [article]
    for h in highlights:
        parts += [HIGHLIGHT_MARKER, h]
    return "\n\n".join(parts)


@dataclass(frozen=True)
class ProcessedStory:
    """A raw story after tokenization and construction; `untokenizable` counts deleted chars."""

    story: Story
    untokenizable: int


_TOKENIZER = PTBTokenizer()


def process_raw_story(raw: str, unicode_text: bool = False) -> ProcessedStory:
    """Tokenize a raw story (PTB, lines preserved) and build its article and abstract."""
    tokenized = _TOKENIZER.tokenize_text(raw)
    return ProcessedStory(
        article_and_abstract(tokenized, unicode_text), _TOKENIZER.last_untokenizable
    )


def texts_to_examples(texts: list[str], unicode_text: bool = False) -> list[tuple[str, str]]:
    """Raw article texts -> (article, abstract) pairs ready for the model.

    Each text is tokenized, lower-cased and period-fixed exactly like a story; the abstract is
    empty unless the text has `@highlight` lines. Nothing is dropped: an empty text gives an
    empty article, which the caller should report.
    """
    out = []
    for t in texts:
        story = process_raw_story(t, unicode_text).story
        out.append((story.article, story.abstract))
    return out


def articles_of_texts(texts: list[str], names: list[str] | None = None) -> list[tuple[str, str]]:
    """`texts_to_examples` for texts to summarize: a text with no article is a DataError
    naming it (`names[i]`, else its position)."""
    examples = texts_to_examples(texts)
    for i, (article, _) in enumerate(examples):
        if not article.strip():
            name = names[i] if names else f"text {i + 1}"
            raise DataError(f"{name}: no article text to summarize")
    return examples
