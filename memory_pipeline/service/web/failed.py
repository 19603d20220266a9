"""What a page shows when one of its writes fails: the service's refusal (no login, another site, a memory that is
gone, a file it will not overwrite), a server it needs that is down, or its own crash. htmx swaps nothing on an
error status, so the page's script (`static/browser.js`) puts the answer in the page's alert region; for a request
htmx sent (its `HX-Request` header) the answer is a short fragment of escaped HTML, marked by `FAILED_HEADER`:
what was not done, why in a sentence, whether anything changed. Never a stack trace (a crash says its kind and
points at the log) and never a secret (the reason is redacted like session text). API clients keep their JSON.
"""

from __future__ import annotations

import re

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from memory_pipeline.service.web.routes import TEMPLATES
from memory_pipeline.sessions.redact import Redactor

FAILED_HEADER = "X-Memory-Failed"
# What each page write failed to do, by its path's last part (/m/{id}/forget, /excluded/purge, /review/decide).
NOT_DONE = {
    "edit": "Not saved",
    "forget": "Not forgotten",
    "forget-turn": "Not forgotten",
    "undo-forget": "Not brought back",
    "decide": "Not done",
    "add": "Not excluded",
    "remove": "Not removed",
    "purge": "Nothing removed",
    "recent": "The newest memories could not be read",
}
MAX_SHOWN = 400  # a reason is a sentence or two; anything longer is cut, not shown whole


def from_a_page(request: Request) -> bool:
    """Sent by htmx from one of the pages (not an API client, not a page load)."""
    return request.headers.get("HX-Request") == "true"


def _afterwards(status: int) -> str:
    if status == 403:
        return "Nothing was changed."
    if status < 500:
        return "Nothing was changed: reload the page to see what holds now."
    return "Reload the page once it works again to see what holds."


def failed_fragment(request: Request, status: int, reason: str) -> HTMLResponse:
    """The fragment a page shows for a failed request: what was not done, the reason (redacted, cut short),
    what to do."""
    redactor = getattr(request.app.state, "redactor", None) or Redactor()
    shown = _redacted(redactor, reason.strip(), [v for v in request.path_params.values() if isinstance(v, str) and v])
    if len(shown) > MAX_SHOWN:
        shown = shown[: MAX_SHOWN - 1] + "…"
    shown = shown[:1].upper() + shown[1:] + ("" if shown[-1:] in ".…?!" else ".")
    action = request.url.path.rstrip("/").rsplit("/", 1)[-1]
    response = TEMPLATES.TemplateResponse(
        request,
        "parts/failed.html",
        {
            "what": NOT_DONE.get(action, "Not done"),
            # A command the reason names in backticks (`memory-pipeline local up`) is shown as code: every odd part.
            "parts": re.split(r"`([^`]+)`", shown),
            "afterwards": _afterwards(status),
        },
        status_code=status,
    )
    response.headers[FAILED_HEADER] = "1"
    return response


def _redacted(redactor: Redactor, reason: str, kept: list[str]) -> str:
    """`reason` redacted, but for the values of the page's own path (a memory id such as `note-e7154eddadedea64e69b`
    looks like a machine token to the redactor, and the page holds it already: its link)."""
    if not kept:
        return redactor.redact(reason)
    pieces = re.split("(" + "|".join(re.escape(k) for k in sorted(kept, key=len, reverse=True)) + ")", reason)
    return "".join(piece if piece in kept else redactor.redact(piece) for piece in pieces)


def refusal(request: Request, reason: str, for_a_page: str = "", status: int = 403) -> Response:
    """The app's own refusal of a request (another site's write, a write without a login): a fragment for a
    page (`for_a_page`, its words for a person at a browser, when given), JSON for an API client."""
    if from_a_page(request):
        return failed_fragment(request, status, for_a_page or reason)
    return JSONResponse({"detail": reason}, status_code=status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if from_a_page(request) and exc.status_code >= 400:
        reason = exc.detail if isinstance(exc.detail, str) else "the service refused the request"
        return failed_fragment(request, exc.status_code, reason)
    return await http_exception_handler(request, exc)


async def _invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    if from_a_page(request):
        # Which field and why, never the value sent (it may be anything the person typed).
        said = "; ".join(f"{e['loc'][-1]}: {e['msg']}" for e in exc.errors()[:3])
        return failed_fragment(request, 422, f"the form sent is not one this action takes ({said})")
    return await request_validation_exception_handler(request, exc)


async def _crashed(request: Request, exc: Exception) -> Response:
    # The traceback goes to the service's log (Starlette logs it after this answer); the page gets its kind only.
    if from_a_page(request):
        reason = f"the memory service failed ({type(exc).__name__}); its log says why"
        return failed_fragment(request, 500, reason)
    return PlainTextResponse("Internal Server Error", status_code=500)


def install(app: FastAPI) -> None:
    """The app's answers to failures, for pages as fragments (API clients' answers are unchanged)."""
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(Exception, _crashed)
