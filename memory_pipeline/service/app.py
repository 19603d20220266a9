"""The app: the JSON API, the memory browser's pages, the MCP server at /mcp, one set of search clients opened
for the app's life.

Writes are authenticated without a secret in any page: API clients (the pi extension, MCP over HTTP, scripts)
send the token of `<state>/service-token` in a header; a browser logs in once through a one-time link
(`serve` prints it; `<state>/service-login` holds the current one, owner-only), which sets an HTTP-only,
SameSite=Strict session cookie. A local process that reads a page finds no credential in it."""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.middleware.trustedhost import TrustedHostMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from memory_pipeline.fresh.queue import FreshIngest
from memory_pipeline.fresh.run import fresh_ingest
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.open import DOWN, open_search, unavailable
from memory_pipeline.service.deps import TOKEN_HEADER, mark_person
from memory_pipeline.service.mcp_server import build_mcp
from memory_pipeline.service.routes import api, recall, review
from memory_pipeline.service.routes import forget as forget_routes
from memory_pipeline.service.web import excluded as excluded_page
from memory_pipeline.service.web import failed
from memory_pipeline.service.web import routes as web
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import Settings
from memory_pipeline.stores.injections import open_ledger
from memory_pipeline.stores.memory_store import open_store

SearchFactory = Callable[[Settings], AbstractContextManager[MemorySearch]]
IngestFactory = Callable[[Settings], FreshIngest]
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SESSION_COOKIE = "memory_session"


def new_login_code(settings: Settings) -> str:
    """A fresh one-time login code, written owner-only to `service_login_path` (replacing the last one)."""
    code = secrets.token_urlsafe(24)
    path = settings.service_login_path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    partial.touch(mode=0o600)
    partial.chmod(0o600)
    partial.write_text(code + "\n")
    partial.replace(path)
    return code


def current_login_code(settings: Settings) -> str:
    """The one-time login code waiting in `service_login_path` ("" when there is none)."""
    path = settings.service_login_path
    return path.read_text().strip() if path.exists() else ""


def login_link(settings: Settings, port: int) -> str:
    """The link `serve` prints: the current one-time code (made when there is none)."""
    code = current_login_code(settings) or new_login_code(settings)
    return f"http://127.0.0.1:{port}/login?code={code}"


LOCAL_ORIGIN = re.compile(r"^https?://(127\.0\.0\.1|localhost)(:\d+)?$")


def create_app(
    settings: Settings, open_search_for: SearchFactory = open_search, ingest_for: IngestFactory = fresh_ingest
) -> FastAPI:
    """The service for these settings; `open_search_for` and `ingest_for` let a test give it another search and
    another way to run a day."""
    mcp = build_mcp(
        lambda: app.state.search,
        lambda: app.state.redactor,
        workspace=settings.memory_workspace,
        settings=settings,
        get_store=lambda: app.state.store,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with open_search_for(settings) as search, open_store(settings) as store:
            app.state.search, app.state.store, app.state.settings = search, store, settings
            app.state.redactor = Redactor.with_patterns(settings.redact_extra_patterns)
            app.state.ledger = open_ledger(settings, app.state.redactor)
            app.state.fresh = ingest_for(settings)
            try:
                async with mcp.session_manager.run():
                    yield
            finally:
                app.state.fresh.close()

    app = FastAPI(
        title="memory_pipeline",
        summary="Search, timeline, detail and briefing over what earlier agent sessions left behind.",
        lifespan=lifespan,
    )
    # Only local names: a web page that rebinds its own host name to 127.0.0.1 is refused.
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost"])

    token = settings.service_token()
    # The browser's session: made at start, known only to this process and the cookie of a logged-in browser.
    session = secrets.token_urlsafe(32)
    if not settings.service_login_path.exists():
        new_login_code(settings)

    @app.middleware("http")
    async def local_writes_only(request: Request, call_next: Callable) -> Response:
        # A browser names the page that sends a request: a write from any other site is refused.
        origin = request.headers.get("origin")
        if request.method not in SAFE_METHODS and origin and not LOCAL_ORIGIN.match(origin):
            return failed.refusal(request, f"a write from {origin} is refused")
        # Every write carries the token this service made (API clients, MCP) or the session cookie of a browser
        # that logged in with the one-time link: a local process of another user, or a page that got past the
        # checks above, cannot change memory.
        sent = request.headers.get(TOKEN_HEADER, "")
        cookie = request.cookies.get(SESSION_COOKIE, "")
        by_person = secrets.compare_digest(cookie.encode(), session.encode())
        if by_person:
            mark_person(request)  # what it writes is the person's (a note's author); a token is an agent's
        if request.method not in SAFE_METHODS and not (
            secrets.compare_digest(sent.encode(), token.encode()) or by_person
        ):
            detail = (
                f"a write needs the {TOKEN_HEADER} header (the token in {settings.service_token_path}), or a "
                f"browser logged in with the one-time link `memory-pipeline serve` printed "
                f"(the current one: {settings.service_login_path})"
            )
            login = (
                f"this browser is not logged in: open the one-time link `memory-pipeline serve` printed (the current "
                f"one is in `{settings.service_login_path}`), then try again"
            )
            return failed.refusal(request, detail, login)
        return await call_next(request)

    @app.get("/login", include_in_schema=False)
    def login(code: str = "") -> Response:
        """The one-time link: sets the browser's session cookie, and makes the next link."""
        current = current_login_code(settings)
        if not (code and current and secrets.compare_digest(code.encode(), current.encode())):
            return HTMLResponse(
                "<p>This login link was used already or is wrong. The current one is in "
                f"<code>{settings.service_login_path}</code>.</p>",
                status_code=403,
            )
        new_login_code(settings)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="strict", path="/")
        return response

    app.include_router(api.router)
    app.include_router(forget_routes.router)
    app.include_router(review.router)
    app.include_router(recall.router)
    app.include_router(recall.pages)
    app.include_router(web.router)
    app.include_router(excluded_page.router)
    app.mount("/static", StaticFiles(directory=Path(web.__file__).parent / "static"), name="static")

    def server_down(request: Request, exc: Exception) -> Response:
        """A server the answer needs is down: which, and the command that starts it; 503, as JSON for the API
        and as a page for a browser. Any other failure stays a 500."""
        reason = unavailable(exc, settings)
        if reason is None:
            raise exc
        if failed.from_a_page(request):  # a page's write or poll: a fragment for its alert region
            return failed.failed_fragment(request, 503, reason)
        if request.url.path.startswith("/api/") or "text/html" not in request.headers.get("accept", ""):
            return JSONResponse({"detail": reason}, status_code=503)
        return web.down_page(request, settings, reason)

    failed.install(app)
    for failure in DOWN:
        app.add_exception_handler(failure, server_down)

    @app.get("/health", tags=["service"])
    def health() -> dict[str, str]:
        return {"status": "ok", "memory": settings.memory_id}

    app.mount("/", mcp.streamable_http_app(streamable_http_path="/mcp"))
    return app
