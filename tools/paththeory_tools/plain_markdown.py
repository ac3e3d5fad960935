"""MyST Markdown to plain Markdown, as Jupyter and Colab render it (the Colab and student notebooks)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

@dataclass
class MarkdownContext:
    titles: dict
    citations: dict
    labels: dict
    chapters: tuple = ()
    equations: dict | None = None
    #: The published book's address: with it, ``{doc}``, ``{ref}``, ``{numref}``, ``{prf:ref}``
    #: and other pages' ``{eq}`` become links to its pages (``<base_url>/<book folder>/<page>.html#<anchor>``).
    base_url: str | None = None
    #: ``{label: (page, anchor)}`` of every target of the book (labels, theorems, equations, figures).
    anchors: dict = field(default_factory=dict)
    #: The book folder's path in the published book (``book``).
    folder: str = "book"
    #: Whether the notebook keeps its worked solutions (the full edition) or stubs them (students).
    solutions: bool = False
    #: The book's numbers of its targets, as the web book shows them: ``{label: "Proposition 2.1"}`` for
    #: theorems, exercises and figures, and ``{label: "2.3"}`` in :attr:`equation_numbers` for equations
    #: (chapter number from ``_toc.yml``'s numbered parts, then the count of that kind on the page).
    numbers: dict = field(default_factory=dict)
    equation_numbers: dict = field(default_factory=dict)

    @classmethod
    def from_book(cls, book_dir, chapters=(), base_url: str | None = None) -> MarkdownContext:
        titles, labels, citations, anchors, numbers, equation_numbers = {}, {}, {}, {}, {}, {}
        folder = "book"
        if book_dir is not None:
            book = Path(book_dir)
            folder = book.name
            chapter_numbers = toc_numbers(book.parent / "_toc.yml")
            for md in book.glob("*.md"):
                text = md.read_text()
                number = chapter_numbers.get(f"{folder}/{md.stem}")
                if number is not None:
                    found = book_numbers(text, number)
                    equation_numbers.update(found.pop("equations"))
                    numbers.update(found["targets"])
                head = re.search(r"^# (.+)$", text, re.MULTILINE)
                titles[md.stem] = head.group(1).strip() if head else md.stem
                for m in re.finditer(r"^\(([^)\s]+)\)=\s*\n+(?:#+ (.+)|```+\{admonition\} (.+)|:::+\{admonition\} (.+))?",
                                     text, re.MULTILINE):
                    labels[m.group(1)] = next((g.strip() for g in m.groups()[1:] if g), None)
                    anchors[m.group(1)] = (md.stem, m.group(1))
                theorems = _theorem_labels(text)
                labels.update(theorems)
                anchors.update({lab: (md.stem, lab) for lab in theorems})
                anchors.update({lab: (md.stem, f"equation-{lab}") for lab in _equation_numbers(text)})
                anchors.update({m.group(1): (md.stem, m.group(1))
                                for m in re.finditer(r"^\s+name:\s*['\"]?(fig-[\w-]+)", text, re.MULTILINE)})
            for bib in book.glob("*.bib"):
                citations.update(_read_bib(bib.read_text()))
        return cls(titles, citations, labels, tuple(chapters), base_url=base_url, anchors=anchors, folder=folder,
                   numbers=numbers, equation_numbers=equation_numbers)

    def url(self, page: str, anchor: str = "") -> str:
        """The published book's address of ``page`` (and of ``anchor`` on it, as docutils writes ids)."""
        anchor = re.sub(r"[^a-z0-9]+", "-", anchor.lower()).strip("-")
        return f"{self.base_url.rstrip('/')}/{self.folder}/{page}.html" + (f"#{anchor}" if anchor else "")


