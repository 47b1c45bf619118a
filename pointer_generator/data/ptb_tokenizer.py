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
tests/test_ptb_tokenizer.py pin the behaviour rule by rule.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

# ----------------------------------------------------------------------------- classes
# "Letter" means what Java's Character.isLetter means, plus combining marks and the soft
# hyphen, which the original lexer also lets into words. Rather than spelling out hundreds of
# Unicode ranges in every pattern (slow to compile), the rules run on a *shadow* of the text in
# which every non-ASCII letter is replaced by one stand-in: U+0100 for upper case, U+0101 for
# the rest. The shadow has the same length, so match positions map straight back.
_UPPER_STANDIN, _LOWER_STANDIN = "\u0100", "\u0101"


class _ShadowTable(dict):
    """str.translate table: non-ASCII letters -> stand-ins, computed lazily per character."""

    def __missing__(self, cp: int):
        ch = chr(cp)
        cat = unicodedata.category(ch)
        if cp < 128 or ch == "\u00ad" or not (cat[0] == "L" or cat in ("Mn", "Mc")):
            value = cp  # ASCII, the soft hyphen and non-letters are kept as they are
        elif cat in ("Lu", "Lt"):
            value = ord(_UPPER_STANDIN)
        else:
            value = ord(_LOWER_STANDIN)
        self[cp] = value
        return value


_SHADOW = _ShadowTable()
_L = "A-Za-z\u00ad" + _UPPER_STANDIN + _LOWER_STANDIN  # letters, for use inside [...]
LETTER = f"[{_L}]"
ALNUM = f"[{_L}\\d]"
UPPER = f"[A-Z{_UPPER_STANDIN}]"
_SPACE_CHARS = " \t\u00a0\u2000-\u200a\u3000"
SPACE = f"[{_SPACE_CHARS}]"
_NL_CHARS = "\n\r\u2028\u2029\x0b\x0c\x85"
SPACENL = f"[{_SPACE_CHARS}{_NL_CHARS}]"
NOT_SPACENL = f"[^{_SPACE_CHARS}{_NL_CHARS}]"
APOS = "(?:['\u0092\u2019\u00b4]|&apos;)"
APOSETC = f"(?:{APOS}|[`\u0091\u2018\u201b])"
HYPHEN = "[-_\u058a\u2010\u2011]"
NUM_A = r"\d*(?:[.,\u066b\u066c]\d+)+"
NUM_B = r"\d+(?:[.:,\u00ad\u066b\u066c\u2009\u202f]\d+)*"
WORD = f"{LETTER}{ALNUM}*(?:[.!?]{LETTER}{ALNUM}*)*"
REDAUX = f"{APOS}(?:[msdMSD]|(?i:re|ve|ll))"
SREDAUX = f"(?i:n){APOSETC}(?i:t)"
QUOTE_CHARS = "`\u2018-\u201f\u0082\u0084\u0091-\u0094\u2039\u203a\u00ab\u00bb"
ACRO = (
    r"[A-Za-z](?:\.[A-Za-z])*|(?i:Canada|Sino|Korean|EU|Japan|non)-(?i:U\.S)"
    r"|(?i:U\.S\.-)(?i:U\.K|U\.S\.S\.R)"
)
ACRO2 = (
    r"[A-Za-z](?:\.[A-Za-z])+|(?i:Canada|Sino|Korean|EU|Japan|non)-(?i:U\.S)"
    r"|(?i:U\.S\.-)(?i:U\.K|U\.S\.S\.R)"
)

