"""Tag continuous written block by block (`PerObs.by_block`) observes exactly what it does element by element.

The env switches to block loops from `BLOCK_LOOPS_MIN` observed agents; here the threshold is
moved so both ways run on one configuration. Long rows take the CUDA target's loop per block (a
warp per row), short ones its flat loop, which finds each element's block by comparisons, as
the CPU target does for every row.
"""

import torch

import gpu_zoo
import gpu_zoo.tag.continuous as tag
from gpu_zoo.core.batched import BatchedEnv
from gpu_zoo.core.compile import ROW_MIN

# Both as in test_parity (tag_own_state, tag_knn), whose element-wise CPU kernels these reuse.
LONG_ROWS = dict(num_taggers=1, num_runners=4, max_cycles=4, tagging_distance=0.2, observe_own_state=True)
SHORT_ROWS = dict(num_taggers=1, num_runners=5, max_cycles=5, tagging_distance=0.2,
                  use_full_observation=False, num_other_agents_observed=3)


def observations(kw: dict, by_block: bool, target: str, device, monkeypatch, steps: int = 4):
    monkeypatch.setattr(tag, "BLOCK_LOOPS_MIN", 0 if by_block else 10**9)
    env = BatchedEnv(gpu_zoo.get_spec("tag_continuous_v0"), 2, device=device, target=target, **kw)
    assert env.layout.spec.phases("observe", env.layout.params)[-1].by_block == by_block
    env.reset(seed=4)
    gen = torch.Generator().manual_seed(9)
    out = [{g: o.cpu().clone() for g, o in env.obs.items()}]
    for _ in range(steps):
        env.step({g: a.to(device) for g, a in env.sample_actions(gen).items()})
        out.append({g: o.cpu().clone() for g, o in env.obs.items()})
    return out


def assert_same(reference, got, where: str):
    assert any(o["runner"].abs().sum() > 0 for o in reference)
    for t, (ref, obs) in enumerate(zip(reference, got, strict=True)):
        for g in ref:
            torch.testing.assert_close(obs[g], ref[g], rtol=1e-5, atol=2e-5,
                                       msg=lambda m, g=g, t=t: f"{where}, step {t}, {g}: {m}")


def test_long_rows_by_block_on_both_targets(cuda_device, monkeypatch):
    env = gpu_zoo.make("tag_continuous_v0", num_envs=1, device="cpu", validate=False, **LONG_ROWS)
    assert env.single_observation_space("runner").shape[0] >= ROW_MIN
    reference = observations(LONG_ROWS, False, "cpu", "cpu", monkeypatch)
    assert_same(reference, observations(LONG_ROWS, True, "cpu", "cpu", monkeypatch), "cpu")
    assert_same(reference, observations(LONG_ROWS, True, "cuda", cuda_device, monkeypatch), "cuda")


def test_short_rows_by_block_on_cuda(cuda_device, monkeypatch):
    reference = observations(SHORT_ROWS, False, "cpu", "cpu", monkeypatch)
    assert_same(reference, observations(SHORT_ROWS, True, "cuda", cuda_device, monkeypatch), "cuda")
