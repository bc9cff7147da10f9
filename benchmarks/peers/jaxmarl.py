"""JaxMARL's MPE ports: ``jit(vmap(step))`` per call, and many steps inside one ``lax.scan``."""

from __future__ import annotations

import os

from benchmarks.cases import MPE_FAMILY, check_action_mode
from benchmarks.skip import Skipped
from benchmarks.timing import time_steps

SCAN_LENGTH = 100  # steps per scanned call
SCAN_OUTPUT_BYTES = 16 << 30  # a scanned call's stacked outputs stay under this: fewer steps a call where needed
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


OUTPUTS = ("kept", "dropped")


def measure(num_envs: int, device: str, mode: str, *, target_s: float, repeats: int,
            workload: str = "simple_tag", actions: str = "fixed", outputs: str = "kept") -> dict:
    """``mode``: ``"step"`` (one jitted call per step) or ``"scan"`` (``SCAN_LENGTH`` steps per call).

    ``actions``: ``fixed`` (one random action per agent, drawn once, a constant of the graph) or
    ``fresh`` (drawn inside the jitted graph before every step from a key carried along).

    ``outputs``: ``kept`` returns every step's observations, rewards and dones from the jitted call
    (stacked over the scan, as a trainer's rollout keeps them), so the clock sees what an env step
    is for. ``dropped`` returns the state alone: XLA then removes the observation and reward
    computations as dead code, which times the physics and the resets only. The benchmark suite
    measures ``kept``; ``dropped`` is there to show the difference.
    """
    check_action_mode(actions)
    if outputs not in OUTPUTS:
        raise ValueError(f"outputs must be one of {OUTPUTS}, got {outputs!r}")
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
        obs, state, rewards, dones, _ = jax.vmap(env.step)(keys, state, acts)  # auto-resets finished envs
        return (keys, state, rng), ((obs, rewards, dones) if outputs == "kept" else None)

    carry, kept = [(keys, state, jax.random.PRNGKey(2))], [None]
    if mode == "step":
        fn, per_call = jax.jit(one), 1
    elif mode == "scan":
        step_bytes = sum(x.size * x.dtype.itemsize for x in jax.tree_util.tree_leaves(jax.eval_shape(one, carry[0])[1]))
        per_call = max(1, min(SCAN_LENGTH, SCAN_OUTPUT_BYTES // max(step_bytes, 1)))
        fn = jax.jit(lambda c: jax.lax.scan(one, c, None, length=per_call))
    else:
        raise ValueError(f"mode must be 'step' or 'scan', got {mode!r}")

    def call():
        kept[0] = None  # the last call's outputs are let go first, as a trainer's next rollout would
        carry[0], kept[0] = fn(carry[0])

    def wait():
        jax.block_until_ready((carry[0], kept[0]))

    timing = time_steps(call, "cpu", target_s=target_s, repeats=repeats, warmup=3, sync_fn=wait)
    rate = timing.summary(num_envs * per_call)
    agents = env.num_agents
    return {"env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"] * agents, "agents": agents, "steps_per_repeat": timing.steps * per_call,
            "jax_device": str(jax.devices()[0]), "jaxmarl_env": SCENARIOS[workload], "steps_per_call": per_call,
            "actions": actions, "outputs": outputs,
            "notes": f"jit(vmap(env.step)), {per_call} step(s) per call, discrete actions "
                     + ("drawn in the graph before every step" if actions == "fresh" else "fixed random (drawn once)")
                     + ("; observations, rewards and dones returned" + (" (stacked over the scan)" if per_call > 1
                                                                        else "")
                        if outputs == "kept" else "; state only returned (XLA drops observations and rewards)")
                     + "; clock after block_until_ready"}
