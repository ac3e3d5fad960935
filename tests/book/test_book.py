"""The book's sources: toc entries exist, .md/.ipynb pairs agree and carry no outputs, chapters
install paththeory on Colab, the build configuration is strict, and environment.yml lists
the same dependencies as pyproject.toml."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

import paththeory

from tests.conftest import toc_entries

ROOT = Path(__file__).resolve().parents[2]
CODE_CELL = "```{code-cell}"


# --------------------------------------------------------------------------- helpers


def toc_sources() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [ROOT / f"{entry}.md" for entry in toc_entries(toc)]


def is_notebook(md: Path) -> bool:
    """A page with code cells or a jupytext header is a notebook (a chapter) and must be paired."""
    text = md.read_text()
    return CODE_CELL in text or "\njupytext:" in text.split("\n---", 1)[0]


def chapters() -> list[Path]:
    """Notebook sources: those in the toc and any other ``book/**/*.md`` notebook."""
    listed = [p for p in toc_sources() if p.exists()]
    others = [p for p in sorted((ROOT / "book").rglob("*.md")) if ".ipynb_checkpoints" not in p.parts]
    return [p for p in dict.fromkeys(listed + others) if is_notebook(p)]


def _cells(nb) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", ()))) for c in nb.cells]


def pair_problems(md: Path) -> list[str]:
    """Why the MyST notebook ``md`` and its paired ``.ipynb`` disagree (empty when they agree)."""
    fix = f"run `jupytext --sync {md.name}` and commit the .ipynb without outputs"
    problems = []
    nb_md = jupytext.read(md)
    formats = nb_md.metadata.get("jupytext", {}).get("formats", "")
    if formats != "md:myst,ipynb":
        problems.append(f"{md.name}: jupytext header must say `formats: md:myst,ipynb` (has {formats!r})")
    ipynb = md.with_suffix(".ipynb")
    if not ipynb.exists():
        return problems + [f"{md.name}: paired notebook {ipynb.name} is missing; {fix}"]
    nb = nbformat.read(ipynb, as_version=4)
    a, b = _cells(nb_md), _cells(nb)
    if len(a) != len(b):
        problems.append(f"{md.name}: {len(a)} cells but {ipynb.name} has {len(b)}; {fix}")
    for i, (ca, cb) in enumerate(zip(a, b)):
        if ca != cb:
            problems.append(f"{md.name}: cell {i} ({ca[0]}) differs from {ipynb.name}; {fix}")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            problems.append(f"{ipynb.name}: cell {i} has outputs; clear them (jupytext --sync writes none)")
    return problems


def requirement_specs(lines: list[str]) -> dict[str, SpecifierSet]:
    """``{canonical name: specifier}`` for PEP 508-like lines (conda's ``name>=x,<y`` included)."""
    out: dict[str, SpecifierSet] = {}
    for line in lines:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        if name in out:
            raise ValueError(f"{name} is listed twice")
        out[name] = req.specifier
    return out


def pyproject_dependencies(pyproject: dict, tools: dict | None = None) -> dict[str, SpecifierSet]:
    """What ``make install`` installs: the package with its widgets and test extras, and the repository
    tooling's own dependencies (``tools/pyproject.toml``, the package itself left out)."""
    project = pyproject["project"]
    extras = project.get("optional-dependencies", {})
    own = [d for d in (tools or {}).get("project", {}).get("dependencies", [])
           if canonicalize_name(Requirement(d).name) != canonicalize_name(project["name"])]
    return requirement_specs(project["dependencies"] + extras.get("widgets", []) + extras.get("book", [])
                             + extras.get("test", []) + own)


def environment_dependencies(env: dict) -> tuple[dict[str, SpecifierSet], SpecifierSet]:
    """Conda dependencies (without ``pip`` and the pip sub-list) and the ``python`` specifier."""
    specs = requirement_specs([d for d in env["dependencies"] if isinstance(d, str) and d != "pip"])
    return {k: v for k, v in specs.items() if k != "python"}, specs.get("python", SpecifierSet())


def dependency_mismatches(pyproject: dict, env: dict, tools: dict | None = None) -> list[str]:
    """Differences of names or specifiers (``None`` = not listed), python vs requires-python."""
    want = pyproject_dependencies(pyproject, tools)
    got, python = environment_dependencies(env)
    problems = [f"{n}: pyproject.toml has {want.get(n)}, environment.yml has {got.get(n)}"
                for n in sorted(set(want) | set(got)) if want.get(n) != got.get(n)]
    requires_python = pyproject["project"]["requires-python"]
    if python != SpecifierSet(requires_python):
        problems.append(f"python: requires-python is {requires_python}, environment.yml has {python}")
    return problems


# --------------------------------------------------------------------------- the book


def test_toc_root_is_intro_and_every_entry_exists():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    assert toc["format"] == "jb-book" and toc["root"] == "book/intro"
    missing = [str(p.relative_to(ROOT)) for p in toc_sources() if not p.exists()]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"


def test_intro_lists_the_chapters_in_toc_order():
    import re

    intro = (ROOT / "book" / "intro.md").read_text()
    section = intro.split("## Chapters\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^- \{doc\}`([^`]+)`", section, flags=re.M)
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    assert ["book/" + name for name in listed] == toc_entries(toc)[1:]


def test_there_are_chapters():
    assert ROOT / "book" / "model.md" in chapters()


@pytest.mark.parametrize("md", chapters(), ids=lambda p: p.name)
def test_chapter_pair_agrees_and_has_no_outputs(md):
    assert pair_problems(md) == []


@pytest.mark.parametrize("md", chapters(), ids=lambda p: p.name)
def test_chapter_is_in_the_toc(md):
    assert md in toc_sources(), f"{md.name} is not listed in _toc.yml (only toc files are built)"


def test_no_orphan_notebooks():
    orphans = [p.name for p in (ROOT / "book").rglob("*.ipynb")
               if ".ipynb_checkpoints" not in p.parts and not p.with_suffix(".md").exists()]
    assert not orphans, f"notebooks without a .md source: {orphans}"


#: The branch the book's Colab buttons open notebooks from (``repository.branch`` of _config.yml).
BRANCH = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["branch"]
#: The first code cell of every chapter, word for word: on Colab it installs paththeory from
#: :data:`paththeory.REPOSITORY` at :data:`BRANCH`, the branch its notebook was opened from (or what
#: PATHTHEORY_INSTALL names), elsewhere it does nothing.
INSTALL_CELL = f"""# On Colab: install paththeory from its repository (JAX there already uses the GPU);
# PATHTHEORY_INSTALL, if set, names what to install instead (a wheel, a fork, a branch).
# Elsewhere this cell does nothing: install with `make install` (the package and the repository tools).
import os
import sys

if "google.colab" in sys.modules:
    import subprocess

    # The branch whose notebooks the Colab buttons open: the package, its answer keys and the notebook agree.
    package = "paththeory @ git+{paththeory.REPOSITORY}@{BRANCH}"
    source = os.environ.get("PATHTHEORY_INSTALL", package)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", source], check=True)"""


@pytest.mark.parametrize("md", chapters(), ids=lambda p: p.name)
def test_a_figure_cell_shows_only_its_figure(md):
    """myst-nb gives a figure cell's label to each of its displayed outputs: a table displayed beside
    the figure repeats the label (a duplicate-target warning, which fails the strict build)."""
    for cell in jupytext.read(md).cells:
        if cell.cell_type == "code" and "figure" in cell.metadata.get("mystnb", {}):
            name = cell.metadata["mystnb"]["figure"].get("name")
            assert "display(" not in cell.source, f"{md.name}: figure cell {name} also displays; split the cell"


def test_the_install_cells_pin_what_the_colab_buttons_open_and_it_exists():
    """The install cells and the Colab buttons name one branch, the publishing workflow builds it, and it
    resolves in this repository (a ref that exists only after a first publish would fail every Colab
    reader's first cell until then)."""
    from paththeory_tools.notebooks import colab_url

    assert f"/blob/{BRANCH}/notebooks/" in colab_url("book/model", paththeory.REPOSITORY, BRANCH)
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    assert workflow[True]["push"]["branches"] == [BRANCH]
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    refs = [f"refs/heads/{BRANCH}", f"refs/remotes/origin/{BRANCH}"]
    found = [r for r in refs if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "-q", "--verify", r],
                                               capture_output=True).returncode == 0]
    assert found, f"the install cells pin {BRANCH!r}, which is no branch of this repository"


