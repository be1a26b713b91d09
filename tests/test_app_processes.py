"""The applications of the apps tests (tests/support/apps.py) start as from an
operator's terminal, whatever signals the test run itself was started ignoring."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.support.apps import AppProcess

SLEEPER = ["python", "-c", "import time; print('up', flush=True); time.sleep(120)"]


def test_an_application_ends_on_sigint_in_a_run_started_with_sigint_ignored(
        tmp_path: Path) -> None:
    """A non-interactive shell's background job (``scripts/test > log &``) has SIGINT
    ignored, and so had every application: ``celery events --dump`` did not end on its
    SIGINT (Ctrl-C) in such suite runs."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as that shell leaves it
    try:
        app = AppProcess(SLEEPER, tmp_path / "sleeper.log", {})
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        app.wait_for("up")
        assert app.stop(signal.SIGINT) == -signal.SIGINT, app.log()  # KeyboardInterrupt
    finally:
        app.kill()
