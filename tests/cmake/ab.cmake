# `amptrain ab`: statistics, the JSON reader, a real A/B study over the tiny
# configs (its ab.json checked against the schema, its report rendered in
# headless Chromium), and the refusals.
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)

amp_unit_test(test_ab_stats ab)
amp_unit_test(test_ab_json_read ab)

add_executable(test_ab_check ${CMAKE_CURRENT_SOURCE_DIR}/test_ab_check.c)
target_link_libraries(test_ab_check PRIVATE amp_core)
target_compile_options(test_ab_check PRIVATE ${AMP_C_WARNINGS})

set(AMP_AB_OUT ${CMAKE_BINARY_DIR}/tests/ab_runs)
set(AMP_AB_NONE ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_none.ini)
set(AMP_AB_DYN ${PROJECT_SOURCE_DIR}/configs/tiny_fp16_dynamic.ini)
set(AMP_AB_LR ${CMAKE_CURRENT_SOURCE_DIR}/ab/tiny_fp16_dynamic_lr.ini)

# The study: two arms (fp16 without and with a loss scaler) x 2 seeds.
add_test(NAME ab_tiny_run
         COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE} ${AMP_AB_DYN} --seeds 2
                 --set run.device=cpu --out ${AMP_AB_OUT}/tiny)
set_tests_properties(ab_tiny_run PROPERTIES LABELS ab FIXTURES_SETUP ab_tiny
  PASS_REGULAR_EXPRESSION "tiny_fp16_dynamic \\(emulated\\) +2 .* paired t, 1 df .*yes")
add_test(NAME ab_tiny_schema
         COMMAND test_ab_check ${AMP_AB_OUT}/tiny 2 --same-start)
set_tests_properties(ab_tiny_schema PROPERTIES LABELS ab FIXTURES_REQUIRED ab_tiny)
add_test(NAME ab_report_browser
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/ab/browser_check.sh ${AMP_AB_OUT}/tiny/report.html 2)
set_tests_properties(ab_report_browser PROPERTIES LABELS "ab;browser" FIXTURES_REQUIRED ab_tiny
  SKIP_RETURN_CODE 77)

# An fp8 arm beside bf16 (as the FP8 study runs them): the report gains the
# per-layer, per-role FP8 operand table, the scale of every operand over the
# steps and the saturation / flush heat maps per role (checked against the
# runs' metrics.jsonl), and still renders in the browser.
add_test(NAME ab_fp8_run
         COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE} ${CMAKE_CURRENT_SOURCE_DIR}/ab/tiny_fp8.ini
                 --seeds 2 --set run.device=cpu --out ${AMP_AB_OUT}/fp8)
set_tests_properties(ab_fp8_run PROPERTIES LABELS "ab;fp8" FIXTURES_SETUP ab_fp8
  PASS_REGULAR_EXPRESSION "tiny_fp8 \\(emulated\\) +2 .* emulation .* 2\\.00x\\|2\\.00x ")
# (the table: the fp8 arm emulated, its FP8 weight GEMMs projected to twice
# the FP16 baseline's speed on H100/H200 and on B200)
# A CPU has no FP8 arithmetic: the fp8 arm is marked emulated in the report
# and in ab.json's recommendation, saying why.
add_test(NAME ab_fp8_emulated
         COMMAND sh -c "grep -q 'tiny_fp8 <span class=\"pill na emulated\"' '${AMP_AB_OUT}/fp8/report.html' && grep -q '\"name\": \"tiny_fp8\", \"qualifies\": [a-z]*, \"emulated\": \"fp8: this CPU has no FP8 arithmetic' '${AMP_AB_OUT}/fp8/ab.json'")
set_tests_properties(ab_fp8_emulated PROPERTIES LABELS "ab;fp8" FIXTURES_REQUIRED ab_fp8)
add_test(NAME ab_fp8_report
         COMMAND grep -q "</td><td>input</td><td>e4m3</td>"
                 ${AMP_AB_OUT}/fp8/report.html)
set_tests_properties(ab_fp8_report PROPERTIES LABELS "ab;fp8" FIXTURES_REQUIRED ab_fp8)
add_test(NAME ab_fp8_charts
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/ab/fp8_charts_check.py
                 ${AMP_AB_OUT}/fp8/report.html ${AMP_AB_OUT}/fp8/runs/tiny_fp8 1)
