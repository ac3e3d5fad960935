"""No inline formula of a chapter runs past its paragraph on a 420 px phone.

MathJax 3 never breaks an inline formula, so one wider than the block it sits in sticks out of the text
column and loses its end on a phone. CI has no browser, so this test lays each ``$...$`` of the book's
sources out statically (:class:`Layout`: TeX's glyph widths, script and fraction sizes, the spacing of
relations and binary operators) and compares the estimate with the width of its block at a 420 px window,
which depends on what holds the formula (:func:`inline_formulas`: a paragraph, a list item, a proof or
exercise box). Both were calibrated against headless Chromium on the built book (``MATHJAX_SCALE``,
``BLOCK_PX``); ``inline_math_widths.json`` keeps measured widths so that a change of the estimate that
leaves the browser behind fails here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Width in px of the text column at a 420 px window (the built book in Chromium): a paragraph, and what
#: each holder takes away (a prf/exercise/solution/admonition box, a proof, a list level).
BLOCK_PX = 388.0
BOX_PX = 67.0
PROOF_PX = 45.0
LIST_PX = 32.0
#: Body text is 16 px; MathJax's CommonHTML output scales TeX's em by this to match the book's font.
TEXT_PX = 16.0
MATHJAX_SCALE = 1.30
#: The estimate of a long formula is within about 5 % of Chromium (``test_the_estimate_follows_the_browser``); a formula must
#: leave that much of its block free.
MARGIN = 0.96

# ----------------------------------------------------------------------------- TeX widths, in em

_ITALIC = dict(zip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", (
    .529, .429, .433, .52, .466, .49, .477, .576, .345, .412, .521, .298, .878, .6, .485, .503, .446, .451, .469,
    .361, .572, .485, .716, .572, .49, .465, .75, .759, .715, .828, .738, .643, .786, .831, .44, .555, .849, .681,
    .97, .803, .763, .642, .791, .759, .613, .584, .683, .583, .944, .828, .581, .683)))
_ROMAN = dict(zip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", (
    .5, .556, .444, .556, .444, .306, .5, .556, .278, .306, .528, .278, .833, .556, .5, .556, .528, .392, .394,
    .389, .556, .528, .722, .528, .528, .444, .75, .708, .722, .764, .681, .653, .785, .75, .361, .514, .778, .625,
    .917, .75, .778, .681, .778, .736, .556, .722, .75, .75, 1.028, .75, .75, .611)))
_ROMAN.update({c: .5 for c in "0123456789/"} | {c: .278 for c in ".,:;!'|"} | {" ": .333, "-": .333, "(": .389,
                                                                           ")": .389, "%": .833})
_BIN = {"+": .778, "-": .778, "*": .5, r"\cdot": .278, r"\times": .778, r"\otimes": .778, r"\oplus": .778,
        r"\pm": .778, r"\mp": .778, r"\ast": .5, r"\circ": .5, r"\cup": .667, r"\cap": .667, r"\setminus": .5,
        r"\odot": .778, r"\wedge": .667, r"\vee": .667}
_REL = {r"\in": .667, r"\notin": .667, r"\mid": .278, ":": .278} | {r: .778 for r in (
    "=", "<", ">", r"\le", r"\leq", r"\ge", r"\geq", r"\approx", r"\sim", r"\simeq", r"\propto", r"\equiv", r"\ne",
    r"\neq", r"\subset", r"\subseteq", r"\supset", r"\supseteq", r"\perp", r"\lesssim", r"\gtrsim", r"\cong",
    r"\succ", r"\prec", r"\succeq", r"\preceq", r"\asymp", r"\models")} | {r: 1.0 for r in (
    r"\to", r"\rightarrow", r"\mapsto", r"\ll", r"\gg", r"\Rightarrow", r"\Leftarrow", r"\Leftrightarrow",
    r"\leftarrow", r"\gets", r"\leftrightarrow", r"\hookrightarrow")} | {r: 1.278 for r in (
    r"\iff", r"\implies", r"\longrightarrow", r"\longmapsto", r"\coloneqq")}
_OPEN = {"(": .389, "[": .278, r"\{": .5, r"\langle": .389, r"\lVert": .5, r"\lvert": .278, r"\lbrace": .5,
         r"\lfloor": .444, r"\lceil": .444}
_CLOSE = {")": .389, "]": .278, r"\}": .5, r"\rangle": .389, r"\rVert": .5, r"\rvert": .278, r"\rbrace": .5,
          r"\rfloor": .444, r"\rceil": .444}
_PUNCT = {",": .278, ";": .278}
_ORD = {"'": .3, "|": .278, "!": .278, ".": .278, "/": .5, r"\|": .5, r"\Vert": .5, r"\vert": .278} | {
    "\\" + name: w for name, w in dict(
        alpha=.64, beta=.566, gamma=.518, delta=.444, epsilon=.466, varepsilon=.466, zeta=.438, eta=.497,
        theta=.469, vartheta=.591, iota=.354, kappa=.576, lambda_=.583, mu=.603, nu=.494, xi=.438, pi=.57,
        varpi=.828, rho=.517, varrho=.517, sigma=.571, tau=.437, upsilon=.54, phi=.596, varphi=.654, chi=.626,
        psi=.651, omega=.622, Gamma=.625, Delta=.833, Theta=.778, Lambda=.694, Xi=.667, Pi=.75, Sigma=.722,
        Upsilon=.778, Phi=.722, Psi=.778, Omega=.722, infty=1.0, partial=.6, nabla=.833, top=.778, bot=.778,
        ell=.417, star=.5, cdots=1.172, ldots=1.172, dots=1.172, dotsb=1.172, dotsc=1.172, vdots=.278,
        ddots=1.172, prime=.275, forall=.556, exists=.556, emptyset=.5, varnothing=.5, hbar=.54, dagger=.444,
        square=.778, checkmark=.833, bullet=.5, neg=.667, colon=.278, aleph=.611,
    ).items()} | {"\\" + c: .5 for c in "#$%&_"}
_ORD["\\lambda"] = _ORD.pop("\\lambda_")
#: Large operators and operator names (``\ln``): a thin space after them.
_OP = {r"\sum": 1.1, r"\prod": 1.0, r"\int": .556, r"\oint": .556, r"\bigcup": .833, r"\bigcap": .833,
       r"\bigotimes": 1.111, r"\bigoplus": 1.111} | {"\\" + name: sum(_ROMAN[c] for c in name) for name in (
           "ln log det exp sin cos tan max min lim sup inf dim tanh arg Pr ker rank diag sinh cosh sgn argmin "
           "argmax gcd").split()}
_SPACE = {r"\,": .167, r"\:": .222, r"\>": .222, r"\;": .278, r"\!": -.167, r"\quad": 1.0, r"\qquad": 2.0,
          "\\ ": .333, "~": .333, r"\enspace": .5, r"\thinspace": .167}
#: Delimiter sizes: how much wider than a plain ( a \big( is.
_BIG = {r"\big": .07, r"\bigl": .07, r"\bigr": .07, r"\Big": .2, r"\Bigl": .2, r"\Bigr": .2, r"\bigg": .35,
        r"\biggl": .35, r"\biggr": .35, r"\Bigg": .5, r"\left": 0.0, r"\right": 0.0, r"\middle": 0.0}
_TEXT = {r"\text", r"\textrm", r"\mbox", r"\textnormal", r"\textsf", r"\texttt", r"\textup"}
_ROMAN_FONT = {r"\mathrm", r"\operatorname", r"\mathsf", r"\mathtt", r"\mathop"}
_BOLD = {r"\mathbf", r"\boldsymbol", r"\bm", r"\textbf", r"\pmb"}
_CALLIGRAPHIC = {r"\mathcal", r"\mathbb", r"\mathscr", r"\mathfrak"}
#: Commands whose width is their argument's.
_SAME_WIDTH = {"\\" + name for name in (
    "hat tilde bar dot ddot vec check breve acute grave mathring widehat widetilde overline underline "
    "overrightarrow underbrace overbrace mathit emph textit phantom mathbin mathrel").split()}
_NOTHING = {"\\" + name for name in
            "displaystyle textstyle scriptstyle rm it bf limits nolimits nonumber notag mathstrut".split()}
#: Sub- and superscripts are set at 70.7 % (scriptstyle); a superscript sits a little to the right.
_SCRIPT = .707
_SCRIPT_KERN = {"^": .12, "_": .03}
#: TeX's spacing around a binary operator, a relation, after punctuation and an operator, in em.
_SPACING = {"bin": 2 * .222, "rel": 2 * .278, "punct": .167, "op": .167}

_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\s+|.", re.S)


class Layout:
    """A rough TeX layout of one inline formula, in em of the surrounding text (:meth:`width`).

    Each token has its glyph's width (TeX's fonts); a sub- or superscript is 70.7 % of its base size and a
    stacked pair counts its wider one; an inline ``\\frac`` is its wider part at script size; ``\\sqrt``
    adds its radical; a binary operator, a relation, punctuation and an operator name carry TeX's spacing.
      >>> round(Layout("x").width(), 3), round(Layout("a+b").width(), 3), round(Layout("-a").width(), 3)
      (0.572, 2.18, 1.307)
    """

    def __init__(self, tex: str):
        self.tokens = [t for t in _TOKEN.findall(tex) if not t.isspace()]
        self.at = 0
        self.script = 0  # > 0 inside a script or an inline fraction, where TeX adds no spacing

    def _take(self) -> str | None:
        token = self.tokens[self.at] if self.at < len(self.tokens) else None
        self.at += 1
        return token

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _group_text(self) -> str:
        """The raw text of the next argument (a braced group or one token)."""
        first = self._take()
        if first != "{":
            return first or ""
        depth, out = 1, []
        while (token := self._take()) is not None:
            depth += (token == "{") - (token == "}")
            if depth == 0:
                break
            out.append(token)
        return "".join(out)

    def _argument(self, script: bool = False) -> float:
        token = self._take()
        self.script += script
        found = 0.0 if token is None else self.width(stop="}") if token == "{" else self._atom(token)[0]
        self.script -= script
        return found

    def _command(self, name: str) -> tuple[float, str]:
        """The width and spacing class of a command that takes arguments."""
        if name in ("\\frac", "\\tfrac", "\\dfrac", "\\binom"):
            script = name != "\\dfrac"
            wider = max(self._argument(script), self._argument(script))
            return wider * (1.0 if name == "\\dfrac" else _SCRIPT) + .3 + .8 * (name == "\\binom"), "ord"
        if name == "\\sqrt":
            return .833 + self._argument(), "ord"
        if name in _TEXT:
            return sum(_ROMAN.get(c, .5) for c in self._group_text()), "ord"
        if name in _ROMAN_FONT:
            inner = Layout(self._group_text())
            return inner.width(font=_ROMAN), "op" if name in ("\\operatorname", "\\mathop") else "ord"
        if name in _BOLD:
            return 1.1 * self._argument(), "ord"
        if name in _CALLIGRAPHIC:
            return .8 * len(Layout(self._group_text()).tokens), "ord"
        if name in _BIG:
            delimiter = self._take() or "."
            plain = {**_OPEN, **_CLOSE, **_ORD}.get(delimiter, .4) if delimiter != "." else 0.0
            return plain + _BIG[name] * (delimiter != "."), "open" if delimiter in _OPEN else "ord"
        if name in _SAME_WIDTH:
            return self._argument(), {"\\mathbin": "bin", "\\mathrel": "rel"}.get(name, "ord")
        if name in ("\\begin", "\\end", "\\label", "\\tag"):
            self._group_text()
            return 0.0, "space"
        return (0.0, "space") if name in _NOTHING else (.7, "ord")

    def _atom(self, token: str, font: dict | None = None) -> tuple[float, str]:
        """The width and spacing class (ord, bin, rel, open, close, punct, op, space) of one token."""
        for table, kind in ((_REL, "rel"), (_BIN, "bin"), (_OPEN, "open"), (_CLOSE, "close"), (_PUNCT, "punct"),
                            (_OP, "op"), (_SPACE, "space"), (_ORD, "ord")):
            if token in table:
                return table[token], kind
        if token == "{":
            return self.width(stop="}", font=font), "ord"
        if token.startswith("\\"):
            return self._command(token)
        return (font or _ITALIC).get(token, .5), "ord"

    def width(self, stop: str | None = None, font: dict | None = None) -> float:
        """Width in em of the tokens up to ``stop`` (the end of the formula when None)."""
        total, previous = 0.0, "start"
        while (token := self._take()) not in (None, stop):
            if token in _SCRIPT_KERN:
                script = self._argument(True)
                if self._peek() in _SCRIPT_KERN and self._peek() != token:
                    self._take()
                    script = max(script, self._argument(True))
                total += _SCRIPT * script + _SCRIPT_KERN[token]
                continue
            glyph, kind = self._atom(token, font)
            if kind == "bin" and previous in ("start", "bin", "rel", "open", "punct", "op"):
                kind = "ord"  # a unary minus
            total += glyph + (0.0 if self.script else _SPACING.get(kind, 0.0))
            previous = previous if kind == "space" else kind
        return total


def formula_px(tex: str) -> float:
    """The estimated width in CSS px of ``$tex$`` in the book's 16 px body text."""
    return Layout(tex).width() * MATHJAX_SCALE * TEXT_PX


