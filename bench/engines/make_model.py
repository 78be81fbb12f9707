# A tiny random-weight model of the Qwen2 architecture for the real-engine suite: vLLM serves it on
# the CPU in tens of milliseconds per 2k-token prefill, with Qwen2.5's real tokenizer, so prompts,
# chat templates and prefix-cache blocks behave as with a real Qwen2.5 model. The weights are
# random (fixed seed, so every build is the same model) and the answers meaningless; what the
# suite checks is routing, caching and the wire, never the text.
#
# usage: python make_model.py TOKENIZER_DIR OUT_DIR   (run with the engines venv's python)
import json
import shutil
import sys
from pathlib import Path

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

SEED = 20261207


def main(tokenizer_dir: str, out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = Qwen2Config(
        vocab_size=151936,  # Qwen2.5's embedding rows (the tokenizer has 151,665 tokens)
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,  # head size 64: one vLLM's CPU attention supports
        num_key_value_heads=1,
        max_position_embeddings=4096,  # the context a "prompt over the context" check exceeds
        rope_theta=1000000.0,
        tie_word_embeddings=True,
        # Weights wide enough that greedy decoding has clear winners: with the default 0.02 the
        # logits are near-uniform and rounding alone could change a greedy token between runs.
        initializer_range=0.5,
        bos_token_id=151643,
        eos_token_id=151645,
        torch_dtype="float32",
    )
    torch.manual_seed(SEED)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    model.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(Path(tokenizer_dir) / name, out / name)
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": 151643, "eos_token_id": [151645, 151643], "do_sample": False}, indent=2) + "\n"
    )
    params = sum(p.numel() for p in model.parameters())
    print(f"model: {params} parameters, seed {SEED}, in {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python make_model.py TOKENIZER_DIR OUT_DIR")
    main(sys.argv[1], sys.argv[2])