set_tests_properties(ab_fp8_charts PROPERTIES LABELS "ab;fp8" FIXTURES_REQUIRED ab_fp8)
add_test(NAME ab_fp8_report_browser
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/ab/browser_check.sh ${AMP_AB_OUT}/fp8/report.html 2
                 chart-fp8-scale-1 chart-fp8-heat-1 emulated:tiny_fp8)
set_tests_properties(ab_fp8_report_browser PROPERTIES LABELS "ab;browser;fp8"
  FIXTURES_REQUIRED ab_fp8 SKIP_RETURN_CODE 77)

# Telemetry per number format: a 16-bit baseline beside an fp8 and an nvfp4
# arm. The verdict table (terminal and report) shows each scaled arm's
# flushed and saturated values per step of its own format, recomputed from
# the runs' metrics.jsonl and equal to the operand table's totals; each
# format has its own heat map, titled by the format, with its own colour
# key; the report renders in a 1,280 px window with the verdict table
# fully visible and both scaled arms marked emulated.
add_test(NAME ab_formats_run
         COMMAND sh -c "'$<TARGET_FILE:amptrain>' ab '${AMP_AB_NONE}' '${CMAKE_CURRENT_SOURCE_DIR}/ab/tiny_fp8.ini' '${CMAKE_CURRENT_SOURCE_DIR}/ab/tiny_nvfp4.ini' --seeds 2 --set run.device=cpu --set train.steps=40 --out '${AMP_AB_OUT}/formats' >'${AMP_AB_OUT}/formats.txt' 2>&1 || { cat '${AMP_AB_OUT}/formats.txt'; exit 1; }")
set_tests_properties(ab_formats_run PROPERTIES LABELS "ab;fp8" FIXTURES_SETUP ab_formats)
add_test(NAME ab_formats_telemetry
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/ab/formats_check.py ${AMP_AB_OUT}/formats
                 ${AMP_AB_OUT}/formats.txt 1=tiny_fp8:fp8 2=tiny_nvfp4:nvfp4)
set_tests_properties(ab_formats_telemetry PROPERTIES LABELS "ab;fp8" FIXTURES_REQUIRED ab_formats)
add_test(NAME ab_formats_browser
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/ab/browser_check.sh ${AMP_AB_OUT}/formats/report.html 3
                 chart-fp8-heat-1 chart-nvfp4-heat-2 emulated:tiny_fp8 emulated:tiny_nvfp4)
set_tests_properties(ab_formats_browser PROPERTIES LABELS "ab;browser;fp8"
  FIXTURES_REQUIRED ab_formats SKIP_RETURN_CODE 77)

# Configs that differ in [optim] lr: refused, with the key and both values.
amp_expect_fail(ab_refuse_diff LABELS ab
  CODE 2
  REGEX [=[^  \[optim\] lr: tiny_fp16_none = 0\.003 \([^)]*tiny_fp16_none\.ini:[0-9]+\), tiny_fp16_dynamic_lr = 0\.01 ]=]
  OPTIONS --also [=[^amptrain ab: .*pass --allow-diff]=] --not [=[^  \[(scaler|precision|run)\]]=]
  COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE} ${AMP_AB_LR} --set run.device=cpu
          --out ${AMP_AB_OUT}/refused)
# ... and compared with --allow-diff, one seed: the key is listed in ab.json
# and in the report, and no interval is made up.
add_test(NAME ab_allow_diff_run
         COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE} ${AMP_AB_LR} --allow-diff --seeds 1
                 --set run.device=cpu --set train.steps=40 --out ${AMP_AB_OUT}/allow_diff)
set_tests_properties(ab_allow_diff_run PROPERTIES LABELS ab FIXTURES_SETUP ab_allow_diff
  PASS_REGULAR_EXPRESSION "n/a: 1 seed")
add_test(NAME ab_allow_diff_schema
         COMMAND test_ab_check ${AMP_AB_OUT}/allow_diff 1 --diff optim.lr)
set_tests_properties(ab_allow_diff_schema PROPERTIES LABELS ab FIXTURES_REQUIRED ab_allow_diff)
add_test(NAME ab_allow_diff_report
         COMMAND grep -q "id=\"config-differences\".*\\[optim\\] lr" ${AMP_AB_OUT}/allow_diff/report.html)
set_tests_properties(ab_allow_diff_report PROPERTIES LABELS ab FIXTURES_REQUIRED ab_allow_diff)