# Abbreviations followed (normally) by lower-case words; before a capital they end a sentence.
_ABBREV1 = "|".join(
    [
        r"(?i:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)",
        r"(?i:Mon|Tues|Tue|Wed|Thurs|Thu|Fri)",
        # A few state abbreviations are common words, so their capital is required.
        r"(?i:Ala|Ariz)|A(?i:z|rk)|(?i:Calif|Colo|Conn|Ct|Dak)|D(?i:el)|(?i:Fla|Ga)|I(?i:ll)",
        r"(?i:Ind|Kans|Kan|Ky)|L(?i:a)|M(?i:ass|iss)|(?i:Md|Mich|Minn|Mont|Mo|Neb|Nev|Okla)",
        r"O(?i:re)|P(?i:a)|(?i:Penn|Tenn)|T(?i:ex)|(?i:Va|Vt)|W(?i:ash)|(?i:Wisc|Wis|Wyo)",
        r"(?i:Inc|Cos|Co|Corp|Ppty|Ppt[ye]s?|Pt[ye]s?|Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys)",
        r"(?i:tel|est|ext|sq|Jr|Bros|Ed\.D|Ph\.D|Esq|etc|al|seq|Bldg)",
    ]
)
ABBREV1 = f"(?:{_ABBREV1})\\."
# Titles and the like, normally followed by a capitalised name: never a sentence end.
_ABTITLE = (
    r"(?i:Mrs|Mr|Ms|Mx)|M(?i:iss)|(?i:Drs|Dr|Profs|Prof|Sens|Sen|Reps|Rep|Attys|Atty"
    r"|Lt|Col|Gen|Messrs|Govs|Gov|Adm|Rev|Maj|Sgt|Cpl|Pvt|Capt|Ste|St|Ave|Pres|Lieut"
    r"|Rt|Hon|Brig|Comdr|Cmdr|Pfc|Spc|Supts|Supt|Det|Mt|Ft|Adj|Adv|Asst|Assoc|Ens"
    r"|Insp|Mlle|Mme|Msgr|Sfc|Sr)"
)
_ABCOMP2 = r"(?i:Invt|Elec|Natl|Mfg|Mtg|Dept|Blvd|Rd|Ave)"
ABBREV2 = (
    f"(?:{_ABTITLE}|(?i:vs)|v|(?i:Alex|Wm|Jos|Cie|a\\.k\\.a|cf|TREAS|Ph)|{ACRO2}"
    f"|{ACRO}|{_ABCOMP2})\\."
)
# Only before a number ("No. 1", "Fig. 3").
ABBREV3 = (
    r"(?:(?i:ca|figs|fig|prop|nos|no|sects|sect|secs|sec|arts|art|paras|para|bldg|pp|op"
    r"|approx|rs)|Pt)\."
)
# Capitalised words after which an acronym's period also ends the sentence.
_SENT_STARTERS = (
    "About According Additionally After An A As At But Did During Earlier He Her "
    "Here How However If In It Last Many More Now Once One Other Our She Since So "
    "Some Such That The Their Then There These They This We When While What Who "
    "Why Yet You"
).split()
SENT_STARTER = "|".join(
    w[0] + (f"(?i:{w[1:]})" if len(w) > 1 else "")
    for w in sorted(_SENT_STARTERS, key=len, reverse=True)
)
SENT_STARTER += r"|M(?i:r)\.|M(?i:s)\."

_MISC_SYMBOLS = (
    "+%&~^|\\\\\u00a6\u00a7\u00a8\u00a9\u00ac\u00ae\u00af\u00b0-\u00ba\u00d7"
    "\u00f7\u0387\u05be\u05c0\u05c3\u05c6\u05f3\u05f4\u0600-\u0603\u0606-\u060a"
    "\u060c\u0614\u061b\u061e\u066a\u066d\u0703-\u070d\u07f6-\u07f8\u0964\u0965"
    "\u0e4f\u1fbd\u2016\u2017\u2020-\u2025\u2030-\u2038\u203b\u203c\u203e-\u2044"
    "\u207a-\u207f\u208a-\u208e\u2100-\u214f\u2190-\u21ff\u2200-\u2bff"
    "\u3001-\u3006\u3008-\u3020\u30fb\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40"
    "\uff5b-\uff65"
)
_CURRENCY = "\u00a2-\u00a5\u0080\u20a0\u20a4\u20aa\u20ac\u20b9\u060b\u0e3f\uffe0\uffe1\uffe5\uffe6"
_FILE_EXT = (
    "bat|bmp|bz2|class|cgi|cpp|c|dll|docx|doc|exe|gif|gz|html|htm|h|jar|java|jpeg|jpg"
    "|mov|mp3|mp4|mpg|pdf|php|pl|png|ppt|ps|py|sql|tar|txt|wav|wma|wmv|x|xml|zip|3gp"
    "|avi|flv"
)

