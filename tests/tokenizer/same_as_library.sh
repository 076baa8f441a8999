#!/bin/bash
# same_as_library.sh AMPTRAIN WORK_DIR
# `amptrain tokenize` gives the ids of the `tokenizers` library
# (scripts/bpe_reference.py wrote them into tests/data/tokenizer/): byte-level
# BPE with GPT-2's pattern (tokenizer.json, and GPT-2's vocab.json +
# merges.txt) on the whole corpus and on the hostile-Unicode file, and a
# Llama-3-style Split + ByteLevel tokenizer on the first 100,000 bytes of the
# corpus and the hostile file; both on random.txt (random runs of hostile
# pieces and a run of 20,000 spaces). `--decode` gives back the text: the corpus, and
# the hostile file with its invalid UTF-8 replaced as the library reads it.
. "$(dirname "$0")/lib.sh"
head -c 100000 "$CORPUS" >"$W/corpus100k.txt"

same() { # same NAME TOKENIZER TEXT REFERENCE_IDS
    "$A" tokenize --tokenizer "$2" --out "$W/$1" --val-fraction 0 "$3" >"$W/$1.out" 2>"$W/$1.log" ||
        fail "$1: tokenize: $(tail -3 "$W/$1.log")"
    cmp "$W/$1/train.bin" "$4" || fail "$1: the ids differ from the library's ($4)"
    [ ! -e "$W/$1/val.bin" ] || fail "$1: --val-fraction 0 wrote val.bin"
    echo "ok  $1: $(($(stat -c %s "$4") / 2)) ids equal the library's"
}
same gpt2_corpus "$D/gpt2.json" "$CORPUS" "$D/gpt2_corpus.bin"
same gpt2_hostile "$D/gpt2.json" "$D/hostile.txt" "$D/gpt2_hostile.bin"
same gpt2_files "$D/gpt2-vocab.json" "$CORPUS" "$D/gpt2_corpus.bin"
same llama3_corpus "$D/llama3.json" "$W/corpus100k.txt" "$D/llama3_corpus.bin"
same llama3_hostile "$D/llama3.json" "$D/hostile.txt" "$D/llama3_hostile.bin"
same gpt2_random "$D/gpt2.json" "$D/random.txt" "$D/gpt2_random.bin"
same llama3_random "$D/llama3.json" "$D/random.txt" "$D/llama3_random.bin"
grep -q "31 invalid UTF-8 sequences replaced by U+FFFD, the first at byte 4132" "$W/gpt2_hostile.log" ||
    fail "the replaced invalid UTF-8 is not reported: $(cat "$W/gpt2_hostile.log")"

back() { # back NAME TOKENIZER EXPECTED_TEXT: decode(encode(x))
    "$A" tokenize --tokenizer "$2" --decode "$W/$1/train.bin" >"$W/$1.txt" 2>"$W/$1.dlog" ||
        fail "$1: --decode: $(tail -3 "$W/$1.dlog")"
    cmp "$W/$1.txt" "$3" || fail "$1: decode(encode(x)) differs from $3"
    echo "ok  $1: decode(encode(x)) == x"
}
back gpt2_corpus "$D/gpt2.json" "$CORPUS"
back gpt2_hostile "$D/gpt2.json" "$D/hostile_replaced.txt"
back llama3_corpus "$D/llama3.json" "$W/corpus100k.txt"
back llama3_hostile "$D/llama3.json" "$D/hostile_replaced.txt"
back gpt2_random "$D/gpt2.json" "$D/random.txt"
back llama3_random "$D/llama3.json" "$D/random.txt"
