"""A stand-in for a vLLM server's readiness in tests: Python's own HTTP server over a folder where `v1/models` answers."""

from __future__ import annotations

from pathlib import Path


def models_server_code(port: int, folder: Path) -> str:
    """Python source (one statement a line) that serves `folder` on `port`, its `v1/models` answering as vLLM's does
    once it listens; lines run before it can print or wait first."""
    (folder / "v1").mkdir(exist_ok=True)
    (folder / "v1" / "models").write_text("{}")
    return (
        "import runpy, sys\n"
        f"sys.argv = ['http.server', '{port}', '--bind', '127.0.0.1', '--directory', '{folder}']\n"
        "runpy.run_module('http.server', run_name='__main__')\n"
    )
