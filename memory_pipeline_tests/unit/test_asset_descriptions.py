"""Every asset in the Dagster UI says what it is and when it runs (its description): "Never materialized" on a
weekly asset is then no mystery."""

from __future__ import annotations

from dagster import AssetKey

from memory_pipeline.definitions import defs
from memory_pipeline.jobs import LLM_FREE_ASSETS


def test_every_asset_says_what_it_is_and_when_it_runs() -> None:
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        description = graph.get(key).description or ""
        what, _, when = description.partition("\n\nWhen it runs: ")
        assert len(what) > 80 and when, key.to_user_string()
        if key in LLM_FREE_ASSETS:  # runs with or without the chat model: it must not say it is left out
            assert "leave it out" not in when, key.to_user_string()
        elif key != AssetKey("friction_report"):
            assert "MEMORY_PIPELINE_NO_LLM" in when, key.to_user_string()


def test_the_weekly_report_says_when_and_why_it_may_never_have_run() -> None:
    when = defs.resolve_asset_graph().get(AssetKey("friction_report")).description.split("When it runs: ")[1]
    schedule = defs.resolve_schedule_def("weekly_friction_schedule")
    assert schedule.cron_schedule == "0 2 * * 1" and "Mondays at 02:00 UTC" in when
    assert "Never materialized" in when and schedule.name in when
