# Built-in plugins driven directly through a fake host (tests/plugin_test_host.h):
# loss scalers (PyTorch / Megatron trajectories, validation, state round trip)
# and precision policies (autocast classes, overrides, rejected keys). They
# dlopen the .so files from the build tree, so build those first.
amp_unit_test(test_scalers plugins)
add_dependencies(test_scalers amp_scaler_none amp_scaler_static amp_scaler_dynamic
                 amp_scaler_hysteresis)
amp_unit_test(test_policies plugins)
add_dependencies(test_policies amp_precision_fp32 amp_precision_fp16 amp_precision_bf16)
