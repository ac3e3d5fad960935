"""Whether the strict build passes must not depend on the machine's load: any stderr output of an executed cell (the
XLA "Very slow compile?" alarm prints only on a busy machine) fails it, on every machine, not only when the HTML check
runs. Builds a two-page book with the repository's own ``execute`` settings: the page that writes to stderr is named,
the quiet one is not, and the strict build fails. The cell writes to file descriptor 2, as XLA's C++ logger does.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
HEADER = "---\njupytext:\n  text_representation:\n    format_name: myst\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n"


def test_stderr_in_an_executed_cell_fails_the_strict_build(tmp_path):
    execute = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]
    assert execute["stderr_output"] in ("warn", "error", "severe")
    config = {"title": "t", "execute": {"execute_notebooks": "force", "stderr_output": execute["stderr_output"]}}
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n- file: quiet\n- file: loud\n")
    (tmp_path / "index.md").write_text(HEADER + "# Index\n")
    (tmp_path / "quiet.md").write_text(HEADER + '# Quiet\n\n```{code-cell} python\nprint("fine")\n```\n')
    (tmp_path / "loud.md").write_text(
        HEADER + '# Loud\n\n```{code-cell} python\nimport os\nos.write(2, b"E0000 Very slow compile?\\n")\n```\n')
    # a book build never runs under pytest, whose PYTEST_CURRENT_TEST stops ipykernel from watching the descriptors
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    build = subprocess.run([sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
                            "build", str(tmp_path), "-W", "--keep-going"], capture_output=True, text=True, timeout=600,
                           env=env)
    log = build.stdout + build.stderr
    assert build.returncode != 0, log[-2000:]
    assert re.search(r"loud\.md:\d+: WARNING: stderr", log) and not re.search(r"quiet\.md:\d+: WARNING", log)


def test_the_book_build_silences_xla_below_fatal_in_every_kernel():
    sys.path.insert(0, str(ROOT / "tools"))
    from paththeory_tools.build import KERNEL_ENVIRONMENT

    assert KERNEL_ENVIRONMENT == {"TF_CPP_MIN_LOG_LEVEL": "3"}
