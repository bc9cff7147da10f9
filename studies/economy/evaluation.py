"""What the economy study measures: a trained economy's figures at an episode's end, tax schedules read from text.

Shared by `studies.economy.learning`, `.response`, `.swap` and `.planner_credit`, which import it and not each other's
internals.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from gpu_zoo.economy.params import EconomyParams
from gpu_zoo.economy.taxes import saez_fields

SAEZ_STATE = tuple(f.name for f in saez_fields(EconomyParams(tax_model="saez")) if f.name != "saez_bins")


def schedule_rates(text: str) -> tuple[str, tuple[float, ...]]:
    """``NAME=RATE`` (every bracket alike) or ``NAME=R1,...,R7`` (the lowest bracket first): (name, 7 rates)."""
    name, _, rates = text.rpartition("=")
    try:
        values = tuple(float(x) for x in rates.split(","))
    except ValueError:
        values = ()
    if not name or len(values) not in (1, 7) or not all(0.0 <= x <= 1.0 for x in values):
        raise argparse.ArgumentTypeError(f"a schedule is NAME=RATE or NAME=R1,...,R7, rates in [0, 1]; got {text}")
    return name, values * 7 if len(values) == 1 else values


def final_economy(env, policies, seed: int, flat_rate: float | None = None,
                  tax_state: dict[str, torch.Tensor] | None = None) -> dict[str, np.ndarray]:
    """One episode in each env (auto-reset off); productivity, equality and welfare at its end.

    Also ``tax_rates``, each env's marginal rate per bracket averaged over the episode's steps:
    what the planner chose, which the welfare figures alone do not tell. With ``flat_rate`` (a
    multiple of 5%) the planner's action sets that rate on every bracket instead of the policy's.
    ``tax_state`` (`saez_state`) is copied in and kept by the reset, as an auto-reset keeps it: the
    Saez model's rates come from the incomes of the env's past tax days, which a fresh env has not seen.
    """
    from trainers.ppo import policy_actions

    generator = torch.Generator(device=env.device).manual_seed(seed)
    if tax_state:  # copied in before the reset, which then keeps it as an auto-reset would
        for name in SAEZ_STATE:
            getattr(env.state, name).copy_(tax_state[name])
        env.reset(seed=seed, episode_counts=tax_state["ep_count"])
    else:
        env.reset(seed=seed)
    rates = torch.zeros_like(env.state.tax_rate, dtype=torch.float64)
    for _ in range(env.params.max_cycles):
        actions = policy_actions(env, policies, generator)
        if flat_rate is not None:
            actions["planner"] = torch.full_like(env.actions["planner"], 1 + round(flat_rate / 0.05))
        env.step(actions)
        rates += env.state.tax_rate
    if not bool(env.state.done.all()):
        raise RuntimeError("episodes did not end at max_cycles")
    workers = env.layout.groups["worker"]
    coin = (env.state.coin + env.state.coin_escrow)[:, workers.lo:workers.hi].double()
    productivity = coin.mean(1)
    welfare = env.state.util[:, env.layout.groups["planner"].lo].double()  # the env's own welfare figure
    equality = torch.where(productivity > 0, welfare / productivity.clamp_min(1e-12), torch.ones_like(welfare))
    return {k: v.cpu().numpy() for k, v in {"productivity": productivity, "equality": equality, "welfare": welfare,
                                           "tax_rates": rates / env.params.max_cycles}.items()}


def stats(x: np.ndarray) -> dict:
    return {"mean": float(np.mean(x)), "std": float(np.std(x)), "n": int(len(x))}


def figures(economy: dict[str, np.ndarray]) -> dict:
    """Mean, spread and count of each per-episode figure of `final_economy` (not its rates)."""
    return {k: stats(economy[k]) for k in ("productivity", "equality", "welfare")}
