# Datasets (Fashion-MNIST reader, tiny-gradient task, epoch order) and the RNG.
amp_unit_test(test_data)
# A limited load of 200M examples holds only what it keeps; FIFOs as IDX files.
amp_unit_test(test_data_limit)
set_tests_properties(test_data_limit PROPERTIES TIMEOUT 300)
