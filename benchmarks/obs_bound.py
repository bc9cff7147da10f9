"""How fast could Tag continuous's full observations be written alone, outside the step kernel?

    python -m benchmarks.obs_bound --num-envs 2000 --taggers 5 --runners 95

The bound a separate observation kernel could reach, against the fused step measured in the same
run. Each variant is a standalone kernel writing every agent's observation (``7 (A - 1) + 1``
floats, feature-major as the env's) from random state, with no step phases and no barriers:

- ``fill``: torch's ``fill_`` of the buffer, the write bandwidth's ceiling;
- ``row``: a warp per (env, agent) row, a lane per element, the (block, slot) advanced by carries;
- ``aligned``: as ``row``, but lane ``l`` writes the element at ``l`` of each 128-byte line, so a
  warp's store fills whole sectors;
- ``slot``: one env a block, lanes over its (agent, slot) pairs, seven features computed then
  stored: the fused kernel's observation stage, without the rest of the step;
- ``slot padded``: as ``slot`` at 512 threads, into rows padded to whole 128-byte lines (a view
  of a wider buffer), so every row starts on a line;
- ``slot f16``: as ``slot`` at 512 threads, into half-precision observations: half the bytes.
- ``segment v4``: a warp per (agent, feature block) segment of a row, each lane computing four
  consecutive elements of it and storing them with one 16-byte store (`store4`); the few elements
  before the segment's first 16-byte boundary and after its last go one by one. A warp's stores
  then fill whole lines, where a lane's 4-byte stores into rows of 99 leave a quarter of each
  sector unwritten and send four times the requests to L2, which ``ncu`` found the busiest unit of
  the fused step (71% of its throughput, against 43% for DRAM). On an H200 at 2000 x 100 it ran
  3.3e6 env-steps/s against 5.96e6 for ``slot`` at 512 threads (same run): fewer and fuller L2
  requests do not pay for a lane computing four elements of one feature instead of seven of one slot.

All variants must write the same values (checked; ``f16`` to its precision). Needs a GPU.
"""

import argparse
import math
import os

import numpy as np
import torch

from gpu_zoo.core.compiler.speed.compat import import_cuda

cuda = import_cuda()
E, T, R = 2000, 5, 95  # set by main() before the first compile
A, K, D = T + R, T + R - 1, 7 * (T + R - 1) + 1
S0 = np.float32(1.0 / (math.sqrt(2) * 10.0))
S1 = np.float32(1.0 / (1.0 + 1e-10))
S2 = np.float32(1.0 / (2 * math.pi))
TIME = np.float32(0.37)
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
INLINE = {} if SIM else {"forceinline": True}


if SIM:
    def store4(flat, i, a, b, c, d):  # the simulator runs Python: four plain stores
        flat[i], flat[i + 1], flat[i + 2], flat[i + 3] = a, b, c, d
else:
    from llvmlite import ir
    from numba import types as nt
    from numba.core.extending import intrinsic

    @intrinsic
    def store4(typingctx, flat, i, a, b, c, d):
        """``flat[i:i + 4] = a, b, c, d`` as one 16-byte store: ``i`` a multiple of 4, ``flat`` 16-byte aligned."""
        if not (isinstance(flat, nt.Array) and flat.ndim == 1 and flat.dtype == nt.float32):
            return None  # a typing error: only a 1-D float32 array

        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            index = context.cast(builder, args[1], signature.args[1], nt.intp)
            ptr = builder.gep(builder.bitcast(ary.data, ir.PointerType(ir.FloatType())), [index])
            vec_type = ir.VectorType(ir.FloatType(), 4)
            vec = ir.Constant(vec_type, ir.Undefined)
            for k in range(4):
                value = context.cast(builder, args[2 + k], signature.args[2 + k], nt.float32)
                vec = builder.insert_element(vec, value, ir.Constant(ir.IntType(32), k))
            builder.store(vec, builder.bitcast(ptr, ir.PointerType(vec_type))).align = 16
            return context.get_dummy_value()

        return nt.void(flat, i, a, b, c, d), codegen


@cuda.jit(device=True, **INLINE)
def feat(px, py, sp, ac, hd, alive, e, a, j, b):
    if b == 0:
        return (px[e, j] - px[e, a]) * S0
    if b == 1:
        return (py[e, j] - py[e, a]) * S0
    if b == 2:
        return (sp[e, j] - sp[e, a]) * S1
    if b == 3:
        return (ac[e, j] - ac[e, a]) * S1
    if b == 4:
        return (hd[e, j] - hd[e, a]) * S2
    if b == 5:
        return np.float32(1.0) if j < T else np.float32(0.0)
    return np.float32(alive[e, j])


