"""Dagster on PostgreSQL (`local up --postgres`): Debian's PostgreSQL started by the project on 127.0.0.1,
and `memory-pipeline backfill` keeping its runs, events and partitions there instead of SQLite.

The tests marked `dagster_storage` run a second time on PostgreSQL in `make test`; this one proves that the
storage really is PostgreSQL (and not a silent SQLite) and that the server is the project's own."""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import psycopg2
import pytest

from memory_pipeline.partitions import week_of
from memory_pipeline.settings import Settings, isolated_settings
from testkit.ingest_helpers import cli_env, copy_fixture, reset_days, stored_instance
from testkit.servers import private_runtime

DAY = "2024-10-07"


def test_backfill_keeps_its_runs_in_the_local_postgres(local_runtime: Settings, tmp_path: Path) -> None:
    runtime = private_runtime(tmp_path / "pg", local_runtime, postgres=True)
    begin = time.monotonic()
    rows = {r.name: r for r in runtime.up(["postgres"])}
    print(f"postgres set up in {time.monotonic() - begin:.1f}s")
    try:
        assert rows["postgres"].state == "started" and rows["postgres"].health == "ok"
        assert rows["postgres"].version.split(".")[0].isdigit()
        settings = isolated_settings(
            local_runtime,
            tmp_path,
            local_postgres=True,
            local_postgres_port=runtime.settings.local_postgres_port,
            local_postgres_password_file=runtime.settings.postgres_password_path,
        )
        url = settings.dagster_storage_url()
        assert url is not None and f":{runtime.settings.local_postgres_port}/dagster_" in url
        reset_days(settings, [DAY])
        copy_fixture("handwritten-kuato.v3.jsonl", settings.sessions_dir / "a.jsonl", "postgres-day", DAY)
        home = tmp_path / "dagster"
        env = cli_env(settings, DAGSTER_HOME=str(home))
        command = [sys.executable, "-m", "memory_pipeline", "backfill"]
        first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert first.returncode == 0 and "success" in first.stdout, first.stderr[-2000:]
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0 and "nothing to backfill" in again.stdout, again.stderr[-2000:]

        with closing(psycopg2.connect(url, connect_timeout=5)) as connection, connection.cursor() as cursor:
            cursor.execute("SELECT status FROM runs")
            assert [status for (status,) in cursor.fetchall()] == ["SUCCESS"]
            cursor.execute("SELECT partitions_def_name, partition FROM dynamic_partitions")
            # The day, and its ISO week for the friction report (keyed by its Monday).
            assert sorted(cursor.fetchall()) == [("session_days", DAY), ("session_weeks", week_of(DAY))]
        assert not list(home.rglob("*.db")), "a SQLite storage was made beside PostgreSQL"
        instance_yaml, password = (home / "dagster.yaml").read_text(), settings.postgres_password_path.read_text()
        assert "postgres:" in instance_yaml and password.strip() not in instance_yaml, "the password is in the env"
        with stored_instance(settings, home) as instance:
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            assert [run.status.value for run in instance.get_runs()] == ["SUCCESS"]
    finally:
        runtime.down()


def test_the_local_postgres_listens_on_loopback_only_and_wants_its_password(
    local_runtime: Settings, tmp_path: Path
) -> None:
    runtime = private_runtime(tmp_path, local_runtime, postgres=True)
    runtime.up(["postgres"])
    try:
        port = runtime.settings.local_postgres_port
        with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
            psycopg2.connect(host="127.0.0.1", port=port, user="memory_pipeline", password="wrong", dbname="postgres")
        with (
            closing(
                psycopg2.connect(
                    host="127.0.0.1",
                    port=port,
                    user="memory_pipeline",
                    password=runtime.settings.postgres_password_path.read_text().strip(),
                    dbname="postgres",
                )
            ) as connection,
            connection.cursor() as cursor,
        ):
            cursor.execute("SHOW listen_addresses")
            assert cursor.fetchone() == ("127.0.0.1",)
            cursor.execute("SHOW unix_socket_directories")
            assert cursor.fetchone() == ("",)
        assert oct(runtime.settings.postgres_password_path.stat().st_mode & 0o777) == "0o600"
    finally:
        assert runtime.down() == ["postgres"]