# ----------------------------------------------------------------------------- where each formula sits

_FENCE = re.compile(r"^(\s*)(`{3,}|:{3,})\s*(\{([^}]*)\})?")
_ITEM = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+")
#: ``$...$`` as MyST's dollarmath reads it (no space inside the dollars, no digit after), and {math}`...`.
_INLINE = re.compile(r"(?<![\\$])\$(?!\$)(?=\S)((?:\\.|[^$\\])+?)(?<=\S)\$(?![$\d])|\{math\}`([^`]+)`", re.S)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_DISPLAY = re.compile(r"\$\$.*?\$\$", re.S)


@dataclass(frozen=True)
class Formula:
    """An inline formula of a source, with the line it starts on and the width of its block at 420 px."""

    tex: str
    line: int
    block_px: float

    @property
    def px(self) -> float:
        return formula_px(self.tex)


def _block_px(fences: list[str], lists: list[int]) -> float:
    boxes = [name for name in fences if name]
    cut = sum(PROOF_PX if name == "prf:proof" else BOX_PX for name in boxes)
    return BLOCK_PX - cut - LIST_PX * len(lists)


def _paragraphs(text: str) -> list[tuple[int, str, float]]:
    """``(first line, text, block px)`` for each run of prose lines outside code, display maths, tables
    and headings (which keep their own width), with the block width its holders leave."""
    runs: list[tuple[int, str, float]] = []
    fences: list[str] = []  # the directive names open (code: None, skipped)
    closers: list[str] = []
    lists: list[int] = []  # content indents of the open list items
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if match and closers and match.group(2) == closers[-1] and not match.group(3):
            fences.pop(), closers.pop()
            continue
        if match and (not fences or fences[-1] is not None):
            name = (match.group(4) or "").strip()
            fences.append(None if name in ("", "code-cell", "code", "math", "list-table", "table") else name)
            closers.append(match.group(2))
            continue
        stripped = line.strip()
        if (fences and fences[-1] is None) or stripped.startswith(("|", "#", ":")) or not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        item = _ITEM.match(line)
        lists = [i for i in lists if i <= indent] + [item.end()] if item else [i for i in lists if i <= indent]
        runs.append((number, line, _block_px(fences, lists)))
    return runs


