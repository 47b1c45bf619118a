"""The character classes, regex pieces and normalisation tables of the PTB tokenizer.

The lexer rules (`ptb_rules.py`) are written with these pieces; the scanner
(`ptb_tokenizer.py`) runs the rules. Together they re-create CoreNLP 3.7.0's PTBTokenizer.
"""

from __future__ import annotations

import re
import unicodedata

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


SHADOW = _ShadowTable()
LETTERS = "A-Za-z\u00ad" + _UPPER_STANDIN + _LOWER_STANDIN  # letters, for use inside [...]
LETTER = f"[{LETTERS}]"
ALNUM = f"[{LETTERS}\\d]"
UPPER = f"[A-Z{_UPPER_STANDIN}]"
SPACE_CHARS = " \t\u00a0\u2000-\u200a\u3000"
SPACE = f"[{SPACE_CHARS}]"
NL_CHARS = "\n\r\u2028\u2029\x0b\x0c\x85"
SPACENL = f"[{SPACE_CHARS}{NL_CHARS}]"
NOT_SPACENL = f"[^{SPACE_CHARS}{NL_CHARS}]"
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

MISC_SYMBOLS = (
    "+%&~^|\\\\\u00a6\u00a7\u00a8\u00a9\u00ac\u00ae\u00af\u00b0-\u00ba\u00d7"
    "\u00f7\u0387\u05be\u05c0\u05c3\u05c6\u05f3\u05f4\u0600-\u0603\u0606-\u060a"
    "\u060c\u0614\u061b\u061e\u066a\u066d\u0703-\u070d\u07f6-\u07f8\u0964\u0965"
    "\u0e4f\u1fbd\u2016\u2017\u2020-\u2025\u2030-\u2038\u203b\u203c\u203e-\u2044"
    "\u207a-\u207f\u208a-\u208e\u2100-\u214f\u2190-\u21ff\u2200-\u2bff"
    "\u3001-\u3006\u3008-\u3020\u30fb\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40"
    "\uff5b-\uff65"
)
CURRENCY = "\u00a2-\u00a5\u0080\u20a0\u20a4\u20aa\u20ac\u20b9\u060b\u0e3f\uffe0\uffe1\uffe5\uffe6"
FILE_EXT = (
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


CURRENCY_MAP = str.maketrans(
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
FRACTION_MAP = {
    "\u00bc": "1/4",
    "\u00bd": "1/2",
    "\u00be": "3/4",
    "\u2153": "1/3",
    "\u2154": "2/3",
}
CP1252_MISC = {
    "\u0086": "\u2020",
    "\u0087": "\u2021",
    "\u0089": "\u2030",
    "\u0095": "\u2022",
    "\u0098": "\u02dc",
    "\u0099": "\u2122",
}
AMP_RE = re.compile("&amp;", re.IGNORECASE)
PARENS = str.maketrans({"(": "-LRB-", ")": "-RRB-"})


def no_soft_hyphens(tok: str) -> str:
    return tok.replace("\u00ad", "")


def clean_number(tok: str) -> str:
    # Soft hyphens and thin/thousands spaces inside a number are formatting, not content.
    for ch in "\u00ad\u066c\u2009\u202f":
        tok = tok.replace(ch, "")
    return tok


def nbsp_inside(tok: str) -> str:
    # A token never contains a plain space: the PTB tokenizer swaps in U+00A0.
    return tok.replace(" ", "\u00a0").replace("\r", "\u00a0").replace("\n", "\u00a0")
