#!/usr/bin/env python3
"""Converts a nanoGPT training checkpoint (ckpt.pt, as nanoGPT's train.py
saves it) into a .safetensors file that amptrain's `[model] init` reads:

    python3 scripts/nanogpt_to_safetensors.py out/ckpt.pt ckpt.safetensors

It needs PyTorch and safetensors (`pip install torch safetensors`). The
checkpoint's "model" state_dict is written as F32 tensors: a torch.compile
`_orig_mod.` prefix is stripped, the causal-mask buffers `attn.bias` of
older nanoGPT versions are dropped, and the tied lm_head.weight is kept once
(under transformer.wte.weight). nanoGPT's "model_args" are printed as the
[model] keys of amptrain's GPT, to put in the config:

    [model]
    name = gpt
    n_layer = ...   (and n_head, n_embd, block_size, bias)

amptrain's loader strips the prefix and skips the buffers itself too; this
script is for the .pt file, which amptrain does not read (a pickle).
nanoGPT's MLP is nn.GELU() (the erf form): amptrain's default
`activation = gelu` computes the same function. nanoGPT's vocabulary must
equal the one of the data amptrain trains on (its transformer.wte.weight
has one row per token).
"""
import argparse
import re

import torch
from safetensors.torch import save_file


def convert(state):
    out = {}
    for name, t in state.items():
        name = name[len("_orig_mod."):] if name.startswith("_orig_mod.") else name
        if re.fullmatch(r"transformer\.h\.\d+\.attn\.(bias|masked_bias)", name):
            continue  # a causal mask, not a parameter
        out[name] = t.detach().float().contiguous()
    if "lm_head.weight" in out and "transformer.wte.weight" in out:
        if not torch.equal(out["lm_head.weight"], out["transformer.wte.weight"]):
            raise SystemExit("lm_head.weight and transformer.wte.weight differ: amptrain's GPT ties them")
        del out["lm_head.weight"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ckpt")
    ap.add_argument("out")
    args = ap.parse_args()
    ck = torch.load(args.ckpt, map_location="cpu", weights_only=True)
    state = ck["model"] if "model" in ck else ck
    tensors = convert(state)
    save_file(tensors, args.out, metadata={"format": "pt"})
    margs = ck.get("model_args", {})
    print(f"{args.out}: {len(tensors)} tensors")
    if margs:
        print("[model]\nname = gpt")
        for k in ("n_layer", "n_head", "n_embd", "block_size", "bias"):
            if k in margs:
                v = margs[k]
                print(f"{k} = {str(v).lower() if isinstance(v, bool) else v}")


if __name__ == "__main__":
    main()
