"""fsdp tokenize against Hugging Face tokenizers, on tokenizers trained here with HF's
BPE trainer (nothing downloaded): GPT-2 style (ByteLevel pre-tokenizer, <|endoftext|>)
and Llama 3 style (Llama 3's Split pattern, ignore_merges, special tokens added after the
vocabulary as Llama 3's are), each with its merges written as pairs (tokenizers 0.20 and
later) and as "a b" strings. Over text with accents, CJK, emoji, combining marks, white
space runs, digits, contractions, CRLF, added tokens, and a sample of every Unicode
plane: fsdp's ids on 1 and 3 threads are HF's, document by document, each after the
document token; decoding them gives the text back, through HF's decoder and bytewise;
for bytes that are not UTF-8 (which HF cannot take) decoding fsdp's ids gives the
bytes back; and the same documents as a JSON Lines file, written as llm.c shards, give
HF's ids, the validation shard first.

Usage: tokenizer_hf_check.py path/to/fsdp TMPDIR   (the python of scripts/tokenizers-venv.sh)
"""
import json
import os
import random
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from hf_bpe import train_bpe  # noqa: E402

FSDP, TMP = sys.argv[1], sys.argv[2]
WORDS = ("the of and to in is was that for it with as his on be at by had are but from or have an they which one "
         "you were her all she there would their we him been has when who will more no if out so said what up its "
         "about into than them can only other new some could time these two may then do first any my now such like "
         "our over man me even most made after also did many before must through back years where much your way "
         "well down should because each just those people how too little state good very make world still own see "
         "men work long get here between both life being under never day same another know while last").split()
UNICODE = ["café", "naïve", "Ångström", "straße", "façade", "ΚΑΛΗΜΕΡΑ", "καλημέρα", "мир", "Привет", "日本語",
           "中文字符", "한국어", "ไทย", "עברית", "العربية", "हिन्दी", "😀", "👍🏽", "🇫🇷", "👨‍👩‍👧", "e\u0301", "n\u0303",
           "½", "Ⅻ", "١٢٣", "٣.١٤", "ǅ", "ſ", "ﬁ", "Ｆｕｌｌ", "\u00a0", "\u3000", "\u2028", "\u0085", "\u180e",
           "\u200b", "\ufeff"]
PUNCT = [".", ",", "!", "?", ";", ":", "—", "-", "(", ")", "\"", "'", "...", "$", "%", "#", "@", "&", "*", "/"]
SPACES = [" "] * 30 + ["  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\r\n\r\n", "\n   ", "        "]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "n't", "'"]


def text(rng, n_words, specials=()):
    out = []
    for _ in range(n_words):
        r = rng.random()
        if r < 0.6:
            w = rng.choice(WORDS)
            w = w.capitalize() if rng.random() < 0.15 else w.upper() if rng.random() < 0.02 else w
            if rng.random() < 0.08:
                w += rng.choice(CONTRACTIONS)
        elif r < 0.75:
            w = rng.choice(UNICODE)
        elif r < 0.85:
            w = str(rng.randrange(10 ** rng.randrange(1, 12)))
        elif r < 0.97 or not specials:
            w = rng.choice(PUNCT)
        else:
            w = rng.choice(specials)
        out.append(w + rng.choice(SPACES))
    return "".join(out)


def every_plane(step):
    """Every step-th Unicode scalar value, each alone, after a letter and after a space."""
    chars = [chr(c) for c in range(0, 0x110000, step) if not 0xD800 <= c < 0xE000]
    return "".join(c + " x" + c + " " + c + "'s\n" for c in chars)


def with_string_merges(path, out):
    j = json.load(open(path, encoding="utf-8"))
    merges = j["model"]["merges"]
    if merges and isinstance(merges[0], list):
        j["model"]["merges"] = [a + " " + b for a, b in merges]
    json.dump(j, open(out, "w", encoding="utf-8"), ensure_ascii=False)


def byte_decoder():
    printable = [b for b in range(256) if 0x21 <= b <= 0x7e or 0xa1 <= b <= 0xac or b >= 0xae]
    table, shifted = {}, 0
    for b in range(256):
        c = chr(b) if b in printable else chr(0x100 + shifted)
        shifted += b not in printable
        table[c] = b
    return table


def decode_bytes(path, ids):
    """fsdp's ids as bytes: an added token's content, else its byte-level characters."""
    j = json.load(open(path, encoding="utf-8"))
    added = {t["id"]: t["content"].encode() for t in j["added_tokens"]}
    vocab = {i: t for t, i in j["model"]["vocab"].items()}
    table = byte_decoder()
    return b"".join(added[i] if i in added else bytes(table[c] for c in vocab[i]) for i in ids)


def fsdp_tokenize(tokenizer, files, threads):
    out = os.path.join(TMP, "out.bin")
    subprocess.run([FSDP, "tokenize", "--tokenizer", tokenizer, "-o", out, "--threads", str(threads)] + files,
                   check=True, stderr=subprocess.DEVNULL)
    data = open(out, "rb").read()
    magic, version, count = struct.unpack_from("<3i", data)
    code = "H" if magic == 20240520 else "I"
    return list(struct.unpack_from(f"<{count}{code}", data, 1024))


