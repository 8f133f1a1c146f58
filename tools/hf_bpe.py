"""Byte-level BPE tokenizers trained with Hugging Face's trainer, in GPT-2 style (ByteLevel
pre-tokenizer) and Llama 3 style (Llama 3's Split pattern, ignore_merges), for comparing
fsdp tokenize with HF on tokenizer.json files made here (nothing downloaded). LLAMA3_PATTERN
alone needs no `tokenizers` (tests/tokenizer_files.py, standard library only, imports it)."""

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def train_bpe(style, texts, vocab_size, special_tokens):
    """style "gpt2" or "llama3"; special_tokens take the first ids, as the trainer places them."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    if style == "gpt2":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok = Tokenizer(models.BPE(ignore_merges=True))
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special_tokens,
                                                       show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok
