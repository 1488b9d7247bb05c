"""What ended a `medplay train` run, turned into one line and an exit status: the errors that stop a run on purpose
(run_errors.py), a CUDA out-of-memory anywhere in the run (out_of_memory.py) and a Ray actor whose process died
(dead_actors.py)."""
