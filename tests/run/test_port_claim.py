"""Ports claimed on the host: outside the ephemeral range, skipped while another process holds or listens on them.

The claims are real flock-ed files in a test folder and real sockets; the other claimer is a real process.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from medical_team.run.port_claim import (
    FIRST_PORT,
    NoPortLeft,
    claim_port,
    claimable_ports,
    first_ephemeral_port,
    hold_port,
)

CLAIM_AND_HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from medical_team.run.port_claim import claim_port
    claimed = claim_port(range(int(sys.argv[1]), int(sys.argv[2])), Path(sys.argv[3]))
    print(claimed.port, flush=True)
    time.sleep(600)
    """
)


def test_the_ports_lie_above_rays_worker_ports_and_below_the_ephemeral_range(tmp_path: Path) -> None:
    ports = claimable_ports()
    assert ports.start == FIRST_PORT > 19999  # Ray's default `--max-worker-port`
    assert ports.stop == first_ephemeral_port() and len(ports) > 1000
    (tmp_path / "range").write_text("1024\t65535\n")
    assert first_ephemeral_port(tmp_path / "range") == 1024
    assert first_ephemeral_port(tmp_path / "missing") == 32768


def test_a_port_another_process_holds_is_skipped_until_that_process_ends(tmp_path: Path) -> None:
    candidates = claimable_ports()
    other = subprocess.Popen(
        [sys.executable, "-c", CLAIM_AND_HOLD, str(candidates.start), str(candidates.stop), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout is not None
        held = int(other.stdout.readline())
        mine = claim_port(range(held, candidates.stop), tmp_path)
        assert mine is not None and mine.port > held
        mine.release()
    finally:
        other.kill()
        other.wait()
    again = claim_port(range(held, held + 1), tmp_path)  # the lock went with its process
    assert again is not None and again.port == held
    again.release()


def test_a_port_a_socket_listens_on_is_skipped(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert claim_port(range(port, port + 1), tmp_path) is None


def test_ports_held_by_one_process_differ_and_stay_held(tmp_path: Path) -> None:
    candidates = claimable_ports()
    first = hold_port("a judge server", candidates, tmp_path)
    second = hold_port("a judge server", candidates, tmp_path)
    assert first != second
    assert claim_port(range(first, first + 1), tmp_path) is None  # still this process's
    assert claim_port(range(second, second + 1), tmp_path) is None


def test_no_port_left_names_the_purpose_and_the_range(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(NoPortLeft, match=rf"no free port for SFT's process group in {port}-{port} .*{tmp_path}"):
            hold_port("SFT's process group", range(port, port + 1), tmp_path)
