"""The word <-> id vocabulary of the original release (spec section 2.7)."""

from __future__ import annotations

import logging
import os
import re

from pointer_generator.errors import VocabError

UNK_TOKEN = "[UNK]"
PAD_TOKEN = "[PAD]"
START_DECODING = "[START]"
STOP_DECODING = "[STOP]"
SENTENCE_START = "<s>"
SENTENCE_END = "</s>"
SPECIAL_TOKENS = (UNK_TOKEN, PAD_TOKEN, START_DECODING, STOP_DECODING)
RESERVED_WORDS = SPECIAL_TOKENS + (SENTENCE_START, SENTENCE_END)

UNK_ID, PAD_ID, START_ID, STOP_ID = 0, 1, 2, 3

# The original ran on Python 2 byte strings, whose split() knows ASCII whitespace only;
# Python 3's str.split() would also split on U+00A0 and friends and change the data.
_ASCII_WS = " \t\n\r\x0b\x0c"
_ASCII_WS_RE = re.compile("[" + re.escape(_ASCII_WS) + "]+")


def ascii_split(text: str) -> list[str]:
    """Split on runs of ASCII whitespace only, as Python 2 `str.split()` did on bytes."""
    text = text.strip(_ASCII_WS)
    return _ASCII_WS_RE.split(text) if text else []


def ascii_strip(text: str) -> str:
    """Strip ASCII whitespace only, as Python 2 `str.strip()` did on bytes."""
    return text.strip(_ASCII_WS)


log = logging.getLogger(__name__)


class Vocab:
    """Word/id mapping: the 4 special tokens get ids 0-3, file words 4, 5, ... in file order.

    Args:
      vocab_file: text file of `word count` lines, most frequent first.
      max_size: total size including the 4 specials; 0 (or more than the file holds)
        reads the whole file.
    """

    def __init__(self, vocab_file: str, max_size: int):
        if max_size < 0:
            raise VocabError(f"--vocab_size must be >= 0, got {max_size}")
        if not os.path.isfile(vocab_file):
            raise VocabError(f"vocab file {vocab_file!r} does not exist")
        self.path = vocab_file
        self._word_to_id: dict[str, int] = {}
        self._id_to_word: list[str] = []
        for w in SPECIAL_TOKENS:
            self._add(w)
        self.skipped_lines = 0
        try:
            # utf-8-sig: a byte-order mark (some editors add one) is not part of word 1.
            with open(vocab_file, encoding="utf-8-sig") as f:
                for lineno, line in enumerate(f, start=1):
                    if max_size and len(self._id_to_word) >= max_size:
                        break
                    pieces = ascii_split(line)
                    if len(pieces) != 2:
                        # Faithful to the original: such lines are skipped with a warning.
                        self.skipped_lines += 1
                        log.warning(
                            "%s:%d: expected 'word count', got %r; line skipped",
                            vocab_file,
                            lineno,
                            line.rstrip("\n"),
                        )
                        continue
                    word = pieces[0]
                    if word in RESERVED_WORDS:
                        raise VocabError(
                            f"{vocab_file}:{lineno}: the reserved token {word!r} must not "
                            "appear in the vocab file"
                        )
                    if word in self._word_to_id:
                        raise VocabError(f"{vocab_file}:{lineno}: duplicate word {word!r}")
                    self._add(word)
        except UnicodeDecodeError as e:
            raise VocabError(f"{vocab_file}: not valid UTF-8 ({e})") from None
        if len(self._id_to_word) == len(SPECIAL_TOKENS):
            raise VocabError(
                f"{vocab_file}: no 'word count' line: a model needs a vocabulary (make one "
                "with python -m data_tools.make_datafiles or data_tools.convert)"
            )
        if max_size and len(self._id_to_word) < max_size:
            log.warning(
                "%s holds only %d words (with the 4 specials), fewer than "
                "vocab_size=%d; using all of them",
                vocab_file,
                len(self._id_to_word),
                max_size,
            )
        log.info(
            "Vocab of %d words (last: %r) from %s", self.size(), self._id_to_word[-1], vocab_file
        )

    def _add(self, word: str) -> None:
        self._word_to_id[word] = len(self._id_to_word)
        self._id_to_word.append(word)

    def word2id(self, word: str) -> int:
        """Id of `word`, or UNK_ID (0) if it is out of vocabulary."""
        return self._word_to_id.get(word, UNK_ID)

    def id2word(self, word_id: int) -> str:
        if not 0 <= word_id < len(self._id_to_word):
            raise VocabError(f"id {word_id} is not in the vocab (size {self.size()})")
        return self._id_to_word[word_id]

    def size(self) -> int:
        """Number of words including the 4 special tokens."""
        return len(self._id_to_word)

    @property
    def words(self) -> list[str]:
        """All words in id order (ids 0 .. size-1)."""
        return list(self._id_to_word)

    def metadata_text(self) -> str:
        """One word per line in id order: the TensorBoard embedding projector's labels."""
        return "".join(w + "\n" for w in self._id_to_word)


def article2ids(article_words: list[str], vocab: Vocab) -> tuple[list[int], list[str]]:
    """Extended-vocab ids of an article: the k-th distinct OOV word gets `vocab.size() + k`.

    Returns (ids, oovs) with `oovs` in first-occurrence order.
    """
    ids, oovs = [], []
    for w in article_words:
        i = vocab.word2id(w)
        if i == UNK_ID:
            if w not in oovs:
                oovs.append(w)
            ids.append(vocab.size() + oovs.index(w))
        else:
            ids.append(i)
    return ids, oovs


def abstract2ids(abstract_words: list[str], vocab: Vocab, article_oovs: list[str]) -> list[int]:
    """Ids of an abstract; OOVs found in the article get their temporary extended id."""
    ids = []
    for w in abstract_words:
        i = vocab.word2id(w)
        if i == UNK_ID and w in article_oovs:
            i = vocab.size() + article_oovs.index(w)
        ids.append(i)
    return ids


def outputids2words(id_list: list[int], vocab: Vocab, article_oovs: list[str] | None) -> list[str]:
    """Map ids (possibly extended) back to words; ids >= vocab size index `article_oovs`."""
    words = []
    for i in id_list:
        if i < vocab.size():
            words.append(vocab.id2word(i))
            continue
        k = i - vocab.size()
        if article_oovs is None or k >= len(article_oovs):
            raise VocabError(
                f"model produced id {i}, which is neither in the vocab (size {vocab.size()}) "
                f"nor an article OOV (this example has {len(article_oovs or [])})"
            )
        words.append(article_oovs[k])
    return words


def abstract2sents(abstract: str) -> list[str]:
    """Sentences between each `<s>` and the following `</s>`, stripped (spec 3.1 step 1)."""
    sents, cur = [], 0
    while True:
        start = abstract.find(SENTENCE_START, cur)
        if start < 0:
            break
        end = abstract.find(SENTENCE_END, start + len(SENTENCE_START))
        if end < 0:
            break
        sents.append(ascii_strip(abstract[start + len(SENTENCE_START) : end]))
        cur = end + len(SENTENCE_END)
    return sents