def _bib_field(body: str, name: str) -> str | None:
    m = re.search(rf"\b{name}\s*=\s*", body, re.IGNORECASE)
    if not m:
        return None
    i = m.end()
    if i < len(body) and body[i] in "{\"":
        close, depth, j = ("}" if body[i] == "{" else '"'), 0, i
        while j < len(body):
            ch = body[j]
            if body[i] == "{":
                depth += ch == "{"
                depth -= ch == "}"
                if depth == 0:
                    break
            elif ch == close and j > i:
                break
            j += 1
        return body[i + 1 : j]
    return re.match(r"[^,}\n]*", body[i:]).group(0).strip()


def _read_bib(text: str) -> dict:
    """``{key: "Author et al. (year)"}`` from a BibTeX file."""
    out = {}
    for m in re.finditer(r"@\w+\s*\{\s*([^,\s]+)\s*,", text):
        body = text[m.end(): text.find("\n@", m.end()) if "\n@" in text[m.end():] else len(text)]
        authors = [a.strip() for a in re.split(r"\s+and\s+", _bib_field(body, "author") or "") if a.strip()]
        names = [re.sub(r"[{}\\]", "", a.split(",")[0] if "," in a else a.split()[-1]) for a in authors]
        year = _bib_field(body, "year") or "n.d."
        who = names[0] + (" et al." if len(names) > 2 else f" and {names[1]}" if len(names) == 2 else "") if names else m.group(1)
        out[m.group(1)] = f"{who} ({year})"
    return out


_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_ADMONITIONS = {"note", "tip", "hint", "important", "warning", "caution", "attention", "danger", "error", "seealso",
                "admonition", "dropdown", "topic", "sidebar", "margin", "epigraph", "card"}


#: The ``:label:`` option of a directive: ``(name, label)`` of ``{name}`` directives.
_DIRECTIVE_LABEL = r"^[`:]{3,}\{([\w:-]+)\}[ \t]*(.*)\n(?:[ \t]*:[\w-]+:.*\n)*?[ \t]*:label:[ \t]*(\S+)"

#: A written solution: sphinx-exercise's ``{solution}`` directive in a backtick fence, from its opening line
#: to the closing fence of the same length (and the line break after it). Groups: ``fence``, ``args`` (the
#: rest of the opening line: the exercise's label) and ``body`` (options and text). The student edition cuts
#: these (:mod:`paththeory_tools.edition`); grading makes each one a cell (:mod:`paththeory_tools.grading`).
SOLUTION_DIRECTIVE = re.compile(r"^(?P<fence>`{3,})\{solution\}(?P<args>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
                                re.MULTILINE | re.DOTALL)


def _equation_numbers(text: str) -> dict:
    """``{label: number}`` of the labelled equations (``$$ ... $$ (label)``, ``{math}`` ``:label:``) in order."""
    found = re.finditer(r"^\s*\$\$[ \t]*\(([^)\s]+)\)[ \t]*$|" + _DIRECTIVE_LABEL, text, re.MULTILINE)
    labels = [m.group(1) or m.group(4) for m in found if m.group(1) or m.group(2) == "math"]
    return {lab: i + 1 for i, lab in enumerate(labels)}


def toc_numbers(toc_path: str | Path) -> dict:
    """``{file: chapter number}`` of the chapters in ``_toc.yml``'s numbered parts, numbered on across parts
    as Jupyter Book does (``book/model`` is 1); the root page is numbered 0 (its figures are "Figure 1")."""
    path = Path(toc_path)
    if not path.is_file():
        return {}
    import yaml

    toc = yaml.safe_load(path.read_text())
    out = {toc["root"]: 0}
    count = 0
    for part in toc.get("parts", ()):
        if not part.get("numbered"):
            continue
        for chapter in part.get("chapters", ()):
            if "file" in chapter:
                count += 1
                out[chapter["file"]] = count
    return out


#: The opening line of a numbered directive (a sphinx-proof statement, an exercise) and its option lines.
_NUMBERED_DIRECTIVE = re.compile(r"^[`:]{3,}\{(prf:\w+|exercise)\}[^\n]*\n((?:[ \t]*:[\w-]+:.*\n)*)", re.MULTILINE)


