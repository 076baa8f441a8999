# A skipped step must really be skipped, and a run whose result is not a
# number must not exit 0 (issue 15). Through the real CLI on
# tests/nonfinite/tiny.ini; each case checks the exit status and the message,
# and that the failed run left no output file.
#   - a scale whose reciprocal is not a finite float: the built-in static
#     scaler refuses it as a config error (file:line), and the host refuses it
#     from any plugin at step 0 naming the plugin;
#   - every step skipped: exit 1;
#   - an applied update that overflows the weights: exit 1, at the end of the
#     run or as soon as a later step shows it, and no checkpoint of inf/NaN
#     weights is written;
#   - [model] init with a NaN: exit 2 (a checkpoint that does not fit) naming
#     the tensor and index.
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)

set(AMP_NF_SRC ${CMAKE_CURRENT_SOURCE_DIR}/nonfinite)
set(AMP_NF_GEN ${CMAKE_BINARY_DIR}/tests/nonfinite)
set(AMP_NF_OUT ${CMAKE_BINARY_DIR}/tests/nonfinite_runs)
add_test(NAME nonfinite_generate COMMAND sh ${AMP_NF_SRC}/make_init.sh ${AMP_NF_GEN})
set_tests_properties(nonfinite_generate PROPERTIES FIXTURES_SETUP amp_nonfinite LABELS numerics)

# The host-side refusal needs a plugin that returns such a scale (the
# built-in ones refuse it at init); built like loader.cmake's bad plugins.
amp_bad_plugin(scaler tinyscale badscale.c BAD_SCALE_TINY)

# amp_nonfinite(NAME CODE REGEX [NOT regex] [args...]): `train tiny.ini args...`
function(amp_nonfinite name code regex)
  cmake_parse_arguments(PARSE_ARGV 3 NF "" "NOT" "")
  set(opts --no-outputs ${AMP_NF_OUT}/${name})
  if(DEFINED NF_NOT)
    list(APPEND opts --not ${NF_NOT})
  endif()
  amp_expect_fail(nonfinite_${name} ENV AMPTRAIN_PLUGIN_PATH=${AMP_BAD_PLUGIN_DIR}
    LABELS numerics cli
    OPTIONS ${opts}
    CODE ${code}
    REGEX ${regex}
    COMMAND $<TARGET_FILE:amptrain> train ${AMP_NF_SRC}/tiny.ini ${NF_UNPARSED_ARGUMENTS}
            --out ${AMP_NF_OUT}/${name})
  set_tests_properties(nonfinite_${name} PROPERTIES FIXTURES_REQUIRED amp_nonfinite TIMEOUT 60)
endfunction()

# The issue's case: fp32 + static scale 1e-40 trained to NaN and exited 0.
amp_nonfinite(static_tiny_scale 2
  [=[--set scaler\.scale: \[scaler\] scale: got 1e-40. must be a finite number that fits float32 with a reciprocal that does too]=]
  --set scaler.plugin=static --set scaler.scale=1e-40)
amp_nonfinite(dynamic_tiny_init_scale 2
  [=[\[scaler\] init_scale: got 1e-39. must be a finite number that fits float32 with a reciprocal]=]
  --set scaler.plugin=dynamic --set scaler.init_scale=1e-39)
amp_nonfinite(host_refuses_tiny_scale 1
  [=[scaler plugin 'tinyscale' returned the scale 1e-40 at step 0: its reciprocal 1e\+40 is not a finite float32 > 0]=]
  --set scaler.plugin=tinyscale)
# scale x loss_weight that rounds to 0 in float32 would apply all-zero
# gradients as real steps.
amp_nonfinite(zero_backward_scale 1
  [=[scaler plugin 'static' scale 1e-17 times \[train\] loss_weight 1e-30, over 16 rows per step, is 0 as a float32: every gradient would be zero]=]
  --set scaler.plugin=static --set scaler.scale=1e-17 --set train.loss_weight=1e-30)
# fp16 with a static scale of 3e38: every scaled loss overflows, every step
# is skipped; the weights never move.
amp_nonfinite(all_steps_skipped 1
  [=[all 4 steps were skipped \(non-finite gradients or the scaler's decision\), so the weights never moved]=]
  --set precision.plugin=fp16 --set scaler.plugin=static --set scaler.scale=3e38)
# lr 1000 times fc1's first gradient (~1e37) overflows: with one step the
# end-of-run check finds it; with more, the next step's NaN loss does.
amp_nonfinite(weights_overflow_last_step 1
  [=[after step 1 the master weights hold 4 non-finite values \(the first is fc1\.weight\[0\]\): an applied update overflowed]=]
  --set model.init=${AMP_NF_GEN}/overflow.safetensors --set optim.lr=1000 --set train.steps=1)
amp_nonfinite(weights_overflow_mid_run 1
  [=[after step 2 the master weights hold 4 non-finite values]=]
  NOT [=[step 3/4]=]
  --set model.init=${AMP_NF_GEN}/overflow.safetensors --set optim.lr=1000)
amp_nonfinite(init_nan 2
  [=[nan\.safetensors: fc2\.bias\[1\] is nan. initial weights must be finite]=]
  --set model.init=${AMP_NF_GEN}/nan.safetensors)

# A checkpoint of inf/NaN weights would pass for the newest valid one and
# push the good ones out: the run stops before writing it.
amp_expect_fail(nonfinite_no_nan_checkpoint LABELS numerics cli checkpoint
  CODE 1
  REGEX [=[after step 1 the master weights hold 4 non-finite values]=]
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" train \"$2\" --set model.init=\"$3\" --set optim.lr=1000 --set train.checkpoint_every=1 --out \"$1\" && exit 0; rc=$?; ls \"$1/checkpoints\"/ckpt-* >/dev/null 2>&1 && { echo 'a checkpoint was written' >&2; exit 9; }; exit $rc"
          $<TARGET_FILE:amptrain> ${AMP_NF_OUT}/no_nan_checkpoint ${AMP_NF_SRC}/tiny.ini
          ${AMP_NF_GEN}/overflow.safetensors)
set_tests_properties(nonfinite_no_nan_checkpoint PROPERTIES FIXTURES_REQUIRED amp_nonfinite)
