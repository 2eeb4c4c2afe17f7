"""API errors: one exception type, OpenAI's error body, and the handlers that answer them.

Every 4xx/5xx the app writes has OpenAI's shape, ``{"error": {"message", "type",
"param", "code"}}`` (plus pocket-tts's ``detail``): raised ``ApiError``, body and
form parsing errors, unknown routes and methods, and anything unexpected (a 500
that names neither the exception nor a path; the log has both).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse


class ApiError(Exception):
    """An answer other than success: ``status``, a message for the client, a stable ``code``."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str,
        headers: dict[str, str] | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers
        self.param = param


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str


class ErrorResponse(BaseModel):
    """OpenAI's error body (``detail``: the same message, as pocket-tts's clients read it)."""

    error: ErrorDetail
    detail: str


def _documented(description: str) -> dict[str, Any]:
    return {"model": ErrorResponse, "description": description}


# What any route may answer besides success (each router is included with these).
RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _documented("Bad request: body, fields or upload"),
    401: _documented("Missing or wrong API key (when the server has one)"),
    404: _documented("No such model, voice or endpoint"),
    408: _documented("The request body did not arrive in time"),
    413: _documented("Body or upload over the server's limit"),
    500: _documented("Internal error, or a damaged voice file of the server"),
    503: _documented("Loading, busy (Retry-After), shutting down, or past the request's limit"),
}


def without_422(document: dict[str, Any]) -> dict[str, Any]:
    """FastAPI documents 422 for validation errors; this server answers them 400."""
    for methods in document.get("paths", {}).values():
        for operation in methods.values():
            operation.get("responses", {}).pop("422", None)
    schemas = document.get("components", {}).get("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return document


def error_body(
    message: str, code: str, kind: str = "invalid_request_error", param: str | None = None
) -> dict:
    """OpenAI's error shape; ``detail`` too, as pocket-tts's (FastAPI's) clients read it."""
    return {
        "error": {"message": message, "type": kind, "param": param, "code": code},
        "detail": message,
    }


def kind_of(status: int) -> str:
    return "server_error" if status >= 500 else "invalid_request_error"


def as_api_error(exc: BaseException, what: str) -> ApiError:
    """A library or scheduler exception as the client should see it (``what``: the
    request part it came from, for the code: text, voice, recording)."""
    from pocketcli.errors import FieldError, UserError
    from pocketcli.frontends import logs
    from pocketcli.frontends.admission import Cancelled

    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, Cancelled):
        return ApiError(503, f"stopped: {exc.reason}", exc.reason)
    if isinstance(exc, UserError):  # any library error: its status, its field as ``param``
        param = exc.field if isinstance(exc, FieldError) else None
        return ApiError(exc.http_status, redact_paths(str(exc)), f"invalid_{what}", param=param)
    logs.logger().error("internal error", exc_info=exc)
    return ApiError(500, "internal error; see the server's log", "internal")


# An absolute path of this machine (not a URL's path: no scheme or host before it).
_PATH = re.compile(r"(?<![\w:/.~-])/(?:[^\s'\"/:]+/)+[^\s'\",;:)]*")


def redact_paths(message: str) -> str:
    """A library message with this machine's absolute paths taken out (clients never
    learn where the server keeps its files)."""
    return _PATH.sub("<server file>", message)


def _validation_message(errors: list) -> tuple[str, str | None]:
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    if first.get("type") == "json_invalid":
        return f"the body is not valid JSON (at character {where or 0})", None
    if where:
        return f"{where}: {first.get('msg', 'invalid request')}", where
    # the body as a whole: a form, a list, a string...
    return "the body must be a JSON object (Content-Type: application/json)", None


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}


def install(app: FastAPI) -> None:
    """Registers the handlers that give every error OpenAI's shape."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        body = error_body(exc.message, exc.code, kind_of(exc.status), exc.param)
        return JSONResponse(body, exc.status, exc.headers)

    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, param = _validation_message(list(exc.errors()))
        return JSONResponse(error_body(message, "invalid_request", param=param), 400)

    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        # Starlette's own: no route (404), wrong method (405), form limits (400)...
        status = exc.status_code
        if status == 404:
            message = f"no such endpoint: {request.method} {request.url.path[:200]}"
        elif status == 405:
            message = f"{request.method} is not allowed on {request.url.path[:200]}"
        else:
            message = str(exc.detail)
        code = _HTTP_CODES.get(status, "invalid_request")
        headers = dict(exc.headers or {})
        return JSONResponse(error_body(message, code, kind_of(status)), status, headers)

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        error = as_api_error(exc, "request")
        return JSONResponse(error_body(error.message, error.code, kind_of(error.status)), 500)

    app.add_exception_handler(ApiError, api_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, invalid)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, unexpected)
