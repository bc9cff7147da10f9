"""PPO on a gpu_zoo batched env, end to end on one device.

    gpu-zoo train tag_gridworld_v0                     # its preset: see trainers/config.py
    gpu-zoo train simple_tag_v3 --num-envs 16384 --device cuda
    gpu-zoo train --resume runs/tag_gridworld_v0/checkpoint.pt --total-env-steps 8000000

One policy per agent group (taggers, runners, ...), its parameters shared by the group's agents,
and one Adam optimiser per policy. Read top to bottom: the pure parts (GAE, the loss), the
storage, the rollout, the update. Nothing leaves the device inside the rollout or the update;
metrics accumulate there and are read every ``log_every`` iterations.

- **Rollout.** Each step samples every group's actions from its actor and writes the step to
  preallocated storage at the step index ``t``, a device tensor. Values are not needed while
  stepping: after the rollout the critic runs once over every stored observation and every next
  observation (the final one where an episode ended), so truncated episodes bootstrap from
  ``info["final_obs"]`` and terminated ones from zero.
- **Update.** GAE, advantage normalisation, then epochs of minibatches of the clipped PPO loss.
- **On a GPU** a whole rollout and a whole update are each captured once as a CUDA graph and
  replayed, so no Python runs per step or minibatch; learning rates and entropy weights are
  device tensors the graph reads. Triton kernels (`trainers.fused`) write every group's storage
  and compute its GAE. Groups with Discrete or MultiDiscrete actions draw their actions in a
  kernel and, where the networks fit, run them there too, the loss's gradient computed in one
  pass without writing hidden layers to memory (``fused``); wider networks, ReLU ones and shared
  trunks run as torch layers (bfloat16 hidden layers; the rollout's from weight copies taken once
  per rollout, `InferenceLayers`) and a kernel turns their logits into the policy loss's gradient
  (``drawn``).
  On a CPU every group runs the plain torch code below, which the kernels are tested against.
- Groups with action masks sample under them, and the update recomputes log-probabilities
  under the same masks.

A data-parallel run (`trainers.distributed`) gives each rank a `Trainer` with its `World`: the
rank seeds its envs and draws apart, the policies start from rank 0's, `Trainer.sync_gradients`
averages each minibatch's gradient over the ranks and `Trainer.read_metrics` sums the metrics.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import nn

import gpu_zoo
from gpu_zoo.core.runtime.graphs import capture
from gpu_zoo.core.runtime.launch import default_device
from trainers import checkpoint, distributed, fused
from trainers.adam import Adam
from trainers.config import Args
from trainers.distributed import SINGLE, World
from trainers.policy import GroupPolicy


@contextmanager
def matmul_precision(device: torch.device):
    """On a GPU, torch's float32 products at `trainers.fused.torch_matmul_precision` while the block runs."""
    if device.type != "cuda":
        yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(fused.torch_matmul_precision())
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)

