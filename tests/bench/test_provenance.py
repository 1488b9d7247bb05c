"""What every benchmark's result names (medical_team/bench/provenance.py): the device, the date, the commit or the
image's tag, and the stack's versions.

Run: .venv/bin/python -m pytest -q tests/bench/test_provenance.py
"""

from __future__ import annotations

from pathlib import Path

from medical_team.bench.provenance import cpu_model, device, one_line, provenance, source_of
from medical_team.run.stack import UNKNOWN


def test_a_result_names_device_date_commit_and_versions() -> None:
    facts = provenance()
    assert {"device", "date", "commit", "versions"} <= set(facts)
    assert facts["device"] and facts["date"].endswith("+00:00") and facts["versions"]["python"]
    assert {"medplay", "verl", "torch_build", "transformers"} <= set(facts["versions"])
    assert facts["device"] in one_line(facts) and facts["commit"] in one_line(facts)


def test_the_device_is_the_gpus_counted_or_else_the_cpu() -> None:
    assert device(["NVIDIA H200", "NVIDIA H200"]) == "2 x NVIDIA H200"
    assert device(["NVIDIA H200", "NVIDIA L4"]) == "NVIDIA H200, NVIDIA L4"
    assert device([]) == cpu_model()


def test_the_cpu_model_comes_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some CPU 9000\n")
    assert cpu_model(cpuinfo) == "Some CPU 9000"
    assert cpu_model(tmp_path / "missing")  # the platform's word instead


def test_the_source_is_the_commit_else_the_image_else_the_version() -> None:
    assert source_of({"git_commit": "abc123", "image_tag": "cpu-1", "medplay": "0.1.0"}) == "abc123"
    assert source_of({"git_commit": UNKNOWN, "image_tag": "cpu-1", "medplay": "0.1.0"}) == "image cpu-1"
    assert source_of({"git_commit": UNKNOWN, "image_tag": UNKNOWN, "medplay": "0.1.0"}) == "medplay 0.1.0"
