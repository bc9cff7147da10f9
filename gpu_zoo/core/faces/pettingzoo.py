"""One generic PettingZoo adapter built from an `EnvSpec`: no per-environment adapter code.

It runs a `BatchedEnv` of one environment without auto-reset and serves PettingZoo's
semantics: NumPy values keyed by agent name, agents leaving ``agents`` as they finish and
never coming back, spaces that are the same object on every call.
"""

from __future__ import annotations

import copy

import gymnasium
import numpy as np
import torch
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec, parallel_to_aec_wrapper

from ..api.spec import EnvSpec
from ..runtime.batched import BatchedEnv, check_seed


class OneEnvFace:
    """What the PettingZoo faces share over their one-env `BatchedEnv`: agents, spaces, render, close.

    A face's ``__init__`` calls `_open` first; its own spaces then go in ``_obs_spaces`` and
    ``_act_spaces`` (one object per agent, so each agent's action space seeds on its own).
    """

    def _open(self, spec: EnvSpec, render_mode, device, params: dict):
        self.render_mode = check_render_mode(render_mode)
        self._env = BatchedEnv(spec, 1, device=device, autoreset=False, validate=False, **params)
        self._slots = {}  # agent -> (group, index in group, global index)
        for g, gi in self._env.layout.groups.items():
            for i, name in enumerate(gi.group.names):
                self._slots[name] = (g, i, gi.lo + i)
        self.possible_agents = list(self._slots)
        self._window = Window()

    @property
    def batched(self) -> BatchedEnv:
        """The underlying one-environment `BatchedEnv`."""
        return self._env

    def observation_space(self, agent):
        return self._obs_spaces[self._check_agent(agent)]

    def action_space(self, agent):
        return self._act_spaces[self._check_agent(agent)]

    def _check_agent(self, agent):
        if agent not in self._slots:
            raise ValueError(f"unknown agent {agent!r}; agents are {self.possible_agents}")
        return agent

    def render(self):
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='rgb_array'")
            return None
        frame = self._env.render(0)
        if self.render_mode == "rgb_array":
            return frame
        self._window.show(frame)
        return None

    def close(self):
        self._window.close()


class GpuZooParallelEnv(OneEnvFace, ParallelEnv):
    """A PettingZoo ``ParallelEnv`` over one environment of a gpu_zoo spec.

    Args:
        spec: the environment's `EnvSpec`.
        render_mode: ``None``, ``"rgb_array"`` or ``"human"`` (a pygame window).
        device: where the single environment runs; the CPU by default.
        **params: the environment's constructor arguments.
    """

    def __init__(self, spec: EnvSpec, render_mode: str | None = None, device="cpu", **params):
        if spec.turn_based:
            raise ValueError(f"{spec.id} is turn-based: its PettingZoo face is the AEC env of gpu_zoo.core.faces.aec")
        self._open(spec, render_mode, device, params)
        self.metadata = {"render_modes": ["human", "rgb_array"], "name": spec.id, "is_parallelizable": True,
                         "render_fps": 15}
        self.spec_ = spec
        layout = self._env.layout
        self.agents: list[str] = []
        self._was_reset = False
        group_of = {a: layout.groups[g] for a, (g, _, _) in self._slots.items()}
        self._obs_spaces = {a: copy.deepcopy(gi.observation_space) for a, gi in group_of.items()}
        self._act_spaces = {a: copy.deepcopy(gi.action_space) for a, gi in group_of.items()}
        self.state_space = gymnasium.spaces.Box(-np.inf, np.inf, (layout.obs_elements,), np.float32)
        self._noop = {g: np.zeros((1, gi.count, *gi.action_shape), np.float32 if gi.action_dtype == "f32" else np.int64)
                      for g, gi in layout.groups.items()}
        for g, gi in layout.groups.items():
            sp = gi.action_space
            if isinstance(sp, gymnasium.spaces.Box):
                self._noop[g][:] = np.clip(0.0, sp.low, sp.high)

    # ------------------------------------------------------------------ API
    def reset(self, seed: int | None = None, options: dict | None = None):
        seed = check_seed(seed)  # before anything changes: a refused seed leaves the episode as it was
        self._env.reset(seed=seed)
        if seed is not None:
            for i, a in enumerate(self.possible_agents):
                self._act_spaces[a].seed(seed + i)
        self.agents = self.possible_agents[:]
        self._was_reset = True
        obs = self._observations(self.agents)
        return obs, self._infos(self.agents)

    def step(self, actions: dict):
        """PettingZoo's parallel step.

        Before the first reset it raises; once every agent has left it returns empty dicts
        (PettingZoo's convention: no one is left to report on).
        """
        if not self._was_reset:
            raise RuntimeError("call reset() before step()")
        if not isinstance(actions, dict):
            raise ValueError(f"actions must be a dict keyed by agent name, got {type(actions).__name__}")
        unknown = [a for a in actions if a not in self._slots]
        if unknown:
            raise ValueError(f"unknown agent(s) {unknown}; agents are {self.possible_agents}")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"no action for live agent(s) {missing}")
        if not self.agents:
            return {}, {}, {}, {}, {}
        batch = {g: v.copy() for g, v in self._noop.items()}
        for a in self.agents:
            g, i, _ = self._slots[a]
            batch[g][0, i] = self._check_action(a, actions[a])
        env = self._env
        env.step({g: torch.from_numpy(v).to(env.device) for g, v in batch.items()})
        f = env.state
        rew, term, trunc = (x[0].cpu().numpy() for x in (f.rew, f.term, f.trunc))
        live = self.agents
        obs = self._observations(live)
        rewards = {a: float(rew[self._slots[a][2]]) for a in live}
        terms = {a: bool(term[self._slots[a][2]]) for a in live}
        truncs = {a: bool(trunc[self._slots[a][2]]) for a in live}
        infos = self._infos(live)
        self.agents = [a for a in live if not (terms[a] or truncs[a])]
        if self.render_mode == "human":
            self.render()
        return obs, rewards, terms, truncs, infos

    def _check_action(self, agent, action):
        space = self._act_spaces[agent]
        arr = np.asarray(action)
        ok = arr.shape == space.shape and (np.issubdtype(arr.dtype, np.integer) if not isinstance(
            space, gymnasium.spaces.Box) else np.issubdtype(arr.dtype, np.number))
        if not ok or not space.contains(arr.astype(space.dtype)):
            raise ValueError(f"action for {agent!r} must be an element of {space}, got {action!r}")
        return arr

    def _infos(self, agents) -> dict[str, dict]:
        """Per agent: ``action_mask`` for masked groups, in the form ``action_space.sample(mask)`` takes.

        An int8 array (1 = feasible) for Discrete actions; for MultiDiscrete, a tuple of one such
        array per dimension.
        """
        masks = {g: m[0].cpu().numpy().astype(np.int8) for g, m in self._env.action_masks.items()}
        infos = {}
        for a in agents:
            g, i, _ = self._slots[a]
            if g not in masks:
                infos[a] = {}
                continue
            mask, space = masks[g][i], self._act_spaces[a]
            if isinstance(space, gymnasium.spaces.MultiDiscrete):
                mask = tuple(np.split(mask, np.cumsum(space.nvec)[:-1]))
            infos[a] = {"action_mask": mask}
        return infos

    def _observations(self, agents) -> dict[str, np.ndarray]:
        host = {g: t[0].cpu().numpy().copy() for g, t in self._env.obs.items()}
        return {a: host[self._slots[a][0]][self._slots[a][1]] for a in agents}

    def state(self) -> np.ndarray:
        """The global state: every agent's observation, concatenated in agent order."""
        return self._env.global_state()[0].cpu().numpy()



