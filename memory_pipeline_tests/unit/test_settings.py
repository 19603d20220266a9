from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from memory_pipeline.cli import main
from memory_pipeline.settings import ConfigError, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "ES_URL",
        "ES_API_KEY",
        "ES_USERNAME",
        "ES_PASSWORD",
        "LLAMA_URL",
        "LLAMA_MODEL",
        "EMBED_URL",
        "EMBED_MODEL",
        "SESSIONS_DIR",
        "LOCAL_ES_PORT",
        "LOCAL_LLAMA_PORT",
        "LOCAL_EMBED_PORT",
        "ES_VERIFY_CERTS",
        "LLAMA_API_KEY",
        "EMBED_API_KEY",
        "DAGSTER_POSTGRES_URL",
        "LOCAL_POSTGRES",
        "LOCAL_ES_NODES",
        "MEMORY_PIPELINE_STATE_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path))  # its .env is the one read: no stray one


def test_defaults_use_the_local_runtime() -> None:
    settings = load_settings()
    assert settings.elasticsearch_url == "http://127.0.0.1:9200"
    assert settings.chat_url == "http://127.0.0.1:8080"
    assert settings.embeddings_url == "http://127.0.0.1:8081"
    assert all(settings.is_local(s) for s in ("elasticsearch", "chat", "embed"))
    assert settings.sessions_dir == Path("~/.pi/agent/sessions").expanduser()


def test_configured_urls_mean_external_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ES_URL", "https://es.example.test:9243/")
    monkeypatch.setenv("ES_API_KEY", "abc")
    monkeypatch.setenv("LLAMA_URL", "http://gpu-box:8000")
    settings = load_settings()
    assert settings.elasticsearch_url == "https://es.example.test:9243"
    assert not settings.is_local("elasticsearch") and not settings.is_local("chat")
    assert settings.is_local("embed")


def test_dotenv_file_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("LLAMA_MODEL=my-model\nSESSIONS_DIR=/tmp/sessions\n")
    settings = load_settings()
    assert settings.llama_model == "my-model"
    assert settings.sessions_dir == Path("/tmp/sessions")


def test_blank_values_count_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ES_URL", "  ")
    monkeypatch.setenv("LLAMA_MODEL", "")
    settings = load_settings()
    assert settings.is_local("elasticsearch") and settings.llama_model is None


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("ES_URL", "not a url", "ES_URL"),
        ("LLAMA_URL", "ftp://host/x", "LLAMA_URL"),
        ("LOCAL_ES_PORT", "70000", "LOCAL_ES_PORT"),
        ("LOCAL_EMBED_PORT", "abc", "LOCAL_EMBED_PORT"),
        ("ES_VERIFY_CERTS", "perhaps", "ES_VERIFY_CERTS"),
    ],
)
def test_invalid_values_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=expected):
        load_settings()


def test_api_key_without_url_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ES_API_KEY", "secret-key")
    with pytest.raises(ConfigError, match="ES_API_KEY is set but ES_URL is not") as error:
        load_settings()
    assert "secret-key" not in str(error.value)


def test_clashing_local_ports_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_LLAMA_PORT", "8081")
    with pytest.raises(ConfigError, match="LOCAL_.*_PORT"):
        load_settings()


def test_cli_fails_at_start_with_the_variable_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBED_URL", "::nonsense::")
    result = CliRunner().invoke(main, ["local", "status"])
    assert result.exit_code != 0
    assert "EMBED_URL" in result.output


def test_cli_config_masks_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ES_URL", "https://es.example.test")
    monkeypatch.setenv("ES_API_KEY", "very-secret")
    result = CliRunner().invoke(main, ["config"])
    assert result.exit_code == 0, result.output
    assert "very-secret" not in result.output and '"es_api_key": "***"' in result.output


