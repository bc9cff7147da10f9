"""PettingZoo's AEC faces of games whose agents move one at a time, as in PettingZoo's classic games.

A turn-based spec (``EnvSpec(play="turns")``) keeps the agent to move in its state
(``current_player``). This face runs one such env (a `BatchedEnv` of one, no auto-reset) and
follows that field as ``agent_selection``; everything else is PettingZoo's own `AECEnv`
bookkeeping (``last``, ``_was_dead_step``, ``_accumulate_rewards``), so finished agents step out
with ``None`` exactly as in PettingZoo's envs. ``env()`` wraps it in PettingZoo's own wrappers, as
PettingZoo's classic modules do: an illegal move then ends the game through
`TerminateIllegalWrapper`, with PettingZoo's rewards and ``agent_selection``.

A simultaneous game that PettingZoo writes as an AEC env played in rounds (rock-paper-scissors)
gets `GpuZooRoundsEnv` instead: the batched face steps a whole round at once, the AEC face takes
the round's moves one agent after another. A game played in sequence (``play="sequential"``,
pursuit) gets `GpuZooSequentialEnv`: each agent's step launches that agent's move at once, so the
others see it, and the cycle's last move advances the world.
"""

from __future__ import annotations

import copy

import gymnasium
import numpy as np
import torch
from pettingzoo import AECEnv
from pettingzoo.utils import AgentSelector, wrappers
from pettingzoo.utils.conversions import parallel_wrapper_fn

from ..api.spec import EnvSpec, Group
from ..runtime.batched import BatchedEnv, check_seed
from .pettingzoo import OneEnvFace

CYCLE_PLAYS = ("rounds", "sequential")
"""The plays whose agents move in cycles, one after another: their modules' functions are `rounds_entry_points`'."""


