"""The registry lists exactly the env modules on disk, and every id builds."""

import pathlib

import gpu_zoo

ROOT = pathlib.Path(gpu_zoo.__file__).parent


def test_registry_matches_versioned_modules_on_disk():
    families = ("tag", "economy", "mpe", "classic", "sisl")
    on_disk = {p.stem for family in families for p in (ROOT / family).glob("*_v[0-9]*.py")}
    assert on_disk == set(gpu_zoo.registered_envs())


def test_every_id_has_a_consistent_spec():
    for env_id in gpu_zoo.registered_envs():
        spec = gpu_zoo.get_spec(env_id)
        assert spec.id == env_id
        assert spec.module and spec.render is not None


def test_every_registered_env_has_the_small_configuration_the_registry_wide_suites_use():
    """The hypothesis, partial-reset, PettingZoo and BenchMARL suites take every env from this one table."""
    from tests.helpers import PZ_CONFIGS

    assert set(PZ_CONFIGS) == set(gpu_zoo.registered_envs()), \
        "declare a small configuration for each new env in tests/helpers.py's PZ_CONFIGS"
    for env_id, kw in PZ_CONFIGS.items():
        gpu_zoo.get_spec(env_id).make_params(**kw)  # valid, checked before any compile
