"""PPO settings: one typed `Args`, quantities derived from it, and small named presets per env.

Every field carries its docstring right below it; the command line shows them as its help.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from dataclasses import dataclass, field
from functools import cache

from gpu_zoo.core.api.params import check_count


@dataclass(frozen=True)
class Args:
    """PPO settings. Derived sizes (iterations, batch) are properties, never stored."""

    env_id: str = "tag_gridworld_v0"
    """registered env id"""
    env_kwargs: dict = field(default_factory=dict)
    """constructor arguments of the env (JSON on the command line, merged over the preset's)"""
    num_envs: int = 256
    """environments stepped together (per process in a data-parallel run: torchrun, trainers/distributed.py)"""
    num_steps: int = 32
    """steps per rollout and environment"""
    total_env_steps: int = 500_000
    """training budget in env-steps (one env-step steps one environment once), over every process of a data-parallel
    run"""
    learning_rate: float = 3e-4
    """Adam step size"""
    anneal_lr: bool = False
    """decay the learning rate linearly to zero over the budget"""
    gamma: float = 0.99
    """discount"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    gae_skip_forced: bool = True
    """a step whose action mask left an agent one action (per head) is no decision: GAE runs through it with
    lambda 1, so a group that acts once per period (the economy's planner) is credited with its period"""
    num_minibatches: int = 4
    """minibatches per epoch"""
    update_epochs: int = 4
    """epochs over each rollout"""
    clip_coef: float = 0.2
    """policy and value clipping range"""
    vf_coef: float = 0.5
    """value loss weight"""
    vf_clip: float | None = None
    """how far one update may move a value from the rollout's (default: clip_coef, the usual PPO; 0: no limit).
    In return units: a limit of 0.2 lets a critic whose returns run to hundreds (the economy's welfare)
    catch up by 0.2 an iteration"""
    ent_coef: float = 0.01
    """entropy bonus weight (at the start, with ent_coef_final)"""
    ent_coef_final: float | None = None
    """if set, the entropy weight goes linearly from ent_coef to this over ent_anneal_env_steps env-steps, then
    stays (the AI Economist's planner: 2.0 to 0.125 over 50M)"""
    ent_anneal_env_steps: int = 0
    """env-steps over which the entropy weight reaches ent_coef_final"""
    norm_adv: bool = True
    """normalise advantages per update (mean 0, std 1 over the group's agents in the game); RLlib, which the
    AI Economist trained with, does not"""
    max_grad_norm: float = 0.5
    """gradient clipping"""
    hidden: int = 64
    """width of the two hidden layers"""
    activation: str = "tanh"
    """the hidden layers' nonlinearity: "tanh" or "relu" (WarpDrive's models)"""
    shared_trunk: bool = False
    """one trunk of hidden layers under a policy head and a value head, as WarpDrive's fully connected model and
    CleanRL's Atari agent, instead of separate actor and critic networks: half the layers to run. Needs
    critic="local" (the trunk reads the agent's observation)"""
    critic: str = "local"
    """what each group's critic sees: "local", the agent's own observation (IPPO), or "state", the env's global
    state (every agent's observation, the PettingZoo state()) and the agent's one-hot index in its group (MAPPO)"""
    group_settings: dict = field(default_factory=dict)
    """per-group values of the settings in GROUP_SETTINGS (learning rate, entropy weight and its schedule, advantage
    normalisation, clipping, value weight and clipping, gradient clip, width, discount, GAE lambda, epochs and
    minibatches) over the ones above, e.g. {"planner": {"learning_rate": 1e-4, "hidden": 256}} (JSON on the
    command line)"""
    seed: int = 0
    """seed of the env, the networks and the sampling"""
    stagger_starts: bool = False
    """start each env's first episode (and the first after a resume without env state) at a random step, so
    envs that reset together end apart: a rollout shorter than an episode then holds every part of one, not the
    same part from every env (the first episodes are shorter, and so are their returns)"""
    train_groups: str = ""
    """comma-separated groups to train (default: all); the others act uniformly at random"""
    random_opponent_share: float = 0.0
    """the share of envs in which one agent of each trained group (agent ``e % count`` of env ``e``: a two-player
    game's learners play both seats) acts uniformly at random among its valid actions instead of the policy;
    those agents' steps are left out of the update. 0: pure self-play; 1: every game against a random player.
    Self-play alone settles on lines that beat itself; meeting random play keeps it punishing weak moves"""
    init_from: str = ""
    """a checkpoint whose policies start the groups it shares with this run (a warm start: optimiser,
    env and counters start fresh), e.g. workers trained without taxes, then trained on with a planner"""
    device: str | None = None
    """cuda or cpu (default: cuda if usable)"""
    cuda_graph: bool = True
    """on a GPU, capture one rollout step (policies, sampling, env step, storage writes) as a CUDA graph and
    replay it: with few envs, the Python cost of launching its kernels one by one would set the speed"""
    fused: bool = True
    """on a GPU, run the trainer's hot path as Triton kernels (trainers/fused.py): every group's storage writes
    and GAE; for Discrete and MultiDiscrete groups the draws and the policy loss, and the whole networks where
    they fit (observations and widths up to 128, 64 logits). Same losses; fp16 or TF32 products and another
    random stream than the torch path"""
    bf16_layers: bool = True
    """on a GPU, the torch layers of Discrete and MultiDiscrete networks too wide for the kernels compute their
    hidden layers in bfloat16 (products and activations; parameters, gradients, logits and values stay float32):
    half the memory traffic of an update bound by it. False: TF32 products on float32 activations"""
    torch_threads: int = 1
    """torch's CPU threads (0: torch's default). The env kernel already spreads over the cores, and on a
    busy 2-core machine one thread for the small networks ran 5x faster than two"""
    out: str = ""
    """output folder: checkpoint, progress.csv, TensorBoard events, curve.png, policy.gif (default: runs/ENV_ID)"""
    checkpoint_every: int = 50
    """iterations between checkpoints (one is also written at the end and on Ctrl-C)"""
    log_every: int = 1
    """iterations between reads of the metrics (the only host syncs of the loop)"""
    eval_episodes: int = 100
    """episodes of the final evaluation, trained against random in the same run (0: none)"""
    gif: bool = True
    """record one episode of the final evaluation's trained policies as policy.gif"""

    def __post_init__(self):
        for name in ("num_envs", "num_steps", "total_env_steps", "num_minibatches", "update_epochs", "hidden",
                     "checkpoint_every", "log_every"):
            check_count(name, getattr(self, name))
        if self.vf_clip is not None and (isinstance(self.vf_clip, bool) or not isinstance(self.vf_clip, int | float)
                                         or self.vf_clip < 0):
            raise ValueError(f"vf_clip must be None or a number >= 0, got {self.vf_clip!r}")
        if self.ent_coef_final is not None and (isinstance(self.ent_anneal_env_steps, bool)
                                                or not isinstance(self.ent_anneal_env_steps, int)
                                                or self.ent_anneal_env_steps < 1):
            raise ValueError(f"ent_coef_final needs ent_anneal_env_steps >= 1, got {self.ent_anneal_env_steps!r}")
        if self.critic not in ("local", "state"):
            raise ValueError(f"critic must be 'local' (IPPO) or 'state' (MAPPO), got {self.critic!r}")
        if self.activation not in ("tanh", "relu"):
            raise ValueError(f"activation must be 'tanh' or 'relu', got {self.activation!r}")
        if self.shared_trunk and self.critic != "local":
            raise ValueError("shared_trunk reads the agent's observation, so it needs critic='local', "
                             f"got critic={self.critic!r}")
        share = self.random_opponent_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise ValueError(f"random_opponent_share must be a number in [0, 1], got {share!r}")
        if self.eval_episodes < 0 or self.torch_threads < 0:
            raise ValueError(f"eval_episodes and torch_threads must be >= 0, got {self.eval_episodes}, "
                             f"{self.torch_threads}")
        if not isinstance(self.env_kwargs, dict):
            raise ValueError(f"env_kwargs must be a dict of constructor arguments, "
                             f"got {type(self.env_kwargs).__name__}")
        if not isinstance(self.group_settings, dict) or not all(isinstance(v, dict)
                                                                for v in self.group_settings.values()):
            raise ValueError(f"group_settings must map group names to dicts of settings, got {self.group_settings!r}")
        for group, values in self.group_settings.items():
            unknown = set(values) - set(GROUP_SETTINGS)
            if unknown:
                raise ValueError(f"group_settings[{group!r}]: {sorted(unknown)} cannot differ per group; "
                                 f"these can: {list(GROUP_SETTINGS)}")
            try:
                self.for_group(group)  # the fields' own checks, on the group's values
            except ValueError as err:
                raise ValueError(f"group_settings[{group!r}]: {err}") from None

    def ent_coef_at(self, env_steps: int) -> float:
        """The entropy weight after ``env_steps`` env-steps of the run."""
        if self.ent_coef_final is None:
            return self.ent_coef
        done = min(1.0, env_steps / self.ent_anneal_env_steps)
        return self.ent_coef + (self.ent_coef_final - self.ent_coef) * done

    def for_group(self, group: str) -> Args:
        """These settings as ``group``'s policy trains with them (its `group_settings` applied)."""
        values = self.group_settings.get(group)
        return dataclasses.replace(self, group_settings={}, **values) if values else self

    # ----------------------------------------------------------------- derived
    @property
    def env_steps_per_iteration(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def value_clip(self) -> float:
        """``vf_clip`` as the losses take it: ``clip_coef`` when unset, 0 for no limit."""
        return self.clip_coef if self.vf_clip is None else self.vf_clip

    @property
    def iterations(self) -> int:
        """Rollout-and-update rounds: the budget rounded down to whole iterations (at least one)."""
        return self.iterations_over(1)

    def iterations_over(self, ranks: int) -> int:
        """`iterations` of a data-parallel run of ``ranks`` processes, each stepping its own ``num_envs``."""
        return max(1, self.total_env_steps // (self.env_steps_per_iteration * ranks))

    @property
    def out_dir(self) -> str:
        return self.out or f"runs/{self.env_id}"

    @property
    def trained_groups(self) -> tuple[str, ...]:
        """The groups named by ``train_groups`` (empty: every group of the env)."""
        return tuple(g for g in self.train_groups.split(",") if g)


GROUP_SETTINGS = ("learning_rate", "ent_coef", "ent_coef_final", "ent_anneal_env_steps", "norm_adv", "clip_coef",
                  "vf_coef", "vf_clip", "max_grad_norm", "hidden", "activation", "shared_trunk", "gamma", "gae_lambda",
                  "update_epochs", "num_minibatches")
"""What `Args.group_settings` may set per group: the AI Economist trains its planner with a smaller
learning rate, a larger entropy bonus and wider networks than its workers; a group that acts once
per period (the planner) may want its own credit horizon, and fewer passes over a batch in which
it decided once a period (each pass costs what a worker group's does)."""

RUN_CONTROL = ("total_env_steps", "out", "device", "cuda_graph", "fused", "torch_threads", "checkpoint_every",
               "log_every", "eval_episodes", "gif")
"""Fields a resumed run may change: they steer the run, not what it computes."""


def changed_settings(saved: Args, settings: dict) -> list[str]:
    """What a run resumed from ``saved`` may not take from ``settings`` (field -> value).

    The names outside `RUN_CONTROL` whose values differ from ``saved``'s, sorted.
    """
    return sorted(k for k, v in settings.items() if k not in RUN_CONTROL and v != getattr(saved, k))


@cache
def field_docs() -> dict[str, str]:
    """The docstring under each field of `Args`, read from its source."""
    tree = ast.parse(inspect.getsource(Args))
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            docs[node.target.id] = nxt.value.value
    return docs


# ------------------------------------------------------------------------ presets
def _mpe_preset(env_id: str) -> Args:
    """An MPE scenario's preset: 512 envs, rollouts of one 25-step episode, a small entropy bonus."""
    return Args(env_id=env_id, env_kwargs=dict(max_cycles=25), num_envs=512, num_steps=25,
                total_env_steps=5_000_000, ent_coef=0.01)


# Small configurations that train in minutes. `make run` trains the gridworld one: 3 to 5 minutes
# on a 2-core CPU, after which the taggers catch both runners in nearly every episode.
PRESETS: dict[str, Args] = {
    # Two taggers learn to catch two runners that move at random on an 11 x 11 grid. Their
    # return climbs to about 13 (one runner caught) within 1M env-steps, then to about 20 (both
    # caught, in a quarter of the time random taggers take) at around 4M.
    "tag_gridworld_v0": Args(
        env_id="tag_gridworld_v0", env_kwargs=dict(num_taggers=2, num_runners=2, grid_length=10, max_cycles=50),
        num_envs=256, num_steps=64, total_env_steps=8_000_000, learning_rate=1e-3, num_minibatches=8,
        train_groups="tagger", checkpoint_every=20),
    # Two taggers against three random runners in a small arena with a generous tagging radius.
    # Learning is slow here: an agent observes the others' positions in the arena's frame but not
    # its own heading, so a memoryless policy cannot steer straight at a runner.
    "tag_continuous_v0": Args(
        env_id="tag_continuous_v0",
        env_kwargs=dict(num_taggers=2, num_runners=3, max_cycles=50, grid_length=5.0, tagging_distance=0.05),
        num_envs=256, num_steps=64, total_env_steps=20_000_000, train_groups="tagger", checkpoint_every=20),
    # MPE's predator-prey as in MPE2: three adversaries and one good agent, both sides trained.
    "simple_tag_v3": Args(
        env_id="simple_tag_v3", env_kwargs=dict(max_cycles=25), num_envs=512, num_steps=50,
        total_env_steps=5_000_000, ent_coef=0.01),
    # MPE2's cooperative navigation: three agents learn to cover the three landmarks between them.
    # On a 2-core CPU (13k env-steps/s), 2M env-steps in 2.5 minutes take the return per agent from
    # random's -25.6 to -18.7 (`gpu-zoo train simple_spread_v3 --total-env-steps 2000000 --device cpu`,
    # then `gpu-zoo eval`: 100 episodes each, the same starts).
    "simple_spread_v3": _mpe_preset("simple_spread_v3"),
    # MPE2's cooperative communication: the speaker tells the listener which landmark is the goal.
    # On a 2-core CPU, 2M env-steps (2 minutes) take the shared return from random's -38.8 to -16.7
    # (100 episodes each, the same starts); in that time the listener mostly learns where the
    # landmarks lie, and the speaker's words carry the rest only with longer training.
    "simple_speaker_listener_v4": _mpe_preset("simple_speaker_listener_v4"),
    # MPE2's cooperative reference: each agent tells the other where to go while moving itself.
    # On a 2-core CPU, 2M env-steps (2.2 minutes) take the return per agent from random's -27.4 to
    # -18.9 (100 episodes each, the same starts).
    "simple_reference_v3": _mpe_preset("simple_reference_v3"),
    # MPE2's formation: four agents spread round a landmark on a circle of radius 0.5. On a 2-core
    # CPU, 2M env-steps (4 minutes) take the return per agent from random's -19.3 to -10.2.
    "simple_formation_v1": _mpe_preset("simple_formation_v1"),
    # MPE2's simplest scenario: one agent learns to reach its landmark. On a 2-core CPU, 1M
    # env-steps (22 s of training) take the return from random's -35.3 to -6.6.
    "simple_v3": Args(env_id="simple_v3", env_kwargs=dict(max_cycles=25), total_env_steps=1_000_000),
    # MPE2's line: four agents spread evenly between two landmarks. On a 2-core CPU, 2M env-steps
    # (2.6 minutes) take the return per agent from random's -21.6 to -10.7.
    "simple_line_v1": _mpe_preset("simple_line_v1"),
    # MPE2's collect treasure: collectors carry treasures to the deposit of their type. On a 2-core
    # CPU, 2M env-steps (6.5 minutes) take the collectors' return per agent from random's -4.8 to
    # 1.9 and the deposits' from 0.8 to 2.7.
    "collect_treasure_v1": _mpe_preset("collect_treasure_v1"),
    # The competitive MPE scenarios, both sides trained. `gpu-zoo eval` plays both trained sides
    # against each other and both random sides likewise, so a side's figures move with its
    # opponent's skill too.
    # simple_adversary, 2M env-steps on a 2-core CPU (1.9 minutes): the adversary -26.8 -> -14.1.
    "simple_adversary_v3": _mpe_preset("simple_adversary_v3"),
    # simple_push, likewise (1.2 minutes): the agent -27.2 -> -8.0 while the adversary learns to push.
    "simple_push_v3": _mpe_preset("simple_push_v3"),
    # simple_crypto, likewise (2 minutes): Eve's guesses -37.2 -> -14.2; Alice and Bob need longer.
    "simple_crypto_v3": _mpe_preset("simple_crypto_v3"),
    # simple_world_comm, likewise (3.7 minutes): the predators 4.3 -> 15.3, the prey -28.8 -> -10.8.
    "simple_world_comm_v3": _mpe_preset("simple_world_comm_v3"),
    # PettingZoo's board games by self-play: both seats share the group's one policy, each seeing the
    # board from its own side; a seat waiting for its turn has an all-zero mask, a step without a
    # decision that GAE runs through (gae_skip_forced), so each move is credited with the game's end. Pure
    # self-play settles on a few lines fast; a larger entropy bonus keeps it meeting others. tic-tac-toe, 3M
    # env-steps on a 2-core CPU (`python -m trainers.versus CKPT --greedy`, 1000 games, both colours): 82% wins,
    # 2% draws, 16% losses against random play (77 / 0 / 22 with ent_coef=0.01).
    "connect_four_v3": Args(env_id="connect_four_v3", num_envs=1024, num_steps=42, total_env_steps=20_000_000,
                            gamma=1.0, ent_coef=0.05, hidden=128),
    "tictactoe_v3": Args(env_id="tictactoe_v3", num_envs=1024, num_steps=18, total_env_steps=5_000_000,
                         gamma=1.0, ent_coef=0.05),
    # rock-paper-scissors, both players one policy: against itself the best it can do is play uniformly
    "rps_v2": Args(env_id="rps_v2", num_envs=1024, num_steps=15, total_env_steps=2_000_000),
    # go on 9 x 9, games cut at 200 moves (a random game runs to hundreds)
    "go_v5": Args(env_id="go_v5", env_kwargs=dict(board_size=9, max_cycles=200), num_envs=512, num_steps=64,
                  total_env_steps=20_000_000, gamma=1.0, ent_coef=0.05, hidden=256),
    # chess, games cut at 300 moves (a random game runs to hundreds; the fifty-move rule ends it in the end)
    "chess_v6": Args(env_id="chess_v6", env_kwargs=dict(max_cycles=300), num_envs=256, num_steps=64,
                     total_env_steps=20_000_000, gamma=1.0, ent_coef=0.05, hidden=256),
    # SISL pursuit, PettingZoo's defaults (16 x 16, 8 pursuers, 30 evaders, 7 x 7 views) with episodes
    # cut at 100 cycles: every pursuer one policy, rewarded for tagging and catching evaders. 1M env-steps on a
    # 2-core CPU (2.5 minutes): return per pursuer -9.4 (random) -> -7.9 over 20 episodes.
    "pursuit_v5": Args(env_id="pursuit_v5", env_kwargs=dict(max_cycles=100), num_envs=256, num_steps=100,
                       total_env_steps=20_000_000, ent_coef=0.01, hidden=128),
    # The AI Economist: workers and the planner trained together over long episodes.
    "gather_trade_build_v0": Args(
        env_id="gather_trade_build_v0", num_envs=64, num_steps=200, total_env_steps=10_000_000,
        num_minibatches=8, learning_rate=3e-4, gamma=0.998, ent_coef=0.025, hidden=128, checkpoint_every=10),
}


def preset(env_id: str) -> Args:
    """The preset of ``env_id``, or the defaults for it when it has none."""
    return PRESETS.get(env_id) or Args(env_id=env_id)


def with_overrides(base: Args, **changes) -> Args:
    """``base`` with ``changes``; ``env_kwargs`` are merged over the base's rather than replacing them."""
    unknown = set(changes) - {f.name for f in dataclasses.fields(Args)}
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; the settings are the fields of trainers.config.Args")
    if "env_id" in changes and changes["env_id"] != base.env_id:
        base = preset(changes["env_id"])
    if "env_kwargs" in changes:
        changes["env_kwargs"] = {**base.env_kwargs, **changes["env_kwargs"]}
    return dataclasses.replace(base, **changes)


def shipped_configurations(env_ids=None) -> list[tuple[str, dict, int | None]]:
    """(env id, constructor arguments, the preset's batch size or None): what the docs and presets use.

    Each env's defaults, then its preset's configuration where the preset changes the env; the batch
    size is the preset's where that configuration is the one its preset trains. ``env_ids``: these
    envs (default: every registered one).
    """
    import gpu_zoo

    out = []
    for env_id in env_ids if env_ids is not None else gpu_zoo.registered_envs():
        p = PRESETS.get(env_id)
        out.append((env_id, {}, p.num_envs if p is not None and not p.env_kwargs else None))
        if p is not None and p.env_kwargs:
            out.append((env_id, dict(p.env_kwargs), p.num_envs))
    return out