def forward_bf16(net: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``net(x)`` for a `trainers.policy.mlp`, its hidden layers' products and activations in bfloat16.

    The output layer multiplies the bfloat16 activations by a bfloat16 copy of its weights and
    accumulates in float32 (`output_float32`), so logits and values keep float32's precision;
    parameters and their gradients stay float32. Half the bytes of float32 activations, where an
    update over millions of rows of 256-wide layers is bound by them.
    """
    return output_float32(net[-1], hidden_bf16(net[:-1], x))


def hidden_bf16(layers: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``layers(x)`` in bfloat16: products and activations (`forward_bf16`'s hidden layers)."""
    with torch.autocast(x.device.type, dtype=torch.bfloat16, cache_enabled=False):
        return layers(x)


def output_float32(last: nn.Linear, h: torch.Tensor) -> torch.Tensor:
    """``last(h)`` in float32 from bfloat16 ``h`` (`_Float32Output`)."""
    if not h.is_cuda:  # float32 products of bfloat16 operands are a CUDA kernel
        return last(h.float())
    y = _Float32Output.apply(h.reshape(-1, h.shape[-1]), last.weight, last.bias)
    return y.view(*h.shape[:-1], -1)


class _Float32Output(torch.autograd.Function):
    """``h @ weight.T + bias`` in float32 from bfloat16 ``h`` and ``weight``'s bfloat16 copy, both ways.

    torch's float32-output product of bfloat16 operands (``torch.mm(..., out_dtype=)``) has no derivative.
    """

    @staticmethod
    def forward(ctx, h, weight, bias):
        w = weight.to(torch.bfloat16)
        ctx.save_for_backward(h, w)
        return torch.mm(h, w.t(), out_dtype=torch.float32) + bias

    @staticmethod
    def backward(ctx, grad):
        h, w = ctx.saved_tensors
        g = grad.to(torch.bfloat16)
        return g @ w, torch.mm(g.t(), h, out_dtype=torch.float32), grad.sum(0)


class InferenceLayers:
    """A wide group's actor for the rollout's steps, from bfloat16 copies of its weights taken once per rollout.

    The same products as `forward_bf16` (bfloat16 operands, the output accumulated in float32), but a
    step at a few thousand rows is bound by its kernel count, not its bytes: the weights' casts run
    once per rollout instead of once per step, and a ReLU layer is one kernel with its bias and
    activation in the product's epilogue. With a shared trunk the value head runs on the same
    features, so a step's values come with its draws.
    """

    def __init__(self, pol: GroupPolicy):
        layers = list(pol.trunk) if pol.shared_trunk else list(pol.actor[:-1])
        self.relu = isinstance(layers[1], nn.ReLU)
        self.hidden = [m for m in layers if isinstance(m, nn.Linear)]
        self.heads = [pol.policy_head, pol.value_head] if pol.shared_trunk else [pol.actor[-1]]
        half = lambda t: torch.empty_like(t, dtype=torch.bfloat16)  # noqa: E731
        self.copies = [(half(m.weight), half(m.bias)) for m in self.hidden]
        self.head_weights = [half(m.weight) for m in self.heads]

    def refresh(self):
        """Copies the current weights (part of the rollout's capture: a replay copies the updated ones)."""
        for m, (w, b) in zip(self.hidden, self.copies, strict=True):
            w.copy_(m.weight)
            b.copy_(m.bias)
        for m, w in zip(self.heads, self.head_weights, strict=True):
            w.copy_(m.weight)

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(logits, values or None) for rows ``x``."""
        h = x.reshape(-1, x.shape[-1]).to(torch.bfloat16)
        for w, b in self.copies:
            # bias and ReLU in the product's kernel (cuBLASLt's epilogue)
            h = torch._addmm_activation(b, h, w.t()) if self.relu else torch.addmm(b, h, w.t()).tanh_()
        if h.is_cuda:
            out = [torch.addmm(m.bias, h, w.t(), out_dtype=torch.float32)
                   for m, w in zip(self.heads, self.head_weights, strict=True)]
        else:  # float32 products of bfloat16 operands are a CUDA kernel
            out = [torch.addmm(m.bias, h.float(), w.float().t()) for m, w in zip(self.heads, self.head_weights,
                                                                                strict=True)]
        logits = out[0].view(*x.shape[:-1], -1)
        return logits, out[1].view(x.shape[:-1]) if len(out) > 1 else None


LOSS_STATS = ("pg", "vf", "entropy", "approx_kl", "clipfrac")
VALUE_CHUNK = 1 << 20  # rows per critic pass over the stored rollout on the torch path


# --------------------------------------------------------------------- pure parts
def compute_gae(rewards, values, next_values, terminated, ended, gamma: float, lam: float, choice=None):
    """Advantages and returns over a rollout; every tensor is (T, ...).

    ``next_values[t]`` is the value of the state after step t (of the final observation when the
    episode ended there). ``terminated[t]`` zeroes that bootstrap; ``ended[t]`` (terminated or
    truncated) cuts the advantage chain.

    ``choice[t]`` (bools, optional) says whether the agent had a choice at step t. A step without
    one is no decision: the chain runs through it with lambda 1, so an agent that acts once per
    period (the economy's planner) is credited with its whole period's rewards, bootstrapped from
    its value only at its next decision, as in a semi-Markov decision process. With every step a
    choice this is the usual GAE.
    """
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    lams = None if choice is None else torch.where(choice, lam, 1.0)
    for t in range(rewards.shape[0] - 1, -1, -1):
        delta = rewards[t] + gamma * next_values[t] * (1.0 - terminated[t]) - values[t]
        # ``last`` is step t+1's advantage (zero past the rollout): its lambda is that step's
        step_lam = lam if lams is None or t + 1 == rewards.shape[0] else lams[t + 1]
        last = delta + gamma * step_lam * (1.0 - ended[t]) * last
        adv[t] = last
    return adv, adv + values


def ppo_loss(new_logp, old_logp, adv, new_value, old_value, returns, entropy, mask, clip: float, vf_coef: float,
             ent_coef, vf_clip: float | None = None):
    """Clipped PPO loss averaged over ``mask`` (agents in the game); returns (loss, stats).

    ``vf_clip`` limits how far the value moves from ``old_value`` (None: ``clip``; 0: no limit).
    ``ent_coef`` may be a device tensor (a captured update reads its current value).
    """
    n = mask.sum().clamp_min(1.0)
    log_ratio = new_logp - old_logp
    ratio = log_ratio.exp()
    pg = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip))
    v_loss = value_loss(new_value, old_value, returns, mask, n, clip if vf_clip is None else vf_clip)
    pg_loss, ent = (pg * mask).sum() / n, (entropy * mask).sum() / n
    with torch.no_grad():
        approx_kl = (((ratio - 1) - log_ratio) * mask).sum() / n
        clipfrac = (((ratio - 1).abs() > clip).float() * mask).sum() / n
    stats = {"pg": pg_loss, "vf": v_loss, "entropy": ent, "approx_kl": approx_kl, "clipfrac": clipfrac}
    return pg_loss + vf_coef * v_loss - ent_coef * ent, stats


def value_loss(new_value, old_value, returns, mask, n, vf_clip: float):
    """`ppo_loss`'s value loss: the mean over ``mask`` (``n`` agents) of the squared error, clipped with ``vf_clip``."""
    vf = 0.5 * (new_value - returns) ** 2
    if vf_clip > 0:
        v_clipped = old_value + (new_value - old_value).clamp(-vf_clip, vf_clip)
        vf = torch.max(vf, 0.5 * (v_clipped - returns) ** 2)
    return (vf * mask).sum() / n


def put(storage: torch.Tensor, t: torch.Tensor, value: torch.Tensor):
    """``storage[t] = value`` for a one-element index tensor ``t``: the same kernels whatever step t holds."""
    storage.index_copy_(0, t, value.unsqueeze(0).to(storage.dtype))


# --------------------------------------------------------------------- building
def make_env(args: Args, num_envs: int | None = None, device=None):
    device = torch.device(device or args.device) if (device or args.device) else default_device()
    return gpu_zoo.make(args.env_id, num_envs=num_envs or args.num_envs, device=device, validate=False,
                        **args.env_kwargs)


def random_opponent_seats(env, groups, share: float) -> dict[str, torch.Tensor]:
    """Per group of ``groups``, ``(num_envs, count)`` bools: the agents that play uniformly at random.

    In the first ``share`` of the envs, agent ``e % count`` of env ``e`` (`Args.random_opponent_share`):
    over a two-player game's envs the random player takes either seat as often.
    """
    if share == 0:
        return {}
    E = env.num_envs
    envs = torch.arange(round(share * E), device=env.device)
    seats = {}
    for g in groups:
        count = env.actions[g].shape[1]
        if count < 2:
            raise ValueError(f"random_opponent_share needs groups of two agents or more (a learner beside the random "
                             f"player); group {g!r} has {count}")
        seat = torch.zeros(E, count, dtype=torch.bool, device=env.device)
        seat[envs, envs % count] = True
        seats[g] = seat
    return seats


def critic_size(env, group: str, args: Args) -> int:
    """Length of ``group``'s critic input.

    The agent's observation, or with ``critic="state"`` the env's global state and the agent's
    one-hot index in its group.
    """
    if args.critic == "state":
        return env.state_size + env.group_size(group)
    return env.single_observation_space(group).shape[0]


def make_policies(env, groups, args: Args) -> nn.ModuleDict:
    """One `GroupPolicy` per group in ``groups``, each as wide as its settings say, on the env's device."""
    def policy(g: str) -> GroupPolicy:
        a = args.for_group(g)
        return GroupPolicy(env.single_observation_space(g).shape[0], env.single_action_space(g), a.hidden,
                           critic_size(env, g, args), activation=a.activation, shared_trunk=a.shared_trunk)

    return nn.ModuleDict({g: policy(g) for g in groups}).to(env.device)


def make_optimizer(policy: nn.Module, lr: float) -> Adam:
    """Adam for one policy (fused, its learning rate a device tensor, so a CUDA graph can replay its step)."""
    return Adam(policy.parameters(), lr=lr, eps=1e-5)


def action_masks(env) -> dict[str, torch.Tensor]:
    """The env's current action masks per masked group (none for envs without masks)."""
    return getattr(env, "action_masks", None) or {}


def policy_actions(env, policies, generator: torch.Generator | None = None, greedy: bool = False) -> dict:
    """Actions of every group for the env's current observations: the policies', random for the others."""
    others = [g for g in env.groups if g not in policies]
    actions = env.sample_actions(generator, groups=others) if others else {}
    masks = action_masks(env)
    for g, pol in policies.items():
        actions[g] = pol.to_env(pol.sample(env.obs[g], mask=masks.get(g), greedy=greedy)[0])
    return actions


# --------------------------------------------------------------------- training
class Trainer:
    """The env, one policy and one optimiser per trained group and the rollout storage, on one device.

    Args:
        args: the settings.
        env: a batched env to train on (default: ``make_env(args)`` on the world's device).
        world: this process's place in a data-parallel run (`trainers.distributed.join`); its rank
            seeds its envs and sampling apart.
    """

    def __init__(self, args: Args, env=None, world: World = SINGLE):
        self.args = args
        self.world = world
        self.rank = rank = world.rank
        torch.manual_seed(args.seed + rank)
        self.env = env if env is not None else make_env(args, device=world.device)
        if self.env.num_envs != args.num_envs:
            raise ValueError(f"the env has {self.env.num_envs} environments but args.num_envs is {args.num_envs}; "
                             "a rank's shard is described by its own Args")
        self.device = self.env.device
        trained = args.trained_groups or self.env.groups
        unknown = set(trained) - set(self.env.groups)
        if unknown:
            raise ValueError(f"train_groups {sorted(unknown)} are not groups of {args.env_id}: {self.env.groups}")
        self.random_groups = tuple(g for g in self.env.groups if g not in trained)
        self.policies = make_policies(self.env, [g for g in self.env.groups if g in trained], args)
        self.opponent_seats = random_opponent_seats(self.env, self.policies, args.random_opponent_share)
        # made once, so a captured rollout step allocates nothing; the seats broadcast over MultiDiscrete actions
        self._opponent_moves = {g: (seat.view(*seat.shape, *(1,) * (self.env.actions[g].dim() - 2)),
                                    torch.empty_like(self.env.actions[g])) for g, seat in self.opponent_seats.items()}
        unknown = set(args.group_settings) - set(self.policies)
        if unknown:
            raise ValueError(f"group_settings names {sorted(unknown)}, which this run does not train "
                             f"({list(self.policies)})")
        if args.init_from:
            checkpoint.warm_start(self, args.init_from)
        distributed.broadcast_parameters(self.policies, world)
        self.base_lrs = {g: args.for_group(g).learning_rate for g in self.policies}
        self.opts = {g: make_optimizer(pol, self.base_lrs[g]) for g, pol in self.policies.items()}
        self.ent_coefs = {g: torch.tensor(args.for_group(g).ent_coef, device=self.device) for g in self.policies}
        # the budget is the run's over every rank: each steps its own envs
        self.iterations = args.iterations_over(world.size)
        self.iteration = 0
        self.seconds = 0.0  # training wall time, carried over by resumes
        self._reset_env(args.seed + rank)
        self.masked = tuple(g for g in self.policies if g in action_masks(self.env))
        # On a GPU every group's storage writes and GAE run as kernels (`trainers.fused`); Discrete
        # and MultiDiscrete groups also draw their actions and compute their policy loss in them,
        # and the networks run there too where they fit (``fused``). The others' layers are torch's.
        kernels = args.fused and fused.available(self.device)
        self.recorded = tuple(self.policies) if kernels else ()
        self._heads = {g: fused.head_bounds(pol.splits, self.device) for g, pol in self.policies.items()
                       if kernels and pol.splits is not None and fused.drawable(pol.logits_size)}
        self.fused = tuple(g for g in self._heads if self._fits_kernels(g))
        self.drawn = tuple(g for g in self._heads if g not in self.fused)
        self.half = self.drawn if args.bf16_layers else ()
        # a shared trunk's rollout step runs both heads on the actor's features: its values come with the draws
        self.valued_in_step = tuple(g for g in self.drawn if self.policies[g].shared_trunk)
        self._inference = {g: InferenceLayers(self.policies[g]) for g in self.half}
        self._critic_inputs = ("critic_obs", "next_critic_obs") if args.critic == "state" else ("obs", "next_obs")
        self.buf = {g: self._storage(g) for g in self.policies}
        # The networks take float32: a group observing bytes (obs_dtype="u8", a board's planes) has its
        # observations copied into a float32 buffer made once, so a captured rollout step allocates nothing.
        self._float_obs = {g: torch.zeros(self.env.obs[g].shape, device=self.device) for g in self.policies
                           if self.env.obs[g].dtype != torch.float32}
        T, E = args.num_steps, args.num_envs  # the env's global state at each step and after it (MAPPO)
        self._states = {k: torch.zeros(T, E, self.env.state_size, device=self.device)
                        for k in (("state", "next_state") if args.critic == "state" else ())}
        # [the rollout step being written, the rollout steps taken so far]: the kernels' draws are keyed by both
        self.counters = torch.zeros(2, dtype=torch.long, device=self.device)
        self._t = self.counters[0:1]
        self._graphs: dict[str, torch.cuda.CUDAGraph] = {}
        # On-device metric accumulators: [episodes, sum of lengths, sum of return per group...]
        # and the loss statistics per trained group, summed over minibatches.
        self.episode_acc = torch.zeros(2 + len(self.env.groups), device=self.device, dtype=torch.float64)
        self.loss_acc = torch.zeros(len(self.policies), len(LOSS_STATS), device=self.device)
        self.updates_since_log = [0] * len(self.policies)  # minibatches per group, counted on the host
        self._kernel_state = {g: self._kernel_buffers(g) for g in self.fused}
        # where the torch path adds finished episodes into ``episode_acc``: what the kernels do not
        index = [2 + i for i, g in enumerate(self.env.groups) if g not in self.recorded]
        self._acc_index = torch.tensor(index if self.recorded else [0, 1, *index], device=self.device)

    def _reset_env(self, seed: int, episode_counts: torch.Tensor | None = None):
        """Fresh episodes from ``seed``; with ``stagger_starts`` each env's first starts at a step drawn from it."""
        starts = None
        if self.args.stagger_starts:
            gen = torch.Generator().manual_seed(seed)
            starts = torch.randint(0, self.env.params.max_cycles, (self.env.num_envs,), generator=gen)
        self.env.reset(seed=seed, episode_counts=episode_counts, start_steps=starts)

    def _fits_kernels(self, g: str) -> bool:
        pol = self.policies[g]  # a Discrete or MultiDiscrete group's
        if pol.shared_trunk or self.args.for_group(g).activation != "tanh":
            return False  # the kernels hold two separate tanh networks
        width = max(self.env.single_observation_space(g).shape[0], critic_size(self.env, g, self.args))
        return fused.supported(width, self.args.for_group(g).hidden, pol.logits_size)

    # ----------------------------------------------------------------- storage
    def _storage(self, g: str) -> dict[str, torch.Tensor]:
        T, E, n = self.args.num_steps, self.args.num_envs, self.env.group_size(g)
        D = self.env.single_observation_space(g).shape[0]
        act = self.env.actions[g]
        act_dtype = act.dtype if self.policies[g].splits is not None else torch.float32
        z = lambda *shape, dtype=torch.float32: torch.zeros(*shape, dtype=dtype, device=self.device)  # noqa: E731
        buf = {"obs": z(T, E, n, D), "next_obs": z(T, E, n, D), "act": z(T, E, n, *act.shape[2:], dtype=act_dtype)}
        for k in ("logp", "value", "next_value", "rew", "term", "ended", "mask"):
            buf[k] = z(T, E, n)
        if g in action_masks(self.env):
            buf["action_mask"] = z(T, E, *action_masks(self.env)[g].shape[1:], dtype=torch.bool)
        if self.args.critic == "state":  # the critic's inputs: the states, copied in after the rollout, then
            one_hot = torch.eye(n, device=self.device).expand(T, E, n, n)  # the agent's index, written once
            buf["critic_obs"], buf["next_critic_obs"] = (torch.cat([z(T, E, n, self.env.state_size), one_hot], -1)
                                                         for _ in range(2))
        return buf

    def _kernel_buffers(self, g: str) -> dict:
        """A fused group's gradient: one flat buffer that its parameters' ``.grad`` are views of.

        The loss statistics follow the gradient; each persistent program of the gradient kernels
        writes one row of ``partial``, and their sum is the flat buffer.
        """
        pol = self.policies[g]
        sizes = [p.numel() for p in pol.parameters()]
        flat = torch.zeros(sum(sizes) + len(LOSS_STATS) + 1, device=self.device)  # the stats, then the agents
        offset = 0
        for p, size in zip(pol.parameters(), sizes, strict=True):
            p.grad = flat[offset:offset + size].view_as(p)
            offset += size
        return {"flat": flat, "partial": torch.zeros(fused.num_programs(self.device), flat.numel(), device=self.device),
                "critic_column": sum(p.numel() for p in pol.actor.parameters()), "stats_column": offset}

    # ----------------------------------------------------------------- rollout
    def rollout(self):
        """Steps every env ``num_steps`` times with the current policies, filling the storage, then values it."""
        self._run("rollout", self._rollout)
        self._value_final_observations()

    def _run(self, name: str, fn):
        """``fn`` eagerly the first time, then, on a GPU with ``cuda_graph``, a replay of its capture.

        The eager call also compiles the kernels and makes the optimisers' state the capture uses.
        """
        graph = self._graphs.get(name)
        if graph is not None:
            graph.replay()
            return
        with matmul_precision(self.device):  # a capture keeps the products it was captured with
            fn()
            # an update's all-reduces run eagerly: NCCL's collectives are not captured
            eager = name == "update" and self.world.distributed
            if self.args.cuda_graph and self.device.type == "cuda" and not eager:
                self._graphs[name] = capture(fn, self.device)

    @torch.no_grad()
    def _rollout(self):
        self._t.zero_()
        for layers in self._inference.values():
            layers.refresh()
        for _ in range(self.args.num_steps):
            self._rollout_step()
        critic_inputs = self._critic_inputs
        if self.args.critic == "state":
            S = self.env.state_size
            for b in self.buf.values():
                for key, dst in (("state", "critic_obs"), ("next_state", "next_critic_obs")):
                    b[dst][..., :S].copy_(self._states[key].unsqueeze(2))
        # Step t's next observation is step t+1's observation except where an episode ended at t:
        # the torch layers of a critic run over every stored observation and the last step's next
        # ones, and `_value_final_observations` then values the rows that differ.
        for g in self.policies:
            b, src, nxt = self.buf[g], *critic_inputs
            if g not in self.valued_in_step:
                self._values(g, b[src], b["value"])
            if g in self.fused:  # a kernel's pass over the next observations costs less than finding the final ones
                self._values(g, b[nxt], b["next_value"])
                continue
            self._values(g, b[nxt][-1], b["next_value"][-1])
            b["next_value"][:-1].copy_(b["value"][1:])

    def _values(self, g: str, obs: torch.Tensor, out: torch.Tensor):
        """``out = critic(obs)`` for group ``g``: a kernel for fused groups, chunks of torch layers otherwise."""
        pol = self.policies[g]
        if g in self.fused:
            fused.forward(pol.critic, obs, out=out)
            return
        rows, out = obs.reshape(-1, obs.shape[-1]), out.view(-1)
        for i in range(0, rows.shape[0], VALUE_CHUNK):
            out[i:i + VALUE_CHUNK] = self._layers(g, pol.critic, rows[i:i + VALUE_CHUNK]).squeeze(-1)

    @torch.no_grad()
    def _value_final_observations(self):
        """The next values of rows whose next observation is not the following step's: episodes' final observations.

        Their number depends on the rollout, so this runs eagerly after the rollout's replay (one host sync).
        """
        src, nxt = self._critic_inputs
        for g in (g for g in self.policies if g not in self.fused):
            b = self.buf[g]
            following, stored = b[src][1:], b[nxt][:-1]
            rows = (stored != following).any(-1).view(-1).nonzero().squeeze(1)
            if rows.numel():
                values = torch.empty(rows.numel(), device=self.device)
                with matmul_precision(self.device):  # the products the rollout's capture uses
                    self._values(g, stored.reshape(-1, stored.shape[-1])[rows], values)
                b["next_value"][:-1].view(-1)[rows] = values

    def _layers(self, g: str, net: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
        """``net(x)``, an actor's or critic's torch layers; in bfloat16 for the groups in ``self.half``."""
        return forward_bf16(net, x) if g in self.half else net(x)

    def _trunk_and_heads(self, g: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits, values) of a shared-trunk group's torch layers: the trunk once, under both heads."""
        pol = self.policies[g]
        if g in self.half:
            h = hidden_bf16(pol.trunk, x)
            return output_float32(pol.policy_head, h), output_float32(pol.value_head, h).squeeze(-1)
        h = pol.trunk(x)
        return pol.policy_head(h), pol.value_head(h).squeeze(-1)

    def _network_input(self, g: str) -> torch.Tensor:
        """Group ``g``'s current observations as the networks take them: float32 (`_float_obs`)."""
        if g not in self._float_obs:
            return self.env.obs[g]
        return self._float_obs[g].copy_(self.env.obs[g])

    def _rollout_step(self):
        """One step of every env, written to the storage at the step index ``self._t`` (a device tensor).

        No host value and no Python branch on device data, so one capture serves every step.
        """
        env, acc, t = self.env, self.episode_acc, self._t
        masks = action_masks(env)
        if self.random_groups:
            env.sample_actions(groups=self.random_groups, out=env.actions)
        for gi, (g, pol) in enumerate(self.policies.items()):
            b = self.buf[g]
            if g in self._heads:  # the actor's layers in the kernel, or torch's and the draw in the kernel
                logits = value = None
                if g in self.drawn:  # torch layers: float32 in; the kernel reads uint8 observations itself
                    x = self._network_input(g)
                if g in self._inference:
                    logits, value = self._inference[g](x)
                elif g in self.valued_in_step:
                    logits, value = self._trunk_and_heads(g, x)
                elif g in self.drawn:
                    logits = self._layers(g, pol.actor, x)
                if g in self.valued_in_step:
                    put(b["value"], t, value)
                fused.act(pol.actor, env.obs[g], masks.get(g), env.actions[g], b, t, self.counters[1:], self._heads[g],
                          fused.draw_key(self.args.seed, self.rank, gi), logits=logits)
                continue
            put(b["obs"], t, env.obs[g])
            mask = None
            if g in self.masked:
                put(b["action_mask"], t, masks[g])
                mask = masks[g]
            act, logp = pol.sample(self._network_input(g), mask=mask)
            put(b["act"], t, act)
            put(b["logp"], t, logp)
            env.actions[g].copy_(pol.to_env(act))
        for g, (seat, moves) in self._opponent_moves.items():  # the random players' moves replace the policy's
            env.sample_actions(groups=(g,), out={g: moves})
            torch.where(seat, moves, env.actions[g], out=env.actions[g])
        if self.args.critic == "state":
            put(self._states["state"], t, env.global_state())
        obs, rew, term, trunc, info = env.step()
        done = info["done"]
        if self.args.critic == "state":  # the final state where an episode ended, as for observations
            put(self._states["next_state"], t, torch.where(done.view(-1, 1), env.global_state(info["final_obs"]),
                                                            env.global_state()))
        for g in self.policies:
            b = self.buf[g]
            if g in self.recorded:  # the kernel also adds its group's finished episodes to ``acc``
                fused.record(env, g, env.groups.index(g), b, acc, t, first=g == self.recorded[0])
                continue
            put(b["rew"], t, rew[g])
            put(b["term"], t, term[g])
            put(b["ended"], t, term[g] | trunc[g])
            put(b["mask"], t, info["active"][g])
            put(b["next_obs"], t, torch.where(done.view(-1, 1, 1), info["final_obs"][g], obs[g]))
        rest = [g for g in env.groups if g not in self.recorded]  # episodes the kernels did not count
        if rest:
            stats, d = env.episode_stats(), done.double()
            parts = [(stats[f"return_{g}"].mean(-1) * d).sum() for g in rest]
            if not self.recorded:
                parts = [d.sum(), (stats["length"] * d).sum(), *parts]
            acc.index_add_(0, self._acc_index, torch.stack(parts))
        self.counters += 1

    # ----------------------------------------------------------------- update
    def update(self):
        """PPO epochs over the rollout in storage."""
        for gi, g in enumerate(self.policies):
            a = self.args.for_group(g)
            if self.args.anneal_lr:
                lr = self.base_lrs[g] * (1.0 - self.iteration / self.iterations)
                self.opts[g].param_groups[0]["lr"].fill_(lr)  # a device tensor: a captured step reads it
            self.ent_coefs[g].fill_(a.ent_coef_at(self.iteration * a.env_steps_per_iteration * self.world.size))
            self.updates_since_log[gi] += a.update_epochs * len(self._minibatches(a, self.buf[g]["rew"].numel()))
        self._run("update", self._update)

    @staticmethod
    def _minibatches(a: Args, size: int) -> list[tuple[int, int]]:
        """(start, count) of each minibatch of an epoch over ``size`` rows."""
        mb = max(1, size // a.num_minibatches)
        return [(start, min(mb, size - start)) for start in range(0, size, mb)]

    def _update(self):
        for gi, (g, pol) in enumerate(self.policies.items()):
            a = self.args.for_group(g)
            b = self.buf[g]
            if g in self.opponent_seats:  # the random players' steps teach nothing: out of the losses
                b["mask"].masked_fill_(self.opponent_seats[g], 0)
            # A step whose mask left one action per head was no decision (`compute_gae`)
            choice = b["action_mask"].sum(-1) > len(pol.splits) if a.gae_skip_forced and "action_mask" in b else None
            gae = fused.gae if g in self.recorded else compute_gae
            adv, ret = gae(b["rew"], b["value"], b["next_value"], b["term"], b["ended"], a.gamma, a.gae_lambda,
                           choice=choice)
            flat = {k: v.reshape(-1, *v.shape[3:]) for k, v in b.items()}
            adv, ret, m = adv.reshape(-1), ret.reshape(-1), flat["mask"]
            if a.norm_adv:
                mean = (adv * m).sum() / m.sum().clamp_min(1)
                std = (((adv - mean) ** 2 * m).sum() / m.sum().clamp_min(1)).sqrt()
                adv = (adv - mean) / (std + 1e-8)
            flat["adv"], flat["ret"] = adv, ret
            size = adv.shape[0]
            minibatch = (self._fused_minibatch if g in self.fused else self._drawn_minibatch if g in self.drawn
                         else self._torch_minibatch)
            for _ in range(a.update_epochs):
                perm = torch.rand(size, device=self.device).argsort()
                for start, count in self._minibatches(a, size):
                    minibatch(gi, g, a, flat, perm, start, count)
                    nn.utils.clip_grad_norm_(pol.parameters(), a.max_grad_norm)
                    self.opts[g].step()

    def _torch_minibatch(self, gi: int, g: str, a: Args, flat: dict, perm, start: int, count: int):
        """One minibatch's gradient by autograd: the reference for `_fused_minibatch`."""
        idx = perm[start:start + count]
        mask = flat["action_mask"][idx] if "action_mask" in flat else None
        critic_obs = flat["critic_obs"][idx] if "critic_obs" in flat else None
        _, logp, ent, value = self.policies[g].act(flat["obs"][idx], flat["act"][idx], mask=mask, critic_obs=critic_obs)
        loss, st = ppo_loss(logp, flat["logp"][idx], flat["adv"][idx], value, flat["value"][idx], flat["ret"][idx],
                            ent, flat["mask"][idx], a.clip_coef, a.vf_coef, self.ent_coefs[g], a.vf_clip)
        self.opts[g].zero_grad()
        loss.backward()
        self.sync_gradients(g)
        self.loss_acc[gi] += torch.stack([st[k].detach() for k in LOSS_STATS])

    def _fused_minibatch(self, gi: int, g: str, a: Args, flat: dict, perm, start: int, count: int):
        """The same gradient by the kernels: each program's share of it, summed into the parameters' grads."""
        k, pol = self._kernel_state[g], self.policies[g]
        critic_batch = {**flat, "obs": flat["critic_obs"]} if "critic_obs" in flat else flat
        for net, critic, column, stats, batch in ((pol.actor, False, 0, k["stats_column"], flat),
                                                  (pol.critic, True, k["critic_column"], k["stats_column"] + 1,
                                                   critic_batch)):
            fused.ppo_grads(net, critic, perm, start, count, batch, self.ent_coefs[g], self._heads[g], k["partial"],
                            column, stats, a.clip_coef, a.vf_coef, a.value_clip)
        fused.mean_gradient(k["partial"], k["flat"])
        self.sync_gradients(g)
        self.loss_acc[gi] += k["flat"][k["stats_column"]:k["stats_column"] + len(LOSS_STATS)]

    def _drawn_minibatch(self, gi: int, g: str, a: Args, flat: dict, perm, start: int, count: int):
        """The same gradient with torch's layers and the policy loss's gradient by the logits from a kernel.

        The kernel replaces the distributions' many passes over the logits, forward and backward.
        """
        idx, pol = perm[start:start + count], self.policies[g]
        if pol.shared_trunk:
            logits, value = self._trunk_and_heads(g, flat["obs"][idx])
        else:
            critic_obs = flat["critic_obs"] if "critic_obs" in flat else flat["obs"]
            logits = self._layers(g, pol.actor, flat["obs"][idx])
            value = self._layers(g, pol.critic, critic_obs[idx]).squeeze(-1)
        agents = flat["mask"][idx].sum().clamp_min(1.0)
        dlogits, sums = fused.actor_loss(logits.detach(), perm, start, count, flat, self.ent_coefs[g], self._heads[g],
                                         a.clip_coef, agents.view(1))
        v_loss = value_loss(value, flat["value"][idx], flat["ret"][idx], flat["mask"][idx],
                            agents, a.value_clip)
        self.opts[g].zero_grad()
        torch.autograd.backward([logits, a.vf_coef * v_loss], [dlogits, None])
        self.sync_gradients(g)
        pg, ent, kl, clipfrac = (sums / agents).unbind()
        self.loss_acc[gi] += torch.stack([pg, v_loss.detach(), ent, kl, clipfrac])

    def sync_gradients(self, g: str):
        """Between a minibatch's gradient and the optimiser's step: group ``g``'s gradient, averaged over the ranks."""
        if not self.world.distributed:
            return
        if g in self.fused:  # the parameters' grads are views of one buffer, the loss statistics after them
            k = self._kernel_state[g]
            distributed.average([k["flat"][:k["stats_column"]]], self.world)
            return
        distributed.average([p.grad for p in self.policies[g].parameters() if p.grad is not None], self.world)

    # ----------------------------------------------------------------- metrics
    def read_metrics(self) -> dict[str, float]:
        """Metrics since the last read (one host sync; summed over the ranks); the accumulators restart from zero."""
        values = distributed.total(torch.cat([self.episode_acc.float(), self.loss_acc.flatten()]), self.world).tolist()
        self.episode_acc.zero_()
        self.loss_acc.zero_()
        groups = self.env.groups
        episodes, lengths, returns = values[0], values[1], values[2:2 + len(groups)]
        nan = float("nan")
        out = {"episodes": episodes, "episode_length": lengths / episodes if episodes else nan}
        out.update({f"return/{g}": r / episodes if episodes else nan for g, r in zip(groups, returns, strict=True)})
        losses = values[2 + len(groups):]
        for gi, g in enumerate(self.policies):
            updates = self.updates_since_log[gi]
            for si, k in enumerate(LOSS_STATS):
                total = losses[gi * len(LOSS_STATS) + si]
                out[f"loss/{g}/{k}"] = total / (updates * self.world.size) if updates else nan
        self.updates_since_log = [0] * len(self.policies)
        return out

    def metric_names(self) -> list[str]:
        return (["episodes", "episode_length", *(f"return/{g}" for g in self.env.groups)]
                + [f"loss/{g}/{k}" for g in self.policies for k in LOSS_STATS])

    # ----------------------------------------------------------------- persistence (trainers.checkpoint)
    def save(self, path, env_state: bool = True):
        """`trainers.checkpoint.save`: everything a resumed run needs to continue exactly."""
        checkpoint.save(self, path, env_state)

    def load(self, path):
        """`trainers.checkpoint.load`; a refused checkpoint changes nothing."""
        checkpoint.load(self, path)
        self._graphs.clear()  # the optimisers' state tensors were replaced: captures would use the old ones