# ----------------------------------------------------------------------------- normalising
_LEFT_SINGLE = "\u0082\u008b\u0091\u2018\u201a\u201b\u2039"
_RIGHT_SINGLE = "\u0092\u009b\u00b4\u2019\u203a"
_LEFT_DOUBLE = "\u0084\u0093\u201c\u201e\u00ab"
_RIGHT_DOUBLE = "\u0094\u201d\u00bb"
_DOUBLE_ASCII_RE = re.compile("\"|''|'`|`'|&quot;")
_SINGLE_ASCII_RE = re.compile("&apos;|'")
_QUOTE_MAP = str.maketrans(
    {
        **{c: "`" for c in _LEFT_SINGLE},
        **{c: "'" for c in _RIGHT_SINGLE},
        **{c: "``" for c in _LEFT_DOUBLE},
        **{c: "''" for c in _RIGHT_DOUBLE},
    }
)


def latex_quotes(tok: str, probably_left: bool) -> str:
    """PTB ("LaTeX") quotes: opening `` ` `` / ``` `` ```, closing `'` / `''`.

    Straight quotes become opening or closing according to `probably_left`; curly and CP1252
    quotes carry their direction with them.
    """
    if "'" in tok or '"' in tok or "&" in tok:
        if probably_left:
            tok = _SINGLE_ASCII_RE.sub("`", tok)
            tok = _DOUBLE_ASCII_RE.sub("``", tok)
        else:
            tok = _DOUBLE_ASCII_RE.sub("''", tok)
    return tok.translate(_QUOTE_MAP)


_CURRENCY_MAP = str.maketrans(
    {
        "\u00a2": "cents",
        "\u00a3": "#",
        "\u0080": "$",
        "\u00a4": "$",
        "\u20a0": "$",
        "\u20ac": "$",
        "\u20b9": "$",
    }
)
_FRACTION_MAP = {
    "\u00bc": "1/4",
    "\u00bd": "1/2",
    "\u00be": "3/4",
    "\u2153": "1/3",
    "\u2154": "2/3",
}
_CP1252_MISC = {
    "\u0086": "\u2020",
    "\u0087": "\u2021",
    "\u0089": "\u2030",
    "\u0095": "\u2022",
    "\u0098": "\u02dc",
    "\u0099": "\u2122",
}
_AMP_RE = re.compile("&amp;", re.IGNORECASE)
_PARENS = str.maketrans({"(": "-LRB-", ")": "-RRB-"})


def _no_soft_hyphens(tok: str) -> str:
    return tok.replace("\u00ad", "")


def _number(tok: str) -> str:
    # Soft hyphens and thin/thousands spaces inside a number are formatting, not content.
    for ch in "\u00ad\u066c\u2009\u202f":
        tok = tok.replace(ch, "")
    return tok


def _nbsp(tok: str) -> str:
    # A token never contains a plain space: the PTB tokenizer swaps in U+00A0.
    return tok.replace(" ", "\u00a0").replace("\r", "\u00a0").replace("\n", "\u00a0")


# ----------------------------------------------------------------------------- rules
@dataclass
class _Rule:
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


def _keep(tok, sc):
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
    return _number(tok), len(tok)


def _hyphens(tok, sc):
    return ("--" if 3 <= len(tok) <= 4 else tok), len(tok)


def _build_rules() -> list[_Rule]:
    t = "(?P<tok>{})".format
    ctx = "(?=(?P<ctx>{}))".format
    L, AL = LETTER, ALNUM
    thing_part = f"(?:[dDoOlL]{APOSETC}{AL})?(?:{NUM_A}|{AL}+)"
    thing_tail = f"(?:{HYPHEN}{thing_part})*"
    hthing_tail = f"(?:-(?:(?:{ACRO2})\\.|[{_L}\\d]+(?:\\.\\d+)?))+"
    hthing = f"{AL}[{_L}\\d.,]*{hthing_tail}"
    quotes = [APOS, f"[{QUOTE_CHARS}]{{1,2}}"]
    letter_first = f"[{_L}]"
    alnum_first = f"[{_L}\\d]"
    apos_first = "['\u0092\u2019\u00b4&`\u0091\u2018\u201b]"
    left_quote = lambda tok, sc: (latex_quotes(tok, True), len(tok))  # noqa: E731
    right_quote = lambda tok, sc: (latex_quotes(tok, False), len(tok))  # noqa: E731
    word_action = lambda tok, sc: (_no_soft_hyphens(tok), len(tok))  # noqa: E731
    return [
        _Rule("prog_langs", [t(r"(?i:c\+\+|c#|f#)")], "[cCfF]"),
        _Rule("assimilations3", [t(r"(?i:cannot|'twas|dunno)")], "[cC'dD]", _keep_all_but(3)),
        _Rule(
            "assimilations2",
            [t(f"{APOS}(?i:tis)|(?i:gonna|gotta|lemme|gimme|wanna|nno)")],
            "['\u0092\u2019\u00b4&gGlLwWnN]",
            _keep_all_but(2),
        ),
        _Rule(
            "sgml",
            [
                t(
                    r"<(?:[!?][A-Za-z-][^>\r\n]*|/[A-Za-z][A-Za-z0-9_:.-]*"
                    r"|[A-Za-z][A-Za-z0-9_:.-]*(?: +[A-Za-z][A-Za-z0-9_:.-]*"
                    r"(?: *= *(?:'[^']*'|\"[^\"]*\"|[A-Za-z][A-Za-z0-9_:.-]*))?)* */?) *>"
                )
            ],
            "<",
            _emit(_nbsp),
        ),
        _Rule(
            "dash_entity",
            [t("(?i:&(?:MD|mdash|ndash);)|[\u0096\u0097\u2013\u2014\u2015]")],
            "[&\u0096\u0097\u2013\u2014\u2015]",
            _emit("--"),
        ),
        _Rule("amp_entity", [t("(?i:&amp;)")], "&", _emit("&")),
        _Rule("punct_entity", [t(r"(?i:&(?:HT|TL|UR|LR|QC|QL|QR|odq|cdq|#\d+);)")], "&"),
        _Rule("word_clitic", [t(WORD) + ctx(REDAUX)], letter_first, word_action),
        _Rule(
            "word_nt",
            [t(f"[{_L}]*[A-MO-Za-mo-z]\u00ad*") + ctx(SREDAUX)],
            letter_first,
            word_action,
        ),
        _Rule("word", [t(WORD)], letter_first, word_action),
        _Rule(
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
            f"[{_L}{apos_first[1:]}",
            lambda tok, sc: (_no_soft_hyphens(latex_quotes(tok, False)), len(tok)),
        ),
        _Rule("y_apostrophe", [t(f"(?i:y){APOS}") + ctx(L)], "[yY]"),
        _Rule(
            "full_url",
            [
                t(
                    "(?i:ftp|svn|svn\\+ssh|https|http|mailto)://"
                    '[^ \t\n\f\r"<>|(){}\\[\\]]+[^ \t\n\f\r"\'<>|.!?(){},;:&\\[\\]-]'
                )
            ],
            "[fFsShHmM]",
        ),
        _Rule(
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
        _Rule(
            "email",
            [
                t(
                    r"(?i:&lt;|<)?(?i:mailto:)?[a-zA-Z0-9._%+-]+@[A-Za-z0-9]"
                    r"[A-Za-z0-9.-]*[A-Za-z0-9](?i:&gt;|>)?"
                )
            ],
            r"[&<a-zA-Z0-9._%+-]",
        ),
        _Rule(
            "twitter",
            [t("[@\uff20][a-zA-Z_][a-zA-Z_0-9]*"), t(f"[#\uff03]{L}[{_L}\\d_]*[{_L}\\d]")],
            "[@\uff20#\uff03]",
        ),
        _Rule("clitic", [t(REDAUX) + ctx(f"[^{_L}]")], apos_first, right_quote),
        _Rule("nt", [t(SREDAUX) + ctx(f"[^{_L}]")], "[nN]", right_quote),
        _Rule("date", [t(r"\d{1,2}[-/]\d{1,2}[-/]\d{2,4}")], r"\d"),
        _Rule(
            "number",
            [t(f"[-+]?{NUM_A}"), t(f"[-+]?{NUM_B}")],
            r"[-+\d.,\u066b\u066c]",
            _number_action,
        ),
        _Rule(
            "sub_sup_number",
            [
                t(
                    "[\u207a\u207b\u208a\u208b]?(?:[\u2070\u00b9\u00b2\u00b3"
                    "\u2074-\u2079]+|[\u2080-\u2089]+)"
                )
            ],
            "[\u207a\u207b\u208a\u208b\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u2080-\u2089]",
        ),
        _Rule(
            "fraction",
            [t("(?:\\d{1,4}[- \u00a0])?\\d{1,4}(?:\\\\?/|\u2044)\\d{1,4}")],
            r"\d",
            _emit(_nbsp),
        ),
        _Rule(
            "fraction_char",
            [t("[\u00bc\u00bd\u00be\u2153-\u215e]")],
            "[\u00bc\u00bd\u00be\u2153-\u215e]",
            _emit(lambda tok: _FRACTION_MAP.get(tok, tok)),
        ),
        _Rule(
            "ptb_special",
            [
                t(
                    f"(?i:-(?:RRB|LRB|RCB|LCB|RSB|LSB)-|C\\.D\\.s|pro-|anti-"
                    f"|S(?:&|&amp;)P-500|S(?:&|&amp;)Ls|Cap{APOS}n|c{APOS}est)"
                )
            ],
            "[-cCpPaAsS]",
            _emit(lambda tok: _AMP_RE.sub("&", tok)),
        ),
        _Rule(
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
        _Rule(
            "bang_words",
            [t("(?i:E|Yahoo|Jeopardy)!"), t("(?i:OK!)") + ctx(f"{SPACENL}(?i:magazine)")],
            "[eEyYjJoO]",
        ),
        _Rule(
            "slash_words",
            [t(f"{AL}+(?:-{L}+){{0,2}}(?:\\\\?/{AL}+(?:-{L}+){{0,2}}){{1,2}}")],
            alnum_first,
        ),
        _Rule("dollar_sign", [t(r"[A-Z]*\$|#")], r"[A-Z$#]"),
        _Rule(
            "currency",
            [t(f"[{_CURRENCY}]")],
            f"[{_CURRENCY}]",
            _emit(lambda tok: tok.translate(_CURRENCY_MAP)),
        ),
        _Rule(
            "acronym_sentence_end",
            [t(f"(?:{ACRO})\\.") + ctx(f"{SPACENL}+(?:{SENT_STARTER})(?:{SPACENL}|[?!])")],
            "[A-Za-z]",
            lambda tok, sc: (tok[0], 1) if len(tok) == 2 else _sentence_final(tok, sc),
        ),
        _Rule("abbrev_before_number", [t(ABBREV3) + ctx(f"{SPACENL}?\\d")], "[a-zA-Z]"),
        _Rule(
            "abbrev_south_north",
            [t("(?i:So\\.|No\\.)") + ctx(f"{SPACENL}+(?i:Africa|Korea|Cal)")],
            "[sSnN]",
        ),
        _Rule("abbrev_pty", [t("(?i:pt[eyEY]|co)\\.") + ctx(f"{SPACE}(?i:ltd|lim)")], "[pPcC]"),
        _Rule(
            "abbrev1_sentence_end",
            [t(ABBREV1) + ctx(f"{SPACENL}(?:{SPACENL}|{UPPER}|<[A-Za-z!?/])")],
            "[a-zA-Z]",
            _sentence_final,
        ),
        _Rule("abbrev1", [t(ABBREV1) + ctx(r"[\s\S][\s\S]")], "[a-zA-Z]"),
        _Rule("abbrev1_at_end", [t(ABBREV1)], "[a-zA-Z]", _sentence_final),
        _Rule("abbrev2", [t(ABBREV2)], "[a-zA-Z]"),
        _Rule("year_apostrophe", [t(f"{APOS}\\d\\d") + ctx(SPACENL)], apos_first),
        _Rule("iso_datetime", [t(r"\d{4}-\d{2}-\d{2}T\d{2}:[x0-9]{2}:\d{2}Z?")], r"\d"),
        _Rule("degrees", [t("\u00b0[CF]")], "\u00b0"),
        _Rule(
            "filename",
            [t(f"{AL}+(?:[-._/]{AL}+)*\\.(?i:{_FILE_EXT})") + ctx(f"{SPACENL}|[.?!,\"'<]")],
            alnum_first,
        ),
        _Rule("word_dot", [t(f"{WORD}\\.") + ctx("[,;:\u3001]")], letter_first, word_action),
        _Rule(
            "phone",
            [
                t(
                    r"(?:\(\d{2,3}\)[ \u00a0]?|(?:\+\+?)?(?:\d{2,4}[- \u00a0])?\d{2,4}"
                    r"[- \u00a0])\d{3,4}[- \u00a0]?\d{3,5}"
                ),
                t(r"(?:(?:\+\+?)?\d{2,4}\.)?\d{2,4}\.\d{3,4}\.\d{3,5}"),
            ],
            r"[(+\d]",
            _emit(lambda tok: _nbsp(tok).translate(_PARENS)),
        ),
        _Rule(
            "double_quote_left",
            [t("\"|(?i:&quot;)|[`'\u0091\u0092\u2018\u2019]'") + ctx(f"[{_L}\\d$]")],
            "[\"&`'\u0091\u0092\u2018\u2019]",
            left_quote,
        ),
        _Rule(
            "double_quote",
            [t("\"|(?i:&quot;)|[`'\u0091\u0092\u2018\u2019]'")],
            "[\"&`'\u0091\u0092\u2018\u2019]",
            right_quote,
        ),
        _Rule("less_than", [t("<|(?i:&lt;)")], "[<&]", _emit("<")),
        _Rule("greater_than", [t(">|(?i:&gt;)")], "[>&]", _emit(">")),
        _Rule(
            "smiley",
            [t(r"[<>]?[:;=][-o*']?[()DPdpO\\{@|\[\]]") + ctx(f"[^{_L}\\d]")],
            "[<>:;=]",
            _emit(lambda tok: tok.translate(_PARENS)),
        ),
        _Rule(
            "emoji",
            [
                t(
                    "[\U0001f1e6-\U0001f1ff]{2}|[\u2194-\u2199\u25fb-\u27bf"
                    "\U0001f000-\U0001faff][\ufe0e\ufe0f\U0001f3fb-\U0001f3ff]?"
                )
            ],
            "[\u2194-\u2199\u25fb-\u27bf\U0001f000-\U0001faff]",
        ),
        _Rule(
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
        _Rule("hyphens", [t("-+")], "-", _hyphens),
        _Rule(
            "ellipsis_then_period",
            [
                t("\\.\\.\\.+|[\u0085\u2026]") + ctx(f"\\.{SPACENL}+{L}"),
                t("\\.[ \u00a0](?:\\.[ \u00a0])+\\.") + ctx(f"{SPACE}\\.{SPACENL}+{L}"),
            ],
            "[.\u0085\u2026]",
            _emit("..."),
        ),
        _Rule(
            "ellipsis",
            [t("\\.\\.\\.+|[\u0085\u2026]"), t("\\.[ \u00a0](?:\\.[ \u00a0])+\\.")],
            "[.\u0085\u2026]",
            _emit("..."),
        ),
        _Rule("footnote_marks", [t("@+|#+|_+")], "[@#_]"),
        _Rule("asterisks", [t(r"\*+|(?:\\\*){1,3}")], r"[*\\]"),
        _Rule("in_sentence_punct", [t("[,;:\u3001]")], "[,;:\u3001]"),
        _Rule("bang_question", [t("[?!]+")], "[?!]"),
        _Rule(
            "sentence_punct",
            [t("[.\u00a1\u00bf\u037e\u0589\u061f\u06d4\u0700-\u0702\u07fa\u3002]")],
            "[.\u00a1\u00bf\u037e\u0589\u061f\u06d4\u0700-\u0702\u07fa\u3002]",
        ),
        _Rule("equals", [t("=+")], "="),
        _Rule("slash", [t("/")], "/"),
        _Rule(
            "hyphenated",
            [t(hthing), t(f"{hthing}\\.") + ctx("[,;:\u3001]")],
            alnum_first,
            word_action,
        ),
        _Rule(
            "thing",
            [
                t(f"(?:[dDoOlL]{APOSETC}{AL})?{AL}+{thing_tail}"),
                t(f"(?:[dDoOlL]{APOSETC}{AL})?[-+]?(?:{NUM_A}|{NUM_B}){thing_tail}"),
            ],
            f"[{_L}\\d+-]",
            right_quote,
        ),
        _Rule(
            "caps_ampersand",
            [
                t("[A-Z]+(?:(?:[+&]|(?i:&amp;))[A-Z]+)+"),
                t("[A-Z]+(?:(?:[+&]|(?i:&amp;))[A-Z]+)+\\.") + ctx("[,;:\u3001]"),
            ],
            "[A-Z]",
            _emit(lambda tok: _AMP_RE.sub("&", tok)),
        ),
        _Rule(
            "quote_left",
            [t(q) + ctx(f"{L}{NOT_SPACENL}") for q in quotes]
            + [t(q) + ctx(f"[AaIiUu]{SPACENL}") for q in quotes],
            f"['\u0092\u2019\u00b4&{QUOTE_CHARS}]",
            left_quote,
        ),
        _Rule("quote", [t(q) for q in quotes], f"['\u0092\u2019\u00b4&{QUOTE_CHARS}]", right_quote),
        _Rule("clitic_at_end", [t(REDAUX), t(SREDAUX)], "['\u0092\u2019\u00b4&nN]", right_quote),
        _Rule("duck_feet", [t("<<|>>")], "[<>]"),
        _Rule("symbol", [t(f"[{_MISC_SYMBOLS}]")], f"[{_MISC_SYMBOLS}]"),
        _Rule(
            "cp1252_symbol",
            [t("[\u0086\u0087\u0089\u0095\u0098\u0099]")],
            "[\u0086\u0087\u0089\u0095\u0098\u0099]",
            _emit(lambda tok: _CP1252_MISC[tok]),
        ),
    ]


_RULES = _build_rules()

# Whitespace the lexer skips between tokens (no token, no line break).
_SKIP_RE = re.compile(f"(?:[{_SPACE_CHARS}\x00\x7f\u200b\u200e\u200f\ufeff]|(?i:&nbsp;))+")
_NEWLINE_RE = re.compile("\r\n?|[\n\u2028\u2029\x0b\x0c\x85]")
# Plain words that no other rule could extend: the common case, scanned in one step.
_ASSIMILATION_WORDS = frozenset(
    ["cannot", "dunno", "gonna", "gotta", "lemme", "gimme", "wanna", "nno"]
)
_FAST_WORD_RE = re.compile(f'{LETTER}{ALNUM}*(?=[{_SPACE_CHARS}{_NL_CHARS},;)\\]}}"]|:(?!//)|$)')


class _Scanner:
    """Scan state for one text: position, output lines, and what the previous token was."""

    def __init__(self, text: str):
        self.text = text
        self.shadow = text.translate(_SHADOW)
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
        self._candidates: dict[str, list[_Rule]] = {}
        self.last_untokenizable = 0

    def _rules_for(self, ch: str) -> list[_Rule]:
        rules = self._candidates.get(ch)
        if rules is None:
            rules = [r for r in _RULES if r.first_re.match(ch)]
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
                    self._push(sc, _no_soft_hyphens(tok), tok, len(tok))
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
        out, consumed = (best.action or _keep)(best_tok, sc)
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


def main(argv: list[str] | None = None) -> int:
    """`python -m pointer_generator.data.ptb_tokenizer < in.txt > out.txt`: tokenize stdin
    to stdout."""
    del argv
    sys.stdout.write(tokenize_text(sys.stdin.read()))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
