"""The one Definitions object: assets, checks, jobs, sensors, schedules and resources."""

from __future__ import annotations

from dagster import Definitions

from memory_pipeline.resources import build_resources
from memory_pipeline.settings import load_settings

# Invalid configuration stops the code location from loading, with a message naming the variable.
settings = load_settings()

defs = Definitions(
    resources=build_resources(settings),
)
