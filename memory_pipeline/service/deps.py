"""Dependencies of the routes: the search opened in the app's lifespan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.settings import Settings


def get_search(request: Request) -> MemorySearch:
    return request.app.state.search


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


SearchDep = Annotated[MemorySearch, Depends(get_search)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
