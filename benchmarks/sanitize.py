"""Steps every registered env a few times on the GPU, for NVIDIA's compute-sanitizer.

    compute-sanitizer --tool racecheck python -m benchmarks.sanitize [ENV_ID ...]
    compute-sanitizer --tool memcheck --report-api-errors no python -m benchmarks.sanitize [ENV_ID ...]

(torch and Numba probe the driver for optional entry points; memcheck would count each failed
probe, ``cuGetProcAddress``, as an error.)

Small configurations (several launch shapes per env), 37 envs so the last block is partly empty,
no CUDA graphs (the sanitizer then sees every launch). ``STEPS`` sets the steps per env (9).

Kernels compile at native speed and land in the kernel cache: running this once without the
sanitizer first, one process per env id at a time, leaves the sanitized run only the launches
(on an H200 all 22 configurations then take about 20 s under each tool; records in
``benchmarks/results/sanitizer/``).
"""

import os
import sys

import torch

import gpu_zoo

CONFIGS = {
    "tag_continuous_v0": [dict(num_taggers=2, num_runners=5, max_cycles=4),
                          dict(num_taggers=3, num_runners=32, max_cycles=4),  # 512 threads per env
                          dict(num_taggers=2, num_runners=30, max_cycles=4, use_full_observation=False,
                               num_other_agents_observed=5),
                          # the step as three kernels, phase lanes fewer than the observation kernel's
                          dict(num_taggers=3, num_runners=32, max_cycles=4, threads_per_env=128, split_observe=True),
                          dict(num_taggers=2, num_runners=30, max_cycles=4, use_full_observation=False,
                               num_other_agents_observed=5, split_observe=True)],
    "tag_gridworld_v0": [dict(num_taggers=3, num_runners=2, grid_length=5, max_cycles=4),
                         dict(max_cycles=4, use_full_observation=False)],
    "simple_tag_v3": [dict(max_cycles=4), dict(max_cycles=4, continuous_actions=True)],
    "gather_trade_build_v0": [dict(),  # fixed skills, episodes short enough that auto-reset deals them again
                              dict(fixed_four_skill_and_loc=True, max_cycles=4, tax_period=2)],
}


def main(env_ids):
    steps = int(os.environ.get("STEPS", 9))
    for env_id in env_ids or gpu_zoo.registered_envs():
        for kw in CONFIGS.get(env_id, [dict(max_cycles=4)]):
            env = gpu_zoo.make(env_id, num_envs=37, device="cuda", cuda_graph=False, **kw)
            env.reset(seed=1)
            for _ in range(steps):
                env.step(env.sample_actions())
            torch.cuda.synchronize()
            print(env_id, kw, "ok", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
