"""Tuple constants: tables the kernels index at run time, frozen into them; a malformed one refused before compiling."""

import dataclasses

import numpy as np
import pytest
import torch

from gpu_zoo.core.runtime.batched import BatchedEnv
from tests import group_phases_env as gp

WEIGHTS = (np.float64(0.5), np.float64(-2.0), np.float64(0.25), np.float64(3.0), np.float64(1.5))


def weighted(table):
    return dataclasses.replace(gp.SPEC, step=(*gp.SPEC.step[:2], gp.PerAgent(gp.pay_weighted)),
                               constants=lambda p: {"weight": table})


@pytest.mark.parametrize("target", ["cpu", "cuda"], ids=["cpu_target", "cuda_target"])
def test_a_table_constant_is_read_at_each_agents_index(target, cuda_device):
    env = BatchedEnv(weighted(WEIGHTS), 3, "cpu" if target == "cpu" else cuda_device, target=target)
    env.reset(seed=0)
    env.step({"chaser": torch.full((3, 3), 2, dtype=torch.int32), "runner": torch.zeros(3, 2, 2)})
    pos, rew = env.state.pos.cpu(), env.state.rew.cpu()
    assert torch.equal(rew, pos * torch.tensor([float(w) for w in WEIGHTS], dtype=torch.float32))
    assert float(rew[0, 1]) == -2.0 * float(pos[0, 1]) != 0.0


@pytest.mark.parametrize("table", [(), (1, 2.0), ("a", "b"), ((1, 2),)])
def test_a_malformed_table_is_refused_naming_what_a_table_takes(table):
    with pytest.raises(ValueError, match="a table must be a non-empty tuple of one kind of number"):
        BatchedEnv(weighted(table), 2, "cpu", target="cpu")


def test_a_particle_world_of_mismatched_tables_is_refused():
    from gpu_zoo.mpe.particles import World

    with pytest.raises(ValueError, match="2 sizes need 2 collide flags"):
        World(sizes=(0.1, 0.2), collides=(1,), accels=(None,))
    with pytest.raises(ValueError, match="masses takes one value per agent"):
        World(sizes=(0.1, 0.2), collides=(1, 0), accels=(None,), masses=(1.0, 2.0))
