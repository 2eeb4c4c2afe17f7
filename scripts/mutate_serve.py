"""Mutation run of the server: each listed mistake is applied to a scratch copy of the
package, and the tests that should catch it are run there; every one must fail.

    python scripts/mutate_serve.py            # all mistakes
    python scripts/mutate_serve.py -k header  # those whose name contains "header"

Prints one line per mistake (caught / SURVIVED) and exits 1 if any survived.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mistake:
    name: str
    path: str  # relative to the repository
    old: str
    new: str
    tests: tuple[str, ...]  # pytest node ids or "file::-k expr"


MISTAKES = (
    Mistake(
        "a job cancelled while queued stays queued",
        "pocketcli/serve/scheduler.py",
        "            job._on_cancel = self._withdraw\n",
        "",
        ("tests/test_serve.py::test_a_request_that_leaves_while_queued_leaves_the_queue",),
    ),
    Mistake(
        "a stream whose client left is not cancelled",
        "pocketcli/serve/streaming.py",
        "                self.job.cancel(self.outcome)",
        "                pass",
        ("tests/test_serve.py::test_disconnect_stops_generation_within_one_frame",),
    ),
    Mistake(
        "metrics labelled by the client's path",
        "pocketcli/serve/metrics.py",
        'endpoint = getattr(route, "path", None) or UNMATCHED',
        'endpoint = scope["path"]',
        ("tests/test_serve_bounds.py::test_metric_labels_are_route_templates_a_fixed_set",),
    ),
    Mistake(
        "no header deadline",
        "pocketcli/serve/server.py",
        "self.loop.call_later(self.header_seconds, self._headers_late)",
        "None",
        ("tests/test_serve_bounds.py::test_idle_and_slow_header_connections_are_closed",),
    ),
    Mistake(
        "no body deadline",
        "pocketcli/serve/limits.py",
        "self.deadline = time.monotonic() + limits.body_seconds",
        "self.deadline = time.monotonic() + 1e6",
        (
            "tests/test_serve_bounds.py::test_a_body_that_does_not_arrive_in_time_is_408_in_openai_shape",
        ),
    ),
    Mistake(
        "a cut multipart body is parsed as if whole",
        "pocketcli/serve/limits.py",
        "if self.close_delimiter is not None and not self.closed_seen:",
        "if False:",
        ("tests/test_serve_bounds.py::test_a_cut_multipart_upload_is_400_not_the_default_voice",),
    ),
    Mistake(
        "no connection bound",
        "pocketcli/serve/server.py",
        "if len(self.connections) > self.max_connections:",
        "if False:",
        ("tests/test_serve_bounds.py::test_connections_over_the_limit_get_503_in_openai_shape",),
    ),
    Mistake(
        "decoded size not bounded",
        "pocketcli/audio/read.py",
        "    if max_samples is None or frames * channels <= max_samples:",
        "    if True:",
        (
            "tests/test_serve_bounds.py::"
            "test_an_upload_that_would_decode_to_too_many_samples_is_refused_from_its_header",
        ),
    ),
    Mistake(
        "uvicorn's caught signals re-raised (error: terminated)",
        "pocketcli/serve/server.py",
        "            self._captured_signals.clear()\n",
        "",
        ("tests/test_serve_cli.py::test_sigterm_lets_an_inflight_request_finish",),
    ),
    Mistake(
        "404 in FastAPI's shape",
        "pocketcli/serve/apierrors.py",
        "    app.add_exception_handler(HTTPException, http_error)  # type: ignore[arg-type]\n",
        "",
        ("tests/test_serve_errors.py::test_every_error_has_openai_shape",),
    ),
    Mistake(
        "the document keeps FastAPI's 422",
        "pocketcli/serve/app.py",
        "document = apierrors.without_422(build())",
        "document = build()",
        ("tests/test_serve_openapi.py",),
    ),
    Mistake(
        "a cache hit reports 0 s",
        "pocketcli/serve/routes/voices.py",
        "return Clone(voice_id, known.state, known.seconds, True, [])",
        "return Clone(voice_id, known.state, 0.0, True, [])",
        (
            "tests/test_serve_errors.py::"
            "test_cloned_voices_are_listed_and_a_cache_hit_keeps_its_seconds",
        ),
    ),
    Mistake(
        "cloned voices not listed",
        "pocketcli/serve/voices.py",
        'out += [{"id": name, "object": "voice", "source": "cloned"} for name in cloned]',
        "pass",
        (
            "tests/test_serve_errors.py::"
            "test_cloned_voices_are_listed_and_a_cache_hit_keeps_its_seconds",
        ),
    ),
    Mistake(
        "response_format case-sensitive",
        "pocketcli/serve/fields.py",
        "fmt = (given or default).strip().lower()",
        "fmt = given or default",
        ("tests/test_serve_errors.py::test_response_format_in_any_case",),
    ),
    Mistake(
        "a damaged folder voice is a 500 naming RecursionError",
        "pocketcli/serve/voices.py",
        "        except Exception as exc:  # any damage, even one Python itself chokes on",
        "        except OSError as exc:",
        ("tests/test_serve_errors.py::test_a_damaged_folder_voice_is_a_clean_error",),
    ),
    Mistake(
        "no HEAD /healthz",
        "pocketcli/serve/routes/health.py",
        '@router.head("/healthz", operation_id="healthz_head")\n',
        "",
        ("tests/test_serve_errors.py::test_head_healthz_is_200",),
    ),
)


def scratch_copy() -> Path:
    scratch = Path(tempfile.mkdtemp(prefix="mutate-serve-"))
    for part in ("pocketcli", "tests"):
        shutil.copytree(ROOT / part, scratch / part, ignore=shutil.ignore_patterns("__pycache__"))
    return scratch


def run(mistake: Mistake) -> bool:
    """True when the tests caught the mistake (they failed)."""
    scratch = scratch_copy()
    try:
        target = scratch / mistake.path
        text = target.read_text()
        if text.count(mistake.old) != 1:
            raise SystemExit(f"{mistake.name}: the line to change is not in {mistake.path} once")
        target.write_text(text.replace(mistake.old, mistake.new))
        env = dict(os.environ, PYTHONPATH=str(scratch))  # the CLI's children import it too
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mistake.tests],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        return proc.returncode != 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only mistakes whose name contains this")
    args = parser.parse_args()
    chosen = [m for m in MISTAKES if args.k in m.name]
    survived = 0
    for mistake in chosen:
        caught = run(mistake)
        survived += not caught
        print(f"{'caught  ' if caught else 'SURVIVED'} {mistake.name}", flush=True)
    print(f"{len(chosen) - survived} of {len(chosen)} mistakes caught")
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main())
