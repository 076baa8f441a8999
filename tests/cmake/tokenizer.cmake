# Byte-level BPE tokenizers (core/tokenizer/): `amptrain tokenize` gives the
# `tokenizers` library's ids (fixtures from scripts/bpe_reference.py in
# tests/data/tokenizer/) for GPT-2's and a Llama-3-style pre-tokenizer, and
# --decode gives the text back; the tokenized corpus trains the tiny GPT on
# [data] dataset = tokens; decode equals the library's on cut UTF-8, and
# tokenizer.json features amptrain does not implement are refused by name.
add_test(NAME tokenizer_same_as_library
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/same_as_library.sh
                 $<TARGET_FILE:amptrain> ${CMAKE_BINARY_DIR}/tests/tokenizer_same_as_library)
set_tests_properties(tokenizer_same_as_library PROPERTIES LABELS "cli;data" TIMEOUT 120)
add_test(NAME tokenizer_train_on_tokenized
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/train_on_tokenized.sh
                 $<TARGET_FILE:amptrain> ${CMAKE_BINARY_DIR}/tests/tokenizer_train_on_tokenized)
set_tests_properties(tokenizer_train_on_tokenized PROPERTIES LABELS "train;cli;data" TIMEOUT 300
                     ENVIRONMENT AMPTRAIN_THREADS=1)
amp_unit_test(test_tokenizer data)
add_test(NAME tokenizer_text_dataset
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/text_with_tokenizer.sh
                 $<TARGET_FILE:amptrain> ${CMAKE_BINARY_DIR}/tests/tokenizer_text_dataset)
set_tests_properties(tokenizer_text_dataset PROPERTIES LABELS "train;cli;data" TIMEOUT 300
                     ENVIRONMENT AMPTRAIN_THREADS=1)
