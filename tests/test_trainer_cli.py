"""The gpu-zoo command end to end on a tiny budget: outputs, exact resume, Ctrl-C, eval."""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import gpu_zoo
from gpu_zoo.cli import main
from tests.helpers import GRID_SMALL
from trainers.config import PRESETS, Args
from trainers.loop import train

ROOT = Path(__file__).resolve().parents[1]
TIMING = {"seconds", "env_steps_per_s"}


def train_argv(out, *extra):
    return ["train", "tag_gridworld_v0", "--env-kwargs", json.dumps(GRID_SMALL), "--num-envs", "8", "--num-steps", "8",
            "--device", "cpu", "--out", str(out), "--train-groups", "tagger", *extra]


def rows(out):
    with open(out / "progress.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def checkpoint(out):
    return torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=False)


def test_train_writes_csv_tensorboard_checkpoint_curve_and_gif(tmp_path, capsys):
    assert main(train_argv(tmp_path, "--total-env-steps", "128", "--eval-episodes", "4")) == 0
    assert [int(r["iteration"]) for r in rows(tmp_path)] == [1, 2]
    assert float(rows(tmp_path)[-1]["env_steps_per_s"]) > 0
    assert checkpoint(tmp_path)["iteration"] == 2
    (events,) = (tmp_path / "tb").glob("events.out.tfevents.*")
    acc = EventAccumulator(str(events))
    acc.Reload()
    assert [e.step for e in acc.Scalars("return/tagger")] == [64, 128]
    assert "loss/tagger/entropy" in acc.Tags()["scalars"]
    assert Image.open(tmp_path / "curve.png").format == "PNG"
    gif = Image.open(tmp_path / "policy.gif")
    assert gif.format == "GIF" and gif.n_frames == GRID_SMALL["max_cycles"]
    out = capsys.readouterr().out
    assert "taggers trained" in out and "vs random" in out


def test_group_settings_and_cuda_graph_come_from_the_command_line(tmp_path):
    settings = {"tagger": {"hidden": 8, "ent_coef": 0.05}}
    assert main(train_argv(tmp_path, "--total-env-steps", "64", "--eval-episodes", "0", "--no-gif",
                           "--group-settings", json.dumps(settings), "--no-cuda-graph")) == 0
    saved = checkpoint(tmp_path)
    assert saved["args"]["group_settings"] == settings and saved["args"]["cuda_graph"] is False
    assert saved["policies"]["tagger.actor.0.weight"].shape[0] == 8


def test_resume_continues_the_counters_and_the_numbers_exactly(tmp_path):
    main(train_argv(tmp_path / "straight", "--total-env-steps", "256", "--eval-episodes", "0"))
    main(train_argv(tmp_path / "split", "--total-env-steps", "128", "--eval-episodes", "0"))
    main(["train", "--resume", str(tmp_path / "split" / "checkpoint.pt"), "--total-env-steps", "256"])
    straight, split = checkpoint(tmp_path / "straight"), checkpoint(tmp_path / "split")
    assert split["iteration"] == straight["iteration"] == 4
    for name, p in straight["policies"].items():
        assert torch.equal(p, split["policies"][name]), name
    assert torch.equal(straight["env_state"], split["env_state"])
    a, b = rows(tmp_path / "straight"), rows(tmp_path / "split")
    assert [{k: v for k, v in r.items() if k not in TIMING} for r in a] == \
           [{k: v for k, v in r.items() if k not in TIMING} for r in b]
    assert float(b[-1]["seconds"]) > float(b[1]["seconds"])  # wall time carries over too


def test_resume_refuses_to_change_what_the_run_computes(tmp_path):
    main(train_argv(tmp_path, "--total-env-steps", "64", "--eval-episodes", "0"))
    with pytest.raises(SystemExit):
        main(["train", "--resume", str(tmp_path / "checkpoint.pt"), "--learning-rate", "0.1"])


def test_keyboard_interrupt_writes_a_checkpoint(tmp_path):
    def interrupt(trainer):
        if trainer.iteration == 3:
            raise KeyboardInterrupt

    args = Args(env_id="tag_gridworld_v0", env_kwargs=GRID_SMALL, num_envs=8, num_steps=8, total_env_steps=10_000,
                device="cpu", out=str(tmp_path), checkpoint_every=100)
    with pytest.raises(KeyboardInterrupt):
        train(args, callback=interrupt)
    assert checkpoint(tmp_path)["iteration"] == 3
    assert len(rows(tmp_path)) == 3 and (tmp_path / "curve.png").exists()


def test_sigint_stops_a_run_after_its_iteration_with_a_checkpoint(tmp_path):
    cmd = [sys.executable, "-m", "gpu_zoo.cli", *train_argv(tmp_path, "--total-env-steps", "100000000",
                                                              "--checkpoint-every", "1000000")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        while not ((tmp_path / "progress.csv").exists() and rows(tmp_path)):
            assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, output
    assert "stopped at iteration" in output
    saved = checkpoint(tmp_path)["iteration"]
    assert saved >= 1 and int(rows(tmp_path)[-1]["iteration"]) == saved


def test_eval_reports_trained_and_random_returns_per_group(tmp_path, capsys):
    main(train_argv(tmp_path, "--total-env-steps", "64", "--eval-episodes", "0"))
    capsys.readouterr()
    gif = tmp_path / "eval.gif"
    assert main(["eval", str(tmp_path / "checkpoint.pt"), "--episodes", "6", "--gif", str(gif), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "6 episodes" in out and "trained" in out and "random" in out
    for group in ("tagger", "runner"):
        assert any(line.startswith(group) and line.count("±") == 2 for line in out.splitlines()), out
    assert Image.open(gif).n_frames > 1


@pytest.mark.parametrize("env_id", sorted(PRESETS))
def test_presets_fit_their_envs(env_id):
    if env_id not in gpu_zoo.registered_envs():
        pytest.skip(f"{env_id} is not registered")
    p = PRESETS[env_id]
    spec = gpu_zoo.get_spec(env_id)
    spec.make_params(**p.env_kwargs)  # raises on an unknown or invalid argument
    groups = {g.name for g in spec.groups(spec.make_params(**p.env_kwargs))}
    assert p.iterations >= 10 and set(p.trained_groups) <= groups


def test_the_evaluation_summary_names_each_group_in_the_plural():
    from trainers.evaluate import _plural

    assert [_plural(g) for g in ("tagger", "adversary", "leadadversary", "key")] == \
        ["taggers", "adversaries", "leadadversaries", "keys"]


def test_every_registered_env_has_a_preset():
    assert set(PRESETS) == set(gpu_zoo.registered_envs()), "give each new env a preset in trainers/config.py"
