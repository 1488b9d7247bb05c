"""Judges for adversarial games: rule checks, model backends, the HTTP judge server and its client.

Public entry points: `build_judge` (backends.py), `HttpJudge` (client.py), `create_app` (app.py).
"""
