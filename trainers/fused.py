"""Triton kernels for PPO's hot path on a GPU: a policy's networks never write their hidden layers to memory.

A group's actor and critic are two tanh MLPs with two hidden layers (`trainers.policy.mlp`). At
simple_tag's sizes (16 inputs, 64 wide) each row of a batch is a few hundred bytes of data but
about 11 KB of hidden activations and their gradients when each layer is its own kernel, so the
update is bound by memory traffic, not arithmetic. Each kernel here runs a whole network on a
tile of rows with the activations in registers, for Discrete and MultiDiscrete heads:

- `act`: the rollout's actor: logits, the action mask, a Gumbel-max sample per head, its
  log-probability; writes the env's action tensor and the rollout's storage at step ``t``.
- `record`: after the env step, the step's rewards, ends, masks and next observation into the
  storage, and finished episodes into the trainer's metric accumulators.
- `forward`: any MLP's outputs (the critic's values over a whole rollout).
- `ppo_grads`: one minibatch's PPO loss and its gradient with respect to every weight of the
  actor or of the critic, in persistent programs that each keep their share of the weight
  gradients in registers and write it once; a sum over programs gives the gradient.
- `gae`: advantages and returns, one thread per agent walking the rollout backwards.

Step indices, seeds and schedule values are read from device memory, so a CUDA graph captured
once replays every step and iteration. `supported` says which groups fit (small observations
and widths); the others run the plain torch path, which is also the CPU path and the tests'
reference (tests run these kernels under ``TRITON_INTERPRET=1`` against it).
"""

from __future__ import annotations

import os

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU build of torch comes without Triton; the torch path serves there
    triton = None

MAX_IN, MAX_HIDDEN, MAX_OUT = 128, 128, 64  # padded widths the kernels hold in registers
MAX_DRAWN = 256  # padded logits of a network too wide for them, whose draws and policy loss they take
BLOCK_ROWS = 64
# Rows per program where a network too wide for the kernels gives its logits: a tile of 64 logits
# per row and the policy loss's half-dozen per-logit terms spill from registers at 64 rows
DRAWN_ROWS = 16
# Products take fp16 copies of their operands and accumulate in fp32: as precise as TF32 (both keep 10
# bits of mantissa; measured on an H200, 6e-4 relative error of a minibatch's gradient against fp32
# products, TF32 2.5e-3) and 1.25x faster, as the operands pass through shared memory in half the
# bytes. Observations and loss gradients are saturated to fp16's range (65504) first. "tf32" and
# "ieee" (full fp32 products, for tests) are the alternatives.
PRECISION = os.environ.get("GPU_ZOO_DOT_PRECISION", "fp16")
FP16_MAX = 65504.0


def available(device: torch.device) -> bool:
    """Whether a trainer on ``device`` runs the kernels: on a GPU with Triton.

    Tests also run them on CPU tensors under Triton's interpreter, calling them directly or patching this.
    """
    return triton is not None and device.type == "cuda"


def _pad(n: int) -> int:
    return max(16, 1 << (n - 1).bit_length())


def supported(obs_size: int, hidden: int, logits: int) -> bool:
    """Whether a network of these widths fits the kernels' registers."""
    return _pad(obs_size) <= MAX_IN and _pad(hidden) <= MAX_HIDDEN and _pad(logits) <= MAX_OUT


def drawable(logits: int) -> bool:
    """Whether the kernels draw from and take the policy loss of this many logits (a tile of them in registers)."""
    return _pad(logits) <= MAX_DRAWN


def mlp_weights(seq: torch.nn.Sequential) -> tuple[torch.Tensor, ...]:
    """(W1, b1, W2, b2, W3, b3) of `trainers.policy.mlp`'s Linear-Tanh-Linear-Tanh-Linear."""
    return seq[0].weight, seq[0].bias, seq[2].weight, seq[2].bias, seq[4].weight, seq[4].bias


def _dims(weights, x_width: int) -> dict:
    w1, _, _, _, w3, _ = weights
    H, D, OUT = w1.shape[0], x_width, w3.shape[0]
    return dict(D=D, H=H, OUT=OUT, DP=_pad(D), HP=_pad(H), OP=_pad(OUT))


def num_programs(device: torch.device) -> int:
    """Persistent programs of `ppo_grads`: `GRAD_PROGRAMS_PER_SM` per multiprocessor (4 in the interpreter)."""
    if device.type != "cuda":
        return 4
    return GRAD_PROGRAMS_PER_SM * torch.cuda.get_device_properties(device).multi_processor_count


