"""Tag (continuous), k-nearest mode: the cell-grid search lists exactly what a scan of everyone would."""

import numpy as np
import pytest
import torch

import gpu_zoo
from tests.helpers import noop_actions

CONFIG = dict(num_taggers=3, num_runners=17, num_other_agents_observed=4, use_full_observation=False,
              tagging_distance=0.0, max_cycles=50)
NUM_ENVS = 8  # the CPU's serial driver (up to 8 envs) compiles in about half the parallel one's time


def _reference(x, y, alive, k):
    """For every agent in the game: the k others in the game nearest to it, by (distance, index)."""
    out = {}
    for a in np.flatnonzero(alive):
        others = [j for j in np.flatnonzero(alive) if j != a]
        d2 = [np.float32(x[j] - x[a]) * np.float32(x[j] - x[a]) + np.float32(y[j] - y[a]) * np.float32(y[j] - y[a])
              for j in others]
        out[a] = [j for _, j in sorted(zip(d2, others, strict=True))][:k]
    return out


def _stepped(grid, positions, alive):
    env = gpu_zoo.make("tag_continuous_v0", num_envs=NUM_ENVS, device="cpu", neighbour_grid=grid, **CONFIG)
    env.reset(seed=0)
    xs, ys = positions
    env.state.pos_x[:] = torch.from_numpy(xs)
    env.state.pos_y[:] = torch.from_numpy(ys)
    env.state.alive[:] = torch.from_numpy(alive)
    obs, *_ = env.step(noop_actions(env))  # speeds are 0: nobody moves; tagging distance 0: nobody is tagged
    return env, {g: o.clone() for g, o in obs.items()}


@pytest.fixture(scope="module")
def scene():
    """Positions on a half-unit lattice (many exact ties, agents on the far edges), some runners out."""
    rng = np.random.default_rng(7)
    A, L = 20, 10.0
    xs = (rng.integers(0, 21, (NUM_ENVS, A)) / 2).astype(np.float32)
    ys = (rng.integers(0, 21, (NUM_ENVS, A)) / 2).astype(np.float32)
    xs[0, :] = L  # one env with everyone on the far edge: the last column and row of cells
    ys[1, :5] = L
    alive = rng.random((NUM_ENVS, A)) > 0.25
    alive[:, :3] = True
    alive[2, 3:] = False  # one runner short of none: fewer in the game than k
    alive[2, 3] = True
    return (xs, ys), alive


@pytest.mark.parametrize("grid", [1, 4, 7])
def test_neighbours_match_a_full_scan(scene, grid):
    positions, alive = scene
    env, _ = _stepped(grid, positions, alive)
    k = CONFIG["num_other_agents_observed"]
    idx, count = env.state.nbr_idx.numpy(), env.state.nbr_count.numpy()
    for e in range(NUM_ENVS):
        want = _reference(positions[0][e], positions[1][e], alive[e], k)
        for a in range(alive.shape[1]):
            if a in want:
                assert count[e, a] == len(want[a]), (e, a)
                assert idx[e, a, :count[e, a]].tolist() == want[a], (e, a)
            else:
                assert count[e, a] == 0


@pytest.mark.parametrize("grid", [1, 4])
def test_a_runner_tagged_this_step_is_still_seen_at_this_step(scene, grid):
    """As in WarpDrive, a step's observations come before its tags.

    A runner tagged now sees its nearest others and is among theirs; from the next step it is in no list.
    """
    (xs, ys), alive = scene
    xs, ys = xs.copy(), ys.copy()
    runner = 5
    alive = alive.copy()
    alive[:, runner] = True
    xs[:, runner], ys[:, runner] = xs[:, 0], ys[:, 0]  # on tagger 0: tagged at once
    env = gpu_zoo.make("tag_continuous_v0", num_envs=NUM_ENVS, device="cpu", neighbour_grid=grid,
                       **{**CONFIG, "tagging_distance": 0.01})
    env.reset(seed=0)
    env.state.pos_x[:] = torch.from_numpy(xs)
    env.state.pos_y[:] = torch.from_numpy(ys)
    env.state.alive[:] = torch.from_numpy(alive)
    env.step(noop_actions(env))
    assert not env.state.alive[:, runner].any() and env.state.term[:, runner].all()
    k = CONFIG["num_other_agents_observed"]
    visible = (env.state.alive | env.state.term).numpy().astype(bool)
    idx, count = env.state.nbr_idx.numpy(), env.state.nbr_count.numpy()
    for e in range(NUM_ENVS):
        want = _reference(xs[e], ys[e], visible[e], k)
        for a in (runner, 0):
            assert idx[e, a, :count[e, a]].tolist() == want[a], (e, a)
        assert runner in idx[e, 0, :count[e, 0]].tolist()  # it stands on tagger 0
    env.step(noop_actions(env))
    idx, count = env.state.nbr_idx.numpy(), env.state.nbr_count.numpy()
    for e in range(NUM_ENVS):
        assert count[e, runner] == 0 and runner not in idx[e, 0, :count[e, 0]].tolist()


def test_observations_do_not_depend_on_the_grid(scene):
    positions, alive = scene
    _, full_scan = _stepped(1, positions, alive)
    _, gridded = _stepped(4, positions, alive)
    for g in full_scan:
        assert torch.equal(full_scan[g], gridded[g])


def test_default_grid_has_about_k_agents_per_cell():
    spec = gpu_zoo.get_spec("tag_continuous_v0")
    p = spec.make_params(num_taggers=50, num_runners=950, use_full_observation=False, num_other_agents_observed=10)
    assert p.search_grid == 10
    assert spec.make_params(**CONFIG).search_grid == 2


@pytest.mark.parametrize("bad", [-1, 65, 2.0, True])
def test_bad_neighbour_grid_is_rejected(bad):
    with pytest.raises(ValueError, match="neighbour_grid"):
        gpu_zoo.make("tag_continuous_v0", device="cpu", neighbour_grid=bad)
