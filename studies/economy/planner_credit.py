"""Does the economy's planner learn? Against frozen workers, where the answer is known.

    python -m studies.economy.planner_credit --init-from WORKERS_PT --minutes 12 --num-envs 128 --device cpu
    python -m studies.economy.planner_credit --init-from WORKERS_PT --minutes 12 --no-gae-skip-forced

Workers trained without taxes (``studies.economy.learning --pretrain-only`` writes them) keep
their policies (learning rate 0) while the planner trains. Frozen workers do not answer taxes,
so taxing and sharing out more raises equality at no cost in productivity: the planner should
learn high rates and raise welfare. It prints the evaluation's mean rate per bracket, its
productivity, equality and welfare, as JSON. ``--no-gae-skip-forced`` trains the planner with
the usual GAE, which chains through the 99 steps of a period where its mask leaves it nothing
to choose (`trainers.ppo.compute_gae`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m studies.economy.planner_credit", description=__doc__.splitlines()[0])
    ap.add_argument("--init-from", required=True, metavar="WORKERS_PT", help="pretrained workers (phase 1)")
    ap.add_argument("--minutes", type=float, default=12.0, help="training time")
    ap.add_argument("--num-envs", type=int, default=128)
    ap.add_argument("--eval-episodes", type=int, default=64)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", default="runs/planner_credit")
    ap.add_argument("--gae-skip-forced", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--vf-clip", type=float, default=None,
                    help="the planner's value clipping range (default: the preset's; 0: none)")
    args = ap.parse_args(argv)
    if not Path(args.init_from).is_file():
        ap.error(f"--init-from {args.init_from}: no such file")

    import gpu_zoo
    from studies.economy.evaluation import final_economy
    from studies.economy.learning import regime_kwargs, train_for
    from trainers.config import preset, with_overrides

    planner = {"vf_clip": args.vf_clip} if args.vf_clip is not None else {}
    ppo = with_overrides(preset("gather_trade_build_v0"), env_kwargs=regime_kwargs("ai_planner"),
                         train_groups="worker,planner", total_env_steps=10**12, num_envs=args.num_envs,
                         out=args.out, device=args.device, init_from=args.init_from,
                         group_settings={"worker": {"learning_rate": 0.0}, "planner": planner},
                         gae_skip_forced=args.gae_skip_forced,
                         eval_episodes=0, gif=False, checkpoint_every=10**6, torch_threads=0)
    trainer, _ = train_for(ppo, args.minutes * 60)
    env = gpu_zoo.make("gather_trade_build_v0", num_envs=args.eval_episodes, device=trainer.device,
                       autoreset=False, validate=False, **regime_kwargs("ai_planner"))
    result = final_economy(env, trainer.policies.eval(), seed=12345)
    print(json.dumps({"gae_skip_forced": args.gae_skip_forced, "vf_clip": ppo.for_group("planner").vf_clip,
                      "env_steps": trainer.iteration * ppo.env_steps_per_iteration,
                      "tax_rates": result.pop("tax_rates").mean(0).round(3).tolist(),
                      **{k: round(float(v.mean()), 3) for k, v in result.items()}}))


if __name__ == "__main__":
    main()
