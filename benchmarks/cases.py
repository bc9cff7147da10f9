"""What the suite measures: one `Case` per (workload, system, size), for each suite, device and size set."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

SUITES = ("env", "train", "all")
SIZES = ("tiny", "full")


@dataclass(frozen=True)
class Case:
    """One measurement, run in its own process.

    Attributes:
        workload: what is stepped, the same for every system compared on it
            (``simple_tag``, ``simple_spread`` and the rest of `MPE_FAMILY`, ``tag_continuous``,
            ``tag_gridworld``, ``gather_trade_build``,
            ``train_*``, ``sb3_simple_tag``).
        system: who steps it (``gpu_zoo``, ``mpe2``, ``supersuit``, ``vmas``, ``jaxmarl``,
            ``jaxmarl_scan``, ``warpdrive``).
        device: ``cuda`` or ``cpu``.
        num_envs: environments stepped together.
        config: the env's constructor arguments (gpu_zoo's names) and measurement settings:
            ``world`` names a peer's shipped world the arguments start from (`WORLDS`), ``actions``
            how actions are drawn (`ACTIONS`; absent means ``fixed``).
    """

    workload: str
    system: str
    device: str
    num_envs: int
    config: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        extra = "".join(f",{k}={v}" for k, v in sorted(self.config.items()) if not isinstance(v, dict))
        return f"{self.workload}/{self.system}/{self.device}/{self.num_envs}{extra}"

    def to_json(self) -> dict:
        return asdict(self)


ACTIONS = {
    "fixed": "one random action per agent, drawn once before the clock: the env step alone",
    "fresh": "new random actions drawn on the device before every step, timed with it: what a random-policy "
             "loop or a trainer's sampler pays",
}
"""How a row's actions are drawn (a case's ``actions``)."""
MEASUREMENT_SETTINGS = ("world", "actions")
"""Config keys that say how a case is measured, not constructor arguments."""

TRAINER_SETTINGS = ("num_steps", "hidden", "update_epochs", "num_minibatches")
"""The trainer's `Args` fields a training case may set; the others keep their defaults."""

GTB = "gather_trade_build"
SB3 = "sb3_simple_tag"


