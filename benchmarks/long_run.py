"""Long runs of random play with the state's invariants checked on the device.

    python -m benchmarks.long_run [--agent-steps 1e9] [--check-every 1e6] [--out FILE.jsonl] [ENV_ID ...]

Each configuration (every registered env at its defaults, plus the large ones in ``EXTRA``) steps
a batch of ``--agent-steps`` agent-steps with fresh random actions every step (for a masked group,
uniform over what its mask allows, and every fourth step uniform over every action, infeasible
ones included). At least every ``--check-every`` agent-steps it checks, without leaving the
device, that:

- every float in the state is finite (a table given as ``Field.init``, like the economy's infinite
  top bracket edge, only where it started finite), and so are the rewards;
- every observation is finite and inside its group's observation space;
- no env's step count passes ``max_cycles``;
- every agent of a masked group has an action its mask allows.

The economy's conservation laws are checked at every step, for every env whose episode did not end
in it (an auto-reset starts a new episode):

- coin (in hand and in escrow, over the workers) changes only by build payments: the new houses of
  each worker times its payment (trades and taxes move coin, never make or destroy it);
- stone and wood (in hand and in escrow) go down by one each per house built and up only by
  gathering: by at most two units (one, and the bonus unit) per worker standing on a source of that
  resource;
- escrow matches the open orders: a worker's escrowed coin is the sum of its open bids' prices and
  its escrowed goods are its open asks;
- no coin, good or escrow is negative, a house stays where it was built, and no worker stands on
  water, in another's house or on another worker.

Failures are counted per check on the device and read once at the end, where the run exits
non-zero if any check failed. One JSON line per configuration goes to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, field

import gymnasium
import torch

import gpu_zoo

# Large configurations beside every env's defaults: the Tag headline batch, and 1000 agents an env.
EXTRA = [
    ("tag_continuous_v0", dict(num_taggers=5, num_runners=95)),
    ("tag_continuous_v0", dict(num_taggers=10, num_runners=990, use_full_observation=False,
                               num_other_agents_observed=10)),
]
TARGET_AGENTS_PER_STEP = 1 << 19  # a batch large enough to fill the GPU, so 10^9 agent-steps take seconds
UNMASKED_EVERY = 4  # every so many steps a masked group plays any action, infeasible ones included


@dataclass
class Failures:
    """Per check, the number of checks that failed and the first step that failed it, kept on the device."""

    device: torch.device
    names: list[str] = field(default_factory=list)
    counts: list[torch.Tensor] = field(default_factory=list)
    first: list[torch.Tensor] = field(default_factory=list)

    def record(self, name: str, ok: torch.Tensor, step: int):
        if name not in self.names:
            self.names.append(name)
            self.counts.append(torch.zeros((), dtype=torch.int64, device=self.device))
            self.first.append(torch.full((), -1, dtype=torch.int64, device=self.device))
        i = self.names.index(name)
        bad = ~ok.all()
        self.counts[i] += bad
        self.first[i].copy_(torch.where(bad & (self.first[i] < 0), step, self.first[i]))

    def read(self) -> dict[str, dict]:
        return {n: {"failed_checks": int(c), "first_step": int(f)}
                for n, c, f in zip(self.names, self.counts, self.first, strict=True) if int(c)}


def batch_size(env_id: str, params: dict) -> int:
    """Envs a batch: about ``TARGET_AGENTS_PER_STEP`` agents, a power of two."""
    probe = gpu_zoo.make(env_id, num_envs=1, device="cpu", **params)
    agents = sum(probe.group_size(g) for g in probe.groups)
    return max(1, 1 << round(math.log2(max(1.0, TARGET_AGENTS_PER_STEP / agents))))


class GenericChecks:
    """Finite state, observations inside their spaces, step counts within ``max_cycles``, masks non-empty."""

    def __init__(self, env):
        self.env = env
        self.floats = []
        for name, fld in env.layout.fields.items():
            if fld.dtype not in ("f32", "f64"):
                continue
            view = env.buffers.raw[name]
            self.floats.append((name, view, None if fld.init is None else torch.isfinite(view.clone())))
        self.bounds = {}
        for g in env.groups:
            sp = env.single_observation_space(g)
            assert isinstance(sp, gymnasium.spaces.Box)
            low = torch.as_tensor(sp.low, device=env.device)
            high = torch.as_tensor(sp.high, device=env.device)
            self.bounds[g] = (low, high)
        self.max_cycles = getattr(env.params, "max_cycles", None)

    def __call__(self, fails: Failures, step: int):
        env = self.env
        for name, view, finite_at_start in self.floats:
            ok = torch.isfinite(view)
            fails.record(f"finite:{name}", ok if finite_at_start is None else ok | ~finite_at_start, step)
        for g, (low, high) in self.bounds.items():
            obs = env.obs[g]
            fails.record(f"obs_in_space:{g}", torch.isfinite(obs) & (obs >= low) & (obs <= high), step)
        if self.max_cycles is not None:
            fails.record("t<=max_cycles", env.state.t <= self.max_cycles, step)
        for g, mask in env.action_masks.items():
            sp = env.single_action_space(g)
            if isinstance(sp, gymnasium.spaces.Discrete):
                fails.record(f"mask_nonempty:{g}", mask.any(-1), step)
            else:
                parts = mask.split([int(n) for n in sp.nvec], dim=-1)
                fails.record(f"mask_nonempty:{g}", torch.stack([p.any(-1) for p in parts]), step)


class EconomyChecks:
    """The economy's conservation laws and positions, step by step (see the module's docstring)."""

    def __init__(self, env):
        from gpu_zoo.economy.layouts import TILE_STONE, TILE_WATER, TILE_WOOD

        self.env, self.n = env, env.params.num_workers
        self.source_of_good = (TILE_STONE, TILE_WOOD)  # goods[..., 0] is stone, goods[..., 1] wood
        self.water = TILE_WATER
        self.before = None

    def snapshot(self):
        s, n = self.env.state, self.n
        self.before = ((s.coin + s.coin_escrow)[:, :n].sum(1), (s.goods + s.goods_escrow)[:, :n].sum(1),
                       s.house.clone())

    def __call__(self, fails: Failures, step: int):
        s, n = self.env.state, self.n
        coin0, goods0, house0 = self.before
        kept = ~s.done  # an env that auto-reset this step starts a new episode
        new_house = (house0 == 0) & (s.house != 0)
        built = torch.stack([(new_house & (s.house == a + 1)).flatten(1).sum(1) for a in range(n)], 1)
        paid = (built * s.build_pay[:, :n]).sum(1)
        coin1 = (s.coin + s.coin_escrow)[:, :n].sum(1)
        fails.record("coin_changes_only_by_build_payments",
                     ~kept | ((coin1 - coin0 - paid).abs() <= 1e-6 * (1.0 + coin0.abs() + coin1.abs())), step)
        goods1 = (s.goods + s.goods_escrow)[:, :n].sum(1)
        change = goods1 - goods0 + built.sum(1, keepdim=True)  # each house took one stone and one wood
        rows, cols = s.row[:, :n].long(), s.col[:, :n].long()
        env_idx = torch.arange(s.tile.shape[0], device=s.tile.device)[:, None]
        under = s.tile[env_idx, rows.clamp(0, s.tile.shape[1] - 1), cols.clamp(0, s.tile.shape[2] - 1)]
        on_source = torch.stack([(under == t).sum(1) for t in self.source_of_good], 1)
        fails.record("goods_change_only_by_gathering_and_building",
                     ~kept[:, None] | ((change >= 0) & (change <= 2 * on_source)), step)
        fails.record("houses_stay", ~kept[:, None, None] | (house0 == 0) | (s.house == house0), step)
        bids = (s.order_kind == 1) * s.order_price
        fails.record("coin_escrow_is_open_bids",
                     (s.coin_escrow[:, :n] - bids.flatten(2).sum(2)).abs() <= 1e-9, step)
        fails.record("goods_escrow_is_open_asks", s.goods_escrow[:, :n] == (s.order_kind == 2).sum(3), step)
        fails.record("nothing_negative", torch.cat([s.coin[:, :n] >= 0, s.coin_escrow[:, :n] >= 0,
                                                    (s.goods[:, :n] >= 0).all(2),
                                                    (s.goods_escrow[:, :n] >= 0).all(2)], 1), step)
        inside = (rows >= 0) & (rows < s.tile.shape[1]) & (cols >= 0) & (cols < s.tile.shape[2])
        owner = s.house[env_idx, rows.clamp(0, s.tile.shape[1] - 1), cols.clamp(0, s.tile.shape[2] - 1)]
        own = torch.arange(1, n + 1, device=owner.device)
        fails.record("workers_on_land_in_no_other_house",
                     inside & (under != self.water) & ((owner == 0) | (owner == own)), step)
        cell = rows * s.tile.shape[2] + cols
        same = (cell[:, :, None] == cell[:, None, :]) & ~torch.eye(n, dtype=torch.bool, device=cell.device)
        fails.record("one_worker_a_tile", ~same.any(2), step)


def run_one(env_id: str, params: dict, device: str, agent_steps: float, check_every: float, seed: int,
            num_envs: int | None = None) -> dict:
    num_envs = num_envs or batch_size(env_id, params)
    t0 = time.perf_counter()
    env = gpu_zoo.make(env_id, num_envs=num_envs, device=device, **params)
    env.reset(seed=seed)
    make_s = time.perf_counter() - t0
    agents = sum(env.group_size(g) for g in env.groups)
    per_step = num_envs * agents
    steps = max(1, math.ceil(agent_steps / per_step))
    every = max(1, int(check_every // per_step))
    fails = Failures(env.device)
    generic = GenericChecks(env)
    economy = EconomyChecks(env) if env_id.startswith("gather_trade_build") else None
    gen = torch.Generator(device=env.device).manual_seed(seed)
    unmasked = {g: env.single_action_space(g) for g in env.action_masks}
    generic(fails, 0)
    sync = torch.cuda.synchronize if env.device.type == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    checks = 1
    for k in range(1, steps + 1):
        env.sample_actions(gen, out=env.actions)
        if k % UNMASKED_EVERY == 0:
            for g, sp in unmasked.items():
                bound = sp.n if isinstance(sp, gymnasium.spaces.Discrete) else torch.as_tensor(
                    sp.nvec, device=env.device)
                draw = torch.rand(env.actions[g].shape, device=env.device, generator=gen) * bound
                env.actions[g].copy_(draw.floor())
        if economy is not None:
            economy.snapshot()
        env.step()
        if economy is not None:
            economy(fails, k)
        if k % every == 0 or k == steps:
            generic(fails, k)
            checks += 1
    sync()
    seconds = time.perf_counter() - t0
    failed = fails.read()
    return {"env_id": env_id, "params": params, "device": str(env.device), "num_envs": num_envs, "agents": agents,
            "steps": steps, "agent_steps": steps * per_step, "checks": checks, "check_every_steps": every,
            "economy_checks_every_step": economy is not None,
            "episodes": int(env.episode_stats()["episodes"].sum()), "make_s": round(make_s, 2),
            "seconds": round(seconds, 2), "agent_steps_per_s_with_checks": steps * per_step / seconds,
            "checks_named": fails.names, "failures": failed, "ok": not failed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("env_ids", nargs="*", help="registered env ids (default: all, and the EXTRA configurations)")
    ap.add_argument("--agent-steps", type=float, default=1e9)
    ap.add_argument("--check-every", type=float, default=1e6, help="agent-steps between the generic checks")
    ap.add_argument("--num-envs", type=int, default=None, help="envs a batch (default: about 2^19 agents)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="append one JSON line per configuration here")
    args = ap.parse_args(argv)
    configs = [(e, {}) for e in (args.env_ids or gpu_zoo.registered_envs())]
    configs += [c for c in EXTRA if not args.env_ids or c[0] in args.env_ids]
    ok = True
    for env_id, params in configs:
        rec = run_one(env_id, params, args.device, args.agent_steps, args.check_every, args.seed, args.num_envs)
        ok &= rec["ok"]
        line = json.dumps(rec)
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(line + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
