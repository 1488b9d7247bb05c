"""Surviving long runs, the part every process shares: complete checkpoints, the stop request, the non-finite guard.

A checkpoint counts once its manifest matches (checkpoints.py, manifest.py, durable.py; `medplay export` checks one
with verified.py), the launcher asks the trainer to stop through a file (stop_request.py), and the trainer stops
after too many non-finite steps (guards.py) or when host memory or the checkpoint volume reaches its floor
(resources.py reads them and fits their trend, resource_watch.py judges them). The halves that run in one process
live there: the SIGTERM handler in medical_team/launcher/graceful_stop.py; the trainer's hooks, appended metrics and game records in
medical_team/task_runner/. No verl, Ray or vLLM here.
"""
