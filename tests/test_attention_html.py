"""Attention visualiser: the original's JSON record, and the self-contained page as
rendered by headless Chromium (the DOM after the page's script ran, and a screenshot)."""

import colorsys
import html
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

from pointer_generator.decoding import attention_html as ah
from pointer_generator.errors import DataError

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# 6 article words, of which the model saw the first 4 (max_enc_steps = 4).
ARTICLE = "police </script><b> the __gunman__ on friday"
DECODED = ["police", "shot"]
ATTN = [
    [0.7, 0.1, 0.1, 0.1],
    [0.1, 0.6, 0.3, 0.0],  # step 1: max attention on "</script><b>"
    [0.25, 0.25, 0.25, 0.25],
]  # the step that produced [STOP]
P_GENS = [np.array([0.25], dtype=np.float32), 1.0000001, [0.5]]


def _rgb(hue_deg, value):
    """Expected background: HSL(hue, 100 %, 100 % - 50 % * value) as 0-255 channels."""
    r, g, b = colorsys.hls_to_rgb(hue_deg / 360, 1 - 0.5 * value, 1.0)
    return tuple(c * 255 for c in (r, g, b))


def _close(css, rgb):
    """CSS `rgb(r, g, b)` within one unit per channel of `rgb` (rounding of .5 differs)."""
    if css is None or rgb is None:
        return css is None and rgb is None
    got = [int(c) for c in css[css.index("(") + 1 : css.index(")")].split(",")]
    return all(abs(a - b) <= 1 for a, b in zip(got, rgb, strict=True))


def _data():
    return ah.attn_vis_data(
        ARTICLE, DECODED, "police shot the __gunman__ .", np.array(ATTN, dtype=np.float32), P_GENS
    )


# ---------------------------------------------------------------------------------------
# The JSON record


def test_attn_vis_data_fields_and_types():
    d = _data()
    assert set(d) == {"article_lst", "decoded_lst", "abstract_str", "attn_dists", "p_gens"}
    assert d["article_lst"] == ["police", "</script><b>", "the", "__gunman__", "on", "friday"]
    assert d["decoded_lst"] == DECODED
    assert d["abstract_str"] == "police shot the __gunman__ ."
    assert all(type(v) is float for step in d["attn_dists"] for v in step)
    assert np.allclose(d["attn_dists"], ATTN, atol=1e-7)
    assert [len(p) for p in d["p_gens"]] == [1, 1, 1]
    assert d["p_gens"][0] == [0.25] and d["p_gens"][2] == [0.5]


def test_baseline_omits_p_gens_and_article_split_is_ascii_only():
    d = ah.attn_vis_data("a\u00a0b  c\td", ["x"], "abs", [[0.5, 0.5, 0.0]], None)
    assert "p_gens" not in d
    assert d["article_lst"] == ["a\u00a0b", "c", "d"]  # Python 2 bytes split semantics


def test_json_file_round_trip(tmp_path):
    path = tmp_path / "decode" / "attn_vis_data.json"
    path.parent.mkdir()
    ah.write_attn_vis_json(str(path), _data())
    assert json.loads(path.read_text()) == _data()
    assert os.listdir(path.parent) == ["attn_vis_data.json"]


@pytest.mark.parametrize(
    "attn, p_gens, match",
    [
        ([[1.0, 0, 0, 0]] * 4, None, "4 attention steps for 2 decoded words"),
        ([[1.0, 0, 0, 0]], None, "1 attention steps for 2 decoded words"),
        ([[1.0, 0, 0, 0], [1.0, 0, 0]], None, "different lengths"),
        ([[0.5] + [0.0] * 5 + [0.5]] * 2, None, "covers 7 positions but the article has only 6"),
        ([[float("nan"), 0, 0, 0]] * 2, None, "NaN"),
        ([[1.5, 0, 0, 0]] * 2, None, r"outside \[0, 1\]"),
        ([[1.0, 0, 0, 0]] * 2, [[0.5]], "1 p_gens for 2 attention steps"),
        ([[1.0, 0, 0, 0]] * 2, [[0.5, 0.5], [0.5, 0.5]], "one-element list"),
        ([[1.0, 0, 0, 0]] * 2, [[-0.2], [0.5]], r"outside \[0, 1\]"),
    ],
)
def test_bad_records_are_rejected(attn, p_gens, match):
    with pytest.raises(DataError, match=match):
        ah.attn_vis_data(ARTICLE, DECODED, "a", attn, p_gens)