@cuda.jit
def row_kernel(px, py, sp, ac, hd, alive, obs, aligned):
    """A warp a row, the (block, slot) advanced by carries.

    ``aligned``: lane l writes the elements at l mod 32 of each 128-byte line (whole-line stores),
    starting before the row where the row starts inside a line; else lane l writes element l.
    """
    lane = cuda.threadIdx.x & 31
    warp = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) >> 5
    nwarps = (cuda.gridDim.x * cuda.blockDim.x) >> 5
    row = warp
    while row < E * A:
        e = row // A
        a = row - e * A
        live = alive[e, a] != 0
        i = lane - ((row * D) & 31 if aligned else 0)  # the buffer starts on a line
        b, j = (i // K, i % K) if i >= 0 else (0, i)
        while i < D:
            if i >= 0:
                if b == 7:
                    v = TIME
                else:
                    jj = j + 1 if j >= a else j
                    v = feat(px, py, sp, ac, hd, alive, e, a, jj, b) if (live or b >= 5) else np.float32(0.0)
                obs[e, a, i] = v
            i += 32
            j += 32
            while j >= K:
                j -= K
                b += 1
        row += nwarps


@cuda.jit
def slot_kernel(px, py, sp, ac, hd, alive, obs):
    e = cuda.blockIdx.x
    pair = cuda.threadIdx.x
    while pair < A * K:
        a = pair // K
        j = pair - a * K
        jj = j + 1 if j >= a else j
        live = alive[e, a] != 0
        z = np.float32(0.0)
        v0 = feat(px, py, sp, ac, hd, alive, e, a, jj, 0) if live else z
        v1 = feat(px, py, sp, ac, hd, alive, e, a, jj, 1) if live else z
        v2 = feat(px, py, sp, ac, hd, alive, e, a, jj, 2) if live else z
        v3 = feat(px, py, sp, ac, hd, alive, e, a, jj, 3) if live else z
        v4 = feat(px, py, sp, ac, hd, alive, e, a, jj, 4) if live else z
        v5 = feat(px, py, sp, ac, hd, alive, e, a, jj, 5)
        v6 = feat(px, py, sp, ac, hd, alive, e, a, jj, 6)
        obs[e, a, j] = v0
        obs[e, a, K + j] = v1
        obs[e, a, 2 * K + j] = v2
        obs[e, a, 3 * K + j] = v3
        obs[e, a, 4 * K + j] = v4
        obs[e, a, 5 * K + j] = v5
        obs[e, a, 6 * K + j] = v6
        if j == 0:
            obs[e, a, 7 * K] = TIME
        pair += cuda.blockDim.x


@cuda.jit(device=True, **INLINE)
def element(px, py, sp, ac, hd, alive, e, a, live, b, i):
    """Element i of feature block b of agent a's row (block 6 ends with the time)."""
    if i == K:
        return TIME
    jj = i + 1 if i >= a else i
    return feat(px, py, sp, ac, hd, alive, e, a, jj, b) if (live or b >= 5) else np.float32(0.0)


@cuda.jit
def segment_kernel(px, py, sp, ac, hd, alive, flat):
    """A warp a (agent, block) segment; a lane four elements and one 16-byte store, or one edge element."""
    e = cuda.blockIdx.x
    lane = cuda.threadIdx.x & 31
    seg = cuda.threadIdx.x >> 5
    nwarps = cuda.blockDim.x >> 5
    env_start = e * (A * D)
    while seg < A * 7:
        a = seg // 7
        b = seg - a * 7
        live = alive[e, a] != 0
        start = env_start + a * D + b * K
        n = K + 1 if b == 6 else K
        head = min((-start) & 3, n)
        groups = (n - head) >> 2
        g = lane
        while g < groups:
            i = head + 4 * g
            store4(flat, start + i, element(px, py, sp, ac, hd, alive, e, a, live, b, i),
                   element(px, py, sp, ac, hd, alive, e, a, live, b, i + 1),
                   element(px, py, sp, ac, hd, alive, e, a, live, b, i + 2),
                   element(px, py, sp, ac, hd, alive, e, a, live, b, i + 3))
            g += 32
        k = (lane - groups) & 31  # the edges go to the lanes after the groups' last (any segment length)
        edges = n - 4 * groups  # the head before the first 16-byte boundary, the tail after the last
        while k < edges:
            i = k if k < head else 4 * groups + k
            flat[start + i] = element(px, py, sp, ac, hd, alive, e, a, live, b, i)
            k += 32
        seg += nwarps


def _set_sizes(num_envs: int, taggers: int, runners: int):
    global E, T, R, A, K, D
    E, T, R = num_envs, taggers, runners
    A, K, D = T + R, T + R - 1, 7 * (T + R - 1) + 1


def main(argv=None):
    import gpu_zoo
    from benchmarks.timing import time_steps

    ap = argparse.ArgumentParser(prog="python -m benchmarks.obs_bound", description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", type=int, default=2000)
    ap.add_argument("--taggers", type=int, default=5)
    ap.add_argument("--runners", type=int, default=95)
    ap.add_argument("--seconds", type=float, default=0.3, help="timed seconds per repeat")
    args = ap.parse_args(argv)
    _set_sizes(args.num_envs, args.taggers, args.runners)  # module constants: the kernels compile with them
    g = torch.Generator(device="cuda").manual_seed(0)
    state = [torch.rand(E, A, device="cuda", generator=g) * 10 for _ in range(5)]
    alive = (torch.rand(E, A, device="cuda", generator=g) > 0.2).to(torch.int32)
    obs = torch.empty(E, A, D, device="cuda")
    padded = torch.empty(E, A, -(-D // 32) * 32, device="cuda")[:, :, :D]
    half = torch.empty(E, A, D, device="cuda", dtype=torch.float16)
    arrays = [cuda.as_cuda_array(t) for t in (*state, alive, obs)]
    inputs = arrays[:-1]
    stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)

    def rate(step):
        return time_steps(step, "cuda", target_s=args.seconds, repeats=3).summary(E)["median"]

    # name: (step, the buffer it writes, the kind whose values it must match)
    variants = {"fill": (lambda: obs.fill_(1.0), obs, "fill")}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for per_sm, threads in ((8, 256), (16, 128), (4, 512)):
        grid = sms * per_sm
        for name, aligned in (("row", False), ("aligned", True)):
            variants[f"{name} {grid}x{threads}"] = (lambda gr=grid, t=threads, al=aligned: row_kernel[gr, t, stream](
                *arrays, al), obs, name)
    for threads in (128, 256, 512):
        variants[f"slot {E}x{threads}"] = (lambda t=threads: slot_kernel[E, t, stream](*arrays), obs, "slot")
    for name, out in (("slot padded", padded), ("slot f16", half)):
        target = cuda.as_cuda_array(out)
        variants[f"{name} {E}x512"] = (lambda o=target: slot_kernel[E, 512, stream](*inputs, o), out, name)
    flat = cuda.as_cuda_array(obs.view(-1))
    if obs.data_ptr() % 16 == 0:  # the 16-byte stores need it; segments align themselves within
        for threads in (256, 512, 1024):
            variants[f"segment v4 {E}x{threads}"] = (lambda t=threads: segment_kernel[E, t, stream](*inputs, flat), obs,
                                                      "segment v4")
    written, rates, nbytes = {}, {}, {}
    for name, (step, out, kind) in variants.items():
        out.fill_(float("nan"))  # what a variant leaves unwritten shows in the comparison below
        rates[name] = rate(step)
        written[kind] = out.clone()
        nbytes[name] = E * A * D * out.element_size()  # the observations, not the padding
    ref = written["row"]
    same = (all(torch.equal(ref, written[k]) for k in ("aligned", "slot", "slot padded", "segment v4")
                if k in written)
            and torch.allclose(written["slot f16"].float(), ref, rtol=1e-3, atol=1e-3))
    env = gpu_zoo.make("tag_continuous_v0", num_envs=E, device="cuda", validate=False, num_taggers=T, num_runners=R)
    env.reset(seed=0)
    for grp, a in env.sample_actions(torch.Generator(device="cuda").manual_seed(0)).items():
        env.actions[grp].copy_(a)
    rates["the env's fused step"] = rate(env.step)
    nbytes["the env's fused step"] = E * A * D * 4
    print(f"{E} envs x {A} agents, {D} floats an observation ({obs.numel() * 4 / 1e6:.0f} MB a step in f32); "
          f"{torch.cuda.get_device_name()}")
    for name, r in rates.items():
        print(f"  {name:<26} {r:9.3e} env-steps/s  {nbytes[name] * r / E / 1e12:5.2f} TB/s of observations")
    print(f"  variants write the same values: {same}")
    for name, kern in (("row", row_kernel), ("slot", slot_kernel), ("segment v4", segment_kernel)):
        print(f"  {name} registers: {kern.get_regs_per_thread()}")


if __name__ == "__main__":
    main()
