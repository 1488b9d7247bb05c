"""Judges for adversarial games: rule checks, model backends and the client of a judge server.

Public entry points: `build_judge` (backends.py), `HttpJudge` (client.py); the server itself is
medical_team/judge_server/ (`create_app`).
"""