@pytest.mark.parametrize("md", chapters(), ids=lambda p: p.name)
def test_first_code_cell_installs_on_colab_and_is_hidden(md):
    first = next(c for c in jupytext.read(md).cells if c.cell_type == "code")
    assert "remove-cell" in first.metadata.get("tags", [])
    assert first.source.strip() == INSTALL_CELL, f"{md.name}: the install cell must read\n{INSTALL_CELL}"


#: The widest line of code a chapter shows: wider lines are cut behind a scrollbar on the page.
CODE_WIDTH = 88


def long_code_lines(md: Path, width: int = CODE_WIDTH) -> list[str]:
    """``"name: cell i, line j (n characters)"`` for every line of a shown code cell of ``md``
    wider than ``width`` (cells tagged ``remove-cell`` are not on the page)."""
    found = []
    for i, cell in enumerate(jupytext.read(md).cells):
        if cell.cell_type != "code" or "remove-cell" in cell.metadata.get("tags", []):
            continue
        for j, line in enumerate(cell.source.splitlines(), 1):
            if len(line) > width:
                found.append(f"{md.name}: cell {i}, line {j} ({len(line)} characters)")
    return found


#: The longest a chapter may be, in source lines: past it, split the chapter (the problem set, a list of exercises, is
#: exempt).
MAX_CHAPTER_LINES = 800


