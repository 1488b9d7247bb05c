"""Surviving long runs: complete-checkpoint tracking, graceful stop on SIGTERM, non-finite guards, appended metrics."""
