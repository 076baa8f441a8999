#!/usr/bin/env python3
"""train_compare.py MODE REF MODEL ...: an amptrain run of a Hugging Face
fixture against scripts/hf_train_reference.py's tests/data/hf_train_reference.json
(Python's standard library only). Exit 1 with the failures named.

  fp32 REF MODEL METRICS EXPORTED: the 20 losses of metrics.jsonl and the
      weights of the run's `export --hf` folder (model.safetensors) against
      the FP64 PyTorch run of the same steps:
        - every step's loss within 1e-4 relative (the issue's bound).
          FP32 rounding alone moves these 20 steps by about 1.5e-7
          relative (PyTorch FP32 against FP64: loss_fp32_vs_fp64 in REF);
          amptrain sums in another order (its GEMMs, whichever kernels
          OpenBLAS picks for the CPU), a difference of that size (measured
          4.3e-8), so the bound holds on every CPU by a wide margin;
        - each tensor's sampled values within 1e-4 of its largest |value|
          plus 10 times the largest |FP32 - FP64| PyTorch's own FP32 run
          showed on that tensor (AdamW divides by sqrt(v): a weight whose
          gradients are near 0 moves by up to lr with the rounding of
          those gradients, so the measured FP32 spread is part of the
          bound), and its L2 norm within 1e-5 relative (measured at most
          3.8e-7). Measured: the closest tensor at 0.04 of its bound. The
          weights are what catches
          a wrong RoPE: with its frequencies halved the losses stayed
          within 7.8e-5 and the weights missed by up to 1,300 times the
          bound; RMSNorm dividing by C - 1 missed the losses from step 3.
  bf16 REF MODEL METRICS BEFORE AFTER: one SGD step at lr 1 under the bf16
      policy, its weights read as gradients (BEFORE - AFTER, both
      model.safetensors files; w - g rounds once in FP32), against
      PyTorch's gradients of the same batch under torch.autocast("cpu",
      torch.bfloat16) with transformers' LlamaForCausalLM (REF's "bf16"):
        - the step's loss within 1e-4 relative of autocast's, and each
          tensor's sampled gradients within 0.02 of its largest |autocast
          gradient|: the GPT autocast reference's bounds (the GEMMs sum in
          another order, so a value may round to the neighbouring bf16).
          Measured 1.4e-5 and 0.006. The rounding points are not all the
          same: transformers rounds SwiGLU's silu(gate) and its product
          separately (amptrain's op rounds h once) and its CPU attention
          keeps the scores in FP32 (amptrain rounds q k^T and the
          probabilities to bf16, as the GPT reference does), so the values
          agree only to bf16's noise;
        - and, since at this size FP32's gradients also lie within those
          bounds, that the rounding is there at autocast's strength: over
          all samples the root-mean-square distance of amptrain's gradients
          to autocast's FP32 ones is between 0.5 and 2 times the distance
          of autocast's bf16 gradients to its FP32 ones (an FP32 step is at
          0.0004 of it, a step rounding far more or far less misses).
"""
import json
import math
import struct
import sys


