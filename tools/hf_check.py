"""transformers as the judge of fsdp.c's Hugging Face interop (tests/hf_transformers_test.sh).

  hf_check.py loss TOKENS T B N MODEL_DIR...
      for each folder, the mean cross-entropy of transformers' from_pretrained, in fp32, over
      the N*B windows `fsdp eval` reads: window i is tokens[i*T : i*T+T], each token
      predicting the next; TOKENS is a nanoGPT .bin (little-endian uint16).
  hf_check.py create gpt2|llama OUT_DIR KEY=VALUE...
      a randomly initialised GPT2LMHeadModel or LlamaForCausalLM of that config
      (integers, floats, true/false, or rope_scaling=llama3:FACTOR:LOW:HIGH:ORIGINAL),
      written with save_pretrained (safetensors).
  hf_check.py tokens OUT VOCAB COUNT SEED
      COUNT random token ids below VOCAB as a nanoGPT .bin.

Prints one JSON line (loss: one per folder).
"""
import json
import sys

import numpy as np
import torch


def load_tokens(path):
    return torch.from_numpy(np.fromfile(path, dtype="<u2").astype(np.int64))


def loss(model_dir, tokens_path, T, B, N):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    model.eval()
    tokens = load_tokens(tokens_path)
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in range(N):
            rows = [tokens[(batch * B + b) * T:(batch * B + b) * T + T + 1] for b in range(B)]
            windows = torch.stack(rows)
            logits = model(input_ids=windows[:, :-1]).logits.double()
            losses = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                       windows[:, 1:].reshape(-1), reduction="sum")
            total += losses.item()
            count += B * T
    return {"loss": total / count}


def parse_value(text):
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("llama3:"):
        factor, low, high, original = text.split(":")[1:]
        return {"rope_type": "llama3", "factor": float(factor), "low_freq_factor": float(low),
                "high_freq_factor": float(high), "original_max_position_embeddings": int(original)}
    try:
        return int(text)
    except ValueError:
        return float(text)


def create(family, out_dir, settings):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    kwargs = {k: parse_value(v) for k, v in (s.split("=", 1) for s in settings)}
    if family == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(**kwargs))
    else:
        model = LlamaForCausalLM(LlamaConfig(**kwargs))
        # transformers initialises norms to one; others make the check see them.
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "norm" in name:
                    p.uniform_(0.5, 1.5)
    model.save_pretrained(out_dir, safe_serialization=True)
    return {"created": out_dir, "parameters": sum(p.numel() for p in model.parameters())}


def tokens(out, vocab, count, seed):
    rng = np.random.default_rng(seed)
    rng.integers(0, vocab, size=count).astype("<u2").tofile(out)
    return {"tokens": out}


def main(argv):
    command = argv[1]
    if command == "loss":
        for model_dir in argv[6:]:
            print(json.dumps(loss(model_dir, argv[2], int(argv[3]), int(argv[4]), int(argv[5]))))
        return
    elif command == "create":
        result = create(argv[2], argv[3], argv[4:])
    elif command == "tokens":
        result = tokens(argv[2], int(argv[3]), int(argv[4]), int(argv[5]))
    else:
        sys.exit(f"hf_check.py: unknown command {command}")
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)
