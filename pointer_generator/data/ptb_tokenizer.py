"""A pure-Python re-creation of Stanford CoreNLP's PTBTokenizer (spec section 2.2).

The original pipeline ran `java edu.stanford.nlp.process.PTBTokenizer -preserveLines` (CoreNLP
3.7.0, default options) over every story. This module reproduces that tokenizer's observable
behaviour on English news text without Java: one output line per input line, tokens separated
by single spaces, PTB escaping (`-LRB-`, ``` `` ```/`''`, `--`, `...`, `£` -> `#`), clitics
split off (`does n't`, `I 'm`, `Rachel 's`), hyphenated words, numbers, abbreviations, URLs
and e-mail addresses kept whole.

How it works: like the JFlex lexer it imitates, the scanner tries every rule at the current
position and keeps the *longest* match, counting a rule's trailing context (its look-ahead)
in that length; ties go to the rule listed first. A rule's action may emit less than it
matched, and scanning resumes right after what was emitted ("push-back"). Plain words that
cannot start any longer token take a fast path.

Known differences from CoreNLP are listed in docs/data.md; the table-driven tests in
tests/test_ptb_tokenizer.py pin the behaviour rule by rule. Its command line (standard
input to standard output) is `python -m pointer_generator.cli.ptb_tokenize`.
"""

from __future__ import annotations

import re

from pointer_generator.data.ptb_lexicon import (
    ALNUM,
    LETTER,
    NL_CHARS,
    SHADOW,
    SPACE_CHARS,
    no_soft_hyphens,
)
from pointer_generator.data.ptb_rules import (
    RULES,
    Rule,
    keep,
)

# Whitespace the lexer skips between tokens (no token, no line break).
_SKIP_RE = re.compile(f"(?:[{SPACE_CHARS}\x00\x7f\u200b\u200e\u200f\ufeff]|(?i:&nbsp;))+")
_NEWLINE_RE = re.compile("\r\n?|[\n\u2028\u2029\x0b\x0c\x85]")
# Plain words that no other rule could extend: the common case, scanned in one step.
_ASSIMILATION_WORDS = frozenset(
    ["cannot", "dunno", "gonna", "gotta", "lemme", "gimme", "wanna", "nno"]
)
_FAST_WORD_RE = re.compile(f'{LETTER}{ALNUM}*(?=[{SPACE_CHARS}{NL_CHARS},;)\\]}}"]|:(?!//)|$)')


class _Scanner:
    """Scan state for one text: position, output lines, and what the previous token was."""

    def __init__(self, text: str):
        self.text = text
        self.shadow = text.translate(SHADOW)
        self.pos = 0
        self.lines: list[list[str]] = [[]]
        self.prev_original = ""
        self.untokenizable = 0


class PTBTokenizer:
    """Tokenize text the way CoreNLP 3.7.0's PTBTokenizer does with `-preserveLines`.

    `tokenize(text)` returns one list of tokens per input line; `tokenize_text(text)` returns
    the tokenizer's printed output (lines of space-separated tokens). Characters no rule
    accepts are deleted, as PTBTokenizer does by default; `last_untokenizable` counts them.
    """

    def __init__(self):
        self._candidates: dict[str, list[Rule]] = {}
        self.last_untokenizable = 0

    def _rules_for(self, ch: str) -> list[Rule]:
        rules = self._candidates.get(ch)
        if rules is None:
            rules = [r for r in RULES if r.first_re.match(ch)]
            self._candidates[ch] = rules
        return rules

    def tokenize(self, text: str) -> list[list[str]]:
        sc = _Scanner(text)
        shadow = sc.shadow
        n = len(text)
        while sc.pos < n:
            ch = shadow[sc.pos]
            m = _SKIP_RE.match(shadow, sc.pos)
            if m:
                sc.pos = m.end()
                continue
            m = _NEWLINE_RE.match(shadow, sc.pos)
            if m:
                sc.lines.append([])
                sc.pos = m.end()
                continue
            m = _FAST_WORD_RE.match(shadow, sc.pos)
            if m:
                tok = text[sc.pos : m.end()]
                if tok.lower() not in _ASSIMILATION_WORDS:
                    self._push(sc, no_soft_hyphens(tok), tok, len(tok))
                    continue
            self._scan_one(sc, ch)
        self.last_untokenizable = sc.untokenizable
        return sc.lines

    def _scan_one(self, sc: _Scanner, ch: str) -> None:
        best, best_len, best_tok = None, 0, ""
        for rule in self._rules_for(ch):
            for rx in rule.compiled:
                m = rx.match(sc.shadow, sc.pos)
                if m is None:
                    continue
                end = m.end("tok")
                eff = end - sc.pos + (len(m.group("ctx")) if "ctx" in rx.groupindex else 0)
                if eff > best_len and end > sc.pos:
                    best, best_len, best_tok = rule, eff, sc.text[sc.pos : end]
        if best is None:
            # Untokenizable character: PTBTokenizer deletes it (and warns about the first).
            sc.untokenizable += 1
            sc.pos += 1
            return
        out, consumed = (best.action or keep)(best_tok, sc)
        self._push(sc, out, best_tok[:consumed], consumed)

    @staticmethod
    def _push(sc: _Scanner, out: str | None, original: str, consumed: int) -> None:
        if out:
            sc.lines[-1].append(out)
            sc.prev_original = original
        sc.pos += consumed

    def tokenize_text(self, text: str) -> str:
        """The `-preserveLines` output: each input line's tokens joined by single spaces."""
        return "\n".join(" ".join(line) for line in self.tokenize(text))


_DEFAULT = PTBTokenizer()


def tokenize(text: str) -> list[list[str]]:
    """Tokens of each line of `text` (see PTBTokenizer)."""
    return _DEFAULT.tokenize(text)


def tokenize_text(text: str) -> str:
    """`text` tokenized, one output line per input line, tokens joined by single spaces."""
    return _DEFAULT.tokenize_text(text)


if __name__ == "__main__":  # (the command moved: say where instead of exiting 0 silently)
    from pointer_generator.exit_codes import command_moved

    command_moved("pointer_generator.cli.ptb_tokenize")
