"""Run the judge app under uvicorn: in the foreground (the CLI) or on a background thread (tests, embedding)."""

from __future__ import annotations

import threading
import time
from types import TracebackType
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


def serve_forever(app: FastAPI, host: str, port: int) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn handles both and shuts down gracefully)."""
    uvicorn.Server(uvicorn_config(app, host, port)).run()


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
        self._thread = threading.Thread(target=self.server.run, name="judge-server", daemon=True)

    @property
    def port(self) -> int:
        """The port the server listens on (known once started)."""
        return self.server.servers[0].sockets[0].getsockname()[1]

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
                raise RuntimeError(f"judge server did not start on {self.host} within {timeout_s} s")
            time.sleep(0.01)
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask uvicorn to exit and wait for the thread."""
        self.server.should_exit = True
        self._thread.join(timeout_s)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