# Two arms with one name; a single config; a bad --seeds.
amp_expect_fail(ab_same_name LABELS ab
  CODE 2
  REGEX [=[^amptrain ab: [^ ]*tiny_fp16_none\.ini and [^ ]*tiny_fp16_none\.ini both have \[run\] name = tiny_fp16_none]=]
  COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE} ${AMP_AB_NONE} --out ${AMP_AB_OUT}/same)
amp_expect_fail(ab_one_config LABELS ab
  CODE 2
  REGEX [=[^amptrain ab: needs at least two configs]=]
  COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE})
amp_expect_fail(ab_bad_seeds LABELS ab
  CODE 2
  REGEX [=[^amptrain ab: --seeds '0': expected an integer in \[1, 1000\]]=]
  COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE} ${AMP_AB_DYN} --seeds 0)
# A config error is found before any run starts, with its file:line.
amp_expect_fail(ab_bad_config LABELS ab
  CODE 2
  REGEX [=[^amptrain ab: [^ ]*bad_key\.ini:8: unknown key 'weight_decai']=]
  COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE} ${CMAKE_CURRENT_SOURCE_DIR}/configs/bad_key.ini
          --out ${AMP_AB_OUT}/bad_config)
# A run that fails fails the study with exit 1, naming the arm, the seed and
# the run's log: here train cannot replace its summary.json (a folder of that
# name is in the way), which only shows once the run has trained.
set(AMP_AB_FAIL ${AMP_AB_OUT}/fails/runs/tiny_fp16_none/seed-3/summary.json/x)
amp_expect_fail(ab_run_fails LABELS ab
  CODE 1
  REGEX [=[^amptrain ab: arm 'tiny_fp16_none' seed 3 failed: exit status 1. its log: .*/runs/tiny_fp16_none/seed-3/train\.log]=]
  OPTIONS --also [=[last line: amptrain: .*summary\.json: cannot replace it]=]
  COMMAND sh -c "rm -rf '${AMP_AB_OUT}/fails' && mkdir -p '${AMP_AB_FAIL}' && exec '$<TARGET_FILE:amptrain>' ab '${AMP_AB_NONE}' '${AMP_AB_DYN}' --seeds 1 --set run.device=cpu --out '${AMP_AB_OUT}/fails'")

# SIGTERM mid-study stops the running child too, writes no report, and the
# same command then starts over and completes.
add_test(NAME ab_stop
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ab/stop_check.sh $<TARGET_FILE:amptrain>
                 ${AMP_AB_NONE} ${AMP_AB_DYN} ${AMP_AB_OUT}/stop)
set_tests_properties(ab_stop PROPERTIES LABELS ab TIMEOUT 120)

# A 61-layer MLP: the heat map folds its layers into at most 24 rows.
add_test(NAME ab_deep_heat
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/ab/deep_heat.sh $<TARGET_FILE:amptrain>
                 ${AMP_AB_NONE} ${AMP_AB_DYN} ${AMP_AB_OUT}/deep)
set_tests_properties(ab_deep_heat PROPERTIES LABELS ab)

# Identical arms, a CPU hog during one arm's runs only: the timing is flagged
# as disturbed, the speedup compares CPU time, and nothing is called a
# significant speed difference.
add_test(NAME ab_busy_machine
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ab/busy_check.sh $<TARGET_FILE:amptrain>
                 ${AMP_AB_DYN} ${AMP_AB_OUT}/busy)
set_tests_properties(ab_busy_machine PROPERTIES LABELS ab TIMEOUT 600)
# Bad --metric: exit 2, naming the flag and the choices.
amp_expect_fail(ab_bad_tolerance LABELS ab
  CODE 2
  REGEX [=[^amptrain ab: --tolerance '-1': expected a positive number]=]
  COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE} ${AMP_AB_DYN} --tolerance -1)
amp_expect_fail(ab_bad_metric LABELS ab
  CODE 2
  REGEX [=[^amptrain ab: --metric 'ppl': expected auto, loss or acc]=]
  COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE} ${AMP_AB_DYN} --metric ppl)

# A GPT study's verdict is the validation loss (and perplexity); --metric acc
# overrides it; a run evaluated once gets a note, not a curve.
add_test(NAME ab_gpt_verdict
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ab/gpt_verdict.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/gpt/tiny_gpt.ini $<TARGET_FILE:test_ab_check>
                 ${AMP_AB_OUT}/gpt)
set_tests_properties(ab_gpt_verdict PROPERTIES LABELS ab TIMEOUT 300)

