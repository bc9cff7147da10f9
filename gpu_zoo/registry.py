"""The one table of environment ids. A new environment adds one line here."""

from __future__ import annotations

import importlib

from .core.api.spec import EnvSpec

# id -> "module:attribute" of its EnvSpec; imported on first use so `import gpu_zoo` stays light.
_ENTRIES: dict[str, str] = {
    "tag_continuous_v0": "gpu_zoo.tag.continuous:SPEC",
    "tag_gridworld_v0": "gpu_zoo.tag.gridworld:SPEC",
    "simple_tag_v3": "gpu_zoo.mpe.simple_tag:SPEC",
    "simple_v3": "gpu_zoo.mpe.simple:SPEC",
    "simple_spread_v3": "gpu_zoo.mpe.simple_spread:SPEC",
    "simple_adversary_v3": "gpu_zoo.mpe.simple_adversary:SPEC",
    "simple_push_v3": "gpu_zoo.mpe.simple_push:SPEC",
    "simple_speaker_listener_v4": "gpu_zoo.mpe.simple_speaker_listener:SPEC",
    "simple_reference_v3": "gpu_zoo.mpe.simple_reference:SPEC",
    "simple_crypto_v3": "gpu_zoo.mpe.simple_crypto:SPEC",
    "simple_formation_v1": "gpu_zoo.mpe.simple_formation:SPEC",
    "simple_line_v1": "gpu_zoo.mpe.simple_line:SPEC",
    "simple_world_comm_v3": "gpu_zoo.mpe.simple_world_comm:SPEC",
    "collect_treasure_v1": "gpu_zoo.mpe.collect_treasure:SPEC",
    "gather_trade_build_v0": "gpu_zoo.economy.gather_trade_build:SPEC",
    "connect_four_v3": "gpu_zoo.classic.connect_four:SPEC",
    "tictactoe_v3": "gpu_zoo.classic.tictactoe:SPEC",
    "go_v5": "gpu_zoo.classic.go:SPEC",
    "rps_v2": "gpu_zoo.classic.rps:SPEC",
    "chess_v6": "gpu_zoo.classic.chess:SPEC",
    "pursuit_v5": "gpu_zoo.sisl.pursuit:SPEC",
}


def registered_envs() -> tuple[str, ...]:
    return tuple(_ENTRIES)


def get_spec(env_id: str) -> EnvSpec:
    try:
        target = _ENTRIES[env_id]
    except KeyError:
        raise ValueError(f"unknown env id {env_id!r}; registered: {list(_ENTRIES)}") from None
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def entry(env_id: str) -> str:
    """The ``"module:attribute"`` of ``env_id``'s spec: what another process registers to find it."""
    get_spec(env_id)
    return _ENTRIES[env_id]


def register(env_id: str, target: str):
    """Registers a user env: ``register("my_env_v0", "my_pkg.my_env:SPEC")``."""
    if env_id in _ENTRIES and _ENTRIES[env_id] != target:
        raise ValueError(f"env id {env_id!r} is already registered to {_ENTRIES[env_id]}")
    _ENTRIES[env_id] = target