def check_render_mode(render_mode):
    if render_mode not in (None, "rgb_array", "human"):
        raise ValueError(f"render_mode must be None, 'rgb_array' or 'human', got {render_mode!r}")
    return render_mode


class Window:
    """The pygame window of ``render_mode="human"``, opened on the first frame."""

    def __init__(self):
        self._surface = None

    def show(self, frame: np.ndarray):
        try:
            import pygame
        except ImportError as err:
            raise ImportError("render_mode='human' needs pygame: pip install pygame-ce") from err
        if self._surface is None:
            pygame.init()
            self._surface = pygame.display.set_mode(frame.shape[1::-1])
        surf = pygame.surfarray.make_surface(np.ascontiguousarray(frame.transpose(1, 0, 2)))
        self._surface.blit(surf, (0, 0))
        pygame.event.pump()
        pygame.display.flip()

    def close(self):
        if self._surface is not None:
            import pygame

            pygame.display.quit()
            self._surface = None


def entry_points(spec: EnvSpec):
    """The module-level functions of a versioned env module: ``env, parallel_env, raw_env, batched_env``.

    For a turn-based env, `gpu_zoo.core.faces.aec.turn_based_entry_points` instead.
    """
    if spec.turn_based:
        raise ValueError(f"{spec.id} is turn-based: its module's functions come from "
                         "gpu_zoo.core.faces.aec.turn_based_entry_points")

    def parallel_env(**kwargs) -> GpuZooParallelEnv:
        return GpuZooParallelEnv(spec, **kwargs)

    def raw_env(**kwargs):
        return parallel_to_aec_wrapper(parallel_env(**kwargs))

    def env(**kwargs):
        return parallel_to_aec(parallel_env(**kwargs))

    def batched_env(num_envs: int = 1, device=None, **kwargs) -> BatchedEnv:
        return BatchedEnv(spec, num_envs=num_envs, device=device, **kwargs)

    for fn, what in ((parallel_env, "PettingZoo ParallelEnv"), (raw_env, "AEC env without wrappers"),
                     (env, "AEC env (order enforcing)"), (batched_env, "batched tensor env")):
        fn.__doc__ = f"The {what} of ``{spec.id}``; keyword arguments are its params."
        fn.__qualname__ = fn.__name__
    return env, parallel_env, raw_env, batched_env