def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    out = {}
    for k, v in h.items():
        if v["dtype"] != "F32":
            sys.exit(f"{path}: {k} is {v['dtype']}, not F32")
        lo, hi = v["data_offsets"]
        out[k] = struct.unpack("<%df" % ((hi - lo) // 4), b[8 + n + lo:8 + n + hi])
    return out


def fp32(ref, metrics, exported):
    bad = []
    losses = [json.loads(l) for l in open(metrics)]
    losses = [r["loss"] for r in losses if "loss" in r]
    want = ref["fp64"]["loss"]
    if len(losses) != len(want):
        sys.exit(f"{metrics}: {len(losses)} step losses, the reference has {len(want)}")
    rel = [abs(a - b) / abs(b) for a, b in zip(losses, want)]
    worst = max(range(len(rel)), key=lambda i: rel[i])
    print(f"losses: max relative difference to FP64 {rel[worst]:.3g} at step {worst + 1} "
          f"(PyTorch FP32: {ref['loss_fp32_vs_fp64']:.3g}); step {len(want)}: {losses[-1]:.7f}, "
          f"FP64 {want[-1]:.7f}")
    bad += [f"step {i + 1}: loss {losses[i]:.9f}, FP64 {want[i]:.9f} (rel {rel[i]:.3g} > 1e-4)"
            for i in range(len(rel)) if rel[i] > 1e-4]
    w = load(exported)
    worst_w = (0.0, "")
    for name, r in ref["weights"].items():
        if name not in w:
            if name == "lm_head.weight" and "lm_head.weight" not in w:  # tied: stored once
                continue
            bad.append(f"{exported}: no {name}")
            continue
        got = w[name]
        tol = 1e-4 * r["max_abs"] + 10 * r["fp32_vs_fp64"]
        d = max(abs(got[i] - v) for i, v in zip(r["index"], r["values"]))
        if d / tol > worst_w[0]:
            worst_w = (d / tol, name)
        if d > tol:
            bad.append(f"{name}: sampled weights {d:.3g} from FP64 (bound {tol:.3g})")
        l2 = math.sqrt(sum(x * x for x in got))
        if abs(l2 - r["l2"]) > 1e-5 * r["l2"]:
            bad.append(f"{name}: L2 norm {l2:.9g}, FP64 {r['l2']:.9g} (rel {abs(l2 - r['l2']) / r['l2']:.3g})")
    print(f"weights: {len(ref['weights'])} tensors, the closest to its bound at {worst_w[0]:.3g} of it "
          f"({worst_w[1]})")
    return bad


def bf16(ref, metrics, before, after):
    bad = []
    r16 = ref["bf16"]
    loss = [json.loads(l) for l in open(metrics)]
    loss = [r["loss"] for r in loss if "loss" in r][0]
    rel = abs(loss - r16["loss"]) / r16["loss"]
    if rel > 1e-4:
        bad.append(f"loss {loss:.9f}, autocast {r16['loss']:.9f} (rel {rel:.3g} > 1e-4)")
    w0, w1 = load(before), load(after)
    sf = sa = 0.0
    count = 0
    worst = (0.0, "")
    for name, r in r16["grads"].items():
        g = [w0[name][i] - w1[name][i] for i in r["index"]]
        d = max(abs(a - b) for a, b in zip(g, r["bf16"]))
        if d / r["max_abs"] > worst[0]:
            worst = (d / r["max_abs"], name)
        if d > 0.02 * r["max_abs"]:
            bad.append(f"{name}: gradients {d:.3g} from autocast's (bound {0.02 * r['max_abs']:.3g})")
        sf += sum((a - b) ** 2 for a, b in zip(g, r["fp32"]))
        sa += sum((a - b) ** 2 for a, b in zip(r["bf16"], r["fp32"]))
        count += len(g)
    rf, ra = math.sqrt(sf / count), math.sqrt(sa / count)
    print(f"bf16 step: loss {loss:.7f}, autocast {r16['loss']:.7f} (rel {rel:.3g}); gradients at most "
          f"{worst[0]:.3g} of a tensor's largest from autocast's ({worst[1]}); rms distance to FP32's "
          f"gradients {rf:.3g}, autocast's own {ra:.3g} (ratio {rf / ra:.3g})")
    if not 0.5 * ra <= rf <= 2 * ra:
        bad.append(f"rms distance to FP32's gradients {rf:.3g} is not within 0.5-2 times autocast's "
                   f"own ({ra:.3g}): the bf16 rounding is not where autocast's is")
    return bad


def main():
    mode, ref_path, model = sys.argv[1:4]
    ref = json.load(open(ref_path))["models"][model]
    bad = fp32(ref, *sys.argv[4:6]) if mode == "fp32" else bf16(ref, *sys.argv[4:7])
    for b in bad:
        print(f"FAIL {model} {mode}: {b}", file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
