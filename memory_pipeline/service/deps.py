"""Dependencies of the routes: what the app's lifespan opened once (search clients, redactor, settings)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Depends, Request

from memory_pipeline.fresh.queue import FreshIngest
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import Settings
from memory_pipeline.stores.injections import InjectionLedger
from memory_pipeline.stores.memory_store import MemoryStore

# The header every write carries: the token the service made (`Settings.service_token`).
TOKEN_HEADER = "X-Memory-Token"
Author = Literal["agent", "person"]


def mark_person(request: Request) -> None:
    """The app's check found the browser session of the person who logged in with the one-time link: what
    this request writes is theirs."""
    request.state.person = True


def author_of(request: Request) -> Author:
    """Who writes: "person" only for the browser session a person logged in with; a token holder (the pi
    extension, MCP over HTTP, any script) is an agent whatever its request claims, since the token is on disk
    for every process of the user to read and a claim costs nothing."""
    return "person" if getattr(request.state, "person", False) else "agent"


def get_search(request: Request) -> MemorySearch:
    return request.app.state.search


def get_store(request: Request) -> MemoryStore:
    return request.app.state.store


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_redactor(request: Request) -> Redactor:
    return request.app.state.redactor


def get_ledger(request: Request) -> InjectionLedger:
    return request.app.state.ledger


def get_fresh(request: Request) -> FreshIngest:
    return request.app.state.fresh


SearchDep = Annotated[MemorySearch, Depends(get_search)]
AuthorDep = Annotated[Author, Depends(author_of)]
StoreDep = Annotated[MemoryStore, Depends(get_store)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
RedactorDep = Annotated[Redactor, Depends(get_redactor)]
FreshDep = Annotated[FreshIngest, Depends(get_fresh)]
LedgerDep = Annotated[InjectionLedger, Depends(get_ledger)]