def inline_formulas(text: str) -> list[Formula]:
    """Every inline formula of a MyST source with the width of the block that holds it."""
    runs = _paragraphs(text)
    lines = {number: px for number, _, px in runs}
    # Join consecutive prose lines (a formula may span two), keeping where each starts.
    joined, starts, offset = [], [], 0
    for number, line, _ in runs:
        starts.append((offset, number))
        joined.append(line)
        offset += len(line) + 1
    prose = _DISPLAY.sub(lambda m: " " * len(m.group()), "\n".join(joined))
    prose = _CODE_SPAN.sub(lambda m: " " * len(m.group()) if "{math}" not in m.group() else m.group(), prose)
    found = []
    for match in _INLINE.finditer(prose):
        number = max(n for start, n in starts if start <= match.start())
        found.append(Formula(match.group(1) or match.group(2), number, lines[number]))
    return found


def too_wide(md: Path) -> list[str]:
    """One line per inline formula of ``md`` wider than ``MARGIN`` of its block at a 420 px window."""
    return [f"{md.name}:{f.line}: ${f.tex}$ is about {f.px:.0f} px in a {f.block_px:.0f} px block"
            for f in inline_formulas(md.read_text()) if f.px > MARGIN * f.block_px]


SOURCES = sorted((ROOT / "book").glob("*.md"))


