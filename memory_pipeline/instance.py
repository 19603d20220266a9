"""The Dagster instance the CLI, the UI and the sensor share.

It lives in DAGSTER_HOME (default `<state>/dagster`) with the project's
`dagster.yaml`. Runs, events and schedules are kept in SQLite there, or in
PostgreSQL: the user's (DAGSTER_POSTGRES_URL) or the local one that
`memory-pipeline local up --postgres` runs, a database per state folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from memory_pipeline.local.process import RuntimeProblem
from memory_pipeline.settings import Settings

if TYPE_CHECKING:
    from dagster import DagsterInstance

PROJECT_DIR = Path(__file__).resolve().parents[1]
# The URL holds a password: Dagster reads it from the environment, never from the yaml file.
STORAGE_URL_VARIABLE = "MEMORY_PIPELINE_DAGSTER_PG_URL"


def instance_yaml(settings: Settings) -> str:
    """The instance's dagster.yaml: the project's, plus PostgreSQL storage when that is chosen."""
    text = (PROJECT_DIR / "dagster.yaml").read_text()
    if settings.dagster_storage_url() is None:
        return text
    return (
        f"{text}\n# Runs, events and schedules in PostgreSQL (its URL, password included, from the environment).\n"
        f"storage:\n  postgres:\n    postgres_url:\n      env: {STORAGE_URL_VARIABLE}\n"
    )


def prepare_dagster_home(settings: Settings) -> Path:
    """DAGSTER_HOME (made, with its dagster.yaml, and exported), and the PostgreSQL database when that is the
    storage; the folder."""
    home = Path(os.environ.get("DAGSTER_HOME") or settings.memory_pipeline_state_dir / "dagster")
    home.mkdir(parents=True, exist_ok=True)
    wanted, current = instance_yaml(settings), home / "dagster.yaml"
    if not current.exists() or current.read_text() != wanted:
        # Replaced whole, never written in place: another command may be reading it right now.
        partial = home / f".dagster.yaml.{os.getpid()}"
        partial.write_text(wanted)
        os.replace(partial, current)
    url = settings.dagster_storage_url()
    if url is not None:
        if settings.uses_local_postgres:
            ensure_database(url)
        os.environ[STORAGE_URL_VARIABLE] = sqlalchemy_url(url)
    else:
        os.environ.pop(STORAGE_URL_VARIABLE, None)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


@contextmanager
def open_instance(settings: Settings) -> Iterator[DagsterInstance]:
    """The shared instance (DAGSTER_HOME prepared), open for the block. The first use of an instance creates its
    SQLite storages: two processes doing it at once would both stamp the schema (Alembic then finds two heads),
    so that first touch is made one process at a time; later uses only open them."""
    from dagster import DagsterInstance

    from memory_pipeline.locks import exclusive
    from memory_pipeline.partitions import SESSION_DAYS

    home = prepare_dagster_home(settings)
    with exclusive(home / ".storage.lock"), DagsterInstance.get() as instance:
        instance.get_runs(limit=1)
        instance.get_dynamic_partitions(SESSION_DAYS)
    with DagsterInstance.get() as instance:
        yield instance


def sqlalchemy_url(url: str) -> str:
    """`url` with the driver named: SQLAlchemy 2.1 reads a bare postgresql:// as psycopg 3, and dagster-postgres
    ships psycopg2."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql+psycopg2://{rest}" if sep and scheme in ("postgres", "postgresql") else url


def ensure_database(url: str) -> None:
    """Create the database `url` names on the local PostgreSQL if it does not exist yet."""
    import psycopg2

    parts = urlsplit(url)
    database = parts.path.lstrip("/")
    try:
        connection = psycopg2.connect(url.rsplit("/", 1)[0] + "/postgres", connect_timeout=5)
    except psycopg2.OperationalError as exc:
        raise RuntimeProblem(
            f"the local PostgreSQL on {parts.hostname}:{parts.port} does not answer ({str(exc).strip()}): "
            f"start it with `memory-pipeline local up`"
        ) from None
    connection.autocommit = True  # CREATE DATABASE cannot run in a transaction
    with closing(connection), connection.cursor() as cursor:
        # Two commands starting at once would both see no database and both create it (one then fails on
        # pg_database's unique index): one at a time, under a lock the server holds for this session.
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"memory-pipeline:{database}",))
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
        if cursor.fetchone() is None:
            cursor.execute(f'CREATE DATABASE "{database}"')
