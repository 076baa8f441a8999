#!/usr/bin/env python3
"""Byte-level BPE fixtures: the `tokenizers` library's encodings, for amptrain's tokenizer tests.

Regenerate (writes tests/data/tokenizer/):
    python3 -m venv /tmp/bpevenv && /tmp/bpevenv/bin/pip install tokenizers==0.23.3
    /tmp/bpevenv/bin/python scripts/bpe_reference.py

Two tokenizers are trained on data/tinyshakespeare.txt plus 50 copies of the hostile text (so
that merges join non-ASCII bytes too, and piece boundaries around Unicode spaces, marks and
letters change the ids), with special token <|endoftext|>:
  gpt2.json     vocabulary 2,048, pre-tokenizer ByteLevel (GPT-2's split pattern); also saved as
                GPT-2's gpt2_vocab.json + gpt2_merges.txt
  llama3.json   vocabulary 1,024, pre-tokenizer Sequence[Split(Llama 3's pattern), ByteLevel
                (use_regex false)], ignore_merges as Llama 3 sets it
Id files are little-endian uint16, the ids of encode(text, add_special_tokens=False):
  gpt2_corpus.bin, gpt2_hostile.bin, llama3_corpus.bin (the corpus' first 100,000 characters),
  llama3_hostile.bin, gpt2_random.bin, llama3_random.bin (random.txt: 1,500 random runs of
  hostile pieces, seed 41, and a run of 20,000 spaces)
The library takes str: the hostile file (which holds invalid UTF-8) is decoded with
errors="replace" (each maximal invalid subpart becomes U+FFFD) before it is encoded; amptrain
reads bytes and replaces the same way. hostile_replaced.txt is that decoded text, which
decode(encode(x)) must give back.
Decoding: decode_ids.bin holds random id sequences (uint16 count, then the ids) drawn from the gpt2
vocabulary, many ending inside a UTF-8 sequence; decode_gpt2.txt holds the library's decode of each
(skip_special_tokens=False then True), each as a uint32 byte count then the UTF-8 bytes.
"""
import json
import os
import random
import struct
import tempfile

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "tokenizer")
CORPUS = os.path.join(ROOT, "data", "tinyshakespeare.txt")
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def train(pre, vocab, files):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train(files, trainer)
    return tok


def write_ids(name, ids):
    assert max(ids) < 65536
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(struct.pack("<%dH" % len(ids), *ids))


def main():
    os.makedirs(OUT, exist_ok=True)
    corpus = open(CORPUS, encoding="utf-8").read()
    hostile = open(os.path.join(OUT, "hostile.txt"), "rb").read().decode("utf-8", errors="replace")
    with open(os.path.join(OUT, "hostile_replaced.txt"), "wb") as f:
        f.write(hostile.encode("utf-8"))

    tmp = tempfile.mkdtemp()
    extra = os.path.join(tmp, "hostile50.txt")
    with open(extra, "w", encoding="utf-8") as f:
        f.write(hostile * 50)
    files = [CORPUS, extra]
    gpt2 = train(pre_tokenizers.ByteLevel(add_prefix_space=False), 2048, files)
    gpt2.save(os.path.join(OUT, "gpt2.json"))
    gpt2.model.save(OUT, "gpt2")  # gpt2-vocab.json, gpt2-merges.txt
    write_ids("gpt2_corpus.bin", gpt2.encode(corpus, add_special_tokens=False).ids)
    write_ids("gpt2_hostile.bin", gpt2.encode(hostile, add_special_tokens=False).ids)

    split = pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False)
    llama = train(pre_tokenizers.Sequence([split, pre_tokenizers.ByteLevel(
        add_prefix_space=False, use_regex=False)]), 1024, files)
    # Llama 3's tokenizer.json sets ignore_merges: a word in the vocabulary is one token.
    spec = json.loads(llama.to_str())
    spec["model"]["ignore_merges"] = True
    llama = Tokenizer.from_str(json.dumps(spec))
    llama.save(os.path.join(OUT, "llama3.json"))
    write_ids("llama3_corpus.bin", llama.encode(corpus[:100000], add_special_tokens=False).ids)
    write_ids("llama3_hostile.bin", llama.encode(hostile, add_special_tokens=False).ids)

    rng = random.Random(41)
    pieces = (list("abcdeXYZ '\n\t\r 0123456789.,!?-") +
              ["\u00a0", "\u3000", "\u00e9", "e\u0301", "\U0001F600", "\u6771\u4eac", "\u017f", "\u212a",
               "'s", "'LL", "'Ve", "  ", "   ", "\u2028", "\u0085", "\u180e", "<|endoftext|>", "\u00df",
               "\u0130", "\u01c5", "\u200b", "\r\n"])
    text = "".join("".join(rng.choice(pieces) for _ in range(rng.randrange(1, 30)))
                   for _ in range(1500)) + " " * 20000 + "x"
    with open(os.path.join(OUT, "random.txt"), "wb") as f:
        f.write(text.encode("utf-8"))
    write_ids("gpt2_random.bin", gpt2.encode(text, add_special_tokens=False).ids)
    write_ids("llama3_random.bin", llama.encode(text, add_special_tokens=False).ids)

    vocab = gpt2.get_vocab_size()
    # Ids of tokens that are single bytes >= 0x80 (pieces of UTF-8 sequences) come up often.
    partial = [i for i in range(vocab) if len(gpt2.decode([i])) and "\ufffd" in gpt2.decode([i])]
    seqs = []
    for n in range(200):
        k = rng.randrange(0, 12)
        seq = [rng.randrange(vocab) if rng.random() < 0.6 else rng.choice(partial) for _ in range(k)]
        if n % 3 == 0 and seq:
            seq[-1] = rng.choice(partial)
        if n % 5 == 0:
            seq.insert(rng.randrange(len(seq) + 1), 0)  # <|endoftext|>
        seqs.append(seq)
    with open(os.path.join(OUT, "decode_ids.bin"), "wb") as f:
        for seq in seqs:
            f.write(struct.pack("<H%dH" % len(seq), len(seq), *seq))
    with open(os.path.join(OUT, "decode_gpt2.txt"), "wb") as f:
        for seq in seqs:
            for skip in (False, True):
                b = gpt2.decode(seq, skip_special_tokens=skip).encode("utf-8")
                f.write(struct.pack("<I", len(b)) + b)


if __name__ == "__main__":
    main()
