"""`gpu_zoo.testing.check_env`, the conformance kit: a good env passes it, a defective one is told what is wrong."""

import pytest

import gpu_zoo
from gpu_zoo.testing import check_env, nvvm_available


def test_a_registered_env_passes_every_check():
    outcome = check_env("simple_tag_v3", num_good=1, num_adversaries=2, num_obstacles=1, max_cycles=5)
    names = {"pettingzoo", "spaces and buffers", "seeds replay", "auto-reset", "bad actions", "render", "cpu vs cuda",
             "cuda compile"}
    assert set(outcome) == names and outcome["cpu vs cuda"] == "ok"
    assert outcome["cuda compile"] == ("ok" if nvvm_available() else outcome["cuda compile"])


def test_a_defective_env_is_told_each_defect(monkeypatch):
    monkeypatch.setitem(gpu_zoo.registry._ENTRIES, "cuda_only_error_v0", "tests.cuda_only_error_env:SPEC")
    with pytest.raises(AssertionError) as failed:
        check_env("cuda_only_error_v0")
    report = str(failed.value)
    assert "- spaces and buffers: AssertionError: a walker observation outside Box(0.0, 1.0" in report
    assert "- pettingzoo: AssertionError: Out of bounds observation" in report  # PettingZoo's own test sees it too
    if nvvm_available():
        assert "failed 3 of 8 checks" in report and "kernel 'drive' does not compile" in report
    for passed in ("seeds replay:", "auto-reset:", "bad actions:", "render:", "cpu vs cuda:"):
        assert f"- {passed}" not in report, report
