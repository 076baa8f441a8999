# [data] dataset = tokens: the character corpus's ids as a nanoGPT .bin, an
# llm.c shard and a .npy train the tiny GPT to the text dataset's losses bit
# for bit (and ids one token late do not); write_tokens.py's .npy equals
# numpy.save's (tests/data/tokens_numpy_*.npy, tests/tokens/numpy_reference.py);
# a checkpoint refuses a changed shard. The bad token files are in
# bad_inputs.cmake; the header fuzz target is fuzz/fuzz_token_header.c.
add_test(NAME tokens_same_as_text
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tokens/same_as_text.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_BINARY_DIR}/tests/tokens_same_as_text)
set_tests_properties(tokens_same_as_text PROPERTIES LABELS "train;cli;checkpoint" TIMEOUT 300
                     ENVIRONMENT AMPTRAIN_THREADS=1)
# Shards of a split: sorted, a short one without windows, windows numbered
# shard after shard and never crossing a shard's end, the id check's edge.
amp_unit_test(test_token_files data)
