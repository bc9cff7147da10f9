"""JaxMARL's MPE ports: ``jit(vmap(step))`` per call, and many steps inside one ``lax.scan``."""

from __future__ import annotations

import os

from benchmarks.cases import MPE_FAMILY, check_action_mode
from benchmarks.skip import Skipped
from benchmarks.timing import time_steps

SCAN_LENGTH = 100  # steps per scanned call
SCENARIOS = {w: f"MPE_{v}" for w, v in {**MPE_FAMILY, "simple_tag": "simple_tag_v3",
                                         "simple_spread": "simple_spread_v3"}.items()}


def _import(device: str):
    # Chosen before jax starts: the platform, and no grab of most of the GPU's memory up front.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if device == "cpu":
        os.environ["JAX_PLATFORMS"] = "cpu"
    try:
        import jax
        import jaxmarl
    except ImportError as err:
        raise Skipped(f"jax/jaxmarl is not installed ({err}); pip install jaxmarl 'jax[cuda12]'") from err
    platform = jax.devices()[0].platform
    if device == "cuda" and platform != "gpu":
        raise Skipped(f"jax sees no GPU (platform {platform!r}): a CUDA jax wheel is needed")
    return jax, jaxmarl


def measure(num_envs: int, device: str, mode: str, *, target_s: float, repeats: int,
            workload: str = "simple_tag", actions: str = "fixed") -> dict:
    """``mode``: ``"step"`` (one jitted call per step) or ``"scan"`` (``SCAN_LENGTH`` steps per call).

    ``actions``: ``fixed`` (one random action per agent, drawn once, a constant of the graph) or
    ``fresh`` (drawn inside the jitted graph before every step from a key carried along).
    """
    check_action_mode(actions)
    jax, jaxmarl = _import(device)
    import jax.numpy as jnp

    try:
        # discrete actions, as gpu_zoo's (and MPE2's) default: JaxMARL's world_comm defaults to continuous ones
        env = jaxmarl.make(SCENARIOS[workload], action_type="Discrete")
    except ValueError as err:  # a scenario newer than JaxMARL's port
        raise Skipped(f"JaxMARL has no {SCENARIOS[workload]} ({err})") from None
    keys = jax.random.split(jax.random.PRNGKey(0), num_envs)
    _, state = jax.vmap(env.reset)(keys)
    def draw(rng):
        return {a: jax.random.randint(jax.random.fold_in(rng, i), (num_envs,), 0, env.action_space(a).n,
                                      dtype=jnp.int32) for i, a in enumerate(env.agents)}

    fixed = draw(jax.random.PRNGKey(1))

    def one(carry, _=None):
        keys, state, rng = carry
        keys = jax.vmap(lambda k: jax.random.split(k)[0])(keys)
        if actions == "fresh":
            rng, sub = jax.random.split(rng)
            acts = draw(sub)
        else:
            acts = fixed
        _, state, _, _, _ = jax.vmap(env.step)(keys, state, acts)  # auto-resets finished envs
        return (keys, state, rng), None

    carry = [(keys, state, jax.random.PRNGKey(2))]
    if mode == "step":
        fn, per_call = jax.jit(one), 1
    elif mode == "scan":
        fn, per_call = jax.jit(lambda c: jax.lax.scan(one, c, None, length=SCAN_LENGTH)), SCAN_LENGTH
    else:
        raise ValueError(f"mode must be 'step' or 'scan', got {mode!r}")

    def call():
        carry[0] = fn(carry[0])[0]

    def wait():
        jax.block_until_ready(carry[0])

    timing = time_steps(call, "cpu", target_s=target_s, repeats=repeats, warmup=3, sync_fn=wait)
    rate = timing.summary(num_envs * per_call)
    agents = env.num_agents
    return {"env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"] * agents, "agents": agents, "steps_per_repeat": timing.steps * per_call,
            "jax_device": str(jax.devices()[0]), "jaxmarl_env": SCENARIOS[workload], "steps_per_call": per_call,
            "actions": actions,
            "notes": f"jit(vmap(env.step)), {per_call} step(s) per call, discrete actions "
                     + ("drawn in the graph before every step" if actions == "fresh" else "fixed random (drawn once)")
                     + "; clock after block_until_ready"}