# Layer scan: ranks the groups, and its suggested overrides close at least
# half of the gap in a follow-up; identical policies have nothing to scan.
add_test(NAME ab_scan
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ab/scan_check.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/ab/tiny_fp32.ini ${AMP_AB_NONE} ${AMP_AB_OUT}/scan)
set_tests_properties(ab_scan PROPERTIES LABELS ab TIMEOUT 300)
# Layer scan of fp8 against bf16: the groups already at the baseline's
# precision are not run and are listed as skipped; arms are named after layers.
add_test(NAME ab_scan_skip
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ab/scan_skip.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/gpt/tiny_gpt.ini ${AMP_AB_OUT}/scan_skip)
set_tests_properties(ab_scan_skip PROPERTIES LABELS ab TIMEOUT 300)
# --scan's bad inputs: three configs, a glob that matches no layer, an empty group.
amp_expect_fail(ab_scan_three LABELS ab
  CODE 2
  REGEX [=[^amptrain ab: --scan takes two configs, the baseline policy and the candidate. got 3]=]
  COMMAND $<TARGET_FILE:amptrain> ab ${AMP_AB_NONE} ${AMP_AB_DYN} ${AMP_AB_LR} --scan blocks)
amp_expect_fail(ab_scan_no_match LABELS ab
  CODE 2
  REGEX [=[^amptrain ab: --scan: 'attn\*' matches no layer. the model's layers: fc1 fc2$]=]
  COMMAND $<TARGET_FILE:amptrain> ab ${CMAKE_CURRENT_SOURCE_DIR}/ab/tiny_fp32.ini ${AMP_AB_NONE}
          --scan "fc1,attn*" --set run.device=cpu --out ${AMP_AB_OUT}/scan_bad)
amp_expect_fail(ab_scan_empty LABELS ab
  CODE 2
  REGEX [=[^amptrain ab: --scan 'fc1,,fc2': an empty group. expected blocks, layers or comma-separated layer globs]=]
  COMMAND $<TARGET_FILE:amptrain> ab ${CMAKE_CURRENT_SOURCE_DIR}/ab/tiny_fp32.ini ${AMP_AB_NONE}
          --scan "fc1,,fc2" --set run.device=cpu --out ${AMP_AB_OUT}/scan_bad)

# `ab --ranks 2` (label mpi): the study on 2 ranks per run, its report, the
# refusals of a bad --ranks and of a missing mpirun, and a rank killed mid-arm.
if(AMP_HAVE_MPI)
  set(AMP_AB_MPIRUN "${MPIEXEC_EXECUTABLE}")
  if(NOT AMP_AB_MPIRUN)
    set(AMP_AB_MPIRUN mpirun)
  endif()
  add_test(NAME ab_ranks
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ab/ranks_check.sh ${AMP_AB_MPIRUN}
                   $<TARGET_FILE:amptrain> $<TARGET_FILE:test_ab_check> ${AMP_AB_NONE} ${AMP_AB_DYN}
                   ${AMP_AB_OUT}/ranks)
  set_tests_properties(ab_ranks PROPERTIES LABELS "ab;mpi" SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()

# What ab prints as it goes: off a terminal a line per run as always; on a
# terminal (a pty from script) a live line with run k/n, the run's step,
# the study's elapsed time and its ETA, estimated from the finished runs'
# wall times (tests/ab/progress.sh recomputes it).
add_test(NAME ab_progress
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ab/progress.sh $<TARGET_FILE:amptrain>
                 ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/tiny_sgd.ini ${AMP_AB_OUT}/progress)
set_tests_properties(ab_progress PROPERTIES LABELS "ab;cli;output" TIMEOUT 180)
# device = auto without a visible GPU: the note says why once per study,
# not once per arm.
add_test(NAME ab_device_note
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ab/device_note.sh $<TARGET_FILE:amptrain>
                 ${AMP_AB_DYN} ${AMP_AB_OUT}/device_note)
set_tests_properties(ab_device_note PROPERTIES LABELS "ab;cli" TIMEOUT 120)

# The memory split: the terminal's "memory by category" table and
# report.html's table (id memory-categories) give every nonzero category of
# the runs' memory_peak_bytes per arm, the mean over seeds, with the parts
# adding up to the total (checked against each run's summary.json).
add_test(NAME ab_formats_memory
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/ab/memory_check.py ${AMP_AB_OUT}/formats
                 ${AMP_AB_OUT}/formats.txt tiny_fp16_none tiny_fp8 tiny_nvfp4)
set_tests_properties(ab_formats_memory PROPERTIES LABELS "ab;fp8" FIXTURES_REQUIRED ab_formats)
