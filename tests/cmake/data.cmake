# Datasets (Fashion-MNIST reader, tiny-gradient task, epoch order) and the RNG.
amp_unit_test(test_data)
