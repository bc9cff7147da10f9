set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD GPU_ZOO_CACHE_DIR=/tmp/gzc
timeout 200 python3 -m benchmarks.tag_continuous --device cuda --out $OUT/tag_cuda2.json --warm-start --sizes 16384x5,2000x640x10,1x11,1048576x5
ls /tmp/gzc | head; ls /tmp/gzc/__pycache__ 2>/dev/null | head