def book_numbers(text: str, chapter: int) -> dict:
    r"""The numbers the web book gives the targets of chapter ``chapter``'s MyST ``text``:
    ``{"targets": {label: "Kind c.n"}, "equations": {label: "c.n"}}``. Figures (``name: fig-...``),
    exercises and each kind of sphinx-proof statement (proofs are not numbered) count separately, in
    order of appearance, as do the labelled equations; the root page (``chapter`` 0) numbers them
    ``1, 2, ...``.

    Example:
      >>> text = "```{prf:lemma} A\n:label: lem-a\n```\n```{prf:lemma} B\n:label: lem-b\n```\n" \
      ...        "```{prf:remark}\n:label: rem-c\n```\n$$\nx\n$$ (eq-x)\n"
      >>> book_numbers(text, 2)
      {'targets': {'lem-a': 'Lemma 2.1', 'lem-b': 'Lemma 2.2', 'rem-c': 'Remark 2.1'}, 'equations': {'eq-x': '2.1'}}
    """
    prefix = f"{chapter}." if chapter else ""
    targets, counts = {}, {}
    for m in _NUMBERED_DIRECTIVE.finditer(text):
        kind, options = m.group(1).removeprefix("prf:"), m.group(2)
        if kind == "proof" or ":nonumber:" in options:
            continue
        counts[kind] = counts.get(kind, 0) + 1
        label = re.search(r":label:[ \t]*(\S+)", options)
        if label:
            targets[label.group(1)] = f"{kind.capitalize()} {prefix}{counts[kind]}"
    for i, m in enumerate(re.finditer(r"^\s+name:\s*['\"]?(fig-[\w-]+)", text, re.MULTILINE), 1):
        targets[m.group(1)] = f"Figure {prefix}{i}"
    equations = {label: f"{prefix}{n}" for label, n in _equation_numbers(text).items()}
    return {"targets": targets, "equations": equations}


def _theorem_labels(text: str) -> dict:
    """``{label: "Kind (title)"}`` of the sphinx-proof directives (``{prf:lemma} Title``) and exercises of a page."""
    out = {}
    for m in re.finditer(_DIRECTIVE_LABEL, text, re.MULTILINE):
        if m.group(1).startswith("prf:") or m.group(1) == "exercise":
            kind, title = m.group(1).removeprefix("prf:").capitalize(), m.group(2).strip()
            out[m.group(3)] = f"{kind} ({title})" if title else kind
    return out


def _role(m: re.Match, ctx: MarkdownContext) -> str:
    name, content = m.group(1), m.group(2)
    explicit = re.match(r"^(.*?)\s*<([^>]+)>$", content, re.DOTALL)
    text, target = (explicit.group(1), explicit.group(2)) if explicit else (None, content)
    if name in ("math",):
        return f"${content}$"
    if name in ("eq",):
        return _equation_reference(target, ctx)
    if name in ("cite", "cite:p", "cite:t", "cite:ps", "cite:ts", "footcite"):
        refs = [ctx.citations.get(k.strip(), k.strip()) for k in target.split(",")]
        if name in ("cite:p", "cite:ps", "footcite"):
            return "(" + "; ".join(r.replace(" (", ", ").rstrip(")") for r in refs) + ")"
        return "; ".join(refs)
    if name == "doc":
        doc = target.split("/")[-1].removesuffix(".md").removesuffix(".ipynb")
        label = text or ctx.titles.get(doc, doc)
        if ctx.base_url:
            return f"[{label}]({ctx.url(doc)})"
        return f"[{label}]({doc}.ipynb)" if doc in ctx.chapters else f"*{label}*"
    if name in ("ref", "numref", "term", "abbr", "prf:ref"):
        return _cross_reference(name, text, target, ctx)
    if name in ("sup", "sub"):
        return f"<{name}>{content}</{name}>"
    if name in _PY_ROLES:
        return _code_link(name, text, target, ctx)
    return text or content


