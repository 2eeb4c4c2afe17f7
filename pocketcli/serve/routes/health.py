"""Health, readiness, Prometheus metrics and the web page."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from pocketcli.frontends.encoding import available_formats
from pocketcli.serve.apierrors import redact_paths
from pocketcli.serve.metrics import CONTENT_TYPE
from pocketcli.serve.state import state_of

router = APIRouter()


@router.get("/healthz")
@router.head("/healthz", operation_id="healthz_head")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/health")  # pocket-tts serve's
@router.head("/health", operation_id="health_head")
async def health() -> dict[str, str]:
    return {"status": "healthy"}


_NOT_READY = {503: {"description": "The model is loading, or failed to load"}}


@router.get("/readyz", responses=_NOT_READY)
@router.head("/readyz", operation_id="readyz_head", responses=_NOT_READY)
async def readyz(request: Request) -> JSONResponse:
    state = state_of(request)
    if state.backend is None:
        status = "failed" if state.load_error else "loading"
        error = None if state.load_error is None else redact_paths(state.load_error)
        return JSONResponse({"status": status, "error": error}, 503)
    return JSONResponse(
        {
            "status": "ready",
            "voice": state.backend.default_voice_name,
            "sample_rate": state.backend.sample_rate,
            "formats": list(available_formats()),
            "words": state.backend.words_unavailable is None,  # "words": true is served
        }
    )


@router.get("/metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    state = state_of(request)
    state.update_gauges()
    return Response(state.metrics.render(), media_type=CONTENT_TYPE)


@router.get("/", response_class=HTMLResponse)
async def page() -> str:
    html = resources.files("pocketcli.serve").joinpath("static/index.html")
    return html.read_text(encoding="utf-8")
