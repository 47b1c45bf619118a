"""Attention visualisation: the original's `attn_vis_data.json` and a self-contained page.

`attn_vis_data()` builds the dict the original decoder wrote to
`<log_root>/decode/attn_vis_data.json` (spec 6.1). `write_attention_page()` renders one
decoded example as a single HTML file (inline CSS and JS, the data embedded) that opens
from file:// without a server, unlike the original viewer, which fetched the JSON over
HTTP and broke on `<angle brackets>` in the text. `write_index()` lists the pages of a
directory.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from importlib import resources
from urllib.parse import quote

import numpy as np

from pointer_generator.data.vocab import ascii_split
from pointer_generator.decoding.folder import atomic_write_text
from pointer_generator.errors import DataError
from pointer_generator.runtime import owned_files

# Probabilities may overshoot [0, 1] by float rounding; beyond this something is wrong.
RANGE_TOLERANCE = 1e-3
# Digits kept for the page (the JSON keeps full values); 1e-6 is far below a visible shade.
PAGE_DIGITS = 6
INDEX_NAME = "index.html"


def _floats(value, what: str) -> list:
    """numpy arrays / nested lists -> nested lists of Python floats, checked finite."""
    arr = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise DataError(f"{what} contains NaN or infinite values")
    return arr.tolist()


def _check_range(values: list[float], what: str) -> None:
    bad = [v for v in values if not -RANGE_TOLERANCE <= v <= 1 + RANGE_TOLERANCE]
    if bad:
        raise DataError(f"{what} has values outside [0, 1], e.g. {bad[0]!r}")


def _trim_padding(dist: list[float], n_words: int) -> list[float]:
    """Drop attention positions past the article that are padding (zero weight), as left
    by a decoder padded to a fixed encoder length; real weight there is an error, which
    validation reports."""
    if len(dist) > n_words and all(abs(v) <= RANGE_TOLERANCE for v in dist[n_words:]):
        return dist[:n_words]
    return dist


def attn_vis_data(
    article, decoded_words: list[str], abstract: str, attn_dists, p_gens=None
) -> dict:
    """The original's attention-visualiser record for one decoded example.

    Args:
      article: the full, untruncated article text (a string, split on ASCII whitespace like
        the original's Python 2 `split()`, or an already split list). Pass it through
        `folder.mark_oovs` first to get the original's `__oov__` markers.
      decoded_words: output words without `[STOP]`.
      abstract: the reference abstract string (marked with `folder.show_abs_oovs`).
      attn_dists: per decoder step, the attention over the (truncated) encoder input; may
        hold one more step than `decoded_words` (the step that produced `[STOP]`).
        Zero-weight padding positions beyond the article's end are dropped.
      p_gens: per step, p_gen as a scalar or one-element list/array; None for the baseline,
        in which case the field is omitted, as in the original.
    """
    article_lst = ascii_split(article) if isinstance(article, str) else [str(w) for w in article]
    data = {
        "article_lst": article_lst,
        "decoded_lst": [str(w) for w in decoded_words],
        "abstract_str": str(abstract),
        "attn_dists": [
            _trim_padding(_floats(d, "attn_dists"), len(article_lst)) for d in attn_dists
        ],
    }
    if p_gens is not None:
        data["p_gens"] = [[float(v) for v in np.ravel(_floats(p, "p_gens"))] for p in p_gens]
    return validate_attn_vis_data(data)


def validate_attn_vis_data(data: dict) -> dict:
    """Check the record's shapes and ranges; return it unchanged or raise DataError."""
    for key in ("article_lst", "decoded_lst", "abstract_str", "attn_dists"):
        if key not in data:
            raise DataError(f"attention data lacks the field {key!r}")
    article, decoded, attn = data["article_lst"], data["decoded_lst"], data["attn_dists"]
    if not len(decoded) <= len(attn) <= len(decoded) + 1:
        raise DataError(
            f"attention data has {len(attn)} attention steps for {len(decoded)} "
            "decoded words; expected one per word, plus one if [STOP] was produced"
        )
    lengths = {len(d) for d in attn}
    if len(lengths) > 1:
        raise DataError(f"attention steps have different lengths {sorted(lengths)}")
    if lengths and lengths.pop() > len(article):
        raise DataError(
            f"attention covers {len(attn[0])} positions but the article has only "
            f"{len(article)} words"
        )
    for i, d in enumerate(attn):
        _check_range(d, f"attn_dists[{i}]")
    if "p_gens" in data:
        p_gens = data["p_gens"]
        if len(p_gens) != len(attn):
            raise DataError(f"{len(p_gens)} p_gens for {len(attn)} attention steps")
        for i, p in enumerate(p_gens):
            if len(p) != 1:
                raise DataError(f"p_gens[{i}] must be a one-element list, got {p!r}")
            if not math.isfinite(p[0]):
                raise DataError(f"p_gens[{i}] is not finite")
            _check_range(p, f"p_gens[{i}]")
    return data


def write_attn_vis_json(path: str, data: dict) -> None:
    """Write the record as JSON (atomically: the concurrent decoder rewrites it per example)."""
    validate_attn_vis_data(data)
    atomic_write_text(path, json.dumps(data, allow_nan=False))


def _json_for_script(data) -> str:
    """JSON that is inert inside <script>: no `</script>`, `<!--` or `&` can appear in it.
    The escapes are plain JSON string escapes, so JSON.parse gives the original text back."""
    text = json.dumps(data, allow_nan=False, ensure_ascii=False)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _template(name: str) -> str:
    return resources.files("pointer_generator").joinpath("assets", name).read_text("utf-8")


def _fill(template: str, **values: str) -> str:
    # One pass, so text inside a value that looks like a placeholder is never expanded.
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: values[m.group(1)], template)


