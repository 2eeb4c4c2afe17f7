"""The server's bounded queue on its own: what counts against ``--max-queue``."""

from __future__ import annotations

import asyncio
import threading

from pocketcli.frontends.admission import END, Admission, Busy, ModelJob


def test_a_job_about_to_start_is_not_counted_twice() -> None:
    """Between two jobs the worker has freed its slot but not yet taken the next job:
    one job waiting then is the one about to run, so with --max-queue 1 a new request
    still fits (1 running + 1 waiting). The load test saw 503s with 2 clients."""

    async def main() -> None:
        between = threading.Event()  # the worker is between the first and second job
        release = threading.Event()
        first_done = threading.Event()

        def on_change() -> None:
            # Only the worker is held (the test's own submit calls this too).
            worker = threading.current_thread().name.startswith("pockettts-model")
            if worker and first_done.is_set() and not release.is_set():
                between.set()
                release.wait(60)

        scheduler = Admission(max_queue=1, on_change=on_change)
        try:

            def first():
                yield 1
                first_done.set()

            a = ModelJob(first, deadline=float("inf"))
            scheduler.submit(a)
            b = ModelJob(lambda: iter([2]), deadline=float("inf"))
            scheduler.submit(b)  # waits: a may still run
            assert await asyncio.to_thread(between.wait, 60)
            assert scheduler.active == 0 and scheduler.waiting == 1
            c = ModelJob(lambda: iter([3]), deadline=float("inf"))
            try:
                scheduler.submit(c)  # b is about to run: c is the only one waiting
            except Busy:
                raise AssertionError("a free slot was refused with 503") from None
            finally:
                release.set()
            for job in (a, b, c):
                kinds = [(await job.next(60))[0] for _ in range(2)]
                assert kinds[-1] == END
            d = ModelJob(lambda: iter([4]), deadline=float("inf"))
            scheduler.submit(d)
            assert (await d.next(60))[0] != END
        finally:
            release.set()
            scheduler.close(5)

    asyncio.run(main())


def test_the_bound_still_holds() -> None:
    async def main() -> None:
        gate = threading.Event()

        def held():
            gate.wait(60)
            yield 1

        scheduler = Admission(max_queue=1)
        try:
            scheduler.submit(ModelJob(held, deadline=float("inf")))
            while scheduler.active == 0:
                await asyncio.sleep(0.01)
            scheduler.submit(ModelJob(held, deadline=float("inf")))  # 1 running, 1 waiting
            try:
                scheduler.submit(ModelJob(held, deadline=float("inf")))
            except Busy as full:
                assert full.retry_after >= 1
            else:
                raise AssertionError("a third job fitted a queue of one")
        finally:
            gate.set()
            scheduler.close(5)

    asyncio.run(main())
