"""Small Hugging Face tokenizer.json files for the command-line tests, and a reader of
llm.c token files. Standard library only.

  tokenizer_files.py write DIR        DIR/gpt2.json (byte-level BPE, a few merges, <|endoftext|>),
                                      DIR/big.json (Llama 3's pre-tokenizer, 70000 tokens: ids past 65535),
                                      DIR/plain.json (no document token)
  tokenizer_files.py eot-at ID FILE   a GPT-2 style tokenizer whose <|endoftext|> is token ID (< 320)
  tokenizer_files.py show FILE        an llm.c token file: "magic version count", then the ids
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from hf_bpe import LLAMA3_PATTERN  # noqa: E402
MERGES = [(" ", "t"), ("h", "e"), (" t", "he"), ("i", "n"), (" ", "a"), ("e", "r"), ("o", "n"), ("\n", "\n")]


def byte_chars():
    """GPT-2's byte-level alphabet: byte -> character."""
    printable = [b for b in range(256) if 0x21 <= b <= 0x7e or 0xa1 <= b <= 0xac or b >= 0xae]
    table, shifted = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + shifted)
            shifted += 1
    return table


CHARS = byte_chars()


def level(text):
    return "".join(CHARS[b] for b in text.encode("utf-8"))


def tokenizer(ids, added, pre_tokenizer, merges):
    """ids: byte-level vocab entry -> id; added: content -> id."""
    vocab = dict(ids)
    vocab.update(added)
    return {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for c, i in added.items()],
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": pre_tokenizer["type"] == "Sequence", "vocab": vocab,
                  "merges": [level(a) + " " + level(b) for a, b in merges]},
    }


GPT2_PRE = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
LLAMA3_PRE = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated", "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}


def byte_ids(order):
    """The byte-level vocabulary: byte order[i] gets id i."""
    return {CHARS[b]: i for i, b in enumerate(order)}


def with_merges(ids):
    ids = dict(ids)
    for a, b in MERGES:
        ids[level(a + b)] = len(ids)
    return ids


def write(directory):
    gpt2 = with_merges(byte_ids(range(256)))
    save(f"{directory}/gpt2.json", tokenizer(gpt2, {"<|endoftext|>": len(gpt2)}, GPT2_PRE, MERGES))
    save(f"{directory}/plain.json", tokenizer(gpt2, {}, GPT2_PRE, MERGES))
    big = dict(gpt2)
    for k in range(70000 - len(big)):  # two-character tokens no merge makes
        big[CHARS[0x80 + k % 64] + CHARS[0x80 + k // 64 % 64] + CHARS[0x80 + k // 4096]] = len(big)
    save(f"{directory}/big.json",
         tokenizer(big, {"<|begin_of_text|>": len(big), "<|end_of_text|>": len(big) + 1}, LLAMA3_PRE, MERGES))


def eot_at(eot, path):
    """Bytes, merged tokens and (past 264) fillers no merge makes fill the ids around eot."""
    ids = with_merges(byte_ids(range(256)))
    for k in range(eot - len(ids)):
        ids[CHARS[0x80 + k] + CHARS[0x80 + k]] = len(ids)
    ids = {token: i if i < eot else i + 1 for token, i in ids.items()}
    save(path, tokenizer(ids, {"<|endoftext|>": eot}, GPT2_PRE, MERGES))


def save(path, tok):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)


def show(path):
    data = open(path, "rb").read()
    magic, version, count = struct.unpack_from("<3i", data)
    width = 2 if magic == 20240520 else 4
    ids = struct.unpack_from(f"<{count}{'H' if width == 2 else 'I'}", data, 1024)
    print(magic, version, count, len(data) - 1024 - width * count)
    print(" ".join(map(str, ids)))


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "write":
        write(sys.argv[2])
    elif command == "eot-at":
        eot_at(int(sys.argv[2]), sys.argv[3])
    elif command == "show":
        show(sys.argv[2])
    else:
        sys.exit(f"unknown command {command}")
