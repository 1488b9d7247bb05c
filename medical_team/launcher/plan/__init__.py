"""`medplay train`'s run plan, derived once before Ray and applied to the composed config (run_plan.py): the host's
GPUs and the step's batches over them (gpu_plan.py), the memory plan's inputs (memory_inputs.py) and both engines' KV
caches (kv_caches.py), `medplay.emulate_gpu_gib`'s vLLM shares (card_emulation.py), the disk the run's saves and records
need (disk_plan.py), every prompt against the prompt length (prompt_lengths.py), and the same plan on a host's GPUs as
`medplay probe` shows it (host_plan.py)."""
