"""Helpers for tests that start servers: free loopback ports, and stopping every process of a session."""

from __future__ import annotations

import os
import signal
import socket

import psutil


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on right now (held open together so they differ)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def stop_session(session_id: int, grace_s: float = 20) -> None:
    """TERM, then KILL, every process still in this session (supervisord, Ray, their children)."""

    def members() -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter():
            try:
                if os.getsid(process.pid) == session_id:
                    found.append(process)
            except (ProcessLookupError, PermissionError, psutil.Error):
                continue
        return found

    for process in members():
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(members(), timeout=grace_s)
    for process in alive:
        try:
            process.kill()
        except psutil.Error:
            pass
