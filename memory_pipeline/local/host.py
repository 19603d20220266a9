"""Set-up of the host the local servers run on: a JDK, the service user and data folders a server that refuses
root runs with, Debian packages, commands run as that user. Nothing here starts a server (see services.py)."""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import shutil
import subprocess
from pathlib import Path

from memory_pipeline.local.artifacts import Progress
from memory_pipeline.local.process import RuntimeProblem
from memory_pipeline.settings import Settings

# Elasticsearch refuses to run as root; as root we run it as this system user.
SERVICE_USER = "memory-pipeline"


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


def data_root(settings: Settings, folder: str, progress: Progress) -> Path:
    """Where a server that refuses root keeps its data: `<state>/<folder>`, unless (as root) the service user
    cannot reach it because a parent folder is private; then a folder of its own under /var/lib, named after
    the state folder so a restart finds the same data."""
    preferred = settings.memory_pipeline_state_dir / folder
    preferred.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or _reachable(preferred, _ensure_service_user()):
        return preferred
    digest = hashlib.sha1(str(preferred).encode()).hexdigest()[:12]
    fallback = FALLBACK_DATA_ROOT / digest / folder
    fallback.mkdir(parents=True, exist_ok=True)
    progress(
        f"{folder}: {preferred} is not reachable by the {SERVICE_USER!r} user (a parent folder is private); "
        f"keeping its data in {fallback}"
    )
    return fallback


def hand_over(root: Path, writable: Path) -> str | None:
    """As root, give `root` to the service user the server runs as (its name); as anyone else, None."""
    if os.geteuid() != 0:
        return None
    user = _ensure_service_user()
    entry = pwd.getpwnam(user)
    for folder, subdirs, files in os.walk(root):
        for item in [folder, *(os.path.join(folder, n) for n in subdirs + files)]:
            os.chown(item, entry.pw_uid, entry.pw_gid)
    if not _reachable(writable, user, writable=True):
        raise RuntimeProblem(
            f"the {user!r} user cannot write {writable}: set MEMORY_PIPELINE_STATE_DIR to a folder others can traverse"
        )
    return user


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


POSTGRES_PACKAGE = "postgresql"


def find_postgres(progress: Progress) -> Path:
    """The bin folder of Debian's PostgreSQL (the newest installed); installed with apt when missing, as root."""

    def installed() -> list[Path]:
        return sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]))

    if not installed():
        progress(f"postgres: installing Debian's {POSTGRES_PACKAGE} with apt-get")
        apt_install([POSTGRES_PACKAGE])
    return installed()[-1].parent


def run_as(argv: list[str], user: str | None, env: dict[str, str] | None = None, stdin: str | None = None) -> None:
    """Run a set-up command (as `user` when given); a failure raises with its output."""
    kwargs: dict[str, object] = {"env": env, "input": stdin}
    if user is not None:
        entry = pwd.getpwnam(user)
        kwargs |= {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    result = subprocess.run(argv, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise RuntimeProblem(f"{Path(argv[0]).name} failed: {(result.stderr or result.stdout).strip()[-2000:]}")


def apt_install(packages: list[str]) -> None:
    """Install Debian packages (as root, with apt-get); else say which to install."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeProblem(
            f"install the Debian package(s) {' '.join(packages)} (apt-get install {' '.join(packages)})"
        )
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    for argv in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
    ):
        result = subprocess.run(argv, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise RuntimeProblem(f"{' '.join(argv)} failed: {result.stderr.strip()[-2000:]}")
