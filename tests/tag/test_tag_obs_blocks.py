"""Tag continuous filled block by block (`ObsBlock.fill`) observes exactly what it does element by element.

Tag's observation is its blocks' fill functions; here an element-wise phase that finds each
element's block and offset itself and asks the same fill functions stands in for it, the reference. The CUDA target's
by-block loops (a lane per (agent, slot) pair, every feature of the slot computed before any is
stored) and the CPU target's run loops must both match it, on full observations with the own
state and on the nearest agents with empty slots.
"""

import pytest
import torch

import gpu_zoo
import gpu_zoo.tag.continuous as tag
from gpu_zoo.core import PerObs, kernel_fn
from gpu_zoo.core.runtime.batched import BatchedEnv

FULL = dict(num_taggers=2, num_runners=3, max_cycles=4, tagging_distance=0.2, observe_own_state=True)
NEAREST = dict(num_taggers=2, num_runners=3, max_cycles=5, tagging_distance=0.2,
               use_full_observation=False, num_other_agents_observed=2)


@kernel_fn
def observe_by_element(s, p, e, a, i):
    k = p.num_observed
    if i < k:
        return tag.rel_x(s, p, e, a, i)
    if i < 2 * k:
        return tag.rel_y(s, p, e, a, i - k)
    if i < 3 * k:
        return tag.rel_speed(s, p, e, a, i - 2 * k)
    if i < 4 * k:
        return tag.rel_acceleration(s, p, e, a, i - 3 * k)
    if i < 5 * k:
        return tag.rel_heading(s, p, e, a, i - 4 * k)
    if i < 6 * k:
        return tag.is_tagger(s, p, e, a, i - 5 * k)
    if i < 7 * k:
        return tag.alive(s, p, e, a, i - 6 * k)
    if i == 7 * k:
        return tag.elapsed(s, p, e, a, 0)
    return tag.own_state(s, p, e, a, i - 7 * k - 1)


def observations(kw: dict, by_block: bool, target: str, device, monkeypatch, steps: int = 4):
    if not by_block:
        monkeypatch.setattr(tag, "_observation", lambda p: PerObs(
            observe_by_element, zeros_out_of_game=not p.use_full_observation))
    env = BatchedEnv(gpu_zoo.get_spec("tag_continuous_v0"), 2, device=device, target=target, **kw)
    last = env.layout.spec.phases("observe", env.layout.params)[-1]
    assert (last.fn is None and env.layout.spec.tuning.observe_by_block) == by_block
    env.reset(seed=4)
    gen = torch.Generator().manual_seed(9)
    out = [{g: o.cpu().clone() for g, o in env.obs.items()}]
    for _ in range(steps):
        env.step({g: a.to(device) for g, a in env.sample_actions(gen).items()})
        out.append({g: o.cpu().clone() for g, o in env.obs.items()})
    monkeypatch.undo()
    return out


def assert_same(reference, got, where: str):
    """Exact on the CPU; within float rounding on CUDA (its compiler contracts multiply-adds)."""
    assert any(o["runner"].abs().sum() > 0 for o in reference)
    tol = dict(rtol=0, atol=0) if where == "cpu" else dict(rtol=1e-5, atol=2e-5)
    for t, (ref, obs) in enumerate(zip(reference, got, strict=True)):
        for g in ref:
            torch.testing.assert_close(obs[g], ref[g], **tol,
                                       msg=lambda m, g=g, t=t: f"{where}, step {t}, {g}: {m}")


@pytest.mark.parametrize("kw", [FULL, NEAREST], ids=["full", "nearest"])
def test_by_block_matches_element_wise_on_both_targets(kw, cuda_device, monkeypatch):
    reference = observations(kw, False, "cpu", "cpu", monkeypatch)
    assert_same(reference, observations(kw, True, "cpu", "cpu", monkeypatch), "cpu")
    assert_same(reference, observations(kw, True, "cuda", cuda_device, monkeypatch), "cuda")
