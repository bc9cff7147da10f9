set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD GPU_ZOO_CACHE_DIR=/tmp/gzc
timeout 120 python3 -m benchmarks.tag_continuous --device cuda --out $OUT/tag_cuda.json --sizes 131072x5,2000x100,2000x1000x10
GPU_ZOO_REAL_CUDA=1 timeout 200 python3 -m pytest -x -q tests/test_parity.py 2>&1 | tail -3
cat > /tmp/san.py <<'PY'
import torch, gpu_zoo
for kw in (dict(num_taggers=2, num_runners=5, max_cycles=5, tagging_distance=0.2), dict(num_taggers=2, num_runners=30, max_cycles=5, use_full_observation=False, num_other_agents_observed=4, tagging_distance=0.2)):
    env = gpu_zoo.make("tag_continuous_v0", num_envs=5, device="cuda", **kw)
    env.reset(seed=1)
    for t in range(12):
        env.step({g: torch.randint(0, 11, env.actions[g].shape, device="cuda") for g in env.groups})
    torch.cuda.synchronize()
print("sanitizer run done")
PY
timeout 150 compute-sanitizer --tool memcheck python3 /tmp/san.py > $OUT/memcheck.txt 2>&1; grep -m3 -A12 "=========  *\(Invalid\|Program hit\|Error\)" $OUT/memcheck.txt | head -40; tail -3 $OUT/memcheck.txt
timeout 150 compute-sanitizer --tool racecheck python3 /tmp/san.py 2>&1 | tail -2
