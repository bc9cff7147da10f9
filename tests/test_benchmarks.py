"""The benchmark harness runs end to end at tiny sizes (structure only: speed is never asserted)."""

import json

from benchmarks import simple_tag, tag_continuous


def test_tag_continuous_benchmark_writes_records(tmp_path):
    out = tmp_path / "tag.json"
    tag_continuous.main(["--device", "cpu", "--sizes", "4x5", "--steps", "2", "--repeats", "1", "--out", str(out)])
    data = json.loads(out.read_text())
    rec = data["records"][0]
    assert {"env_steps_per_s", "agent_steps_per_s", "host_us_per_step", "compile_s", "spread"} <= set(rec)
    assert rec["num_envs"] == 4 and rec["agents"] == 5 and rec["env_steps_per_s"] > 0
    assert {"python", "torch", "numba", "date"} <= set(data["system"])


def test_simple_tag_benchmark_compares_with_mpe2(tmp_path):
    out = tmp_path / "st.json"
    simple_tag.main(["--device", "cpu", "--sizes", "2", "--steps", "2", "--repeats", "1",
                     "--baseline-seconds", "0.1", "--out", str(out)])
    records = json.loads(out.read_text())["records"]
    assert [r["system"] for r in records] == ["mpe2", "gpu_zoo"]
    assert records[1]["ratio_to_mpe2"] > 0
