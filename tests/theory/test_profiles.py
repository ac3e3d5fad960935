"""Profiles: the PATHTHEORY_PROFILE switch, its GPU-dependent default, choose() and describe()."""

import pytest

from paththeory import profiles
from paththeory.profiles import ENV_VAR, PROFILES, choose, current_profile, describe


def test_the_three_profiles_exist():
    assert list(PROFILES) == ["smoke", "colab", "paper"]


@pytest.mark.parametrize("name", ["smoke", "colab", "paper"])
def test_explicit_name_wins_over_environment(monkeypatch, name):
    monkeypatch.setenv(ENV_VAR, "paper" if name != "paper" else "smoke")
    assert current_profile(name) == name


def test_environment_variable_is_read_and_normalised(monkeypatch):
    monkeypatch.setenv(ENV_VAR, " Colab ")
    assert current_profile() == "colab"


@pytest.mark.parametrize("gpu, expected", [(True, "colab"), (False, "smoke")])
def test_default_depends_on_gpu(monkeypatch, gpu, expected):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(profiles, "_has_gpu", lambda: gpu)
    assert current_profile() == expected


def test_empty_environment_variable_means_default(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "")
    monkeypatch.setattr(profiles, "_has_gpu", lambda: False)
    assert current_profile() == "smoke"


def test_default_matches_this_machine(monkeypatch):
    import jax

    monkeypatch.delenv(ENV_VAR, raising=False)
    assert current_profile() == ("smoke" if jax.default_backend() == "cpu" else "colab")


def test_unknown_name_lists_valid_ones(monkeypatch):
    with pytest.raises(ValueError, match="smoke, colab, paper"):
        current_profile("fast")
    monkeypatch.setenv(ENV_VAR, "huge")
    with pytest.raises(ValueError, match=ENV_VAR):
        current_profile()


def test_choose_picks_the_entry_of_the_profile(monkeypatch):
    sizes = {"smoke": 10, "colab": 100, "paper": 1000}
    assert choose(sizes, "colab") == 100
    monkeypatch.setenv(ENV_VAR, "paper")
    assert choose(sizes) == 1000


def test_choose_rejects_missing_and_misspelt_entries():
    with pytest.raises(ValueError, match="no entry for profile 'paper'"):
        choose({"smoke": 1, "colab": 2}, "paper")
    with pytest.raises(ValueError, match="not profiles"):
        choose({"smoke": 1, "colab": 2, "papr": 3}, "smoke")


def test_describe_names_the_profile():
    for name in PROFILES:
        assert describe(name).startswith(f"This page was computed with the {name} sizes: ")
        assert "continuous integration" not in describe(name)


def test_describe_names_the_device_for_readers(monkeypatch):
    import jax

    assert describe("smoke", device=True) == describe("smoke") + " It ran on a CPU."

    class FakeGpu:
        device_kind = "NVIDIA H100 80GB HBM3"

    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(jax, "devices", lambda: [FakeGpu()])
    assert describe("colab", device=True).endswith(" It ran on a GPU (NVIDIA H100 80GB HBM3).")
