"""A stable-baselines3 ``VecEnv`` over a batched env: one slot per (environment, agent) of a group.

SB3 then trains one policy, shared by every agent of the group, on thousands of environments at
once, with no SuperSuit process copies. The other groups' agents act by a fixed policy that you
pass (uniformly random by default).

An agent that leaves the game mid-episode (a tagged runner) reports ``done`` with its terminal
observation. Its slot then holds zero observations and rewards until its environment resets,
as SuperSuit's black death does. Time-limit ends carry ``TimeLimit.truncated`` so SB3
bootstraps them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from stable_baselines3.common.vec_env import VecEnv

from ..runtime.batched import BatchedEnv


def random_policy(env: BatchedEnv, group: str) -> torch.Tensor:
    """Uniform random actions for one group, made on the env's device."""
    return env.sample_actions(groups=(group,))[group]


class SB3VecEnv(VecEnv):
    """Exposes group ``group`` of ``env`` to stable-baselines3.

    Args:
        env: a `BatchedEnv` (any device; values cross to NumPy once per step).
        group: the group SB3 controls.
        other_policy: ``other_policy(env, group_name) -> actions tensor`` for every other group.
    """

    def __init__(self, env: BatchedEnv, group: str, other_policy: Callable = random_policy):
        self.env, self.group, self.other_policy = env, group, other_policy
        self._n = env.group_size(group)
        self.render_mode = None  # SB3 warns when a VecEnv lacks it
        super().__init__(env.num_envs * self._n, env.single_observation_space(group),
                         env.single_action_space(group))
        self._actions = None

    def _flat(self, t: torch.Tensor) -> np.ndarray:
        return t.reshape(self.num_envs, *t.shape[2:]).cpu().numpy().copy()

    def reset(self):
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
        self._reset_seeds()
        obs = self.env.reset(seed=seed)
        return self._flat(obs[self.group])

    def step_async(self, actions: np.ndarray):
        self._actions = actions

    def step_wait(self):
        env, g = self.env, self.group
        mine = np.asarray(self._actions)
        want = (self.num_envs, *env.actions[g].shape[2:])
        if mine.shape != want:
            raise ValueError(f"actions must have shape {want} (one row per agent of group {g!r} in every env), "
                             f"got {mine.shape}")
        try:
            mine = torch.as_tensor(mine, device=env.device).reshape(env.actions[g].shape)
        except TypeError as err:
            raise ValueError(f"actions must be numbers for {env.single_action_space(g)}, got {mine.dtype}") from err
        env.check_actions(g, mine)  # before the other groups draw theirs: a refused step draws nothing
        acts = {name: self.other_policy(env, name) for name in env.groups if name != g}
        acts[g] = mine
        obs, rew, term, trunc, info = env.step(acts)
        o, r = self._flat(obs[g]), self._flat(rew[g])
        te, tr = self._flat(term[g]), self._flat(trunc[g])
        final = self._flat(info["final_obs"][g])
        env_done = np.repeat(info["done"].cpu().numpy(), self._n)
        dones = te | tr
        infos = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            infos[i]["terminal_observation"] = final[i] if env_done[i] else o[i]
            infos[i]["TimeLimit.truncated"] = bool(tr[i] and not te[i])
        return o, r.astype(np.float32), dones, infos

    def close(self):
        pass

    def action_masks(self) -> np.ndarray:
        """The group's action masks, ``(num_envs, mask_size)`` bools in SB3's layout (sb3-contrib's MaskablePPO).

        One row per slot (agent of an env); for MultiDiscrete actions the dimensions' masks side by side.
        """
        masks = self.env.action_masks
        if self.group not in masks:
            raise AttributeError(f"group {self.group!r} of {self.env.spec.id} has no action masks")
        return masks[self.group].reshape(self.num_envs, -1).cpu().numpy()

    def has_attr(self, attr_name) -> bool:
        if attr_name == "action_masks":  # what MaskablePPO asks before it masks
            return self.group in self.env.action_masks
        return super().has_attr(attr_name)

    def get_attr(self, attr_name, indices=None):
        return [getattr(self.env, attr_name)] * len(list(self._get_indices(indices)))

    def set_attr(self, attr_name, value, indices=None):
        raise AttributeError("SB3VecEnv slots share one batched env: set attributes on SB3VecEnv.env")

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        if method_name == "action_masks":  # each slot's own row, as a VecEnv of single envs answers
            rows = self.action_masks()
            return [rows[i] for i in self._get_indices(indices)]
        return [getattr(self.env, method_name)(*method_args, **method_kwargs)]

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * len(list(self._get_indices(indices)))
