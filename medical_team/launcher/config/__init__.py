"""`medplay train`'s config: composed from configs/medplay.yaml, a profile and the overrides (compose.py), verl's part
checked against verl's own `ppo_trainer` (verl_keys.py), and a run's settings file as the overrides it stands for
(run_file.py)."""
