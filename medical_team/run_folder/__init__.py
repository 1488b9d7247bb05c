"""A run's output folder, read and written the same way by every process: the run's lock (run_lock.py: one run per
folder), verl's checkpoint folders read without verl (checkpoint_folder.py), the metrics JSONL's one reader
(metrics_records.py) and the validation answers on the benchmark (benchmark_answers.py). No verl, Ray or vLLM."""