def test_zero_padding_beyond_the_article_is_dropped():
    # A decoder padded to a fixed encoder length (8 > 6 words) gives zero weight there.
    d = ah.attn_vis_data(ARTICLE, DECODED, "a", [[0.5, 0.5, 0, 0, 0, 0, 0, 0]] * 2)
    assert d["attn_dists"] == [[0.5, 0.5, 0, 0, 0, 0]] * 2


def test_small_float_excess_is_accepted():
    d = ah.attn_vis_data(
        ARTICLE, DECODED, "a", [[1.0000001, -1e-8, 0, 0]] * 2, [[1.0000002], [-1e-9]]
    )
    assert d["attn_dists"][0][0] == 1.0000001


def test_page_embeds_data_inertly():
    page = ah.render_attention_page(_data(), title="ex <1> & </script>")
    # The only script end tags are the page's own two; the JSON block holds no "<" at all.
    assert page.count("</script>") == 2
    start = page.index('<script type="application/json" id="pg-data">')
    block = page[page.index(">", start) + 1 : page.index("</script>", start)]
    assert "<" not in block and "&" not in block
    assert json.loads(block)["article_lst"][1] == "</script><b>"
    assert "<title>ex &lt;1&gt; &amp; &lt;/script&gt;</title>" in page
    # Self-contained: nothing fetched from elsewhere.
    assert "http://" not in page and "https://" not in page and " src=" not in page


def test_index_lists_pages(tmp_path):
    ah.write_attention_page(str(tmp_path / "000001.html"), _data(), title="Example <1>")
    ah.write_attention_page(str(tmp_path / "my page.html"), _data(), title="Second")
    (tmp_path / "notes.txt").write_text("not a page")
    index = ah.write_index(str(tmp_path))
    text = open(index, encoding="utf-8").read()
    assert index == str(tmp_path / "index.html")
    assert '<a href="000001.html">Example &lt;1&gt;</a>' in text
    assert '<a href="my%20page.html">Second</a>' in text
    assert "notes.txt" not in text and text.count("<li>") == 2
    ah.write_index(str(tmp_path))  # rewriting does not list index.html itself
    assert open(index, encoding="utf-8").read().count("<li>") == 2


# ---------------------------------------------------------------------------------------
# In a real browser


def _require_chromium():
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI must provide chromium (run experiments/setup_system.sh --tests)")
        pytest.skip(
            "chromium is not installed (apt-get install chromium); the page is "
            "checked in a headless browser"
        )


def _chromium(tmp_path, url, *args):
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
        url,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class _Spans(HTMLParser):
    """Collect (classes, style, text) of every <span> and the tags seen inside #article."""

    def __init__(self):
        super().__init__()
        self.spans, self.stack, self.tags_in_article, self.body = [], [], [], {}
        self.in_article = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if self.in_article:
            self.tags_in_article.append(tag)
            self.in_article += 1
        if a.get("id") == "article":
            self.in_article = 1
        if tag == "span":
            self.spans.append(
                {
                    "cls": (a.get("class") or "").split(),
                    "style": a.get("style") or "",
                    "text": "",
                    "id": a.get("id"),
                }
            )
            self.stack.append(self.spans[-1])
        elif tag not in ("br", "input", "meta", "link"):
            self.stack.append(None)

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()
        if self.in_article:
            self.in_article -= 1

    def handle_data(self, data):
        for s in self.stack:
            if s is not None:
                s["text"] += data


