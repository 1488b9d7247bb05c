"""The hardware side of a run: the GPU probe, the memory plan of a card, and the card emulation (vLLM caps)."""
