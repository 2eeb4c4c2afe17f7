"""The OpenAPI document matches what the server answers: schemathesis generates requests
from it (bounded: a fixed number of derandomised examples per operation) against a real
server, and checks status codes, content types, headers and bodies against the document."""

from __future__ import annotations

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import positive_data_acceptance

from pocketcli.serve.limits import Limits, ServeSettings
from tests.support.servehelp import serving

# Short texts: each generated speech takes a moment on the tiny pack.
SETTINGS = ServeSettings(limits=Limits(max_chars=60, max_queue=8, request_seconds=120))
EXAMPLES = 8  # per operation
# Not checked: "every schema-valid request is accepted". A document cannot say which voice
# names this server has or which bytes are a readable recording; those get 400 as OpenAI's
# API does. Every status, content type, header and body is checked against the document,
# and so is "schema-invalid requests are refused".


def _check(operation) -> str | None:
    """The first mismatch schemathesis finds on one operation, or None."""

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case) -> None:
        case.call_and_validate(timeout=120, excluded_checks=[positive_data_acceptance])

    try:
        run()
    except BaseException as exc:  # schemathesis' report (an exception group) of what did not match
        return f"{operation.label}: {exc}"
    return None


def test_the_server_answers_as_its_openapi_document_says() -> None:
    with serving(settings=SETTINGS) as (url, _):
        document = httpx.get(f"{url}/openapi.json", timeout=60).json()
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 10
        mismatches = [m for m in map(_check, operations) if m is not None]
    assert not mismatches, "\n\n".join(mismatches)
    # A status the server never gives is a mismatch too: FastAPI's 422 is answered 400.
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            statuses = set(operation["responses"])
            assert "422" not in statuses and {"400", "503"} <= statuses, (method, path)