def _background(span):
    for decl in span["style"].split(";"):
        if decl.strip().startswith("background-color:"):
            return decl.split(":", 1)[1].strip()
    return None


def _status(dom):
    """Inner HTML of the status box as the script left it."""
    start = dom.index('<div id="status" aria-live="polite">') + len(
        '<div id="status" aria-live="polite">'
    )
    return dom[start : dom.index("</section>", start)].strip().removesuffix("</div>")


def _render(tmp_path, fragment=""):
    page = tmp_path / "page.html"
    ah.write_attention_page(str(page), _data(), title="test page")
    dom = _chromium(tmp_path, page.as_uri() + fragment, "--dump-dom")
    parser = _Spans()
    parser.feed(dom)
    return parser, dom


def test_browser_colours_attention_pgen_and_marks_truncation(tmp_path):
    _require_chromium()
    p, dom = _render(tmp_path, "#step=1")
    assert p.body.get("data-ready") == "1"  # the page's script ran to the end
    art = [s for s in p.spans if "art" in s["cls"]]
    gen = [s for s in p.spans if "gen" in s["cls"]]
    # One element per article word and per generated word (+ the [STOP] step).
    assert [s["text"] for s in art] == ARTICLE.split(" ")
    assert [s["text"] for s in gen] == DECODED + ["[STOP]"]
    # Article coloured by step 1's attention; the max-attention word 0.6 the strongest.
    for span, v in zip(art[:4], ATTN[1], strict=True):
        assert _close(_background(span), _rgb(56, v)), (span, v)
    # By hand: HSL(56, 100 %, 70 %) = (1, 0.7 + 0.6 * 56/60 - 0.3, 0.4) * 255.
    assert _background(art[1]) == "rgb(255, 245, 102)"
    assert [_background(s) for s in art[4:]] == [None, None]
    assert all("beyond" in s["cls"] for s in art[4:])
    # Generated words coloured by p_gen; 1.0000001 is clamped to 1, not an error.
    for span, v in zip(gen, (0.25, 1.0, 0.5), strict=True):
        assert _close(_background(span), _rgb(151, v)), (span, v)
    assert "selected" in gen[1]["cls"]
    # Truncation marker right after the 4 words the model saw.
    order = [s["id"] or s["text"] for s in p.spans if "art" in s["cls"] or s["id"]]
    marker = order.index("truncation-marker")
    assert order[marker - 1] == "__gunman__" and order[marker + 1] == "on"
    assert (
        p.spans[[s["id"] for s in p.spans].index("truncation-marker")]["text"]
        == "ARTICLE TRUNCATED HERE."
    )
    # "</script><b>" is text: escaped in the DOM, and no <b> element was created.
    assert "&lt;/script&gt;&lt;b&gt;" in dom
    assert "b" not in p.tags_in_article
    # Status line names the step, its p_gen and its most attended word.
    status = _status(dom)
    assert status.startswith("<b>step 1: “shot”</b><div>p_gen 1.000</div>")
    assert "top attention: “&lt;/script&gt;&lt;b&gt;” 0.600, “the” 0.300" in status


def test_browser_without_selection_leaves_article_uncoloured(tmp_path):
    _require_chromium()
    p, dom = _render(tmp_path)
    art = [s for s in p.spans if "art" in s["cls"]]
    assert len(art) == 6 and all(_background(s) is None for s in art)
    assert not any("selected" in s["cls"] for s in p.spans)
    assert _status(dom) == "Select a generated word to see where it attended."