def tag_continuous_kwargs(agents: int) -> dict:
    """Taggers are a twentieth of the agents; full observations up to 100 agents, the 10 nearest beyond."""
    taggers = max(1, agents // 20)
    kw = {"num_taggers": taggers, "num_runners": agents - taggers}
    if agents > 100:
        kw.update(use_full_observation=False, num_other_agents_observed=10)
    return kw


def shipped_world_counts(agents: int, taggers: int | None = None) -> dict:
    """WarpDrive's tag_continuous.yaml world with only the agent counts changed (a twentieth taggers by default).

    The world observes the 10 nearest; an env of 10 agents or fewer observes all the others.
    """
    taggers = max(1, agents // 20) if taggers is None else taggers
    kw = {"world": WARPDRIVE_YAML, "num_taggers": taggers, "num_runners": agents - taggers}
    if agents - 1 < WARPDRIVE_TAG_RUN["env"]["num_other_agents_observed"]:
        kw["num_other_agents_observed"] = agents - 1
    return kw


def gridworld_kwargs(agents: int) -> dict:
    """WarpDrive's tag_gridworld.yaml world: one runner, the rest taggers, a 100 x 100 grid, 100-step episodes."""
    return {"num_taggers": agents - 1, "num_runners": 1, "grid_length": 100, "max_cycles": 100}


# WarpDrive's shipped training run, warp_drive/training/run_configs/tag_continuous.yaml (2.7.1), in
# gpu_zoo's names: 100 envs of 10 taggers and 100 runners, 500-step episodes, 25000 env-steps per
# iteration (250 per env), two-layer 256-wide networks. The WarpDrive row checks its YAML against this.
WARPDRIVE_TAG_RUN = {
    "num_envs": 100, "num_steps": 250, "hidden": 256,
    "env": dict(num_taggers=10, num_runners=100, grid_length=20.0, max_cycles=500, max_acceleration=0.1,
                min_acceleration=-0.1, max_turn=2.356, min_turn=-2.356, num_acceleration_levels=20,
                num_turn_levels=20, skill_level_runner=1.0, skill_level_tagger=1.0, max_speed=1.0,
                use_full_observation=False, runner_exits_game_after_tagged=True, num_other_agents_observed=10,
                tag_reward_for_tagger=10.0, tag_penalty_for_runner=-10.0, step_penalty_for_tagger=0.0,
                step_reward_for_runner=0.0, edge_hit_penalty=0.0, end_of_game_reward_for_runner=1.0,
                tagging_distance=0.02),
}


WARPDRIVE_YAML = "tag_continuous.yaml"
WORLDS = {WARPDRIVE_YAML: WARPDRIVE_TAG_RUN["env"]}
"""Peers' shipped worlds by name: a case with ``world`` takes these arguments, its own on top (agent counts)."""


def env_kwargs(case: Case) -> dict:
    """The constructor arguments (gpu_zoo's names) of ``case``'s env: its world's, then its own."""
    own = {k: v for k, v in case.config.items() if k not in MEASUREMENT_SETTINGS}
    world = case.config.get("world")
    if world is None:
        return own
    if world not in WORLDS:
        raise ValueError(f"unknown world {world!r}; known: {sorted(WORLDS)}")
    return {**WORLDS[world], **own}


EPISODE_WINDOWS = ("tag_continuous", "tag_gridworld")
"""Workloads timed over whole episode lengths: their step's cost changes as runners are tagged.

A Tag continuous step searches among the agents still in the game, so its cost falls as runners
are tagged (WarpDrive's 640-agent step from 73 ms with 80% of them left to 4 ms with 8%,
`profile_tag`): a short window right after a reset would time only an episode's dearest part.
Tag gridworld's episodes end when its runner is caught; its rows are timed the same way.
"""


def episode_window(case: Case) -> int | None:
    """Steps per timed repeat for `EPISODE_WINDOWS` workloads: one episode length (None: calibrated by time)."""
    if case.workload not in EPISODE_WINDOWS:
        return None
    import gpu_zoo

    return gpu_zoo.get_spec(OUR_IDS[case.workload]).make_params(**env_kwargs(case)).max_cycles


def check_action_mode(mode: str) -> str:
    """``mode`` if it is one of `ACTIONS`, else a ValueError naming them."""
    if mode not in ACTIONS:
        raise ValueError(f"actions must be one of {sorted(ACTIONS)}, got {mode!r}")
    return mode


def action_mode(case: Case) -> str:
    return check_action_mode(case.config.get("actions", "fixed"))


def warpdrive_run_cases(device: str, iterations: int, repeats: int) -> list[Case]:
    """WarpDrive's A2C on its tag_continuous.yaml, and our trainer on the same env, sizes and networks.

    Ours runs one epoch of one minibatch per rollout (one gradient step per group, as A2C takes)
    and, as a second row, its own PPO defaults (4 epochs of 4 minibatches).
    """
    w = WARPDRIVE_TAG_RUN
    base = {"env_id": "tag_continuous_v0", "run": "warpdrive_tag_continuous_yaml", "env_kwargs": w["env"],
            "num_steps": w["num_steps"], "hidden": w["hidden"], "iterations": iterations, "repeats": repeats}
    ours = [Case("train_tag_continuous", "gpu_zoo", device, w["num_envs"], {**base, **upd})
            for upd in ({"update_epochs": 1, "num_minibatches": 1}, {"update_epochs": 4, "num_minibatches": 4})]
    theirs = Case("train_tag_continuous", "warpdrive", device, w["num_envs"],
                  {"run": "warpdrive_tag_continuous_yaml", "env_kwargs": w["env"], "iterations": iterations,
                   "repeats": repeats})
    return [*ours, theirs]


# The other MPE scenarios (each with MPE2's default arguments), at the sizes where a GPU is full.
MPE_FAMILY = {"simple": "simple_v3", "simple_adversary": "simple_adversary_v3", "simple_push": "simple_push_v3",
              "simple_speaker_listener": "simple_speaker_listener_v4", "simple_reference": "simple_reference_v3",
              "simple_crypto": "simple_crypto_v3", "simple_formation": "simple_formation_v1",
              "simple_line": "simple_line_v1", "simple_world_comm": "simple_world_comm_v3"}
OUR_IDS = {"simple_tag": "simple_tag_v3", "simple_spread": "simple_spread_v3", "tag_continuous": "tag_continuous_v0",
           "tag_gridworld": "tag_gridworld_v0", GTB: "gather_trade_build_v0", **MPE_FAMILY}
"""Our env id of each env workload."""
MPE_HEADLINE = ("simple_reference", "simple_speaker_listener", "simple_world_comm")
"""Scenarios measured at every size simple_spread is, with it the MPE family's speed bars against JaxMARL."""
_FULL = {
    "simple_tag": [1, 1024, 16384, 131072, 1048576],
    "simple_spread": [1024, 16384, 131072, 1048576],
    "mpe_family": [16384, 131072],
    "mpe_headline": [1024, 16384, 131072, 1048576],  # the scenarios of `MPE_HEADLINE`, as simple_spread
    "supersuit": [1, 16, 256],
    "tag_continuous": [(2000, tag_continuous_kwargs(a)) for a in (5, 100, 640, 1000)]
    + [(2000, shipped_world_counts(a)) for a in (5, 100, 640, 1000)],
    "tag_gridworld": [(n, gridworld_kwargs(a)) for n, a in ((2000, 5), (2000, 51), (32768, 5), (262144, 5))],
    GTB: [1, 1024, 16384, 65536],
    "train": [("simple_tag_v3", 16384, {}), ("tag_continuous_v0", 2000, tag_continuous_kwargs(5)),
              ("tag_gridworld_v0", 2000, gridworld_kwargs(5))],
    SB3: [192],  # SB3 vector slots: 64 of our envs x 3 adversaries, 48 SuperSuit envs x 4 agents
}
# The sizes the README's table shows: each is measured with fresh actions too, for every GPU system.
FRESH_SIZES = {"simple_tag": (1024, 16384, 1048576), "simple_spread": (131072, 1048576),
               "simple_speaker_listener": (131072,), "simple_reference": (131072, 1048576),
               "simple_world_comm": (1024, 131072), "tag_continuous": (2000,), "tag_gridworld": (2000,),
               GTB: (65536,)}
GPU_SYSTEMS = ("gpu_zoo", "jaxmarl", "jaxmarl_scan", "vmas", "warpdrive")
# Tiny sizes reuse the small configurations of the test suite (tests/helpers.py), whose kernels
# the tests have usually compiled already: the CI run then compiles almost nothing.
_TAG_SMALL = {"num_taggers": 2, "num_runners": 3, "max_cycles": 6}
_GRID_SMALL = {"num_taggers": 2, "num_runners": 2, "grid_length": 4, "max_cycles": 5}
_TINY = {
    "simple_tag": [8],
    "simple_spread": [8],
    "mpe_headline": [],
    "mpe_family": [],  # each would compile kernels of its own in CI: simple_spread stands for them there
    "supersuit": [2],
    "fresh": {"tag_continuous": (4,)},  # one of ours is enough to exercise the path in CI
    "tag_continuous": [(4, _TAG_SMALL)],  # the shipped world would compile a configuration of its own
    "tag_gridworld": [(4, _GRID_SMALL)],
    GTB: [],  # its kernels take minutes to compile on a small CPU: measured at full sizes only
    "train": [("tag_gridworld_v0", 4, _GRID_SMALL)],
    SB3: [12],
}


def env_cases(device: str, sizes: str) -> list[Case]:
    t = _FULL if sizes == "full" else _TINY
    cases: list[Case] = []
    st = t["simple_tag"]
    cases += [Case("simple_tag", "gpu_zoo", device, n) for n in st]
    cases.append(Case("simple_tag", "mpe2", "cpu", 1))
    cases += [Case("simple_tag", "supersuit", "cpu", n) for n in t["supersuit"]]
    cases += [Case("simple_tag", "vmas", device, n) for n in st]
    cases += [Case("simple_tag", "jaxmarl", device, n) for n in st]
    cases += [Case("simple_tag", "jaxmarl_scan", device, n) for n in st]
    cases += [Case("simple_spread", s, device, n) for n in t["simple_spread"]
              for s in ("gpu_zoo", "jaxmarl", "jaxmarl_scan", "vmas")]
    cases += [Case(w, s, device, n) for w in MPE_FAMILY
              for n in sorted(set(t["mpe_family"]) | set(t["mpe_headline"] if w in MPE_HEADLINE else ()))
              for s in ("gpu_zoo", "jaxmarl", "jaxmarl_scan", *(("vmas",) if w in MPE_HEADLINE else ()))]
    for n, kw in t["tag_continuous"]:
        cases += [Case("tag_continuous", s, device, n, kw) for s in ("gpu_zoo", "warpdrive")]
    for n, kw in t["tag_gridworld"]:
        cases += [Case("tag_gridworld", s, device, n, kw) for s in ("gpu_zoo", "warpdrive")]
    cases += [Case(GTB, "gpu_zoo", device, n) for n in t[GTB]]
    if t[GTB]:
        cases.append(Case(GTB, "ai_economist", "cpu", 1))
    fresh = t.get("fresh", FRESH_SIZES)
    cases += [Case(c.workload, c.system, c.device, c.num_envs, {**c.config, "actions": "fresh"}) for c in list(cases)
              if c.system in GPU_SYSTEMS and c.num_envs in fresh.get(c.workload, ())]
    return cases


def train_cases(device: str, sizes: str) -> list[Case]:
    t = _FULL if sizes == "full" else _TINY
    steps, iterations, repeats = (32, 3, 3) if sizes == "full" else (4, 1, 1)
    out = [Case(f"train_{env_id.rsplit('_v', 1)[0]}", "gpu_zoo", device, n,
                {**kw, "env_id": env_id, "num_steps": steps, "iterations": iterations, "repeats": repeats})
           for env_id, n, kw in t["train"]]
    if sizes == "full":  # 2.75M agent-steps per iteration: no tiny version of it
        out += warpdrive_run_cases(device, iterations=2, repeats=3)
    out += [Case(SB3, s, "cpu", n) for n in t[SB3] for s in ("gpu_zoo", "supersuit")]  # SB3 trains on the CPU
    return out


def suite_cases(suite: str, device: str, sizes: str) -> list[Case]:
    if suite not in SUITES:
        raise ValueError(f"suite must be one of {SUITES}, got {suite!r}")
    if sizes not in SIZES:
        raise ValueError(f"sizes must be one of {SIZES}, got {sizes!r}")
    if device not in ("cuda", "cpu"):
        raise ValueError(f"device must be 'cuda' or 'cpu', got {device!r}")
    cases = []
    if suite in ("env", "all"):
        cases += env_cases(device, sizes)
    if suite in ("train", "all"):
        cases += train_cases(device, sizes)
    return cases
