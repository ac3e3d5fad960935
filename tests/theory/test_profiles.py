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


def test_a_profile_given_as_a_number_is_refused_with_the_names():
    with pytest.raises(TypeError, match="a profile is a name, one of smoke, colab, paper; got 1"):
        profiles.current_profile(1)


@pytest.mark.parametrize("scale, expected", [(None, 600.0), ("2", 1200.0), ("0.5", 300.0), ("0", None), (" 1 ", 600.0)])
def test_the_time_limit_scale_multiplies_the_fail_safe(monkeypatch, scale, expected):
    if scale is None:
        monkeypatch.delenv(profiles.TIME_LIMIT_SCALE_VAR, raising=False)
    else:
        monkeypatch.setenv(profiles.TIME_LIMIT_SCALE_VAR, scale)
    assert profiles.time_limit(600.0) == expected
    assert profiles.time_limit(None) is None


@pytest.mark.parametrize("scale", ["-1", "fast", "inf", "nan"])
def test_a_bad_time_limit_scale_says_what_it_must_be(monkeypatch, scale):
    monkeypatch.setenv(profiles.TIME_LIMIT_SCALE_VAR, scale)
    with pytest.raises(ValueError, match=r"PATHTHEORY_TIME_LIMIT_SCALE must be a number >= 0 .*0 for none\); got"):
        profiles.time_limit(600.0)
