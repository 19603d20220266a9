"""Convert a sentence-transformers BERT model (safetensors) into a GGUF llama-server can serve.

llama.cpp's own `convert_hf_to_gguf.py` imports torch, which PyPI only ships as a
multi-GB CUDA build. This converter needs numpy, safetensors and the `gguf` writer
only; it writes exactly what llama.cpp's BERT loader reads (the same keys and the
same WordPiece "phantom space" vocabulary as the upstream script), in f16 with
f32 norms and biases, as upstream does for `--outtype f16`.
"""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np
from safetensors.numpy import load_file

_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_F32_TABLES = {
    gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.POS_EMBD] + ".weight",
    gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.TOKEN_TYPES] + ".weight",
}
_POOLING = {"pooling_mode_mean_tokens": gguf.PoolingType.MEAN, "pooling_mode_cls_token": gguf.PoolingType.CLS}


def _pooling_type(model_dir: Path) -> gguf.PoolingType:
    modules = json.loads((model_dir / "modules.json").read_text())
    pooling_dir = next(m["path"] for m in modules if m["type"].endswith("Pooling"))
    config = json.loads((model_dir / pooling_dir / "config.json").read_text())
    for flag, kind in _POOLING.items():
        if config.get(flag):
            return kind
    raise ValueError(f"{model_dir}: unsupported pooling {config}")


def _vocabulary(model_dir: Path) -> tuple[list[str], list[int]]:
    words = (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    tokens, types = [], []
    for word in words:
        if word in _SPECIAL_TOKENS:
            tokens.append(word)
            types.append(gguf.TokenType.CONTROL)
        else:
            # llama.cpp's WPM tokenizer marks word starts with U+2581 instead of
            # marking continuations with "##".
            tokens.append(word[2:] if word.startswith("##") else "\u2581" + word)
            types.append(gguf.TokenType.NORMAL)
    return tokens, types


def convert_bert_to_gguf(model_dir: Path, out_path: Path, model_name: str) -> Path:
    """Write `out_path` (f16 GGUF) from a sentence-transformers BERT folder; return it."""
    config = json.loads((model_dir / "config.json").read_text())
    if config.get("model_type") != "bert":
        raise ValueError(f"{model_dir / 'config.json'}: model_type {config.get('model_type')!r} is not 'bert'")
    arch = gguf.MODEL_ARCH.BERT
    n_layers = config["num_hidden_layers"]
    names = gguf.get_tensor_name_map(arch, n_layers)

    tmp_path = out_path.with_suffix(".partial")
    writer = gguf.GGUFWriter(tmp_path, gguf.MODEL_ARCH_NAMES[arch])
    writer.add_name(model_name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(n_layers)
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(_pooling_type(model_dir))

    tokens, types = _vocabulary(model_dir)
    writer.add_token_type_count(config.get("type_vocab_size", 1))
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    # BERT opens every input with [CLS]: llama.cpp reads it as the BOS token.
    writer.add_bos_token_id(tokens.index("[CLS]"))
    writer.add_unk_token_id(tokens.index("[UNK]"))
    writer.add_sep_token_id(tokens.index("[SEP]"))
    writer.add_pad_token_id(tokens.index("[PAD]"))
    writer.add_mask_token_id(tokens.index("[MASK]"))

    skipped = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")
    for hf_name, tensor in load_file(model_dir / "model.safetensors").items():
        hf_name = hf_name.removeprefix("bert.")
        if hf_name in skipped:
            continue
        gguf_name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if gguf_name is None:
            raise ValueError(f"{model_dir / 'model.safetensors'}: no GGUF name for tensor {hf_name!r}")
        # Weight matrices go to f16. Vectors (norms, biases) and the position and
        # token-type tables stay f32, as upstream keeps them: ggml adds them to f32
        # activations and has no f32 + f16 addition on the CPU.
        half = tensor.ndim == 2 and gguf_name not in _F32_TABLES
        data = tensor.astype(np.float16 if half else np.float32)
        writer.add_tensor(gguf_name, data)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp_path.replace(out_path)
    return out_path