def _equation_reference(target: str, ctx: MarkdownContext) -> str:
    """An ``{eq}`` role: the equation's number, a link to it in the web book, or its label in words."""
    number = (ctx.equations or {}).get(target)
    if number:
        return f"({number})"
    if ctx.base_url and target in ctx.anchors:
        page, anchor = ctx.anchors[target]
        if target in ctx.equation_numbers:  # as the web book shows it: (2.3)
            return f"[({ctx.equation_numbers[target]})]({ctx.url(page, anchor)})"
        return f"[the equation of *{ctx.titles.get(page, page)}*]({ctx.url(page, anchor)})"
    return f"the equation '{target}' of the book"


def _cross_reference(name: str, text: str | None, target: str, ctx: MarkdownContext) -> str:
    """A ``{ref}``, ``{numref}``, ``{term}``, ``{abbr}`` or ``{prf:ref}`` role: its title, number or label, linked
    to the web book where the context has a ``base_url``."""
    number = ctx.numbers.get(target) if name in ("numref", "prf:ref") else None
    if text and number and "%s" in text:  # {numref}`Fig. %s <fig-x>`
        text = text.replace("%s", number.split(" ", 1)[1])
    label = ctx.labels.get(target)
    if name == "ref" and ctx.numbers.get(target) and label and label.startswith(ctx.numbers[target].split(" ")[0]):
        # an exercise by {ref}: "Exercise 12.6 (The one-layer action)", as sphinx-exercise writes it
        label = ctx.numbers[target] + label[len(ctx.numbers[target].split(" ")[0]):]
    shown = text or number or label or ("the figure" if target.startswith("fig-") else target)
    if ctx.base_url and target in ctx.anchors and name != "abbr":
        return f"[{shown}]({ctx.url(*ctx.anchors[target])})"
    return shown


#: The roles of Sphinx's Python domain that link an object of the package's API page (``book/api.md``).
_PY_ROLES = {f"py:{kind}" for kind in ("func", "class", "meth", "mod", "data", "attr", "exc", "obj")}


def _code_link(name: str, title: str | None, target: str, ctx: MarkdownContext) -> str:
    """A ``{py:func}`` (``class``, ``meth``, ``mod``, ...) role as code, linked to its entry on the web book's
    API page: ``[`paththeory.action.entropy`](<base_url>/book/api.html#paththeory.action.entropy)``.

    Sphinx's HTML anchor of an autodoc'ed object is its full dotted name (``module-<name>`` for a
    module). ``~`` shows only the last component, an explicit title (``{py:func}`title <target>```)
    shows the title, and ``!`` (no link in Sphinx) keeps only the code.
    """
    plain = target.startswith("!")
    full = target.lstrip("!~.").strip()
    shown = title or (full.rsplit(".", 1)[-1] if target.lstrip("!").startswith("~") else full)
    if plain or not ctx.base_url:
        return f"`{shown}`"
    anchor = f"module-{full}" if name == "py:mod" else full
    return f"[`{shown}`]({ctx.base_url.rstrip('/')}/{ctx.folder}/api.html#{anchor})"


_ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")


def _inline(text: str, ctx: MarkdownContext) -> str:
    return _ROLE.sub(lambda m: _role(m, ctx), text)


def _quote(lines: list[str]) -> list[str]:
    return [("> " + line).rstrip() for line in lines]


