"""The PTB tokenizer's lexer rules, in the order that breaks ties (first listed wins).

Each rule is a set of regex variants over the text's shadow (see `ptb_lexicon.SHADOW`), the
characters it may start with, and an action that says what to emit and how much of the
match to consume; the scanner in `ptb_tokenizer.py` keeps the longest match.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pointer_generator.data.ptb_lexicon import (
    ABBREV1,
    ABBREV2,
    ABBREV3,
    ACRO,
    ACRO2,
    ALNUM,
    AMP_RE,
    APOS,
    APOSETC,
    CP1252_MISC,
    CURRENCY,
    CURRENCY_MAP,
    FILE_EXT,
    FRACTION_MAP,
    HYPHEN,
    LETTER,
    LETTERS,
    MISC_SYMBOLS,
    NOT_SPACENL,
    NUM_A,
    NUM_B,
    PARENS,
    QUOTE_CHARS,
    REDAUX,
    SENT_STARTER,
    SPACE,
    SPACENL,
    SREDAUX,
    UPPER,
    WORD,
    clean_number,
    latex_quotes,
    nbsp_inside,
    no_soft_hyphens,
)


# ----------------------------------------------------------------------------- rules
@dataclass
class Rule:
    """One lexer rule: regex variants (longest wins), the chars it may start with, an action.

    Each variant has a group `tok` (the token text) and optionally a look-ahead group `ctx`
    (trailing context: counts for the longest-match decision but is not consumed). The action
    gets (tok, scanner) and returns (text to emit or None, number of chars consumed).
    """

    name: str
    variants: list[str]
    first: str  # regex char class of possible first characters
    action: Callable | None = None
    compiled: list[re.Pattern] = field(default_factory=list)
    first_re: re.Pattern | None = None

    def __post_init__(self):
        self.compiled = [re.compile(v) for v in self.variants]
        self.first_re = re.compile(self.first)


def _emit(text):
    return lambda tok, sc: (text(tok) if callable(text) else text, len(tok))


def keep(tok, sc):
    return tok, len(tok)


def _keep_all_but(n):
    # Emit the token less its last `n` characters, which are scanned again.
    return lambda tok, sc: (tok[:-n], len(tok) - n)


def _sentence_final(tok, sc):
    # An abbreviation that ends a sentence: emit it without its period; the period is then
    # scanned again as its own token (CoreNLP 3.7.0's output "u.s ." for "U.S. The ...").
    return tok[:-1], len(tok) - 1


def _number_action(tok, sc):
    # "mid -1990s": a leading hyphen after mid/late/early is a hyphen, not a minus sign.
    if (
        len(tok) >= 2
        and tok[0] == "-"
        and tok[1] != "-"
        and sc.prev_original.lower() in ("mid", "late", "early")
    ):
        return "-", 1
    return clean_number(tok), len(tok)


def _hyphens(tok, sc):
    return ("--" if 3 <= len(tok) <= 4 else tok), len(tok)


def build_rules() -> list[Rule]:
    t = "(?P<tok>{})".format
    ctx = "(?=(?P<ctx>{}))".format
    L, AL = LETTER, ALNUM
    thing_part = f"(?:[dDoOlL]{APOSETC}{AL})?(?:{NUM_A}|{AL}+)"
    thing_tail = f"(?:{HYPHEN}{thing_part})*"
    hthing_tail = f"(?:-(?:(?:{ACRO2})\\.|[{LETTERS}\\d]+(?:\\.\\d+)?))+"
    hthing = f"{AL}[{LETTERS}\\d.,]*{hthing_tail}"
    quotes = [APOS, f"[{QUOTE_CHARS}]{{1,2}}"]
    letter_first = f"[{LETTERS}]"
    alnum_first = f"[{LETTERS}\\d]"
    apos_first = "['\u0092\u2019\u00b4&`\u0091\u2018\u201b]"
    left_quote = lambda tok, sc: (latex_quotes(tok, True), len(tok))  # noqa: E731
    right_quote = lambda tok, sc: (latex_quotes(tok, False), len(tok))  # noqa: E731
    word_action = lambda tok, sc: (no_soft_hyphens(tok), len(tok))  # noqa: E731
    return [
        Rule("prog_langs", [t(r"(?i:c\+\+|c#|f#)")], "[cCfF]"),
        Rule("assimilations3", [t(r"(?i:cannot|'twas|dunno)")], "[cC'dD]", _keep_all_but(3)),
        Rule(
            "assimilations2",
            [t(f"{APOS}(?i:tis)|(?i:gonna|gotta|lemme|gimme|wanna|nno)")],
            "['\u0092\u2019\u00b4&gGlLwWnN]",
            _keep_all_but(2),
        ),
        Rule(
            "sgml",
            [
                t(
                    r"<(?:[!?][A-Za-z-][^>\r\n]*|/[A-Za-z][A-Za-z0-9_:.-]*"
                    r"|[A-Za-z][A-Za-z0-9_:.-]*(?: +[A-Za-z][A-Za-z0-9_:.-]*"
                    r"(?: *= *(?:'[^']*'|\"[^\"]*\"|[A-Za-z][A-Za-z0-9_:.-]*))?)* */?) *>"
                )
            ],
            "<",
            _emit(nbsp_inside),
        ),
        Rule(
            "dash_entity",
            [t("(?i:&(?:MD|mdash|ndash);)|[\u0096\u0097\u2013\u2014\u2015]")],
            "[&\u0096\u0097\u2013\u2014\u2015]",
            _emit("--"),
        ),
        Rule("amp_entity", [t("(?i:&amp;)")], "&", _emit("&")),
        Rule("punct_entity", [t(r"(?i:&(?:HT|TL|UR|LR|QC|QL|QR|odq|cdq|#\d+);)")], "&"),
        Rule("word_clitic", [t(WORD) + ctx(REDAUX)], letter_first, word_action),
        Rule(
            "word_nt",
            [t(f"[{LETTERS}]*[A-MO-Za-mo-z]\u00ad*") + ctx(SREDAUX)],
            letter_first,
            word_action,
        ),
        Rule("word", [t(WORD)], letter_first, word_action),
        Rule(
            "apostrophe_word",
            [
                t(v)
                for v in [
                    f"{APOS}(?i:n){APOS}?",
                    f"[lLdDjJ]{APOS}",
                    f"(?i:Dunkin|somethin|ol){APOS}",
                    f"{APOS}(?i:em)",
                    f"(?i:diff){APOSETC}(?i:rent)",
                    f"[A-HJ-XZn]{APOSETC}{L}{{2}}{L}*",
                    f"{APOS}[2-9]0(?i:s)",
                    f"{APOS}(?i:till|til)",
                    f"{L}+[aeiouyAEIOUY]{APOSETC}[aeiouA-Z]{L}*",
                    f"{APOS}(?i:cause)",
                    r"(?i:cont'd\.?|nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l)",
                    f"(?i:O){APOSETC}(?i:o)",
                ]
            ],
            f"[{LETTERS}{apos_first[1:]}",
            lambda tok, sc: (no_soft_hyphens(latex_quotes(tok, False)), len(tok)),
        ),
        Rule("y_apostrophe", [t(f"(?i:y){APOS}") + ctx(L)], "[yY]"),
        Rule(
            "full_url",
            [
                t(
                    "(?i:ftp|svn|svn\\+ssh|https|http|mailto)://"
                    '[^ \t\n\f\r"<>|(){}\\[\\]]+[^ \t\n\f\r"\'<>|.!?(){},;:&\\[\\]-]'
                )
            ],
            "[fFsShHmM]",
        ),
        Rule(
            "likely_url",
            [
                t(v + '(?:/[^ \t\n\f\r"<>|()]+[^ \t\n\f\r"<>|.!?(){},-])?')
                for v in [
                    '(?i:www)\\.(?:[^ \t\n\f\r"<>|.!?(){},]+\\.)+[a-zA-Z]{2,4}',
                    "(?:[^ \t\n\f\r\"`'<>|.!?(){}\\x2c-\\x5f$]+\\.)+(?i:com|net|org|edu)",
                ]
            ],
            r"[^\s\"`'<>|.!?(){}\x2c-\x5f$]|[wW]",
        ),
        Rule(
            "email",
            [
                t(
                    r"(?i:&lt;|<)?(?i:mailto:)?[a-zA-Z0-9._%+-]+@[A-Za-z0-9]"
                    r"[A-Za-z0-9.-]*[A-Za-z0-9](?i:&gt;|>)?"
                )
            ],
            r"[&<a-zA-Z0-9._%+-]",
        ),
        Rule(
            "twitter",
            [
                t("[@\uff20][a-zA-Z_][a-zA-Z_0-9]*"),
                t(f"[#\uff03]{L}[{LETTERS}\\d_]*[{LETTERS}\\d]"),
            ],
            "[@\uff20#\uff03]",
        ),
        Rule("clitic", [t(REDAUX) + ctx(f"[^{LETTERS}]")], apos_first, right_quote),
        Rule("nt", [t(SREDAUX) + ctx(f"[^{LETTERS}]")], "[nN]", right_quote),
        Rule("date", [t(r"\d{1,2}[-/]\d{1,2}[-/]\d{2,4}")], r"\d"),
        Rule(
            "number",
            [t(f"[-+]?{NUM_A}"), t(f"[-+]?{NUM_B}")],
            r"[-+\d.,\u066b\u066c]",
            _number_action,
        ),
        Rule(
            "sub_sup_number",
            [
                t(
                    "[\u207a\u207b\u208a\u208b]?(?:[\u2070\u00b9\u00b2\u00b3"
                    "\u2074-\u2079]+|[\u2080-\u2089]+)"
                )
            ],
            "[\u207a\u207b\u208a\u208b\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u2080-\u2089]",
        ),
        Rule(
            "fraction",
            [t("(?:\\d{1,4}[- \u00a0])?\\d{1,4}(?:\\\\?/|\u2044)\\d{1,4}")],
            r"\d",
            _emit(nbsp_inside),
        ),
        Rule(
            "fraction_char",
            [t("[\u00bc\u00bd\u00be\u2153-\u215e]")],
            "[\u00bc\u00bd\u00be\u2153-\u215e]",
            _emit(lambda tok: FRACTION_MAP.get(tok, tok)),
        ),
        Rule(
            "ptb_special",
            [
                t(
                    f"(?i:-(?:RRB|LRB|RCB|LCB|RSB|LSB)-|C\\.D\\.s|pro-|anti-"
                    f"|S(?:&|&amp;)P-500|S(?:&|&amp;)Ls|Cap{APOS}n|c{APOS}est)"
                )
            ],
            "[-cCpPaAsS]",
            _emit(lambda tok: AMP_RE.sub("&", tok)),
        ),
        Rule(
            "swearing",
            [
                t(
                    r"(?i:f[-*][-c*]k(?:in[g']?|e[dr])?|(?:bull|dip)?sh[-*]t"
                    r"(?:ty|e|box)?|c[-*]nts?|p[-*]ss(?:e[sd]|ing)?|c[-*]ck|b[-*]tch"
                    r"|t[-*]ts|tw[-*]ts?|cr[-*]p|d[-*]cks?|b[-*][-*s]t[-*]rds?"
                    r"|pr[-*]ck|d[-*]mn|bl[-*]{2}dy)"
                )
            ],
            "[fFbBdDsScCpPtT]",
        ),
        Rule(
            "bang_words",
            [t("(?i:E|Yahoo|Jeopardy)!"), t("(?i:OK!)") + ctx(f"{SPACENL}(?i:magazine)")],
            "[eEyYjJoO]",
        ),
        Rule(
            "slash_words",
            [t(f"{AL}+(?:-{L}+){{0,2}}(?:\\\\?/{AL}+(?:-{L}+){{0,2}}){{1,2}}")],
            alnum_first,
        ),
        Rule("dollar_sign", [t(r"[A-Z]*\$|#")], r"[A-Z$#]"),
        Rule(
            "currency",
            [t(f"[{CURRENCY}]")],
            f"[{CURRENCY}]",
            _emit(lambda tok: tok.translate(CURRENCY_MAP)),
        ),
        Rule(
            "acronym_sentence_end",
            [t(f"(?:{ACRO})\\.") + ctx(f"{SPACENL}+(?:{SENT_STARTER})(?:{SPACENL}|[?!])")],
            "[A-Za-z]",
            lambda tok, sc: (tok[0], 1) if len(tok) == 2 else _sentence_final(tok, sc),
        ),
        Rule("abbrev_before_number", [t(ABBREV3) + ctx(f"{SPACENL}?\\d")], "[a-zA-Z]"),
        Rule(
            "abbrev_south_north",
            [t("(?i:So\\.|No\\.)") + ctx(f"{SPACENL}+(?i:Africa|Korea|Cal)")],
            "[sSnN]",
        ),
        Rule("abbrev_pty", [t("(?i:pt[eyEY]|co)\\.") + ctx(f"{SPACE}(?i:ltd|lim)")], "[pPcC]"),
        Rule(
            "abbrev1_sentence_end",
            [t(ABBREV1) + ctx(f"{SPACENL}(?:{SPACENL}|{UPPER}|<[A-Za-z!?/])")],
            "[a-zA-Z]",
            _sentence_final,
        ),
        Rule("abbrev1", [t(ABBREV1) + ctx(r"[\s\S][\s\S]")], "[a-zA-Z]"),
        Rule("abbrev1_at_end", [t(ABBREV1)], "[a-zA-Z]", _sentence_final),
        Rule("abbrev2", [t(ABBREV2)], "[a-zA-Z]"),
        Rule("year_apostrophe", [t(f"{APOS}\\d\\d") + ctx(SPACENL)], apos_first),
        Rule("iso_datetime", [t(r"\d{4}-\d{2}-\d{2}T\d{2}:[x0-9]{2}:\d{2}Z?")], r"\d"),
        Rule("degrees", [t("\u00b0[CF]")], "\u00b0"),
        Rule(
            "filename",
            [t(f"{AL}+(?:[-._/]{AL}+)*\\.(?i:{FILE_EXT})") + ctx(f"{SPACENL}|[.?!,\"'<]")],
            alnum_first,
        ),
        Rule("word_dot", [t(f"{WORD}\\.") + ctx("[,;:\u3001]")], letter_first, word_action),
        Rule(
            "phone",
            [
                t(
                    r"(?:\(\d{2,3}\)[ \u00a0]?|(?:\+\+?)?(?:\d{2,4}[- \u00a0])?\d{2,4}"
                    r"[- \u00a0])\d{3,4}[- \u00a0]?\d{3,5}"
                ),
                t(r"(?:(?:\+\+?)?\d{2,4}\.)?\d{2,4}\.\d{3,4}\.\d{3,5}"),
            ],
            r"[(+\d]",
            _emit(lambda tok: nbsp_inside(tok).translate(PARENS)),
        ),
        Rule(
            "double_quote_left",
            [t("\"|(?i:&quot;)|[`'\u0091\u0092\u2018\u2019]'") + ctx(f"[{LETTERS}\\d$]")],
            "[\"&`'\u0091\u0092\u2018\u2019]",
            left_quote,
        ),
        Rule(
            "double_quote",
            [t("\"|(?i:&quot;)|[`'\u0091\u0092\u2018\u2019]'")],
            "[\"&`'\u0091\u0092\u2018\u2019]",
            right_quote,
        ),
        Rule("less_than", [t("<|(?i:&lt;)")], "[<&]", _emit("<")),
        Rule("greater_than", [t(">|(?i:&gt;)")], "[>&]", _emit(">")),
        Rule(
            "smiley",
            [t(r"[<>]?[:;=][-o*']?[()DPdpO\\{@|\[\]]") + ctx(f"[^{LETTERS}\\d]")],
            "[<>:;=]",
            _emit(lambda tok: tok.translate(PARENS)),
        ),
        Rule(
            "emoji",
            [
                t(
                    "[\U0001f1e6-\U0001f1ff]{2}|[\u2194-\u2199\u25fb-\u27bf"
                    "\U0001f000-\U0001faff][\ufe0e\ufe0f\U0001f3fb-\U0001f3ff]?"
                )
            ],
            "[\u2194-\u2199\u25fb-\u27bf\U0001f000-\U0001faff]",
        ),
        Rule(
            "brackets",
            [t(r"[{}\[\]()]")],
            r"[{}\[\]()]",
            _emit(
                lambda tok: {
                    "{": "-LCB-",
                    "}": "-RCB-",
                    "[": "-LSB-",
                    "]": "-RSB-",
                    "(": "-LRB-",
                    ")": "-RRB-",
                }[tok]
            ),
        ),
        Rule("hyphens", [t("-+")], "-", _hyphens),
        Rule(
            "ellipsis_then_period",
            [
                t("\\.\\.\\.+|[\u0085\u2026]") + ctx(f"\\.{SPACENL}+{L}"),
                t("\\.[ \u00a0](?:\\.[ \u00a0])+\\.") + ctx(f"{SPACE}\\.{SPACENL}+{L}"),
            ],
            "[.\u0085\u2026]",
            _emit("..."),
        ),
        Rule(
            "ellipsis",
            [t("\\.\\.\\.+|[\u0085\u2026]"), t("\\.[ \u00a0](?:\\.[ \u00a0])+\\.")],
            "[.\u0085\u2026]",
            _emit("..."),
        ),
        Rule("footnote_marks", [t("@+|#+|_+")], "[@#_]"),
        Rule("asterisks", [t(r"\*+|(?:\\\*){1,3}")], r"[*\\]"),
        Rule("in_sentence_punct", [t("[,;:\u3001]")], "[,;:\u3001]"),
        Rule("bang_question", [t("[?!]+")], "[?!]"),
        Rule(
            "sentence_punct",
            [t("[.\u00a1\u00bf\u037e\u0589\u061f\u06d4\u0700-\u0702\u07fa\u3002]")],
            "[.\u00a1\u00bf\u037e\u0589\u061f\u06d4\u0700-\u0702\u07fa\u3002]",
        ),
        Rule("equals", [t("=+")], "="),
        Rule("slash", [t("/")], "/"),
        Rule(
            "hyphenated",
            [t(hthing), t(f"{hthing}\\.") + ctx("[,;:\u3001]")],
            alnum_first,
            word_action,
        ),
        Rule(
            "thing",
            [
                t(f"(?:[dDoOlL]{APOSETC}{AL})?{AL}+{thing_tail}"),
                t(f"(?:[dDoOlL]{APOSETC}{AL})?[-+]?(?:{NUM_A}|{NUM_B}){thing_tail}"),
            ],
            f"[{LETTERS}\\d+-]",
            right_quote,
        ),
        Rule(
            "caps_ampersand",
            [
                t("[A-Z]+(?:(?:[+&]|(?i:&amp;))[A-Z]+)+"),
                t("[A-Z]+(?:(?:[+&]|(?i:&amp;))[A-Z]+)+\\.") + ctx("[,;:\u3001]"),
            ],
            "[A-Z]",
            _emit(lambda tok: AMP_RE.sub("&", tok)),
        ),
        Rule(
            "quote_left",
            [t(q) + ctx(f"{L}{NOT_SPACENL}") for q in quotes]
            + [t(q) + ctx(f"[AaIiUu]{SPACENL}") for q in quotes],
            f"['\u0092\u2019\u00b4&{QUOTE_CHARS}]",
            left_quote,
        ),
        Rule("quote", [t(q) for q in quotes], f"['\u0092\u2019\u00b4&{QUOTE_CHARS}]", right_quote),
        Rule("clitic_at_end", [t(REDAUX), t(SREDAUX)], "['\u0092\u2019\u00b4&nN]", right_quote),
        Rule("duck_feet", [t("<<|>>")], "[<>]"),
        Rule("symbol", [t(f"[{MISC_SYMBOLS}]")], f"[{MISC_SYMBOLS}]"),
        Rule(
            "cp1252_symbol",
            [t("[\u0086\u0087\u0089\u0095\u0098\u0099]")],
            "[\u0086\u0087\u0089\u0095\u0098\u0099]",
            _emit(lambda tok: CP1252_MISC[tok]),
        ),
    ]


RULES = build_rules()