def test_maturity_and_auto_promotion_reach_the_reflect_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.resources import build_resources

    policy = build_resources(load_settings())["reflect_policy"]
    assert (policy.half_life_days, policy.auto_promote_min_sessions) == (90.0, 0)  # auto-promotion off
    assert policy.followthrough_model is False  # follow-through without the chat model unless set
    monkeypatch.setenv("MATURITY_HALF_LIFE_DAYS", "30")
    monkeypatch.setenv("AUTO_PROMOTE_MIN_SESSIONS", "3")
    monkeypatch.setenv("FOLLOWTHROUGH_MODEL", "1")
    policy = build_resources(load_settings())["reflect_policy"]
    assert policy.maturity_policy().half_life_days == 30.0 and policy.auto_promote_min_sessions == 3
    assert policy.followthrough_model is True
    monkeypatch.setenv("MATURITY_HALF_LIFE_DAYS", "0")
    with pytest.raises(ConfigError, match="MATURITY_HALF_LIFE_DAYS"):
        load_settings()


def test_local_servers_get_a_generated_key_users_servers_their_own(tmp_path: Path) -> None:
    from memory_pipeline.resources import build_resources

    local = load_settings(memory_pipeline_state_dir=tmp_path / "state")
    key = local.api_key("chat")
    assert key == local.api_key("embed") == local.api_key_path.read_text().strip() and len(key) >= 40
    assert local.api_key_path == tmp_path / "state" / "llama-api-key" and local.api_key_path.stat().st_mode & 0o077 == 0
    assert load_settings(memory_pipeline_state_dir=tmp_path / "state").api_key("chat") == key  # kept, not remade
    resources = build_resources(local)
    assert resources["llm"].api_key is None and resources["llm"].api_key_file == str(local.api_key_path)
    assert key not in json.dumps(resources["llm"].model_dump()) + json.dumps(resources["embedder"].model_dump())
    own = load_settings(
        llama_url="https://llm.example/v1", llama_api_key="users-key", memory_pipeline_state_dir=tmp_path
    )
    # The user's chat server gets the user's key; the embedding server is still local, with the local key.
    assert (
        own.api_key("chat") == "users-key" and own.api_key("embed") == (tmp_path / "llama-api-key").read_text().strip()
    )


def test_the_local_elasticsearch_takes_a_generated_password_a_users_cluster_its_key(tmp_path: Path) -> None:
    from memory_pipeline.resources import build_resources
    from memory_pipeline.settings import isolated_settings
    from memory_pipeline.stores.elasticsearch import client_kwargs

    local = load_settings(memory_pipeline_state_dir=tmp_path / "state")
    user, password = local.es_basic_auth() or ("", "")
    assert user == "elastic" and len(password) >= 40
    assert local.es_password_path.read_text().strip() == password and local.es_password_path.stat().st_mode & 0o077 == 0
    assert client_kwargs(local)["basic_auth"] == (user, password) and "api_key" not in client_kwargs(local)
    connection = build_resources(local)["es"].connection_config
    assert password not in json.dumps(connection.model_dump())  # resource config shows in the UI: the path only
    assert connection.to_client_kwargs()["basic_auth"] == (user, password)
    # A test's or benchmark's isolated settings talk to the same node: the same password.
    isolated = isolated_settings(local, tmp_path / "isolated")
    assert isolated.es_basic_auth() == (user, password)
    own = load_settings(es_url="https://es.example.test", es_api_key="users-key", memory_pipeline_state_dir=tmp_path)
    assert own.es_basic_auth() is None and "basic_auth" not in client_kwargs(own)
    assert client_kwargs(own)["api_key"] == "users-key"
    assert build_resources(own)["es"].connection_config.to_client_kwargs().get("basic_auth") is None
    basic = load_settings(es_url="https://es.example.test", es_username="me", es_password="pw-of-mine")
    assert client_kwargs(basic)["basic_auth"] == ("me", "pw-of-mine")
    assert build_resources(basic)["es"].connection_config.to_client_kwargs()["basic_auth"] == ("me", "pw-of-mine")
    with pytest.raises(ConfigError, match="ES_USERNAME and ES_PASSWORD go together"):
        load_settings(es_url="https://es.example.test", es_username="me")


def test_config_masks_every_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ES_URL", "https://es.example.test")
    monkeypatch.setenv("ES_API_KEY", "es-secret")
    monkeypatch.setenv("ES_USERNAME", "me")
    monkeypatch.setenv("ES_PASSWORD", "es-password-secret")
    monkeypatch.setenv("LLAMA_API_KEY", "llama-secret")
    monkeypatch.setenv("EMBED_API_KEY", "embed-secret")
    monkeypatch.setenv("DAGSTER_POSTGRES_URL", "postgresql://dagster:pg-secret@db.example.test:5432/runs")
    result = CliRunner().invoke(main, ["config"])
    assert result.exit_code == 0
    for secret in ("es-secret", "es-password-secret", "llama-secret", "embed-secret", "pg-secret"):
        assert secret not in result.output
    assert json.loads(result.output)["dagster_postgres_url"] == "postgresql://dagster:***@db.example.test:5432/runs"


def test_the_local_elasticsearch_shape_is_remembered_and_every_node_is_a_host(tmp_path: Path) -> None:
    settings = load_settings(memory_pipeline_state_dir=tmp_path / "state", local_es_port=19200)
    assert settings.es_node_count == 1 and settings.elasticsearch_hosts == ["http://127.0.0.1:19200"]
    settings.es_nodes_path.parent.mkdir(parents=True)
    settings.es_nodes_path.write_text("3\n")  # as `local up --nodes 3` leaves it
    assert settings.elasticsearch_hosts == [f"http://127.0.0.1:{p}" for p in (19200, 19201, 19202)]
    assert load_settings(memory_pipeline_state_dir=tmp_path / "state", local_es_nodes=1).es_node_count == 1
    own = load_settings(memory_pipeline_state_dir=tmp_path / "state", es_url="https://es.example.test")
    assert own.elasticsearch_hosts == ["https://es.example.test"], "a cluster of the user's is never the local one"


