#!/usr/bin/env python3
"""How many tokens the server sees of each prompt that vLLM's 2025 benchmarks/benchmark_serving.py
(the client simon-mo/R1-Benchmark ran for vLLM 0.8.2 and SGLang 0.4.4) sends with
--dataset-name random: the client decodes token ids to text and the server tokenizes the text
again, and byte-level BPE does not give the same ids back (vllm-project/vllm PR #17408,
2025-04-29: 4,000 ids of Llama 3.1 came back as 4,106 tokens on the server; the fix postdates the
judged runs). Prints each input length's mean count over the request set, the figure a validation
case gives as `client.server_prompt_len` (trust/validation_cases.hpp).

The request set, as the script drew it before that fix (benchmark_dataset.py RandomDataset,
range ratio 1.0, seed 0): np.random.seed(0); input and output lengths, one value each;
offsets = randint(0, vocab_size, n); request i = decode(((offsets[i] + i + arange(L)) % V)).
The server (vLLM's /v1/completions and SGLang's tokenizer manager alike) encodes with the
tokenizer's special tokens: Llama 3 adds <|begin_of_text|>, Qwen 2 adds none.

Tokenizers: tiktoken with the BPE files two PyPI packages ship (nothing is fetched from a hub):
  Llama 3 (vocab_size 128000): llama-models 0.3.0, llama_models/llama3/tokenizer.model and its
    pattern (llama_models/llama3/tokenizer.py); the HF tokenizer's decode also cleans up
    tokenization spaces (tokenizer_config clean_up_tokenization_spaces true), done here.
  Qwen 2 / QwQ (vocab_size 151643): dashscope, dashscope/resources/qwen.tiktoken, Qwen's
    151,643 BPE tokens, which Qwen 2 kept ("we employ the identical tokenizer", Qwen2 technical
    report, arXiv 2407.10671, section 2.1), with NFC normalisation before encoding.
Usage: pip install tiktoken numpy; pip download --no-deps llama-models==0.3.0 dashscope; unzip
both wheels into DIR; python3 scripts/random_prompt_server_tokens.py DIR
"""
import sys
import unicodedata

import numpy as np
import tiktoken
from tiktoken.load import load_tiktoken_bpe

LLAMA3_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
            r"|\s*[\r\n]+|\s+(?!\S)|\s+")
CLEANUP = [(" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
           (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")]  # transformers' clean_up_tokenization


def clean_up(text):
    for a, b in CLEANUP:
        text = text.replace(a, b)
    return text


def encoding(name, path, pattern):
    return tiktoken.Encoding(name=name, pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(path), special_tokens={})


def server_counts(enc, vocab, length, decoded, encoded, special, n=50, seed=0):
    """Each request's token count on the server, the client's draws reproduced."""
    np.random.seed(seed)
    np.random.randint(length, length + 1, size=n)  # input lengths (range ratio 1.0)
    np.random.randint(1, 2, size=n)  # output lengths: one value, as above
    offsets = np.random.randint(0, vocab, size=n)
    counts = []
    for i in range(n):
        text = decoded(enc.decode(((offsets[i] + i + np.arange(length)) % vocab).tolist(), errors="replace"))
        counts.append(len(enc.encode(encoded(text), disallowed_special=())) + special)
    return np.array(counts)


def main(root):
    same = lambda s: s
    tokenizers = [
        ("llama3", encoding("llama3", root + "/llama_models/llama3/tokenizer.model", LLAMA3_PAT), 128000, clean_up,
         same, 1),
        ("qwen2", encoding("qwen", root + "/dashscope/resources/qwen.tiktoken", QWEN_PAT), 151643, same,
         lambda s: unicodedata.normalize("NFC", s), 0),
    ]
    for name, enc, vocab, decoded, encoded, special in tokenizers:
        for length in (1000, 5000, 10000, 32000):
            c = server_counts(enc, vocab, length, decoded, encoded, special)
            print(f"{name} vocab {vocab} input {length}: server mean {c.mean():.1f} (x{c.mean() / length:.4f}), "
                  f"median {np.median(c):.0f}, min {c.min()}, max {c.max()}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
