"""`medplay.emulate_gpu_gib`'s one number on its way from the launcher to the Ray workers.

The launcher (medical_team/launcher/plan/card_emulation.py) puts the emulated card's share of this GPU's memory into
every Ray worker's environment under FRACTION_ENV; the plugin (medical_team/plugin/gpu_cap.py) caps each GPU
worker with it.
"""

FRACTION_ENV = "MEDPLAY_GPU_MEMORY_FRACTION"
