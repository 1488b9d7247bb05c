"""Run the judge app under uvicorn: in the foreground (the CLI) or on a background thread (tests, embedding)."""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType, TracebackType
from typing import Self

import uvicorn
from fastapi import FastAPI

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def uvicorn_config(
    app: FastAPI, host: str, port: int, *, log_level: str = "info", graceful_shutdown_s: float = 10.0
) -> uvicorn.Config:
    """The uvicorn settings the judge server runs with (access log on: it records paths, never bodies)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=True,
        timeout_keep_alive=30,
        timeout_graceful_shutdown=graceful_shutdown_s,  # in-flight judge calls get this long after SIGTERM
    )


def serve_forever(app: FastAPI, host: str, port: int, *, graceful_shutdown_s: float = 10.0) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully and return (exit status 0 for supervisors).

    uvicorn serves on a worker thread; this (main) thread owns the signal handlers, because uvicorn's own
    handlers re-raise the signal after shutdown, which would make `docker stop` look like a crash.
    """
    server = BackgroundServer(app, host, port, log_level="info", graceful_shutdown_s=graceful_shutdown_s)

    def stop(signum: int, frame: FrameType | None) -> None:
        if server.server.should_exit:
            server.server.force_exit = True  # a second signal: stop waiting for in-flight requests
        server.server.should_exit = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.start(timeout_s=120.0)
        server.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class BackgroundServer:
    """A real uvicorn server on a daemon thread; `port=0` picks a free port. Use as a context manager."""

    def __init__(
        self,
        app: FastAPI,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_level: str = "warning",
        graceful_shutdown_s: float = 1.0,
    ) -> None:
        config = uvicorn_config(app, host, port, log_level=log_level, graceful_shutdown_s=graceful_shutdown_s)
        self.server = uvicorn.Server(config)
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # not the main thread
        self.host = host
        self.requested_port = port
        self._port: int | None = None
        self._thread = threading.Thread(target=self._run, name="judge-server", daemon=True)

    def _run(self) -> None:
        try:
            self.server.run()
        except SystemExit:
            pass  # uvicorn exits this way when it cannot bind; `start` reports it

    @property
    def port(self) -> int:
        """The port the server listens on (known once started, kept after it stops)."""
        if self._port is None:
            raise RuntimeError("the judge server has not started yet")
        return self._port

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:41234."""
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 10.0) -> BackgroundServer:
        """Start serving and wait until the socket is bound."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(
                    f"judge server could not listen on {self.host}:{self.requested_port} (in use?); see the log above"
                )
            time.sleep(0.01)
        self._port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def wait(self) -> None:
        """Block until the server has shut down (the join polls, so signal handlers still run)."""
        while self._thread.is_alive():
            self._thread.join(0.2)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask uvicorn to exit and wait for the thread."""
        self.server.should_exit = True
        self._thread.join(timeout_s)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