def _directive(name: str, arg: str, options: dict, body: list[str], ctx: MarkdownContext) -> list[str]:
    """Plain Markdown lines for one MyST directive (its body already converted)."""
    base = name.split(":")[0]
    if name == "math":
        number = (ctx.equations or {}).get(options.get("label"))
        return ["$$", *body, *([f"\\tag{{{number}}}"] if number else []), "$$"]
    if name in ("code-block", "code", "sourcecode", "code-cell"):
        return [f"```{arg.split()[0] if arg else ''}", *body, "```"]
    if name in ("figure", "image"):
        alt = options.get("alt", "")
        return [f"![{alt}]({arg})", *([""] + body if body else [])]
    if name == "only":
        return [] if "html" in arg or "latex" in arg else body
    if name in ("raw",):
        return body if "html" in arg else []
    if (name in ("toctree", "tableofcontents", "bibliography", "solution-start", "solution-end") or base == "glue"
            or name == "solution" and not ctx.solutions):
        return []  # a gated solution's cells stay (stubbed in a student notebook); its fences go
    if name in ("exercise", "solution"):
        title = "Solution" if name == "solution" else "Exercise" + (f": {arg}" if arg else "")
        return _titled_quote(title, body, ctx)
    if name in ("table", "list-table", "csv-table"):
        return ([f"**{_inline(arg, ctx)}**", ""] if arg else []) + body
    if name in _ADMONITIONS or base == "prf":
        return _titled_quote(*_admonition_title(name, arg, body), ctx)
    return ([f"**{_inline(arg, ctx)}**", ""] if arg else []) + body


def _admonition_title(name: str, arg: str, body: list[str]) -> tuple[str, list[str]]:
    """The bold title and the body of an admonition or sphinx-proof directive: its argument is the title of a
    titled admonition (``admonition``, ``dropdown``...) and of a ``prf:`` directive, else the body's first line."""
    if name in ("admonition", "dropdown", "topic", "sidebar", "card"):
        return arg, body
    if name in ("margin", "epigraph"):
        return "", ([arg, ""] if arg else []) + body
    if name.split(":")[0] == "prf":
        return name.split(":")[-1].capitalize() + (f" ({arg})" if arg else ""), body
    return "See also" if name == "seealso" else name.capitalize(), ([arg, ""] if arg else []) + body


def _titled_quote(title: str, body: list[str], ctx: MarkdownContext) -> list[str]:
    """A block quote: the bold ``title`` (none when empty), a blank line and ``body``, trailing blank lines dropped."""
    lines = ([f"**{_inline(title, ctx)}**", ""] if title else []) + body
    while lines and not lines[-1].strip():
        lines.pop()
    return _quote(lines)


def _closing_fence(lines: list[str], i: int, fence: str) -> int:
    """The index of the line that closes the ``fence`` (backticks or colons) opened on line ``i`` (``len(lines)``
    when none does): the same character, at least as many times, alone on its line."""
    close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    j = i + 1
    while j < len(lines) and not close.match(lines[j]):
        j += 1
    return j


def _directive_options(inner: list[str]) -> tuple[dict, list[str]]:
    """A directive's options (a ``---`` YAML block or ``:key: value`` lines at the top of its body) and the rest of
    its body."""
    options: dict = {}
    if inner and inner[0].strip() == "---":
        end = next((k for k in range(1, len(inner)) if inner[k].strip() == "---"), 0)
        for opt in inner[1:end]:
            if ":" in opt:
                key, _, value = opt.partition(":")
                options[key.strip()] = value.strip()
        return options, inner[end + 1 :]
    inner = list(inner)
    while inner and re.match(r"^:[\w-]+:", inner[0]):
        key, _, value = inner.pop(0)[1:].partition(":")
        options[key.strip()] = value.strip()
    return options, inner