# `ppo_grads`' rows per tile, warps per program and programs per multiprocessor: the fastest of ten
# measured on an H200 at simple_tag's sizes (docs/training_speed.md); GPU_ZOO_FUSED_TILE="BM,WARPS,PER_SM"
# sets them for a run
GRAD_TILE, GRAD_PROGRAMS_PER_SM = dict(BM=32, num_warps=4), 2
if os.environ.get("GPU_ZOO_FUSED_TILE"):
    _bm, _warps, GRAD_PROGRAMS_PER_SM = (int(v) for v in os.environ["GPU_ZOO_FUSED_TILE"].split(","))
    GRAD_TILE = dict(BM=_bm, num_warps=_warps)

if triton is not None:
    MASKED_LOGIT = tl.constexpr(-1e9)  # as `trainers.policy.MASKED_LOGIT`: exp() of it is exactly zero
    _FP16_MAX = tl.constexpr(FP16_MAX)

    @triton.jit
    def _dot(a, b, PREC: tl.constexpr):
        """``a @ b`` accumulated in fp32, from fp32 operands at ``PREC`` or from fp16 or bf16 copies."""
        if PREC == "fp16":
            c = tl.dot(a.to(tl.float16), b.to(tl.float16), out_dtype=tl.float32)
        elif PREC == "bf16":
            c = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), out_dtype=tl.float32)
        else:
            c = tl.dot(a, b, input_precision=PREC)
        return c

    @triton.jit
    def _fit(a, PREC: tl.constexpr):
        """``a`` saturated to fp16's range when products take fp16 copies (``inf`` would poison them)."""
        if PREC == "fp16":
            a = tl.minimum(tl.maximum(a, -_FP16_MAX), _FP16_MAX)
        return a

    @triton.jit
    def _tanh(x):
        e = tl.exp(-2.0 * tl.abs(x))
        t = (1.0 - e) / (1.0 + e)
        return tl.where(x >= 0, t, -t)

    @triton.jit
    def _load_weights(w1, b1, w2, b2, w3, b3, D, H, OUT, DP: tl.constexpr, HP: tl.constexpr, OP: tl.constexpr):
        """The layers as (in, out) tiles, zero-padded: products with them need no masks."""
        d, h, o = tl.arange(0, DP), tl.arange(0, HP), tl.arange(0, OP)
        w1t = tl.load(w1 + h[None, :] * D + d[:, None], mask=(d[:, None] < D) & (h[None, :] < H), other=0.0)
        w2t = tl.load(w2 + h[None, :] * H + h[:, None], mask=(h[:, None] < H) & (h[None, :] < H), other=0.0)
        w3t = tl.load(w3 + o[None, :] * H + h[:, None], mask=(h[:, None] < H) & (o[None, :] < OUT), other=0.0)
        bb1 = tl.load(b1 + h, mask=h < H, other=0.0)
        bb2 = tl.load(b2 + h, mask=h < H, other=0.0)
        bb3 = tl.load(b3 + o, mask=o < OUT, other=0.0)
        return w1t, bb1, w2t, bb2, w3t, bb3

    @triton.jit
    def _forward(x, w1t, bb1, w2t, bb2, w3t, bb3, PREC: tl.constexpr):
        h1 = _tanh(_dot(_fit(x, PREC), w1t, PREC) + bb1[None, :])
        h2 = _tanh(_dot(h1, w2t, PREC) + bb2[None, :])
        return h1, h2, _dot(h2, w3t, PREC) + bb3[None, :]

    @triton.jit
    def _heads(logits, cols, act_ptr, heads_ptr, NH: tl.constexpr):
        """Per row the log-prob of the taken actions (``act_ptr``: their (rows, NH) pointers) and the entropy.

        Per column also the probability, log-probability, whether it was taken and its head's entropy.
        """
        logp = tl.zeros([logits.shape[0]], tl.float32)
        ent = tl.zeros([logits.shape[0]], tl.float32)
        prob = tl.zeros(logits.shape, tl.float32)
        lprob = tl.zeros(logits.shape, tl.float32)
        taken = tl.zeros(logits.shape, tl.float32)
        head_ent = tl.zeros(logits.shape, tl.float32)
        for k in tl.static_range(NH):
            lo = tl.load(heads_ptr + k)
            hi = tl.load(heads_ptr + k + 1)
            inh = (cols >= lo) & (cols < hi)
            m = tl.max(tl.where(inh[None, :], logits, float("-inf")), 1)
            ex = tl.where(inh[None, :], tl.exp(logits - m[:, None]), 0.0)
            s = tl.sum(ex, 1)
            lp = logits - (m + tl.log(s))[:, None]
            p = ex / s[:, None]
            a = tl.load(act_ptr + k)
            hit = inh[None, :] & (cols[None, :] == (lo + a)[:, None])
            logp += tl.sum(tl.where(hit, lp, 0.0), 1)
            e = -tl.sum(tl.where(inh[None, :], p * lp, 0.0), 1)
            ent += e
            prob = tl.where(inh[None, :], p, prob)
            lprob = tl.where(inh[None, :], lp, lprob)
            taken = tl.where(hit, 1.0, taken)
            head_ent = tl.where(inh[None, :], e[:, None], head_ent)
        return logp, ent, prob, lprob, taken, head_ent

    @triton.jit
    def _forward_kernel(x_ptr, y_ptr, w1, b1, w2, b2, w3, b3, M, D, H, OUT, DP: tl.constexpr, HP: tl.constexpr,
                        OP: tl.constexpr, BM: tl.constexpr, PREC: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        d, o = tl.arange(0, DP), tl.arange(0, OP)
        rm = rows < M
        x = tl.load(x_ptr + rows[:, None] * D + d[None, :], mask=rm[:, None] & (d[None, :] < D), other=0).to(tl.float32)
        w1t, bb1, w2t, bb2, w3t, bb3 = _load_weights(w1, b1, w2, b2, w3, b3, D, H, OUT, DP, HP, OP)
        _, _, y = _forward(x, w1t, bb1, w2t, bb2, w3t, bb3, PREC)
        tl.store(y_ptr + rows[:, None] * OUT + o[None, :], y, mask=rm[:, None] & (o[None, :] < OUT))

    @triton.jit
    def _act_kernel(x_ptr, logits_ptr, amask_ptr, env_act_ptr, s_obs, s_act, s_logp, s_amask, t_ptr, step_ptr,
                    heads_ptr, w1, b1, w2, b2, w3, b3, M, D, H, OUT, key, NH: tl.constexpr, HAS_MASK: tl.constexpr,
                    FORWARD: tl.constexpr, DP: tl.constexpr, HP: tl.constexpr, OP: tl.constexpr, BM: tl.constexpr,
                    PREC: tl.constexpr):
        """The actor's logits (``FORWARD``: run here; else read from ``logits_ptr``), a draw, step ``t``'s storage."""
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        d, cols = tl.arange(0, DP), tl.arange(0, OP)
        rm = rows < M
        t = tl.load(t_ptr).to(tl.int64)
        seed = key + (tl.load(step_ptr) & 0xFFFFFFFF)
        xm = rm[:, None] & (d[None, :] < D)
        x = tl.load(x_ptr + rows[:, None] * D + d[None, :], mask=xm, other=0).to(tl.float32)  # uint8 boards too
        tl.store(s_obs + t * M * D + rows[:, None] * D + d[None, :], x, mask=xm)
        om = rm[:, None] & (cols[None, :] < OUT)
        if FORWARD:
            w1t, bb1, w2t, bb2, w3t, bb3 = _load_weights(w1, b1, w2, b2, w3, b3, D, H, OUT, DP, HP, OP)
            _, _, logits = _forward(x, w1t, bb1, w2t, bb2, w3t, bb3, PREC)
        else:
            logits = tl.load(logits_ptr + rows[:, None] * OUT + cols[None, :], mask=om, other=0.0)
        if HAS_MASK:
            am = tl.load(amask_ptr + rows[:, None] * OUT + cols[None, :], mask=om, other=0)
            tl.store(s_amask + t * M * OUT + rows[:, None] * OUT + cols[None, :], am, mask=om)
            logits = tl.where(am != 0, logits, MASKED_LOGIT)
        u = tl.rand(seed, rows[:, None] * OP + cols[None, :])
        noisy = logits - tl.log(-tl.log(u))  # Gumbel-max: the arg-max is a draw from the softmax
        logp = tl.zeros([BM], tl.float32)
        for k in tl.static_range(NH):
            lo = tl.load(heads_ptr + k)
            hi = tl.load(heads_ptr + k + 1)
            inh = (cols >= lo) & (cols < hi)
            a = tl.argmax(tl.where(inh[None, :], noisy, float("-inf")), 1)
            m = tl.max(tl.where(inh[None, :], logits, float("-inf")), 1)
            s = tl.sum(tl.where(inh[None, :], tl.exp(logits - m[:, None]), 0.0), 1)
            chosen = tl.sum(tl.where(cols[None, :] == a[:, None], logits, 0.0), 1)
            logp += chosen - m - tl.log(s)
            tl.store(env_act_ptr + rows * NH + k, (a - lo).to(tl.int32), mask=rm)
            tl.store(s_act + t * M * NH + rows * NH + k, (a - lo).to(tl.int32), mask=rm)
        tl.store(s_logp + t * M + rows, logp, mask=rm)

    @triton.jit
    def _record_kernel(rew_ptr, term_ptr, trunc_ptr, active_ptr, agent_stride, done_ptr, obs_ptr, fobs_ptr,
                       ret_ptr, len_ptr, s_rew, s_term, s_ended, s_mask, s_next, acc_ptr, t_ptr, E, N, D, group,
                       FIRST: tl.constexpr, DP: tl.constexpr, BM: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        rm = rows < E * N
        e, a = rows // N, rows % N
        t = tl.load(t_ptr).to(tl.int64)
        at = e * agent_stride + a
        term = tl.load(term_ptr + at, mask=rm, other=0) != 0
        ended = term | (tl.load(trunc_ptr + at, mask=rm, other=0) != 0)
        done = tl.load(done_ptr + e, mask=rm, other=0) != 0
        tl.store(s_rew + t * E * N + rows, tl.load(rew_ptr + at, mask=rm, other=0.0), mask=rm)
        tl.store(s_term + t * E * N + rows, term.to(tl.float32), mask=rm)
        tl.store(s_ended + t * E * N + rows, ended.to(tl.float32), mask=rm)
        tl.store(s_mask + t * E * N + rows, (tl.load(active_ptr + at, mask=rm, other=0) != 0).to(tl.float32),
                 mask=rm)
        d = tl.arange(0, DP)
        xm = rm[:, None] & (d[None, :] < D)
        # float32 storage whatever the env's observations hold (a board's uint8 planes)
        nxt = tl.load(obs_ptr + rows[:, None] * D + d[None, :], mask=xm & ~done[:, None], other=0).to(tl.float32)
        fin = tl.load(fobs_ptr + rows[:, None] * D + d[None, :], mask=xm & done[:, None], other=0).to(tl.float32)
        tl.store(s_next + t * E * N * D + rows[:, None] * D + d[None, :], tl.where(done[:, None], fin, nxt), mask=xm)
        # finished episodes: count and length once per env (first group), each group's mean return
        ret = tl.load(ret_ptr + at, mask=rm & done, other=0.0)
        tl.atomic_add(acc_ptr + 2 + group, tl.sum(ret, 0).to(tl.float64) / N)
        if FIRST:
            first = rm & done & (a == 0)
            length = tl.load(len_ptr + e, mask=first, other=0)
            tl.atomic_add(acc_ptr, tl.sum(first.to(tl.float64), 0))
            tl.atomic_add(acc_ptr + 1, tl.sum(length.to(tl.float64), 0))

    @triton.jit
    def _actor_loss_grad(out, o, idx, rm, w, act_ptr, old_ptr, adv_ptr, amask_ptr, heads_ptr, ent_ptr, OUT, clip,
                         NH: tl.constexpr, HAS_MASK: tl.constexpr):
        """The gradient of the rows' clipped policy loss minus the entropy bonus, weighted by ``w``, by the logits.

        Also per row the weighted loss, entropy, approximate KL and whether the ratio was clipped.
        ``torch.maximum``'s and ``clamp``'s gradients at ties and bounds are taken as torch takes them.
        """
        om = rm[:, None] & (o[None, :] < OUT)
        if HAS_MASK:
            am = tl.load(amask_ptr + idx[:, None] * OUT + o[None, :], mask=om, other=0)
            out = tl.where(am != 0, out, MASKED_LOGIT)
            # A masked logit is a constant, as torch's masked_fill makes it: no gradient reaches the
            # network's output there. It matters where a row's every action is masked (a player
            # waiting for its turn): its softmax is uniform over constants, not zero.
            om = om & (am != 0)
        logp, ent, prob, lprob, taken, head_ent = _heads(out, o, act_ptr + idx * NH, heads_ptr, NH)
        adv = tl.load(adv_ptr + idx, mask=rm, other=0.0)
        log_ratio = logp - tl.load(old_ptr + idx, mask=rm, other=0.0)
        ratio = tl.exp(log_ratio)
        pg1 = -adv * ratio
        pg2 = -adv * tl.minimum(tl.maximum(ratio, 1.0 - clip), 1.0 + clip)
        g1 = tl.where(pg1 > pg2, 1.0, tl.where(pg1 == pg2, 0.5, 0.0))
        inside = ((ratio >= 1.0 - clip) & (ratio <= 1.0 + clip)).to(tl.float32)
        dlogp = -adv * (g1 + (1.0 - g1) * inside) * ratio
        ent_coef = tl.load(ent_ptr)
        dout = w[:, None] * (dlogp[:, None] * (taken - prob) + ent_coef * prob * (lprob + head_ent))
        dout = tl.where(om, dout, 0.0)
        return (dout, w * tl.maximum(pg1, pg2), w * ent, w * ((ratio - 1.0) - log_ratio),
                w * (tl.abs(ratio - 1.0) > clip).to(tl.float32))

    @triton.jit
    def _actor_loss_kernel(perm_ptr, start, count, logits_ptr, act_ptr, old_ptr, adv_ptr, mask_ptr, amask_ptr,
                           heads_ptr, ent_ptr, agents_ptr, dlogits_ptr, stats_ptr, OUT, clip, NH: tl.constexpr,
                           HAS_MASK: tl.constexpr, OP: tl.constexpr, BM: tl.constexpr):
        """`_actor_loss_grad` of a minibatch's logits (row r: stored row ``perm[start + r]``) over its agents.

        Writes the mean's gradient by the logits and this program's sums of the four statistics.
        """
        pid = tl.program_id(0)
        r = pid * BM + tl.arange(0, BM)
        o = tl.arange(0, OP)
        rm = r < count
        om = rm[:, None] & (o[None, :] < OUT)
        idx = tl.load(perm_ptr + start + r, mask=rm, other=0).to(tl.int64)
        out = tl.load(logits_ptr + r[:, None] * OUT + o[None, :], mask=om, other=0.0)
        w = tl.load(mask_ptr + idx, mask=rm, other=0.0)
        dout, pg, ent, kl, clipped = _actor_loss_grad(out, o, idx, rm, w, act_ptr, old_ptr, adv_ptr, amask_ptr,
                                                      heads_ptr, ent_ptr, OUT, clip, NH, HAS_MASK)
        tl.store(dlogits_ptr + r[:, None] * OUT + o[None, :], dout / tl.load(agents_ptr), mask=om)
        st = stats_ptr + pid * 4
        tl.store(st, tl.sum(pg, 0))
        tl.store(st + 1, tl.sum(ent, 0))
        tl.store(st + 2, tl.sum(kl, 0))
        tl.store(st + 3, tl.sum(clipped, 0))

    @triton.jit
    def _ppo_grads_kernel(perm_ptr, start, count, x_ptr, act_ptr, old_ptr, adv_ptr, ret_ptr, mask_ptr, amask_ptr,
                          heads_ptr, ent_ptr, w1, b1, w2, b2, w3, b3, out_ptr, out_stride, stats_col,
                          D, H, OUT, clip, vf_coef, vf_clip, ROUNDS: tl.constexpr, CRITIC: tl.constexpr,
                          NH: tl.constexpr,
                          HAS_MASK: tl.constexpr, DP: tl.constexpr, HP: tl.constexpr, OP: tl.constexpr,
                          BM: tl.constexpr, PREC: tl.constexpr):
        """Gradient of one minibatch's loss over this program's tiles of it, written to row ``pid`` of ``out``.

        The actor's loss is the clipped policy loss minus the entropy bonus; the critic's the value
        loss times ``vf_coef``; both weighted per row by ``mask``. `trainers.ppo.ppo_loss` averages
        over the minibatch's agents in the game: the critic's programs also count them, and the
        caller divides the summed gradient and stats by that count.
        """
        pid = tl.program_id(0)
        nprog = tl.num_programs(0)
        d, h, o = tl.arange(0, DP), tl.arange(0, HP), tl.arange(0, OP)
        w1t, bb1, w2t, bb2, w3t, bb3 = _load_weights(w1, b1, w2, b2, w3, b3, D, H, OUT, DP, HP, OP)
        gw1 = tl.zeros([HP, DP], tl.float32)
        gw2 = tl.zeros([HP, HP], tl.float32)
        gw3 = tl.zeros([OP, HP], tl.float32)
        gb1 = tl.zeros([HP], tl.float32)
        gb2 = tl.zeros([HP], tl.float32)
        gb3 = tl.zeros([OP], tl.float32)
        s0 = tl.zeros([BM], tl.float32)  # actor: policy loss, critic: value loss
        s1 = tl.zeros([BM], tl.float32)  # actor: entropy
        s2 = tl.zeros([BM], tl.float32)  # actor: approximate KL
        s3 = tl.zeros([BM], tl.float32)  # actor: clipped fraction
        for i in range(0, ROUNDS):
            r = (pid + i * nprog) * BM + tl.arange(0, BM)
            rm = r < count
            idx = tl.load(perm_ptr + start + r, mask=rm, other=0).to(tl.int64)
            x = tl.load(x_ptr + idx[:, None] * D + d[None, :], mask=rm[:, None] & (d[None, :] < D), other=0.0)
            h1, h2, out = _forward(x, w1t, bb1, w2t, bb2, w3t, bb3, PREC)
            w = tl.load(mask_ptr + idx, mask=rm, other=0.0)
            if CRITIC:
                ret = tl.load(ret_ptr + idx, mask=rm, other=0.0)
                old_v = tl.load(old_ptr + idx, mask=rm, other=0.0)
                v = tl.sum(tl.where(o[None, :] == 0, out, 0.0), 1)
                vf = 0.5 * (v - ret) * (v - ret)
                dv = v - ret
                if vf_clip > 0:
                    delta = v - old_v
                    vc = old_v + tl.minimum(tl.maximum(delta, -vf_clip), vf_clip)
                    vf2 = 0.5 * (vc - ret) * (vc - ret)
                    g1 = tl.where(vf > vf2, 1.0, tl.where(vf == vf2, 0.5, 0.0))
                    inside = ((delta >= -vf_clip) & (delta <= vf_clip)).to(tl.float32)
                    dv = g1 * dv + (1.0 - g1) * (vc - ret) * inside
                    vf = tl.maximum(vf, vf2)
                s0 += w * vf
                s1 += w
                dout = tl.where(o[None, :] == 0, (w * vf_coef * dv)[:, None], 0.0)
            else:
                dout, pg, ent, kl, clipped = _actor_loss_grad(out, o, idx, rm, w, act_ptr, old_ptr, adv_ptr, amask_ptr,
                                                              heads_ptr, ent_ptr, OUT, clip, NH, HAS_MASK)
                s0 += pg
                s1 += ent
                s2 += kl
                s3 += clipped
            dout = _fit(dout, PREC)
            dz2 = _dot(dout, tl.trans(w3t), PREC) * (1.0 - h2 * h2)
            dz1 = _dot(dz2, tl.trans(w2t), PREC) * (1.0 - h1 * h1)
            gw3 += _dot(tl.trans(dout), h2, PREC)
            gw2 += _dot(tl.trans(dz2), h1, PREC)
            gw1 += _dot(tl.trans(dz1), _fit(x, PREC), PREC)
            gb3 += tl.sum(dout, 0)
            gb2 += tl.sum(dz2, 0)
            gb1 += tl.sum(dz1, 0)
        # this program's share, in the order of the parameters (W1, b1, W2, b2, W3, b3), then the stats
        row = out_ptr + pid.to(tl.int64) * out_stride
        tl.store(row + h[:, None] * D + d[None, :], gw1, mask=(h[:, None] < H) & (d[None, :] < D))
        row += H * D
        tl.store(row + h, gb1, mask=h < H)
        row += H
        tl.store(row + h[:, None] * H + h[None, :], gw2, mask=(h[:, None] < H) & (h[None, :] < H))
        row += H * H
        tl.store(row + h, gb2, mask=h < H)
        row += H
        tl.store(row + o[:, None] * H + h[None, :], gw3, mask=(o[:, None] < OUT) & (h[None, :] < H))
        row += OUT * H
        tl.store(row + o, gb3, mask=o < OUT)
        st = out_ptr + pid.to(tl.int64) * out_stride + stats_col
        tl.store(st, tl.sum(s0, 0))
        if CRITIC:  # the agents in the game, after the five stats
            tl.store(st + 4, tl.sum(s1, 0))
        else:  # beside the critic's value loss: (pg, vf, entropy, approx_kl, clipfrac)
            tl.store(st + 2, tl.sum(s1, 0))
            tl.store(st + 3, tl.sum(s2, 0))
            tl.store(st + 4, tl.sum(s3, 0))

    @triton.jit
    def _gae_kernel(rew, val, nval, term, ended, choice, adv, ret, M, gamma, lam, T: tl.constexpr,
                    HAS_CHOICE: tl.constexpr,
                    BM: tl.constexpr):
        cols = tl.program_id(0) * BM + tl.arange(0, BM)
        cm = cols < M
        last = tl.zeros([BM], tl.float32)
        next_lam = tl.zeros([BM], tl.float32) + lam  # the lambda of step t+1 (``lam`` past the rollout)
        for i in range(T):
            t = T - 1 - i
            at = t.to(tl.int64) * M + cols
            v = tl.load(val + at, mask=cm, other=0.0)
            delta = (tl.load(rew + at, mask=cm, other=0.0)
                     + gamma * tl.load(nval + at, mask=cm, other=0.0) * (1.0 - tl.load(term + at, mask=cm, other=0.0))
                     - v)
            last = delta + gamma * next_lam * (1.0 - tl.load(ended + at, mask=cm, other=0.0)) * last
            tl.store(adv + at, last, mask=cm)
            tl.store(ret + at, last + v, mask=cm)
            if HAS_CHOICE:
                next_lam = tl.where(tl.load(choice + at, mask=cm, other=0) != 0, lam, 1.0)


# ------------------------------------------------------------------------- launchers
def forward(seq: torch.nn.Sequential, x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``seq(x)`` for a contiguous ``(..., in)`` ``x``, no gradient (into ``out``, contiguous, if given)."""
    weights = mlp_weights(seq)
    dims = _dims(weights, x.shape[-1])
    rows = x.numel() // dims["D"]
    y = torch.empty(*x.shape[:-1], dims["OUT"], device=x.device, dtype=torch.float32) if out is None else out
    assert x.is_contiguous() and y.is_contiguous() and y.numel() == rows * dims["OUT"]
    _forward_kernel[(triton.cdiv(rows, BLOCK_ROWS),)](x, y, *weights, rows, **dims, BM=BLOCK_ROWS, PREC=PRECISION)
    return y


def head_bounds(splits: list[int], device) -> torch.Tensor:
    """Column bounds of each action head in the logits: ``[0, n0, n0 + n1, ...]``."""
    bounds = [0]
    for n in splits:
        bounds.append(bounds[-1] + n)
    return torch.tensor(bounds, dtype=torch.int32, device=device)


def draw_key(seed: int, rank: int, group: int) -> int:
    """The high 32 bits of the 64-bit Philox key of a run's draws for one group; the low 32 count its steps."""
    return (((seed * 1_000_003 + rank) * 64 + group) & 0x7FFFFFFF) << 32


def act(seq, obs, mask, env_actions, storage, t, step, heads, key: int, logits: torch.Tensor | None = None):
    """Samples ``env_actions`` for ``obs`` (``(E, n, D)``) and writes step ``t`` of ``storage``.

    Written: ``obs``, ``act``, ``logp`` and, with a mask, ``action_mask``; draws keyed by ``key``
    and ``step``. The kernel runs the actor ``seq`` unless its ``logits`` (contiguous) are given:
    a network too wide for the kernels runs as torch layers, and only the draw runs here.
    """
    weights = mlp_weights(seq)
    dims = _dims(weights, obs.shape[-1])
    rows = obs.shape[0] * obs.shape[1]
    nh = heads.numel() - 1
    has_mask = mask is not None
    block = BLOCK_ROWS
    if logits is not None:
        assert logits.is_contiguous() and logits.numel() == rows * dims["OUT"]
        dims["HP"], block = 16, DRAWN_ROWS  # no hidden layer is held
    _act_kernel[(triton.cdiv(rows, block),)](
        obs, obs if logits is None else logits, mask if has_mask else obs, env_actions, storage["obs"],
        storage["act"], storage["logp"], storage["action_mask"] if has_mask else obs, t, step, heads, *weights, rows,
        **dims, key=key, NH=nh, HAS_MASK=has_mask, FORWARD=logits is None, BM=block, PREC=PRECISION)


def record(env, group: str, gi: int, storage, acc: torch.Tensor, t: torch.Tensor, first: bool):
    """Step ``t``'s rewards, ends, in-game masks and next observations of ``group`` into ``storage``.

    The episodes that ended go into ``acc``: their count and lengths with ``first``, the group's mean return.
    """
    obs = env.obs[group]
    E, N, D = obs.shape
    rew = env.rewards[group]
    stats = env.episode_stats()
    ret = stats[f"return_{group}"]
    assert rew.stride() == env.terminated[group].stride() == env.active[group].stride() == ret.stride()
    _record_kernel[(triton.cdiv(E * N, BLOCK_ROWS),)](
        rew, env.terminated[group], env.truncated[group], env.active[group], rew.stride(0), env.info["done"], obs,
        env.final_obs[group], ret, stats["length"], storage["rew"], storage["term"], storage["ended"],
        storage["mask"], storage["next_obs"], acc, t, E, N, D, gi, FIRST=first, DP=_pad(D), BM=BLOCK_ROWS)


def ppo_grads(seq, critic: bool, perm, start: int, count: int, batch: dict, ent_coef, heads, out, column: int,
              stats_column: int, clip: float, vf_coef: float, vf_clip: float):
    """Each program's share of one minibatch's gradient for ``seq``, into its row of ``out``.

    Columns from ``column`` hold the parameters' gradients in order; from ``stats_column`` the
    actor writes the sums of (pg, -, entropy, approx_kl, clipfrac) and the critic (-, vf, -, -, -,
    agents in the game). `mean_gradient` turns the rows into the minibatch's mean.
    """
    weights = mlp_weights(seq)
    dims = _dims(weights, batch["obs"].shape[-1])
    has_mask = "action_mask" in batch and not critic
    nh = heads.numel() - 1
    placeholder = batch["mask"]
    programs = out.shape[0]
    _ppo_grads_kernel[(programs,)](
        perm, start, count, batch["obs"], batch["act"], batch["value" if critic else "logp"], batch["adv"],
        batch["ret"], batch["mask"], batch["action_mask"] if has_mask else placeholder, heads, ent_coef,
        *weights, out[:, column:], out.stride(0), stats_column - column, dims["D"], dims["H"], dims["OUT"], clip,
        vf_coef, vf_clip, ROUNDS=triton.cdiv(triton.cdiv(count, GRAD_TILE["BM"]), programs), CRITIC=critic, NH=nh,
        HAS_MASK=has_mask, DP=dims["DP"], HP=dims["HP"], OP=dims["OP"], PREC=PRECISION, **GRAD_TILE)


def mean_gradient(partial: torch.Tensor, flat: torch.Tensor):
    """Sums the programs' rows of ``partial`` into ``flat`` and divides by its last entry, the agents in the game."""
    torch.sum(partial, 0, out=flat)
    flat[:-1].div_(flat[-1:].clamp_min(1.0))


def actor_loss(logits: torch.Tensor, perm, start: int, count: int, batch: dict, ent_coef, heads, clip: float,
               agents: torch.Tensor):
    """A minibatch's policy loss by its ``logits`` (from a torch actor): (its gradient by them, statistics).

    ``logits[r]`` are the actor's outputs for stored row ``perm[start + r]``; ``agents`` (one
    element) counts the minibatch's agents in the game, the loss being their mean. The
    statistics are the sums of (pg, entropy, approx_kl, clipfrac) over them.
    """
    out = logits.shape[-1]
    assert logits.is_contiguous() and logits.shape[0] == count
    has_mask = "action_mask" in batch
    grid = triton.cdiv(count, DRAWN_ROWS)
    dlogits = torch.empty_like(logits)
    partial = torch.empty(grid, 4, device=logits.device)
    _actor_loss_kernel[(grid,)](perm, start, count, logits, batch["act"], batch["logp"], batch["adv"], batch["mask"],
                                batch["action_mask"] if has_mask else batch["mask"], heads, ent_coef, agents, dlogits,
                                partial, out, clip, NH=heads.numel() - 1, HAS_MASK=has_mask, OP=_pad(out),
                                BM=DRAWN_ROWS)
    return dlogits, partial.sum(0)


def torch_matmul_precision() -> str:
    """`torch.set_float32_matmul_precision`'s setting for the torch layers of a trainer on a GPU.

    TF32 ("high") beside the kernels' fp16, TF32 or bf16 products; full fp32 ("highest") with ``ieee``.
    """
    return "highest" if PRECISION == "ieee" else "high"


def gae(rew, val, nval, term, ended, gamma: float, lam: float, choice=None):
    """`trainers.ppo.compute_gae` for contiguous ``(T, ...)`` float tensors (``choice``: bools or None)."""
    T = rew.shape[0]
    M = rew.numel() // T
    adv, ret = torch.empty_like(rew), torch.empty_like(rew)
    has_choice = choice is not None
    _gae_kernel[(triton.cdiv(M, BLOCK_ROWS),)](rew, val, nval, term, ended, choice if has_choice else rew, adv, ret,
                                               M, gamma, lam, T=T, HAS_CHOICE=has_choice, BM=BLOCK_ROWS)
    return adv, ret
