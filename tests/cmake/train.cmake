amp_unit_test(test_train train)
add_dependencies(test_train amp_precision_fp32 amp_precision_fp16 amp_precision_bf16
                 amp_scaler_none amp_scaler_dynamic)
