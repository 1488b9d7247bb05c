"""What the rollout engine's log says of torch.compile, said once on the console: loaded from the cache, or compiled.

vLLM logs at INFO (configs/medplay.yaml sets VLLM_LOGGING_LEVEL) when it loads compiled graphs from its cache
folder (vllm/compilation/backends.py, decorators.py), how long compilation took (vllm/compilation/monitor.py) and
when it saved an ahead-of-time compiled model there (decorators.py).
These texts are a contact with vLLM, listed in docs/verl-integration.md and checked against vLLM's source by
tests/launcher/console/test_compile_lines.py.
"""

from __future__ import annotations

import re

# (what the log says, what the console says); the first pattern that matches a line wins.
COMPILE_LINES = (
    (
        re.compile(r"Directly load the compiled graph\(s\) .*took (?P<seconds>[\d.]+) s"),
        "compiled graphs loaded from the cache in {seconds} s",
    ),
    (re.compile(r"Directly load AOT compilation from path"), "compiled model loaded from the cache"),
    (
        re.compile(r"Compiling model again due to a load failure"),
        "the cache's compiled model did not load; compiling again",
    ),
    (re.compile(r"torch\.compile (?:took|takes) (?P<seconds>[\d.]+) s in total"), "torch.compile took {seconds} s"),
    (re.compile(r"saved AOT compiled function to "), "compiled model saved in the cache for the next start"),
)


def compile_note(line: str) -> str | None:
    """The console's words for a log line of vLLM's about compilation, or None for any other line."""
    for pattern, words in COMPILE_LINES:
        match = pattern.search(line)
        if match:
            return words.format(**{name: f"{float(value):.1f}" for name, value in match.groupdict().items()})
    return None
