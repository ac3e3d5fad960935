"""Bad files and objects: data files from two copies, a checkpoint with NaN weights, a solution of another theory,
an exercise page without its book, a diagnostics summary of something else. Each case ends in a one-line error that
says what was wrong and how to fix it, never a result from mixed sources or a KeyError from deep inside."""

from __future__ import annotations

import shutil

import jax
import numpy as np
import pytest

from paththeory import training
from paththeory.display.widgets import panel_data
from paththeory.exercises import check
from paththeory.sampling import diagnostics_summary
from paththeory.solve import Theory
from paththeory.tasks import data


def _one_line(err: pytest.ExceptionInfo) -> None:
    assert "\n" not in str(err.value) and "Traceback" not in str(err.value)


def test_mnist_images_and_labels_never_come_from_two_copies(tmp_path):
    shipped = data.locate("mnist", ("t10k-images-idx3-ubyte.gz",), download=False)[0]
    (tmp_path / "mnist").mkdir()
    shutil.copy(shipped, tmp_path / "mnist" / shipped.name)  # the images only: the labels would be the shipped ones
    with pytest.raises(data.DataNotFoundError, match="different folders") as err:
        data.load_mnist("test", root=tmp_path, download=False)
    _one_line(err)
    labels = data.locate("mnist", ("t10k-labels-idx1-ubyte.gz",), download=False)[0]
    shutil.copy(labels, tmp_path / "mnist" / labels.name)  # both from one copy: read
    assert data.load_mnist("test", root=tmp_path, download=False).images.shape == (10_000, 28, 28)


def test_a_panel_refuses_a_solution_of_another_theory(small_problem):
    arch, f_train, y_train, f_test, y_test = small_problem
    mine, other = Theory(arch, f_train, y_train), Theory(arch, f_train, -np.asarray(y_train))
    panel_data(mine, f_test, y_test, mine.solve(10.0, 0.1))  # its own: accepted
    with pytest.raises(ValueError, match="a solution of another Theory") as err:
        panel_data(mine, f_test, y_test, other.solve(10.0, 0.1))
    _one_line(err)
    with pytest.raises(ValueError, match="got ndarray"):
        panel_data(mine, f_test, y_test, np.eye(4))


def test_the_exercises_page_needs_the_book(tmp_path):
    from paththeory_tools.student import write_exercises_page

    with pytest.raises(FileNotFoundError, match="no such folder") as err:
        write_exercises_page(tmp_path / "nobook")
    _one_line(err)
    with pytest.raises(FileNotFoundError, match="it lacks .*problems.md"):
        write_exercises_page(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("diagnostics, match", [
    ({}, "it lacks complete, draws_used, draws_planned"),
    ({"complete": True, "draws_used": 10, "draws_planned": 10}, "it lacks r_hat_max"),
    ({"complete": False, "draws_used": 3, "draws_planned": 10}, "it lacks stopped"),
    ([1, 2], "got list"),
    ({"method": "hmc", "complete": True, "draws_used": 1, "draws_planned": 1, "r_hat_max": 1.0, "ess_bulk_min": 1.0,
      "seconds": 1.0, "divergences": 0, "e_bfmi_min": 1.0}, "method"),
])
def test_a_diagnostics_summary_of_something_else_says_what_it_lacks(diagnostics, match):
    with pytest.raises(ValueError, match=match) as err:
        diagnostics_summary(diagnostics)
    _one_line(err)


def test_check_with_a_list_of_ids_says_how_to_call_it():
    with pytest.raises(TypeError, match="the exercise id is a string") as err:
        check(["model.n_paths"], 24)
    _one_line(err)


def test_a_float16_checkpoint_with_nan_weights_is_refused_as_such(tmp_path):
    from tests.training.test_training import _params

    params = jax.tree.map(lambda a: np.asarray(a, np.float32), _params())
    params["a"] = params["a"] * np.nan
    with pytest.raises(ValueError, match=r"\['a'\] hold NaN or infinite values") as err:
        training.save_checkpoint(tmp_path / "ck", params, {"config": {}}, storage="float16")
    _one_line(err)
    assert list(tmp_path.iterdir()) == []