def test_browser_screenshot_shows_the_colours(tmp_path):
    _require_chromium()
    import matplotlib.image

    page = tmp_path / "page.html"
    ah.write_attention_page(str(page), _data(), title="screenshot")
    shot = tmp_path / "shot.png"
    _chromium(
        tmp_path,
        page.as_uri() + "#step=1",
        f"--screenshot={shot}",
        "--window-size=1000,700",
        "--hide-scrollbars",
    )
    img = (matplotlib.image.imread(str(shot))[..., :3] * 255).round().astype(int)
    assert img.shape[:2] == (700, 1000)

    def has(rgb):
        return bool(np.any(np.all(np.abs(img - np.array(rgb)) <= 1.5, axis=-1)))

    assert has(_rgb(56, 0.6))  # attention 0.6 on the article word
    assert has(_rgb(151, 1.0))  # p_gen 1: full green
    assert has(_rgb(151, 0.25))  # p_gen 0.25: pale green


# Drives the page's own handlers with synthetic events (no mouse in headless mode) and
# records what the user would see into #probe as JSON.
_PROBE = """<script>
(function () {
  var gen = document.querySelectorAll("#decoded .gen");
  var art = document.querySelectorAll("#article .art");
  var tip = document.getElementById("tooltip");
  function bgs() { return Array.prototype.map.call(art, function (s) {
    return s.style.backgroundColor; }); }
  function ev(el, type, key) {
    el.dispatchEvent(key ? new KeyboardEvent(type, {key: key, bubbles: true})
                         : new MouseEvent(type, {bubbles: true}));
  }
  var out = {};
  ev(gen[0], "mouseenter");
  out.hover = {bg: bgs(), tip: tip.textContent, tipShown: tip.style.display};
  ev(gen[0], "mouseleave");
  out.left = {bg: bgs(), tipShown: tip.style.display};
  ev(gen[1], "click");
  out.clicked = {bg: bgs(), selected: gen[1].classList.contains("selected"),
                 hash: location.hash};
  var rel = document.getElementById("relative");
  rel.checked = true;
  rel.dispatchEvent(new Event("change"));
  out.relative = bgs();
  gen[1].focus();
  ev(gen[1], "keydown", "ArrowLeft");
  out.arrow = {focused: document.activeElement === gen[0], bg0: bgs()[0]};
  ev(document.body, "keydown", "Escape");
  out.escape = {bg: bgs(), selected: document.querySelectorAll(".selected").length};
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def test_browser_hover_click_keyboard_and_relative_scale(tmp_path):
    _require_chromium()
    page = tmp_path / "page.html"
    html_text = ah.render_attention_page(_data(), title="interaction")
    page.write_text(html_text.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    dom = _chromium(tmp_path, page.as_uri(), "--dump-dom")
    start = dom.index('<pre id="probe">') + len('<pre id="probe">')
    out = json.loads(html.unescape(dom[start : dom.index("</pre>", start)]))

    def colours(bg, step, scale=1.0):
        return all(_close(c, _rgb(56, v * scale)) for c, v in zip(bg[:4], ATTN[step], strict=False))

    # Hover previews step 0 with a tooltip naming p_gen and the top attended word.
    assert colours(out["hover"]["bg"], 0) and out["hover"]["bg"][4:] == ["", ""]
    assert out["hover"]["tipShown"] == "block"
    assert "p_gen 0.250" in out["hover"]["tip"] and "“police” 0.700" in out["hover"]["tip"]
    # Leaving without a pinned step clears the article and hides the tooltip.
    assert out["left"]["bg"] == [""] * 6 and out["left"]["tipShown"] == "none"
    # Click pins step 1 (and makes it linkable).
    assert colours(out["clicked"]["bg"], 1) and out["clicked"]["selected"]
    assert out["clicked"]["hash"] == "#step=1"
    # Relative scale: the step's max word (0.6) becomes full yellow, others scale with it.
    assert colours(out["relative"], 1, scale=1 / 0.6)
    assert out["relative"][1] == "rgb(255, 238, 0)"
    # Left arrow moves to step 0; Escape clears everything.
    assert out["arrow"]["focused"] and _close(out["arrow"]["bg0"], _rgb(56, 0.7 / 0.7))
    assert out["escape"]["bg"] == [""] * 6 and out["escape"]["selected"] == 0
