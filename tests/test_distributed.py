"""Data-parallel training: two gloo processes on the CPU, started as torchrun starts them (environment variables)."""

import dataclasses
import os
import re
import socket
import subprocess
import sys

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


def one_update_args(out) -> Args:
    """One gradient step on one rollout, where two ranks' averaged gradient is the gradient over both batches.

    Every agent is always in the game (each rank's mean is over as many agents) and advantages are
    taken as they come (a rank would normalise over its own batch).
    """
    return Args(env_id="simple_tag_v3", env_kwargs=dict(max_cycles=5), num_envs=4, num_steps=8,
                total_env_steps=WORLD * 32, device="cpu", out=str(out), eval_episodes=0, gif=False,
                update_epochs=1, num_minibatches=1, norm_adv=False, learning_rate=1e-2)


def _flat(trainer) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in trainer.policies.parameters()])


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
            one = Trainer(one_update_args(out), world=world)
            report["one_start"] = _flat(one)
            one.rollout()
            report["one_storage"] = {g: {k: v.clone() for k, v in b.items()} for g, b in one.buf.items()}
            one.update()
            report["one_end"] = _flat(one)
            report["after_each"] = []
            trainer = train(args, callback=lambda t: report["after_each"].append(_flat(t)))
        elif plan == "gpus":  # each rank on the GPU of its local rank, for torch and Numba alike
            args = dataclasses.replace(args, device="cuda")
            trainer = train(args)
            from gpu_zoo.core.compiler.speed import compat

            report["devices"] = (torch.cuda.current_device(), compat.import_cuda().get_current_device().id,
                                 trainer.env.device.index, trainer.device.index)
            report["final"] = [p.detach().cpu() for p in trainer.policies.parameters()]
            report["iteration"] = trainer.iteration
            report["env"] = trainer.env.buffers.storage.cpu()
            torch.save(report, os.path.join(results, f"{plan}{rank}.pt"))
            return
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
    assert len(first["after_each"]) == ITERATIONS
    for a, b in zip(first["after_each"], second["after_each"], strict=True):
        assert torch.equal(a, b), "bit for bit equal after every update"
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


def test_two_ranks_take_the_step_of_one_process_with_both_batches(straight, tmp_path):
    """One update of a 2-process run is the update of one process whose rollout holds both ranks' envs."""
    _, (first, second) = straight
    assert torch.equal(first["one_start"], second["one_start"])
    torch.testing.assert_close(first["one_end"], second["one_end"], rtol=0, atol=0)
    args = dataclasses.replace(one_update_args(tmp_path), num_envs=2 * 4, total_env_steps=64)
    alone = Trainer(args)
    torch.nn.utils.vector_to_parameters(first["one_start"], alone.policies.parameters())
    for g, b in alone.buf.items():
        for k, v in b.items():  # rank 0's envs, then rank 1's
            v.copy_(torch.cat([first["one_storage"][g][k], second["one_storage"][g][k]], dim=1))
    alone.update()
    torch.testing.assert_close(_flat(alone), first["one_end"], rtol=1e-5, atol=1e-6)


def test_a_rank_that_fails_ends_the_run_with_its_error(tmp_path):
    """Under torchrun itself: the run ends (no hang) and torchrun's failure report carries rank 1's error.

    The other rank fails too (its peer is gone) within the same second, so which one torchrun
    calls the root cause is a tie it breaks by rank: the report lists both.
    """
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={WORLD}",
                           "-m", "tests.test_distributed", str(tmp_path)], capture_output=True, text=True, timeout=600,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = done.stdout + done.stderr
    assert done.returncode != 0
    report = out[out.index("Failures:"):]
    assert re.search(r"rank\s*:\s*1\b", report) and "rank 1 gives up" in report, out[-3000:]


@pytest.mark.cuda
def test_two_gpus_each_step_their_own_envs(tmp_path):
    """With NCCL on two GPUs: each rank's torch, Numba and env on its own GPU, one policy trained."""
    if torch.cuda.device_count() < WORLD:
        pytest.skip("needs two GPUs")
    (tmp_path / "results").mkdir()
    first, second = spawn("gpus", tmp_path, tmp_path / "results")
    assert first["devices"] == (0, 0, 0, 0) and second["devices"] == (1, 1, 1, 1)
    assert first["iteration"] == ITERATIONS
    assert all(torch.equal(a, b) for a, b in zip(first["final"], second["final"], strict=True))
    assert not torch.equal(first["env"], second["env"])


def _fail_on_rank_1(trainer):
    if trainer.world.rank == 1 and trainer.iteration == 2:
        raise RuntimeError("rank 1 gives up")


if __name__ == "__main__":  # one process of the failing run, as torchrun starts it
    from torch.distributed.elastic.multiprocessing.errors import record

    from trainers import distributed
    from trainers.loop import train

    @record  # the error file torchrun reads to name the root cause
    def failing_run():
        try:
            train(run_args(sys.argv[1]), callback=_fail_on_rank_1)
        finally:
            distributed.leave()

    failing_run()
