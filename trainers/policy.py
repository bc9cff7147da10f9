"""The actor-critic of one agent group, for Discrete, MultiDiscrete and Box actions, with action masks."""

from __future__ import annotations

import gymnasium
import torch
from torch import nn
from torch.distributions import Categorical, Normal

# A finite stand-in for minus infinity: log-softmax stays finite (no NaN in the loss or the
# entropy) while exp() of it underflows to exactly zero, so a masked action has probability 0.
MASKED_LOGIT = -1e9


ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


def hidden_layers(inp: int, hidden: int, activation: str = "tanh") -> nn.Sequential:
    """Two ``hidden``-wide layers, each followed by ``activation`` (a key of `ACTIVATIONS`)."""
    act = ACTIVATIONS[activation]
    return nn.Sequential(nn.Linear(inp, hidden), act(), nn.Linear(hidden, hidden), act())


def mlp(inp: int, hidden: int, out: int, activation: str = "tanh") -> nn.Sequential:
    return nn.Sequential(*hidden_layers(inp, hidden, activation), nn.Linear(hidden, out))


class GroupPolicy(nn.Module):
    """Actor-critic for one group; its parameters are shared by the group's agents.

    Args:
        obs_size: length of one agent's observation vector.
        space: the group's single-agent action space.
        hidden: width of the two hidden layers of the actor and of the critic.
        critic_size: length of the critic's input (default ``obs_size``; a centralised critic's is larger).
        activation: the hidden layers' nonlinearity, ``"tanh"`` or ``"relu"``.
        shared_trunk: one trunk of hidden layers under a policy head and a value head, as WarpDrive's
            fully connected model and CleanRL's Atari agent have, instead of two networks: half the
            layers to run, and the two losses shape one set of features. Its critic sees the
            observation.

    ``actor`` and ``critic`` are the two networks as `nn.Sequential` either way (with a shared
    trunk both hold the trunk's layers), so code that runs one of them needs no case.
    """

    def __init__(self, obs_size: int, space: gymnasium.spaces.Space, hidden: int, critic_size: int | None = None,
                 activation: str = "tanh", shared_trunk: bool = False):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        if shared_trunk and critic_size not in (None, obs_size):
            raise ValueError(f"a shared trunk reads the observation ({obs_size} values): its critic cannot see "
                             f"another input ({critic_size} values)")
        self.space = space
        self.shared_trunk = shared_trunk
        if isinstance(space, gymnasium.spaces.Discrete):
            self.splits, out = [int(space.n)], int(space.n)
        elif isinstance(space, gymnasium.spaces.MultiDiscrete):
            if space.nvec.ndim != 1:
                raise ValueError(f"MultiDiscrete spaces must be flat, got nvec of shape {space.nvec.shape}")
            self.splits = [int(n) for n in space.nvec]
            out = sum(self.splits)
        elif isinstance(space, gymnasium.spaces.Box) and len(space.shape) == 1:
            self.splits, out = None, int(space.shape[0])
            self.log_std = nn.Parameter(torch.zeros(out))
            self.register_buffer("low", torch.as_tensor(space.low))
            self.register_buffer("high", torch.as_tensor(space.high))
        else:
            raise ValueError(f"GroupPolicy takes Discrete, flat MultiDiscrete or 1-d Box actions, got {space}")
        if shared_trunk:
            self.trunk = hidden_layers(obs_size, hidden, activation)
            self.policy_head, self.value_head = nn.Linear(hidden, out), nn.Linear(hidden, 1)
            # views, not submodules: the state dict names each parameter once, as trunk or head, and a
            # checkpoint of two separate networks does not load into these
            object.__setattr__(self, "actor", nn.Sequential(*self.trunk, self.policy_head))
            object.__setattr__(self, "critic", nn.Sequential(*self.trunk, self.value_head))
        else:
            self.actor = mlp(obs_size, hidden, out, activation)
            self.critic = mlp(critic_size or obs_size, hidden, 1, activation)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def act(self, obs: torch.Tensor, action: torch.Tensor | None = None, mask: torch.Tensor | None = None,
            greedy: bool = False, critic_obs: torch.Tensor | None = None):
        """(action, log-prob, entropy, value) for observations ``(..., obs_size)``.

        Samples an action when none is given (the most likely one with ``greedy``). ``mask``
        (``(..., mask_size)`` bools, True = feasible) gives infeasible actions probability zero;
        pass the mask an action was sampled under to recompute its log-probability.
        ``critic_obs`` is the critic's input where it is not the observation (a centralised critic).
        """
        if self.shared_trunk:  # the trunk once, for both heads
            h = self.trunk(obs)
            out, value = self.policy_head(h), self.value_head(h).squeeze(-1)
        else:
            out, value = self.actor(obs), self.value(obs if critic_obs is None else critic_obs)
        action, logp, entropy = self.draw(out, action, mask, greedy, with_entropy=True)
        return action, logp, entropy, value

    def sample(self, obs: torch.Tensor, mask: torch.Tensor | None = None, greedy: bool = False):
        """(action, log-prob) from the actor alone, as `act` draws them.

        A rollout step or an evaluation needs no value (and a centralised critic's input is not the observation).
        An env's uint8 observations (a board's planes) enter the network as float32.
        """
        return self.draw(self.actor(obs.float()), None, mask, greedy, with_entropy=False)[:2]

    def draw(self, out: torch.Tensor, action=None, mask=None, greedy: bool = False, with_entropy: bool = True):
        """(action, log-prob, entropy or None) from the actor's output ``out``: the action drawn (or given)."""
        if self.splits is None:
            if mask is not None:
                raise ValueError("action masks apply to Discrete and MultiDiscrete groups, not Box ones")
            dist = Normal(out, self.log_std.exp().expand_as(out), validate_args=False)
            if action is None:
                action = out if greedy else dist.sample()
            return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1) if with_entropy else None
        if mask is not None:
            out = out.masked_fill(~mask, MASKED_LOGIT)
        # validate_args=False: torch's argument checks read a result back to the host, a device
        # sync per distribution and per log_prob, which stalls a GPU rollout once per action head.
        single = len(self.splits) == 1
        if len(set(self.splits)) == 1:
            # Heads of one size are one batched distribution over (..., heads, n): a planner's seven
            # tax brackets cost the kernel launches of one head instead of seven.
            dist = Categorical(logits=out.unflatten(-1, (len(self.splits), self.splits[0])), validate_args=False)
            if action is None:
                action = dist.logits.argmax(-1) if greedy else dist.sample()
                if single:
                    action = action[..., 0]
            parts = action.unsqueeze(-1) if single else action
            return action, dist.log_prob(parts).sum(-1), dist.entropy().sum(-1) if with_entropy else None
        dists = [Categorical(logits=x, validate_args=False) for x in out.split(self.splits, dim=-1)]
        if action is None:
            action = torch.stack([d.logits.argmax(-1) if greedy else d.sample() for d in dists], -1)
        logp = sum(d.log_prob(action[..., i]) for i, d in enumerate(dists))
        return action, logp, sum(d.entropy() for d in dists) if with_entropy else None

    @property
    def logits_size(self) -> int:
        """Width of the actor's output: the summed action counts of its heads (the mean for Box actions)."""
        return self.actor[-1].out_features

    def to_env(self, action: torch.Tensor) -> torch.Tensor:
        """The action as the env takes it (Box actions clipped to their bounds)."""
        return action.clamp(self.low, self.high) if self.splits is None else action
