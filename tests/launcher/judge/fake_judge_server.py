"""A stand-in for the judge's vLLM server, run as the served judge's command: one way of failing per mode.

    python fake_judge_server.py MODE PORT [TEXT]

- `serve`: answers GET /v1/models and /health with 200 (then fails as the test makes it: SIGSTOP, SIGKILL).
- `exit`: prints TEXT and exits with status 1 (vLLM rejecting a model it cannot load).
- `silent`: accepts connections on PORT and never answers.
- `fatal`: prints TEXT, then stays alive without listening (vLLM after a fatal line it does not exit on).
"""

from __future__ import annotations

import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Answers(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        known = self.path in ("/v1/models", "/health")
        body = b'{"data": [{"id": "judge"}]}' if known else b"{}"
        self.send_response(200 if known else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def main(mode: str, port: int, text: str) -> None:
    """Run `mode` on loopback `port`."""
    print(f"fake judge server: {mode} on port {port}", flush=True)
    if mode == "serve":
        ThreadingHTTPServer(("127.0.0.1", port), _Answers).serve_forever()
    elif mode == "exit":
        print(text, flush=True)
        sys.exit(1)
    elif mode == "silent":
        listener = socket.create_server(("127.0.0.1", port))
        held = []
        while True:
            connection, _ = listener.accept()
            held.append(connection)  # kept open, never read or answered
    elif mode == "fatal":
        print(text, flush=True)
        while True:
            time.sleep(60)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
