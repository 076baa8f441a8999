# safetensors reader/writer: round trip, validation messages, write atomicity, fuzzing.
amp_unit_test(test_safetensors)
