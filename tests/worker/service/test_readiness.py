"""A ready file means ready only while the process it names is alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.workers import PROJECT_ROOT
from worker.service.readiness import is_ready, write_ready

_WRITE_AND_WAIT = (
    "import sys, pathlib\n"
    "from worker.service.readiness import write_ready\n"
    "write_ready(pathlib.Path(sys.argv[1]), 'svc')\n"
    "print('written', flush=True)\n"
    "sys.stdin.read()\n"
)


def ready_command(path: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "worker.cli.main", "ready", str(path)],
        env=env,
        capture_output=True,
        check=False,
        timeout=60,
    ).returncode


def test_a_killed_services_file_is_not_ready(tmp_path: Path) -> None:
    """Ready while the writer lives; not ready once it is SIGKILLed, its file still there."""
    ready = tmp_path / "service.ready"
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    with subprocess.Popen(
        [sys.executable, "-c", _WRITE_AND_WAIT, str(ready)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        assert process.stdout.readline() == b"written\n"
        assert is_ready(ready)
        assert ready_command(ready) == 0
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert ready.exists()
    assert not is_ready(ready)
    assert ready_command(ready) == 4


def test_a_missing_or_malformed_file_is_not_ready(tmp_path: Path) -> None:
    """No file, or one naming no process, is not ready; this process's own file is."""
    assert not is_ready(tmp_path / "absent")
    (tmp_path / "old").write_text("svc\n")
    assert not is_ready(tmp_path / "old")
    write_ready(tmp_path / "mine", "svc")
    assert is_ready(tmp_path / "mine")
