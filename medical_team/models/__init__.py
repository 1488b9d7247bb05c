"""Models built offline: real ones from PyPI packages (registry, packaged-file lookup, GGUF converter), the tiny one."""
