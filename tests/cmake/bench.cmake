# Smoke run of the step benchmark on a small shape: proves it builds, finds
# the plugins beside the build tree (<build>/plugins, no AMPTRAIN_PLUGIN_PATH)
# and runs every policy (fp8 delayed, fp8 current, mxfp8 and nvfp4 with their
# scaled operands among them), in two interleaved rounds with the table of ratios
# to bf16. It checks no timing.
set(AMP_BENCH_FP8_ROWS "fp8 +\\| +[0-9.]+ \\| +[0-9.]+ \\| +[0-9.]+x \\| +[0-9.]+x .*fp8_current +\\| +[0-9.]+ \\| .*mxfp8 +\\| +[0-9.]+ \\| +[0-9.]+ \\| +[0-9.]+x \\| +[0-9.]+x .*fp8 kernels: .*FP8 operands.*mxfp8 kernels: .*FP8 operands.*nvfp4 kernels: .*FP8 operands")
add_test(NAME bench_step_smoke
         COMMAND bench_step --steps 2 --warmup 0 --batch 16 --hidden 32,32 --features 64 --rounds 2)
set_tests_properties(bench_step_smoke PROPERTIES LABELS "bench;fp8"
  PASS_REGULAR_EXPRESSION "${AMP_BENCH_FP8_ROWS}" FAIL_REGULAR_EXPRESSION "bench_step: [a-z-]")
# The GPT mode on a small shape (the shipped corpus, every policy and the floor).
add_test(NAME bench_step_gpt_smoke
         COMMAND bench_step --model gpt --steps 2 --warmup 0 --batch 2 --n-layer 1 --n-head 2
                 --n-embd 32 --block-size 16 --rounds 2)
set_tests_properties(bench_step_gpt_smoke PROPERTIES LABELS "bench;fp8"
  PASS_REGULAR_EXPRESSION "${AMP_BENCH_FP8_ROWS}" FAIL_REGULAR_EXPRESSION "bench_step: [a-z-]")
# The INI benchmark on small sizes: it parses, reads back and checks every key.
add_test(NAME bench_config_smoke COMMAND bench_config 100 2000)
set_tests_properties(bench_config_smoke PROPERTIES LABELS bench)
# Smoke run of the CNN step benchmark (every policy and the floor, tiny batch).
add_test(NAME bench_cnn_smoke COMMAND bench_cnn --steps 1 --warmup 0 --batch 4)
set_tests_properties(bench_cnn_smoke PROPERTIES LABELS "bench;cnn")
# Smoke run of the instruction-ceiling benchmark (a short run per kernel).
add_test(NAME bench_peak_smoke COMMAND bench_peak --seconds 0.02)
set_tests_properties(bench_peak_smoke PROPERTIES LABELS bench)
# Smoke run of the FP8 kernel benchmark (small array, every path).
add_test(NAME bench_fp8_smoke COMMAND bench_fp8 --n 4096 --reps 2)
set_tests_properties(bench_fp8_smoke PROPERTIES LABELS "bench;fp8")
# Smoke run of the conversion-kernel benchmark (short timings): a row of
# numbers for the generic path's last operation at every length. It checks
# no timing.
add_test(NAME bench_convert_smoke COMMAND bench_convert --lengths 5,40 --total 4096 --rounds 1)
set_tests_properties(bench_convert_smoke PROPERTIES LABELS bench
  PASS_REGULAR_EXPRESSION "\\| generic \\| bf16 \\| widen16 \\| [0-9.]+ \\| [0-9.]+ \\|")
# The threads-under-load benchmark, one round of one step: it starts and
# ends its hogs and prints a row with numbers for each policy and thread
# count (bench/threads_under_load.sh). It checks no timing.
add_test(NAME bench_threads_under_load_smoke
         COMMAND sh ${PROJECT_SOURCE_DIR}/bench/threads_under_load.sh ${CMAKE_BINARY_DIR} 1 1)
set_tests_properties(bench_threads_under_load_smoke PROPERTIES LABELS bench TIMEOUT 600
  PASS_REGULAR_EXPRESSION "passive +\\| +1 \\| +[0-9.]+ \\| +[0-9.]+ \\| +1 \\|.*passive +\\| +2 \\| +[0-9.]+ .*spin +\\| +2 \\| +[0-9.]+ \\| +[0-9.]+ \\| +1 \\|")
# bench/paths_table.py on small shapes, one round, no PyTorch: every model and
# policy has its row, with a path mix and the PyTorch columns 'not run'. It
# checks no timing.
set(AMP_PATHS_ROW "[^\n]*\\| not run \\| not run \\|\n")
add_test(NAME bench_paths_table_smoke
         COMMAND python3 ${PROJECT_SOURCE_DIR}/bench/paths_table.py --tiny --rounds 1 --steps 2
                 --warmup 1 --cnn-steps 1 --peak-seconds 0.02 --build ${CMAKE_BINARY_DIR}/bench)
set_tests_properties(bench_paths_table_smoke PROPERTIES LABELS bench TIMEOUT 300
  PASS_REGULAR_EXPRESSION "\\| mlp \\| fp32 \\| [0-9]+ shapes?: [a-z]${AMP_PATHS_ROW}\\| mlp \\| fp16\\+dynamic \\|${AMP_PATHS_ROW}\\| mlp \\| bf16\\+none \\|${AMP_PATHS_ROW}\\| gpt \\| fp32 \\|${AMP_PATHS_ROW}\\| gpt \\| fp16\\+dynamic \\|${AMP_PATHS_ROW}\\| gpt \\| bf16\\+none \\|${AMP_PATHS_ROW}\\| cnn \\| fp32 \\| [^\n]*\\| not run \\| not run \\|\n\\| cnn \\| fp16 \\| [^\n]*\n\\| cnn \\| bf16 \\| "
  FAIL_REGULAR_EXPRESSION "Traceback|failed \\(exit")
# A bad flag is a usage error: exit 2.
add_test(NAME bench_paths_table_usage
         COMMAND sh -c "python3 \"$1\" --no-such-flag 2>/dev/null; test $? -eq 2 && python3 \"$1\" --rounds 0 2>/dev/null; test $? -eq 2"
                 sh ${PROJECT_SOURCE_DIR}/bench/paths_table.py)
set_tests_properties(bench_paths_table_usage PROPERTIES LABELS bench)
