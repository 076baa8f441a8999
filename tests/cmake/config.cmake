# Config parsing, strict reading, --set and resolved output (core/io/config.c).
amp_unit_test(test_config)
