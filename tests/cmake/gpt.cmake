# The GPT against PyTorch: tests/data/gpt_reference.safetensors, written by
# scripts/gpt_reference.py (by hand, never here).
amp_unit_test(test_gpt_reference train)