def _convert_lines(lines: list[str], ctx: MarkdownContext) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        d = _DIRECTIVE.match(line)
        if d:
            indent = d.group("indent")
            j = _closing_fence(lines, i, d.group("fence"))
            options, inner = _directive_options([line.removeprefix(indent) for line in lines[i + 1 : j]])
            while inner and not inner[0].strip():
                inner.pop(0)
            name = d.group("name")
            body = inner if name in ("code-block", "code", "sourcecode", "math", "raw") else _convert_lines(inner, ctx)
            out += [indent + l if l else l for l in _directive(name, d.group("arg").strip(), options, body, ctx)]
            i = j + 1
            continue
        f = _FENCE.match(line)
        if f:
            j = _closing_fence(lines, i, f.group(1))
            out += lines[i : j + 1]
            i = j + 1
            continue
        if re.match(r"^\s*\(([^)\s]+)\)=\s*$", line) or re.match(r"^\s*%", line) or line.strip() == "+++":
            i += 1
            continue
        eq = re.match(r"^(\s*)\$\$[ \t]*\(([^)\s]+)\)[ \t]*$", line)
        if eq:
            number = (ctx.equations or {}).get(eq.group(2))
            if number and out and out[-1].strip().endswith("$$") and out[-1].strip() != "$$":
                out[-1] = out[-1].rstrip()[:-2] + f" \\tag{{{number}}}$$"
            else:
                out += ([f"{eq.group(1)}\\tag{{{number}}}"] if number else []) + [f"{eq.group(1)}$$"]
            i += 1
            continue
        out.append(_inline(line, ctx))
        i += 1
    return out


def myst_to_markdown(text: str, context: MarkdownContext | None = None) -> str:
    """Plain Markdown (as Jupyter and Colab render it) for the MyST Markdown ``text`` of a cell.

    Admonitions become block quotes with a bold title, ``$$ ... $$ (label)`` equations get a
    ``\\tag{n}`` and ``{eq}`` references their number, ``{cite}`` becomes "Author (year)",
    ``{doc}`` a link to the chapter's notebook or its title (with the context's ``base_url``,
    references become links to the published book, and ``{py:func}`` and the other Python roles
    links to the object on its API page), ``(label)=`` targets and ``%`` comments are dropped,
    and other roles keep their text.

    Example:
      >>> print(myst_to_markdown("(sec)=\\n```{admonition} Exercise 1\\n:class: tip\\n\\nSee {doc}`model`.\\n```"))
      > **Exercise 1**
      >
      > See *model*.
    """
    ctx = context or MarkdownContext({}, {}, {})
    if ctx.equations is None:
        ctx.equations = _equation_numbers(text)
    how = _HOW_WITH_SOLUTIONS if ctx.solutions else _HOW_IN_A_NOTEBOOK
    text = re.sub(r"\s+".join(map(re.escape, HOW_EXERCISES_WORK.split())), how, text)
    for page, notebook in _NOTEBOOK_WORDING:
        text = re.sub(r"\s+".join(map(re.escape, page.split())), notebook, text)
    text = "\n".join(_convert_lines(text.split("\n"), ctx)).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text)

#: What the web page says that a notebook must say otherwise: ``(on the page, in a notebook)``, in order.
_NOTEBOOK_WORDING = (
    ("(the rocket icon at the top of the page opens it on Colab) ", ""),
    ("The chapter's notebook has one more cell here, hidden on this page:",
     "This notebook has one more cell here, hidden on the book's web page:"),
    ("the rocket icon at the top of a chapter's page", "the Colab button at the top of a chapter's web page"),
    ("the rocket icon", "the Colab button"),
    ("On this page every point", "On the book's web page every point"),
    ("computed when this page was built", "computed when this notebook runs"),
    ("when this page was built", "when this notebook runs"),
    ("the network this page was built with", "the network this notebook runs with"),
    ("the machine that built this page", "the machine that runs this notebook"),
    ("this page's", "this notebook's"),
    ("this page", "this notebook"),
)

#: The sentence that says, in a chapter's text, how the exercises work on the page and in a notebook.
HOW_EXERCISES_WORK = (
    "On this page, the **Solution** under a task (click it to open) holds a worked solution together with the "
    "output of its check; the student edition (see {doc}`exercises`) leaves the solutions out.")
_HOW_IN_A_NOTEBOOK = ("In this notebook each solution is a stub for you to replace; the worked solutions are in the "
                      "book's full edition.")
_HOW_WITH_SOLUTIONS = ("In this notebook each exercise cell holds a worked solution, between `### BEGIN SOLUTION` and "
                       "`### END SOLUTION`: replace it with your own to try the exercise; the student notebooks "
                       "have stubs instead.")