@pytest.mark.parametrize("md", [c for c in chapters() if c.name != "problems.md"], ids=lambda p: p.name)
def test_chapters_stay_readable_in_length(md):
    lines = md.read_text().count("\n")
    assert lines <= MAX_CHAPTER_LINES, f"{md.name} has {lines} lines (at most {MAX_CHAPTER_LINES}): split it"


@pytest.mark.parametrize("md", chapters(), ids=lambda p: p.name)
def test_code_cells_fit_the_page(md):
    long = long_code_lines(md)
    assert not long, f"code lines over {CODE_WIDTH} characters:\n" + "\n".join(long)


def test_the_code_width_check_sees_a_long_line(tmp_path):
    md = _write_pair(tmp_path)
    text = md.read_text()
    assert not long_code_lines(md)
    md.write_text(text.replace("x = 1", "x = " + "1 + " * 30 + "1"))
    assert long_code_lines(md) == [f"{md.name}: cell 1, line 1 (125 characters)"]


def test_the_repository_address_is_the_same_everywhere():
    import re

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["repository"]["url"] == paththeory.REPOSITORY
    readme = (ROOT / "README.md").read_text()
    for url in re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", readme):
        assert url.removesuffix(".git") == paththeory.REPOSITORY, url


def test_build_configuration_is_strict():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    execute = config["execute"]
    assert execute["execute_notebooks"] == "force"
    assert execute["allow_errors"] is False and execute["raise_on_error"] is True
    assert execute["timeout"] >= 600
    assert config["only_build_toc_files"] is True
    assert {"**/*.ipynb", ".venv", "_build", "README.md"} <= set(config["exclude_patterns"])
    assert config["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert config["repository"] == {"url": paththeory.REPOSITORY, "path_to_book": "", "branch": "main"}
    assert config["sphinx"]["config"]["nb_merge_streams"] is True  # one output box per cell's prints


# --------------------------------------------------------------------------- the pair checker itself


def _write_pair(tmp_path: Path) -> Path:
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("x = 1\nprint(x)")],
        metadata={"jupytext": {"formats": "md:myst,ipynb"},
                  "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    md = tmp_path / "chapter.md"
    jupytext.write(nb, md, fmt="md:myst")
    nbformat.write(nb, md.with_suffix(".ipynb"))
    return md


def test_pair_checker_accepts_a_fresh_pair(tmp_path):
    assert pair_problems(_write_pair(tmp_path)) == []


def test_pair_checker_catches_drift_outputs_and_missing_pair(tmp_path):
    md = _write_pair(tmp_path)
    ipynb = md.with_suffix(".ipynb")
    raw = json.loads(ipynb.read_text())

    drifted = json.loads(json.dumps(raw))
    drifted["cells"][1]["source"] = "x = 2\nprint(x)"
    ipynb.write_text(json.dumps(drifted))
    assert any("cell 1 (code) differs" in p for p in pair_problems(md))

    executed = json.loads(json.dumps(raw))
    executed["cells"][1]["execution_count"] = 1
    executed["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    ipynb.write_text(json.dumps(executed))
    assert any("has outputs" in p for p in pair_problems(md))

    ipynb.unlink()
    assert any("is missing" in p for p in pair_problems(md))


# --------------------------------------------------------------------------- environment.yml


def test_environment_yml_matches_pyproject():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tools = tomllib.loads((ROOT / "tools" / "pyproject.toml").read_text())
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert dependency_mismatches(pyproject, env, tools) == []


def test_dependency_checker_catches_mismatches():
    pyproject = {"project": {"requires-python": ">=3.11", "dependencies": ["numpy>=1.26"],
                             "optional-dependencies": {"book": ["jupyter-book>=1.0,<2"], "test": ["pytest>=7"]}}}
    env = {"dependencies": ["python>=3.11", "pip", "numpy>=1.26", "jupyter_book<2,>=1.0", "pytest>=7",
                            {"pip": ["-e ."]}]}
    assert dependency_mismatches(pyproject, env) == []  # order and name spelling do not matter
    env["dependencies"][2] = "numpy>=1.25"
    env["dependencies"].append("scipy")
    assert len(dependency_mismatches(pyproject, env)) == 2


# --------------------------------------------------------------------------- the built-HTML check


def _check_html():
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_html", ROOT / ".ci" / "check_html.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("bad", ["as in spec §7.3", "written to /tmp/xyz/results.json", "Traceback (most recent call last):",
                                 "see {doc}`markov`", "```{code-cell}", "../shared/checkpoints/omniglot_l2h8.npz"])
def test_html_check_flags_internal_material(tmp_path, bad):
    check = _check_html()
    (tmp_path / "index.html").write_text("<html><body><article><p>Fine text.</p></article></body></html>")
    (tmp_path / "page.html").write_text(f"<html><body><article><p>Before. {bad} After.</p></article>"
                                        "<script>var spec = '/tmp/'</script></body></html>")
    found = check.problems(tmp_path)
    assert len(found) == 1 and found[0].startswith("page.html: ")
    assert check.main(["check_html", str(tmp_path)]) == 1
    (tmp_path / "page.html").write_text("<html><body><article><p>Clean.</p></article></body></html>")
    assert check.main(["check_html", str(tmp_path)]) == 0


def test_html_check_flags_an_inline_script_a_page_carries_twice(tmp_path):
    check = _check_html()
    script = '<script>const THEBE_JS_URL = "x"</script>'
    (tmp_path / "page.html").write_text(f"<html><head>{script}<script>let a = 1;</script>{script}</head>"
                                        "<body><article><p>Fine.</p></article></body></html>")
    assert check.repeated_scripts((tmp_path / "page.html").read_text()) == [
        "inline script twice ('const THEBE_JS_URL = \"x\"')"]


def test_html_check_wants_the_shipped_mathjax_on_every_page(tmp_path):
    """Formulas render offline: each page loads MathJax from the book's own _static (book/_static/mathjax),
    which _config.yml names and which ships in the repository."""
    check = _check_html()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    assert "_static/" + config["mathjax_path"] == check.LOCAL_MATHJAX
    assert (ROOT / "book" / check.LOCAL_MATHJAX.replace("_static/", "_static/", 1)).is_file()
    assert (ROOT / "book" / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    page = '<html><head><script src="{}"></script></head><body><article><p>Fine.</p></article></body></html>'
    (tmp_path / "index.html").write_text(page.format(check.LOCAL_MATHJAX))
    (tmp_path / "_static" / "mathjax").mkdir(parents=True)
    (tmp_path / check.LOCAL_MATHJAX).write_text("// MathJax")
    assert check.problems(tmp_path) == []
    (tmp_path / "cdn.html").write_text(page.format("https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"))
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "missing.html").write_text(page.format("_static/mathjax/tex-chtml-full.js"))
    found = check.problems(tmp_path)
    assert [line.split(":")[0] for line in found] == ["book/missing.html", "cdn.html"], found


def test_live_widgets_do_not_run_in_the_book_build():
    """The ipywidgets explorer opens comms with the kernel; the build skips it (a hang was seen there,
    issue 16) and shows the pre-rendered explorer instead. Jupyter and Colab still run it."""
    live = [(md.name, c) for md in chapters() for c in jupytext.read(md).cells
            if c.cell_type == "code" and "explorer(" in c.source and "static_explorer(" not in c.source]
    assert live, "no live explorer cell found"
    for name, cell in live:
        assert {"remove-cell", "skip-execution"} <= set(cell.metadata.get("tags", [])), name


def test_the_publishing_workflow_builds_the_book_and_its_pdf_on_pushes_to_main():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    assert workflow[True]["push"]["branches"] == ["main"]  # YAML reads the key "on" as True
    steps = workflow["jobs"]["build"]["steps"]
    commands = " ".join(str(step.get("run", "")) for step in steps)
    assert "make test" in commands and "make book" in commands and "make pdf" in commands
    assert ".ci/colab-check" in commands  # every chapter as on Colab (CI runs two)
    assert {"path": "_build/html"} in [step.get("with") for step in steps]
    assert any(str(step.get("uses", "")).startswith("actions/deploy-pages") for step in workflow["jobs"]["deploy"]["steps"])
    tag = " ".join(str(step.get("run", "")) for step in workflow["jobs"]["tag"]["steps"])
    assert workflow["jobs"]["tag"]["needs"] == "build" and workflow["jobs"]["tag"]["permissions"] == {"contents": "write"}
    assert 'git tag "v$version"' in tag and "pyproject.toml" in tag  # a fixed version to cite and install
    makefile = (ROOT / "Makefile").read_text()
    assert "--builder singlehtml" in makefile and "--print-to-pdf=_build/paththeory.pdf" in makefile