class _OneEnvAEC(OneEnvFace, AECEnv):
    """What both AEC faces share: one env of a spec, its agents and spaces, and PettingZoo's bookkeeping.

    The env is a `BatchedEnv` of one without auto-reset; moves are checked before they reach it, and
    its state is copied from the device once a step.
    """

    def __init__(self, spec: EnvSpec, render_mode: str | None = None, device="cpu", **params):
        super().__init__()
        self._open(spec, render_mode, device, params)
        self.metadata = {"render_modes": ["human", "rgb_array"], "name": spec.id,
                         "is_parallelizable": not spec.turn_based, "render_fps": 2}
        layout = self._env.layout
        self.agents = self.possible_agents[:]
        self._obs_spaces = {a: _observation_space(layout.groups[g]) for a, (g, _, _) in self._slots.items()}
        self._act_spaces = {a: copy.deepcopy(layout.groups[g].action_space) for a, (g, _, _) in self._slots.items()}
        self._noop = {g: np.zeros((1, gi.count, *gi.action_shape), np.int64) for g, gi in layout.groups.items()}
        self._host = None  # the env's observations, masks and flags, copied once after each reset and step

    def reset(self, seed: int | None = None, options: dict | None = None):
        seed = check_seed(seed)  # before anything changes: a refused seed leaves the game as it was
        self._env.reset(seed=seed)
        self._copy_out()
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}

    def _check_action(self, agent, action) -> int:
        """The move as an int; one outside the agent's space or not legal now is refused, naming what is expected."""
        space = self._act_spaces[agent]
        if isinstance(action, bool | np.bool_) or not isinstance(action, int | np.integer) \
                and not (isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu"):
            raise ValueError(f"action for {agent!r} must be an int in {space}, got {action!r}")
        value = int(action)
        if not space.contains(np.int64(value)):
            raise ValueError(f"action for {agent!r} must be an element of {space}, got {value}")
        obs = self.observe(agent)
        if isinstance(obs, dict) and not obs["action_mask"][value]:
            legal = np.flatnonzero(obs["action_mask"]).tolist()
            raise ValueError(f"action {value} is not legal for {agent!r} now; the legal actions are {legal}")
        return value

    def _step_env(self, moves: dict[str, int]):
        """One step of the env with these agents' moves; PettingZoo's dicts then hold its rewards and ends."""
        batch = {name: v.copy() for name, v in self._noop.items()}
        for agent, move in moves.items():
            g, i, _ = self._slots[agent]
            batch[g][0, i] = move
        env = self._env
        env.step({name: torch.from_numpy(v).to(env.device) for name, v in batch.items()})
        self._copy_out()
        rew, term, trunc = self._host["rew"], self._host["term"], self._host["trunc"]
        self.rewards = {a: float(rew[self._slots[a][2]]) for a in self.agents}
        self.terminations = {a: bool(term[self._slots[a][2]]) for a in self.agents}
        self.truncations = {a: bool(trunc[self._slots[a][2]]) for a in self.agents}

    def _copy_out(self):
        """One copy from the device per reset or step: what observe and step then read."""
        env, layout = self._env, self._env.layout
        f = env.state
        obs = {g: [pettingzoo_observation(layout.groups[g].group, row) for row in t[0].cpu().numpy()]
               for g, t in env.obs.items()}
        self._host = {
            "obs": obs,
            "mask": {g: m[0].cpu().numpy().astype(np.int8) for g, m in env.action_masks.items()},
            "rew": f.rew[0].cpu().numpy(), "term": f.term[0].cpu().numpy(), "trunc": f.trunc[0].cpu().numpy(),
            "current_player": int(f.current_player[0]) if env.spec.turn_based else None,
        }


class GpuZooAECEnv(_OneEnvAEC):
    """A PettingZoo ``AECEnv`` over one environment of a turn-based gpu_zoo spec.

    Observations are PettingZoo's: in the group's ``obs_space`` (`pettingzoo_observation`), and for a masked
    group a dict ``{"observation": ..., "action_mask": int8}`` whose mask is the legal moves for
    the agent to move and zeros for every other agent.

    Args:
        spec: the environment's `EnvSpec` (``play="turns"``).
        render_mode: ``None``, ``"rgb_array"`` or ``"human"`` (a pygame window).
        device: where the single environment runs; the CPU by default.
        **params: the environment's constructor arguments.
    """

    def __init__(self, spec: EnvSpec, render_mode: str | None = None, device="cpu", **params):
        if not spec.turn_based:
            raise ValueError(f"{spec.id} is not turn-based: its AEC face is GpuZooRoundsEnv, or parallel_to_aec")
        super().__init__(spec, render_mode, device, **params)

    def reset(self, seed: int | None = None, options: dict | None = None):
        super().reset(seed, options)
        self.agent_selection = self._mover()
        if self.render_mode == "human":
            self.render()

    def observe(self, agent):
        g, i, _ = self._slots[self._check_agent(agent)]
        obs = self._host["obs"][g][i].copy()
        if g not in self._host["mask"]:
            return obs
        mask = np.zeros_like(self._host["mask"][g][i])
        if agent == self.agent_selection:
            # The legal moves of the position, whoever asks: PettingZoo's envs hand them to
            # agent_selection, which a wrapper may move (to the first finished agent) at a game's end.
            mg, mi, _ = self._slots[self._mover()]
            mask = self._host["mask"][mg][mi].copy()
        return {"observation": obs, "action_mask": mask}

    def step(self, action):
        """PettingZoo's AEC step: the selected agent's move, or ``None`` from a finished agent.

        An action outside the agent's space or not legal now is refused with a ValueError naming
        what is expected, and nothing changes (``env()`` ends the game on an illegal move instead,
        as PettingZoo's own ``env()`` does).
        """
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        self._step_env({agent: self._check_action(agent, action)})
        self.agent_selection = self._mover()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _mover(self) -> str:
        return self.possible_agents[self._host["current_player"]]


class GpuZooRoundsEnv(_OneEnvAEC):
    """A PettingZoo ``AECEnv`` over a simultaneous game played in rounds, as PettingZoo's rock-paper-scissors.

    The agents move one after another in ``possible_agents`` order; the last one's move steps the
    env with every agent's. Between, an agent's step clears the rewards, and each agent's
    cumulative reward restarts at its own move: PettingZoo's AEC form of a simultaneous game.
    Observations change only when a round is played. ``parallel_env`` is PettingZoo's
    ``parallel_wrapper_fn`` of it.

    Args: as `GpuZooAECEnv`'s, for a spec that is not turn-based.
    """

    def __init__(self, spec: EnvSpec, render_mode: str | None = None, device="cpu", **params):
        # A game played in sequence is stepped a whole cycle at a time here (its parallel_env's AEC env).
        if spec.play not in CYCLE_PLAYS:
            raise ValueError(f"{spec.id} is not played in rounds (EnvSpec.play={spec.play!r})")
        super().__init__(spec, render_mode, device, **params)
        self._selector = AgentSelector(self.possible_agents)

    def reset(self, seed: int | None = None, options: dict | None = None):
        super().reset(seed, options)
        self._selector.reinit(self.agents)
        self.agent_selection = self._selector.next()
        self._moves = {}
        if self.render_mode == "human":
            self.render()

    def observe(self, agent):
        g, i, _ = self._slots[self._check_agent(agent)]
        return self._host["obs"][g][i].copy()

    def step(self, action):
        """An agent's move; the round's last steps the env. ``None`` from a finished agent."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        self._moves[agent] = self._check_action(agent, action)
        if self._selector.is_last():
            self._step_env(self._moves)
            self._moves = {}
            if self.render_mode == "human":
                self.render()
        else:
            self._clear_rewards()
        self._cumulative_rewards[agent] = 0
        self.agent_selection = self._selector.next()
        self._accumulate_rewards()


class GpuZooSequentialEnv(GpuZooRoundsEnv):
    """A PettingZoo ``AECEnv`` over a game played in sequence (``EnvSpec(play="sequential")``), as PettingZoo's pursuit.

    The agents move one after another in ``possible_agents`` order, and each agent's step runs
    the env at once with that move alone (the core's ``mover``): every agent then observes it,
    and every agent's reward is that sub-step's; the last agent's move also advances the world.
    The actor's cumulative reward restarts at its own move, and the others' accumulate, as in
    PettingZoo's pursuit. ``parallel_env`` plays whole cycles instead (`GpuZooRoundsEnv`, one
    launch a cycle), as the batched face does.

    Args: as `GpuZooAECEnv`'s, for a spec with ``play="sequential"``.
    """

    def __init__(self, spec: EnvSpec, render_mode: str | None = None, device="cpu", **params):
        if spec.play != "sequential":
            raise ValueError(f"{spec.id} is not played in sequence (EnvSpec.play={spec.play!r})")
        super().__init__(spec, render_mode, device, **params)

    def step(self, action):
        """The selected agent's move, applied at once; ``None`` from a finished agent."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        move = self._check_action(agent, action)  # a refused move changes nothing
        self._env.state.mover[0] = self._slots[agent][2]
        self._step_env({agent: move})
        self._cumulative_rewards[agent] = 0
        self.agent_selection = self._selector.next()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()


def pettingzoo_observation(group: Group, row: np.ndarray):
    """One agent's flat row (float32, or uint8 for ``obs_dtype="u8"``) as the PettingZoo faces give it.

    In the group's ``obs_space`` if it has one (the row's whole numbers cast to its dtype).
    """
    sp = group.obs_space
    if isinstance(sp, gymnasium.spaces.Discrete):
        return np.array(int(row[0]), dtype=np.int64)
    if isinstance(sp, gymnasium.spaces.Box):
        return row.reshape(sp.shape).astype(sp.dtype)
    return row.copy()


def _observation_space(gi) -> gymnasium.spaces.Space:
    g = gi.group
    obs = copy.deepcopy(g.obs_space) if g.obs_space is not None else gi.observation_space
    if not g.masked:
        return obs
    mask = gymnasium.spaces.Box(0, 1, (gi.mask_size,), np.int8)
    return gymnasium.spaces.Dict({"observation": obs, "action_mask": mask})


def turn_based_entry_points(spec: EnvSpec, illegal_reward: float | None = -1.0):
    """The module-level functions of a turn-based env's versioned module: ``env, raw_env, batched_env``.

    ``env()`` wraps ``raw_env()`` as PettingZoo's classic modules do: `TerminateIllegalWrapper`
    (with ``illegal_reward``; None leaves it out), `AssertOutOfBoundsWrapper` and
    `OrderEnforcingWrapper`, PettingZoo's own classes.
    """

    def raw_env(**kwargs) -> GpuZooAECEnv:
        return GpuZooAECEnv(spec, **kwargs)

    def env(**kwargs):
        out = raw_env(**kwargs)
        if illegal_reward is not None:
            out = wrappers.TerminateIllegalWrapper(out, illegal_reward=illegal_reward)
        out = wrappers.AssertOutOfBoundsWrapper(out)
        return wrappers.OrderEnforcingWrapper(out)

    def batched_env(num_envs: int = 1, device=None, **kwargs) -> BatchedEnv:
        return BatchedEnv(spec, num_envs=num_envs, device=device, **kwargs)

    for fn, what in ((raw_env, "AEC env without wrappers"), (env, "AEC env with PettingZoo's wrappers"),
                     (batched_env, "batched tensor env")):
        fn.__doc__ = f"The {what} of ``{spec.id}``; keyword arguments are its params."
        fn.__qualname__ = fn.__name__
    return env, raw_env, batched_env


def rounds_entry_points(spec: EnvSpec):
    """The module-level functions of a game of `CYCLE_PLAYS`: ``env, parallel_env, raw_env, batched_env``.

    As PettingZoo's rock-paper-scissors and pursuit modules: ``env()`` wraps ``raw_env()`` in
    `AssertOutOfBoundsWrapper` and `OrderEnforcingWrapper`, and ``parallel_env`` is PettingZoo's
    ``parallel_wrapper_fn`` of such an env. ``raw_env()`` is a `GpuZooRoundsEnv`, or for
    ``play="sequential"`` a `GpuZooSequentialEnv`; ``parallel_env`` steps whole rounds or cycles
    through a `GpuZooRoundsEnv` either way (one launch a cycle; PettingZoo's wrapper sums the
    rewards of a cycle's steps, which the env's cycle reward already is).
    """
    face = GpuZooSequentialEnv if spec.play == "sequential" else GpuZooRoundsEnv

    def raw_env(**kwargs) -> GpuZooRoundsEnv:
        return face(spec, **kwargs)

    def env(**kwargs):
        return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(raw_env(**kwargs)))

    def batched_env(num_envs: int = 1, device=None, **kwargs) -> BatchedEnv:
        return BatchedEnv(spec, num_envs=num_envs, device=device, **kwargs)

    def cycles_env(**kwargs):
        return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(GpuZooRoundsEnv(spec, **kwargs)))

    parallel_env = parallel_wrapper_fn(cycles_env)
    for fn, what in ((raw_env, "AEC env without wrappers"), (env, "AEC env with PettingZoo's wrappers"),
                     (batched_env, "batched tensor env")):
        fn.__doc__ = f"The {what} of ``{spec.id}``; keyword arguments are its params."
        fn.__qualname__ = fn.__name__
    return env, parallel_env, raw_env, batched_env
