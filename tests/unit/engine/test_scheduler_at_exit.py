"""A process that exits while its model's scheduler is still speaking exits quietly.

Seen in CI: ``tts --follow -o - | head -c 100`` exited 141 as it should, but the
scheduler thread printed a traceback. The reader had gone, the session was
cancelled, and the process began to exit while the scheduler was still ending that
stream: it handed the stream's end to its Mimi thread, a ``ThreadPoolExecutor``,
which refuses new work once the interpreter begins to exit.

Here the race is made certain, in a real process on the committed tiny pack: the
stream's noise source waits until the interpreter has begun to exit (the flag
``concurrent.futures`` sets then), and only then fails the stream.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import atexit, sys, threading
    import concurrent.futures.thread as executors

    import numpy as np

    from pocketcli import PocketTTS
    from pocketcli.engine.chunk import GenerationSettings

    tts = PocketTTS.open(runtime="onnx", model_dir=sys.argv[1])
    calls = 0
    exiting = threading.Event()

    def noise(size):
        global calls
        calls += 1
        if calls == 1:
            return np.zeros(size, np.float32)
        while not executors._shutdown:  # set as the interpreter begins to exit
            exiting.wait(0.005)
        raise RuntimeError("the stream failed while the process exited")

    text = "A long text, so that the stream is still going. " * 4
    handle = tts._scheduler.submit(tts.script(text), None, noise, GenerationSettings(-4.0))
    frames = iter(handle)
    next(frames)

    def report():  # runs before the scheduler's own exit hook (registered earlier)
        outcome = []

        def read():
            try:
                for _ in frames:
                    pass
                outcome.append("ended without the error")
            except RuntimeError as exc:
                outcome.append(f"heard: {exc}")

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        alive = lambda: any(t.name == "pockettts-scheduler" for t in threading.enumerate())
        while reader.is_alive() and alive():
            reader.join(0.01)
        reader.join(0.5)
        print(outcome[0] if outcome else "nothing heard: the scheduler thread died")

    atexit.register(report)
    """
)


def test_a_stream_that_ends_as_the_process_exits_is_heard_and_prints_nothing(pack_dir) -> None:
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(pack_dir)], capture_output=True, timeout=300
    )
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().strip() == "heard: the stream failed while the process exited"
    assert r.stderr == b"", r.stderr.decode()
