"""PettingZoo's board games: gpu_zoo's batched face against pgx, random legal moves, in one run.

    python -m benchmarks.classic_speed --label h100 --out benchmarks/results/
    python -m benchmarks.classic_speed --sizes 4096 65536 --steps 200 --games tictactoe go_19x19

Both sides play one move per env per step with auto-reset, legal moves drawn uniformly on the
device: gpu_zoo as ``env.sample_actions(out=env.actions); env.step()``, pgx as
``jax.jit(jax.vmap(auto_reset(env.step, env.init)))`` with the move drawn by
``jax.random.categorical`` over its legal-action mask. Two modes, compared like for like:
``fused`` (``steps`` moves with no Python between them: pgx's ``lax.scan``, gpu_zoo's CUDA graph
of the moves) and ``per_step`` (one call per move from Python). gpu_zoo's ``draw_only`` rate is
its fused graph without the steps: how much of a move the random player itself takes. Each
figure is the best of ``repeats`` timed runs after a warm-up run. Bytes per env-step are what
gpu_zoo's step kernel reads and writes of its state and buffers at the least (every word of an
env's state once each way), and the share of the GPU's memory bandwidth they reach at the
fused rate.

Records (one JSON object per line) go to ``classic_speed_<label>.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

# name -> (gpu_zoo id, its arguments, pgx's id, the largest batch to run: go's float32 history planes
# take 2 x 6137 values an agent on 19 x 19, about 100 kB an env with the final observations)
GAMES = {
    "connect_four": ("connect_four_v3", {}, "connect_four", 1 << 20),
    "tictactoe": ("tictactoe_v3", {}, "tic_tac_toe", 1 << 20),
    "go_9x9": ("go_v5", dict(board_size=9, komi=7.5), "go_9x9", 1 << 18),
    "go_19x19": ("go_v5", dict(board_size=19, komi=7.5), "go_19x19", 1 << 16),
    "chess": ("chess_v6", {}, "chess", 1 << 16),
}
SCHEMA = "gpu_zoo.classic_speed/3"


def gpu_zoo_rates(env_id: str, kwargs: dict, num_envs: int, steps: int, repeats: int) -> dict:
    """Env-steps per second of gpu_zoo's batched face on the GPU, per mode, and its bytes of state per env.

    ``fused``: ``steps`` moves (draw, step) captured in one CUDA graph, pgx's scan's equal;
    ``per_step``: a Python loop of ``env.sample_actions(out=env.actions); env.step()``;
    ``draw_only``: the fused graph without the steps, the share the random player takes.
    """
    import gpu_zoo
    from gpu_zoo.core.runtime.graphs import capture

    env = gpu_zoo.make(env_id, num_envs=num_envs, device="cuda", validate=False, **kwargs)
    env.reset(seed=0)
    torch.cuda.manual_seed(0)  # the default generator: a graph replays its draws with fresh offsets

    def moves():
        for _ in range(steps):
            env.sample_actions(out=env.actions)
            env.step()

    def draws():
        for _ in range(steps):
            env.sample_actions(out=env.actions)

    moves()  # compiles, and warms the allocator before the captures
    graphs = {"fused": capture(moves, env.device).replay, "draw_only": capture(draws, env.device).replay}
    rates = {mode: num_envs * steps / best_time(fn, repeats)
             for mode, fn in (("fused", graphs["fused"]), ("per_step", moves), ("draw_only", graphs["draw_only"]))}
    return {"rates": rates, "state_bytes": 4 * env.layout.words_per_env}


def best_time(fn, repeats: int) -> float:
    """The least wall time of ``repeats`` calls of ``fn`` after one warm-up call, the GPU drained around each."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def pgx_rates(game: str, num_envs: int, steps: int, repeats: int) -> dict:
    """Env-steps per second of pgx's ``game`` under ``jit(vmap(auto_reset(step)))``, per mode.

    ``fused``: ``steps`` moves in one ``lax.scan`` (no Python between moves); ``per_step``: one
    jitted move per Python call.
    """
    import jax
    import jax.numpy as jnp
    import pgx
    from pgx.experimental import auto_reset

    env = pgx.make(game)
    init = jax.jit(jax.vmap(env.init))
    step = jax.vmap(auto_reset(env.step, env.init))

    def move(carry, _=None):
        state, key = carry
        key, pick, reset = jax.random.split(key, 3)
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(pick, logits, axis=-1)
        state = step(state, action, jax.random.split(reset, num_envs))
        return (state, key), None

    scan = jax.jit(lambda carry: jax.lax.scan(move, carry, None, length=steps)[0])
    one = jax.jit(lambda carry: move(carry)[0])
    carry = [(init(jax.random.split(jax.random.PRNGKey(0), num_envs)), jax.random.PRNGKey(1))]

    def fused():
        carry[0] = jax.block_until_ready(scan(carry[0]))

    def per_step():
        for _ in range(steps):
            carry[0] = one(carry[0])
        jax.block_until_ready(carry[0])

    return {mode: num_envs * steps / best_time(fn, repeats) for mode, fn in (("fused", fused), ("per_step", per_step))}


def bandwidth() -> float:
    """The GPU's memory bandwidth in bytes/s, from a device-to-device copy (read plus write)."""
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    y.copy_(x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        y.copy_(x)
    torch.cuda.synchronize()
    return 2 * 10 * x.numel() / (time.perf_counter() - start)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.classic_speed", description=__doc__.splitlines()[0])
    ap.add_argument("--games", nargs="+", default=list(GAMES), choices=list(GAMES))
    ap.add_argument("--sizes", nargs="+", type=int, default=[4096, 65536, 1 << 20])
    ap.add_argument("--steps", type=int, default=100, help="moves per timed run")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-pgx", action="store_true", help="gpu_zoo alone")
    ap.add_argument("--label", default="local")
    ap.add_argument("--out", type=Path, default=None, help="folder for classic_speed_<label>.jsonl")
    ns = ap.parse_args(argv)
    peak = bandwidth()
    records = []
    for name in ns.games:
        env_id, kwargs, pgx_id, largest = GAMES[name]
        for n in (n for n in ns.sizes if n <= largest):
            ours = gpu_zoo_rates(env_id, kwargs, n, ns.steps, ns.repeats)
            theirs = None if ns.no_pgx else pgx_rates(pgx_id, n, ns.steps, ns.repeats)
            moved = 2 * ours["state_bytes"]  # every byte of an env's state read and written once per step, at least
            rate = ours["rates"]
            rec = {"schema": SCHEMA, "game": name, "env": env_id, "kwargs": kwargs, "num_envs": n,
                   "gpu_zoo_steps_per_s": rate, "pgx_steps_per_s": theirs,
                   "ratio": None if theirs is None else {m: rate[m] / theirs[m] for m in theirs},
                   "bytes_per_env_step": moved, "bandwidth_share": rate["fused"] * moved / peak,
                   "gpu": torch.cuda.get_device_name(), "label": ns.label}
            records.append(rec)
            print(json.dumps(rec), flush=True)
    if ns.out is not None:
        ns.out.mkdir(parents=True, exist_ok=True)
        with open(ns.out / f"classic_speed_{ns.label}.jsonl", "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in records)


if __name__ == "__main__":
    main()