def test_dagster_storage_is_sqlite_unless_postgres_is_chosen(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert load_settings(memory_pipeline_state_dir=state).dagster_storage_url() is None
    local = load_settings(memory_pipeline_state_dir=state, local_postgres=True, local_postgres_port=15433)
    url = local.dagster_storage_url()
    password = local.postgres_password_path.read_text().strip()
    assert url is not None and url.startswith(f"postgresql://memory_pipeline:{password}@127.0.0.1:15433/dagster_")
    other = load_settings(memory_pipeline_state_dir=tmp_path / "other", local_postgres=True, local_postgres_port=15433)
    assert other.dagster_storage_url() != url, "two state folders never share one database"
    state.joinpath("run").mkdir(parents=True)
    state.joinpath("run", "dagster-storage").write_text("postgres\n")  # as `local up --postgres` leaves it
    assert load_settings(memory_pipeline_state_dir=state).uses_local_postgres
    own = load_settings(memory_pipeline_state_dir=state, dagster_postgres_url="postgresql://u:p@db/x")
    assert not own.uses_local_postgres and own.dagster_storage_url() == "postgresql://u:p@db/x"
    assert not own.is_local("postgres") and local.is_local("postgres")


def test_the_instance_yaml_names_postgres_without_its_password(tmp_path: Path) -> None:
    from memory_pipeline.instance import STORAGE_URL_VARIABLE, instance_yaml, sqlalchemy_url

    sqlite = load_settings(memory_pipeline_state_dir=tmp_path / "state")
    assert "storage:" not in instance_yaml(sqlite)
    own = load_settings(memory_pipeline_state_dir=tmp_path / "state", dagster_postgres_url="postgresql://u:pw9@db/x")
    text = instance_yaml(own)
    assert f"env: {STORAGE_URL_VARIABLE}" in text and "pw9" not in text
    assert sqlalchemy_url("postgresql://u:p@db/x") == "postgresql+psycopg2://u:p@db/x"
    assert sqlalchemy_url("postgres://u:p@db/x") == "postgresql+psycopg2://u:p@db/x"
    assert sqlalchemy_url("postgresql+psycopg2://u:p@db/x") == "postgresql+psycopg2://u:p@db/x"


def test_chat_timeout_and_llm_free_mode_reach_the_chat_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.resources import build_resources

    llm = build_resources(load_settings())["llm"]
    assert (llm.timeout_seconds, llm.enabled) == (300.0, True)
    assert llm.get_client().floor_seconds == 300.0
    monkeypatch.setenv("LLAMA_TIMEOUT", "1800")
    monkeypatch.setenv("MEMORY_PIPELINE_NO_LLM", "1")
    llm = build_resources(load_settings())["llm"]
    assert (llm.timeout_seconds, llm.enabled) == (1800.0, False) and llm.get_client().floor_seconds == 1800.0
    monkeypatch.setenv("LLAMA_TIMEOUT", "1")
    with pytest.raises(ConfigError, match="LLAMA_TIMEOUT"):
        load_settings()
    # A command's option (backfill --chat-timeout) is passed as a setting, not written into the environment.
    from memory_pipeline.commands.common import load

    monkeypatch.delenv("LLAMA_TIMEOUT")
    assert build_resources(load(llama_timeout=45.0))["llm"].timeout_seconds == 45.0
    assert "LLAMA_TIMEOUT" not in os.environ


def test_nothing_is_kept_in_the_folder_a_command_runs_from(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from memory_pipeline.settings import memory_home

    project = tmp_path / "someone-elses-repo"
    project.mkdir()
    (project / ".env").write_text("LLAMA_MODEL=from-the-projects-env\n")
    monkeypatch.chdir(project)
    monkeypatch.delenv("MEMORY_PIPELINE_HOME")
    settings = load_settings()
    # Run from a checkout (as here), its own folder; installed, ~/.local/state/memory-pipeline: never `project`.
    assert memory_home() == Path(__file__).resolve().parents[2]
    for folder in (settings.memory_pipeline_state_dir, settings.memory_workspace, settings.api_key_path.parent):
        assert not folder.is_relative_to(project), folder
    assert settings.llama_model != "from-the-projects-env"  # a project's own .env configures nothing here
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "home"))
    homed = load_settings()
    assert homed.memory_pipeline_state_dir == tmp_path / "home" / ".state"
    assert homed.memory_workspace == tmp_path / "home" / "memory"
    assert not list(project.iterdir())[1:]  # only the .env it had


def test_a_key_from_the_homes_env_reaches_dagster_as_an_env_var_never_its_value(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from dagster import EnvVar

    from memory_pipeline.resources import build_resources

    (tmp_path / ".env").write_text("ES_URL=https://es.example.test\nES_API_KEY=key-from-the-env-file\n")
    monkeypatch.delenv("ES_API_KEY", raising=False)
    try:
        settings = load_settings()
        assert "key-from-the-env-file" not in repr(settings) and "key-from-the-env-file" not in str(settings)
        connection = build_resources(settings)["es"].connection_config
        assert connection.api_key == EnvVar("ES_API_KEY")  # resolved when a run starts, shown by name only
        import os

        assert os.environ["ES_API_KEY"] == "key-from-the-env-file"  # what the EnvVar resolves to in a run
    finally:
        import os

        os.environ.pop("ES_API_KEY", None)  # set by the resources, not by monkeypatch


def test_one_elasticsearch_client_configuration_for_the_pipeline_and_the_search() -> None:
    from memory_pipeline.resources import build_resources
    from memory_pipeline.stores.elasticsearch import CLIENT_OPTIONS, make_client

    settings = load_settings()
    built = build_resources(settings)["es"]._build_kwargs()
    with make_client(settings) as direct:  # what the client sends with each request
        made = {key: getattr(direct, f"_{key}") for key in CLIENT_OPTIONS}
    assert made == {k: built[k] for k in CLIENT_OPTIONS} == CLIENT_OPTIONS
