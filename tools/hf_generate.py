"""transformers' greedy generation, the oracle of `fsdp sample --temperature 0`.

For each model folder (save_pretrained's or fsdp export's), prints one line: the ids of
the new tokens of generate(do_sample=False) from the prompt, space-separated, as fsdp
sample prints them. No end-of-text token stops it: fsdp sample has none.

usage: hf_generate.py PROMPT_IDS MAX_NEW_TOKENS MODEL_DIR...   (PROMPT_IDS as 1,2,3)
"""
import sys

import torch
from transformers import AutoModelForCausalLM


def generate(model_dir, prompt, max_new_tokens):
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    model.eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0  # only to quiet its warning: one sequence, no padding
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=max_new_tokens)
    return out[0, len(prompt):].tolist()


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    prompt = [int(t) for t in argv[1].split(",")]
    for model_dir in argv[3:]:
        print(" ".join(str(t) for t in generate(model_dir, prompt, int(argv[2]))))


if __name__ == "__main__":
    main(sys.argv)