def fsdp_shards(tokenizer, jsonl, threads):
    """fsdp tokenize of a JSONL file into shards of 1000 tokens, the first of 500: their ids,
    the validation shard first, and each shard's count."""
    prefix = os.path.join(TMP, "shards", "hf")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    for old in os.listdir(os.path.dirname(prefix)):
        os.remove(os.path.join(os.path.dirname(prefix), old))
    subprocess.run([FSDP, "tokenize", "--tokenizer", tokenizer, "-o", prefix, "--threads", str(threads),
                    "--jsonl-key", "text", "--shard-tokens", "1000", "--val-tokens", "500", jsonl],
                   check=True, stderr=subprocess.DEVNULL)
    names = sorted(os.listdir(os.path.dirname(prefix)), key=lambda n: int(n[-10:-4]))
    ids, counts = [], []
    for name in names:
        data = open(os.path.join(os.path.dirname(prefix), name), "rb").read()
        magic, version, count = struct.unpack_from("<3i", data)
        ids += struct.unpack_from(f"<{count}{'H' if magic == 20240520 else 'I'}", data, 1024)
        counts.append(count)
    return ids, counts, names


failures = []


def check(name, got, want):
    if got == want:
        print(f"ok   {name}")
        return
    i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    failures.append(name)
    print(f"FAIL {name}: {len(got)} ids, want {len(want)}; first difference at {i}: "
          f"{got[max(0, i - 3):i + 4]} != {want[max(0, i - 3):i + 4]}")


def main():
    rng = random.Random(1)
    corpus = [text(rng, 400) for _ in range(200)]
    documents = [text(rng, 3000, ("<|endoftext|>", "<|begin_of_text|>", "<|end_of_text|>", "<|endoftext|",
                                  "<|eot_id|>", "<|reserved_special_token_0|>")) for _ in range(3)]
    documents += ["".join(corpus), every_plane(37), " " * 5000 + "x" + "\n" * 3000 + "\t \r\n" * 500, "\r\n".join(corpus[:3]), "a",
                  "the" * 2000 + "'s"]
    paths = []
    for k, doc in enumerate(documents):
        paths.append(os.path.join(TMP, f"doc{k}.txt"))
        open(paths[-1], "w", encoding="utf-8", newline="").write(doc)
    invalid = [rng.randbytes(3000), b"caf\xc3 \xa9 \xff\xfe the \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 x\x80y \xc0\xaf",
               "".join(corpus[5:7]).encode()[:-1] + b"\xe6\x97"]
    invalid_paths = []
    for k, raw in enumerate(invalid):
        invalid_paths.append(os.path.join(TMP, f"invalid{k}.txt"))
        open(invalid_paths[-1], "wb").write(raw)

    for style, document_token in (("gpt2", "<|endoftext|>"), ("llama3", "<|begin_of_text|>")):
        tok = train_bpe(style, corpus, 1200, [document_token] if style == "gpt2" else [])
        if style == "llama3":  # after the vocabulary, as Llama 3's are
            tok.add_special_tokens(["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                                    "<|eot_id|>"])
        pairs = os.path.join(TMP, f"{style}.json")
        tok.save(pairs)
        strings = os.path.join(TMP, f"{style}-strings.json")
        with_string_merges(pairs, strings)
        doc = tok.token_to_id(document_token)
        want = []
        for d in documents:
            want += [doc] + tok.encode(d, add_special_tokens=False).ids
        for path, form in ((pairs, "merges as pairs"), (strings, "merges as strings")):
            one = fsdp_tokenize(path, paths, 1)
            check(f"{style}, {form}, 1 thread: Hugging Face's ids", one, want)
            check(f"{style}, {form}, 3 threads: the same ids", fsdp_tokenize(path, paths, 3), one)
        start = 0
        back = []
        for d in documents:
            n = len(tok.encode(d, add_special_tokens=False).ids)
            back.append(tok.decode(one[start + 1:start + 1 + n], skip_special_tokens=False))
            start += 1 + n
        check(f"{style}: Hugging Face decodes fsdp's ids to the text", back, documents)
        check(f"{style}: fsdp's ids are the text's bytes", [decode_bytes(pairs, one)],
              ["".join(document_token + d for d in documents).encode()])
        jsonl = os.path.join(TMP, "documents.jsonl")
        with_nul = []
        for d in documents:  # a NUL, which fsdp refuses in JSON (cJSON would cut the text there), left out
            with_nul += [doc] + tok.encode(d.replace("\0", ""), add_special_tokens=False).ids
        with open(jsonl, "w", encoding="utf-8") as f:
            for d in documents:
                f.write(json.dumps({"id": len(d), "text": d.replace("\0", "")}) + "\n")
        ids, counts, names = fsdp_shards(pairs, jsonl, 3)
        check(f"{style}: JSONL documents into shards, validation first: Hugging Face's ids", ids, with_nul)
        check(f"{style}: shards of 500, then 1000 tokens each but the last",
              [counts[0], set(counts[1:-1]), 0 < counts[-1] <= 1000, names[0], names[1]],
              [500, {1000}, True, "hf_val_000000.bin", "hf_train_000001.bin"])
        got = fsdp_tokenize(pairs, invalid_paths, 2)
        check(f"{style}: bytes that are not UTF-8 come back from fsdp's ids", [decode_bytes(pairs, got)],
              [b"".join(document_token.encode() + raw for raw in invalid)])
    if failures:
        sys.exit(f"{len(failures)} checks failed: {failures}")


main()
