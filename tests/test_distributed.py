"""Data-parallel training: two gloo processes on the CPU, started as torchrun starts them (its environment variables)."""

import dataclasses
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp

from tests.helpers import GRID_SMALL
from trainers.config import Args
from trainers.distributed import World
from trainers.ppo import Trainer

WORLD = 2
ITERATIONS = 4


def run_args(out) -> Args:
    """Every rank's settings, as one torchrun command line gives them all; 4 iterations of both ranks' env-steps."""
    return Args(env_id="tag_gridworld_v0", env_kwargs=GRID_SMALL, num_envs=8, num_steps=8,
                total_env_steps=ITERATIONS * WORLD * 64, device="cpu", out=str(out), eval_episodes=0, gif=False,
                checkpoint_every=2, log_every=1, learning_rate=1e-2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, port: int, out: str, plan: str, results: str):
    """One process of the run: joins the group from the environment, then follows ``plan``."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(WORLD), RANK=str(rank),
                      LOCAL_RANK=str(rank))
    from trainers import distributed
    from trainers.loop import train

    torch.set_num_threads(1)
    args = run_args(out)
    report = {}
    try:
        if plan == "straight":
            world = distributed.join(args.device)
            probe = Trainer(args, world=world)
            report["initial"] = [p.detach().clone() for p in probe.policies.parameters()]
            for g, pol in probe.policies.items():
                for p in pol.parameters():
                    p.grad = torch.full_like(p, rank + 1.0)
                probe.sync_gradients(g)
            report["synced"] = [p.grad.clone() for p in probe.policies.parameters()]
            trainer = train(args)
        else:  # half the budget, then a resume to the whole of it
            train(dataclasses.replace(args, total_env_steps=args.total_env_steps // 2))
            trainer = train(args, resume=os.path.join(out, "checkpoint.pt"))
        report["final"] = [p.detach().clone() for p in trainer.policies.parameters()]
        report["env"] = trainer.env.buffers.storage.clone()
        report["iteration"] = trainer.iteration
        torch.save(report, os.path.join(results, f"{plan}{rank}.pt"))
    finally:
        distributed.leave()


def spawn(plan: str, out, results) -> list[dict]:
    mp.spawn(_rank, args=(_free_port(), str(out), plan, str(results)), nprocs=WORLD, join=True)
    return [torch.load(results / f"{plan}{r}.pt", weights_only=False) for r in range(WORLD)]


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    out, results = tmp_path_factory.mktemp("straight"), tmp_path_factory.mktemp("results")
    return out, spawn("straight", out, results)


def test_ranks_start_equal_and_average_their_gradients(straight):
    _, (first, second) = straight
    for a, b in zip(first["initial"], second["initial"], strict=True):
        assert torch.equal(a, b), "every rank starts from rank 0's weights"
    for grads in (first["synced"], second["synced"]):
        assert all(torch.equal(g, torch.full_like(g, 1.5)) for g in grads), "the mean of 1 and 2 on every rank"


def test_ranks_train_one_policy_on_envs_of_their_own(straight):
    out, (first, second) = straight
    assert first["iteration"] == second["iteration"] == ITERATIONS, "the budget is the run's, over both ranks"
    for a, b, start in zip(first["final"], second["final"], first["initial"], strict=True):
        assert torch.equal(a, b), "the policies stay equal"
        assert not torch.equal(a, start), "and they trained"
    assert not torch.equal(first["env"], second["env"]), "each rank steps its own episodes"
    rows = (out / "progress.csv").read_text().splitlines()[1:]
    assert len(rows) == ITERATIONS, "one writer: rank 0"
    assert int(rows[-1].split(",")[1]) == ITERATIONS * WORLD * 64, "env-steps count every rank's"
    assert len(list((out / "tb").iterdir())) == 1
    saved = torch.load(out / "checkpoint.pt", weights_only=False)
    assert saved["world_size"] == WORLD and len(saved["ranks"]) == WORLD - 1
    assert torch.equal(saved["ranks"][0]["env_state"], second["env"]), "the checkpoint holds rank 1's envs"


def test_a_resumed_run_continues_exactly_and_only_with_as_many_ranks(straight, tmp_path):
    _, (first, _) = straight
    out, results = tmp_path / "resumed", tmp_path / "results"
    out.mkdir()
    results.mkdir()
    resumed = spawn("resumed", out, results)
    for rank in range(WORLD):
        for a, b in zip(resumed[rank]["final"], first["final"], strict=True):
            assert torch.equal(a, b), "2 iterations, a restart, 2 more: the 4 of the straight run"
    alone = Trainer(run_args(out))
    before = [p.detach().clone() for p in alone.policies.parameters()]
    with pytest.raises(ValueError, match="data-parallel run of 2 process.*this run has 1"):
        alone.load(out / "checkpoint.pt")
    assert all(torch.equal(a, b) for a, b in zip(before, alone.policies.parameters(), strict=True))


def test_one_process_is_a_world_of_one():
    from trainers import distributed

    assert distributed.join("cpu") == World() and not World().distributed and World().main