def render_attention_page(data: dict, title: str = "Attention visualisation") -> str:
    """The HTML of the page (see module doc); `data` as from `attn_vis_data()`."""
    validate_attn_vis_data(data)
    page_data = dict(data)
    page_data["attn_dists"] = [[round(v, PAGE_DIGITS) for v in d] for d in data["attn_dists"]]
    if "p_gens" in data:
        page_data["p_gens"] = [[round(p[0], PAGE_DIGITS)] for p in data["p_gens"]]
    return _fill(
        _template("attention_page.html"), TITLE=html.escape(title), DATA=_json_for_script(page_data)
    )


def write_attention_page(path: str, data: dict, title: str = "Attention visualisation") -> None:
    """Write the self-contained page for one example to `path`."""
    directory = os.path.dirname(path)
    if directory:
        owned_files.make_dir(directory)
    atomic_write_text(path, render_attention_page(data, title))


_TITLE_RE = re.compile(r"<title>(.*?)</title>", re.S)


def write_index(directory: str, title: str = "Attention visualisations") -> str:
    """Write `directory/index.html` linking every other .html page there; return its path."""
    if not os.path.isdir(directory):
        raise DataError(f"{directory} is not a directory")
    items = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".html") or name == INDEX_NAME:
            continue
        with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as f:
            m = _TITLE_RE.search(f.read(4096))
        page_title = html.unescape(m.group(1)).strip() if m else name
        # Relative links so the listing works from file:// and after moving the directory.
        href = html.escape(quote(name), quote=True)
        items.append(
            f'<li><a href="{href}">{html.escape(page_title)}</a> '
            f'<span class="file">{html.escape(name)}</span></li>'
        )
    body = "\n".join(items) if items else "<li>No pages yet.</li>"
    text = _fill(
        _template("attention_index.html"),
        TITLE=html.escape(title),
        ITEMS=body,
        COUNT=str(len(items)),
    )
    path = os.path.join(directory, INDEX_NAME)
    atomic_write_text(path, text)
    return path
