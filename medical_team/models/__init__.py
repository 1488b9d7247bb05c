"""Real models prepared offline from PyPI packages: the registry, the packaged-file lookup, the GGUF converter."""