@pytest.mark.parametrize("md", SOURCES, ids=[p.stem for p in SOURCES])
def test_no_inline_formula_runs_past_its_block_on_a_phone(md):
    wide = too_wide(md)
    assert not wide, ("inline maths does not break: make these display maths ($$...$$) or split them\n"
                      + "\n".join(wide))


def test_the_estimate_follows_the_browser():
    """Widths Chromium measured on the built book at 420 px (16 px text): the estimate is at most 7 % short and 10 % long."""
    measured = json.loads((Path(__file__).with_name("inline_math_widths.json")).read_text())
    off = [(tex, px, round(formula_px(tex))) for tex, px in measured if not -.07 < formula_px(tex) / px - 1 < .1]
    assert len(measured) > 50 and not off, off


def test_the_holders_narrow_the_block(tmp_path):
    wide = r"\mathrm{Tr}[(K_U+TI)^{-1}K_U]-y^\top(K_U+TI)^{-1}K_U(K_U+TI)^{-1}y"
    text = "\n".join([
        "Plain $x$ and a wide $" + wide + "$.", "", "- an item $a=b$", "  - nested $c$", "",
        "```{exercise}", ":label: ex", "In a box $d$.", "```", "", "```{code-cell} ipython3", "s = '$e$'", "```",
        "", "$$", wide, "$$", "", "| a table | $f$ |", "", "```{prf:proof}", "A proof $g$ and `$h$`.", "```"])
    found = {f.tex: f.block_px for f in inline_formulas(text)}
    assert found == {"x": BLOCK_PX, wide: BLOCK_PX, "a=b": BLOCK_PX - LIST_PX, "c": BLOCK_PX - 2 * LIST_PX,
                     "d": BLOCK_PX - BOX_PX, "g": BLOCK_PX - PROOF_PX}
    md = tmp_path / "page.md"
    md.write_text(text)
    assert [line.split(":")[1] for line in too_wide(md)] == ["1"]
