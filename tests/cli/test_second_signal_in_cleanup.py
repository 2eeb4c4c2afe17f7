"""A second Ctrl-C (or SIGTERM, or a third) while the first one's clean-up runs is taken
in, never raised inside that clean-up: the clean-up ends (its files removed, the output
untouched) and the process ends with the first signal's status. A script on pocketcli's
own handlers, the signals sent from inside its clean-up so they land there for sure."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.support.waiting import DEADLINE

CODE = """
import os, signal, sys, time
from pocketcli.interrupts import install_signal_handlers
install_signal_handlers()
try:
    print("ready", flush=True)
    time.sleep(60)
finally:
    for name in sys.argv[1:]:  # more signals, each while the clean-up runs
        os.kill(os.getpid(), getattr(signal, name))
        for _ in range(10):
            time.sleep(0.01)  # the handler runs at the next bytecode: well within this
    print("cleaned up", flush=True)
"""


@pytest.mark.parametrize("more", [["SIGINT"], ["SIGTERM"], ["SIGINT", "SIGINT", "SIGTERM"]])
def test_signals_during_clean_up_do_not_interrupt_it(more) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CODE, *more],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("still running after its clean-up")
    assert out == "cleaned up\n", err
    assert err.rstrip().endswith("\nKeyboardInterrupt"), err  # the first one's, unwound
    assert err.count("Traceback") == 1 and "During handling" not in err, err
