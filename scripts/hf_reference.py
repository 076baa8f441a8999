#!/usr/bin/env python3
"""Writes the Hugging Face GPT-2 fixtures that tests/test_hf_gpt2.c reads:
a tiny random GPT2LMHeadModel made from a GPT2Config (nothing is downloaded),
saved with save_pretrained, and what transformers computes with it.

Run by hand, never by CI, in a venv with PyPI's packages:

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch transformers safetensors numpy
    /tmp/hfvenv/bin/python scripts/hf_reference.py [--out tests/data]

and, to check `amptrain export` (a run of two steps from hf_gpt2, exported):

    build/amptrain train tests/bad_inputs/base_hf.ini --set model.init="$PWD/tests/data/hf_gpt2" \
        --set train.steps=2 --out /tmp/hf_run
    build/amptrain export /tmp/hf_run --hf tests/data/hf_gpt2_exported
    /tmp/hfvenv/bin/python scripts/hf_reference.py --check-export tests/data/hf_gpt2_exported

which loads the folder with GPT2LMHeadModel.from_pretrained (refusing any
tensor it would not use or would have to initialise) and writes its logits
on the reference batch to tests/data/hf_gpt2_export_check.safetensors.
The same for a Llama (LlamaForCausalLM, hf_llama_reference's batch, into
tests/data/hf_llama_export_check.safetensors):

    build/amptrain train tests/bad_inputs/base_hf.ini --set model.init="$PWD/tests/data/hf_llama" \
        --set train.steps=2 --out /tmp/hf_llama_run
    build/amptrain export /tmp/hf_llama_run --hf tests/data/hf_llama_exported
    /tmp/hfvenv/bin/python scripts/hf_reference.py --check-export tests/data/hf_llama_exported

With --llama it writes only hf_llama/ (a tiny random LlamaForCausalLM:
2 layers, 64 wide, 4 heads with 2 key/value heads (GQA), RoPE, SwiGLU
with intermediate 128, an untied head, max_position_embeddings 32,
vocabulary 65, the RMSNorm weights moved off 1) and
hf_llama_reference.safetensors (the same contents as GPT-2's below, with
Llama's names), which tests/test_hf_llama.c reads.

It writes, under --out:
  - hf_gpt2/: config.json + model.safetensors (F32), as save_pretrained
    writes them: 2 layers, 4 heads, 64 wide, n_positions 32, vocab 65 (the
    size of the shipped tinyshakespeare's character set, so `amptrain train`
    runs it on that data), gelu_new, dropout 0. The LayerNorm weights and
    every bias are moved off their init (1 and 0) so that loading them is
    tested too.
  - hf_gpt2_sharded/: the same weights rounded to BF16 in two shards with
    model.safetensors.index.json, their names under torch.compile's
    `_orig_mod.` prefix, and each block's attn.bias / attn.masked_bias
    causal-mask buffers that older files carry.
  - hf_gpt2_reference.safetensors: the batch ref.x, ref.y [2, 32] (token ids as F32,
    exact), the FP32 logits [2, 32, 65], the mean cross-entropy loss,
    every parameter's gradient ("grad.<name>", transformers' names and
    layouts: Conv1D weights [in, out]), and after one torch.optim.AdamW step
    (lr 1e-3, betas 0.9/0.99, eps 1e-8, weight decay 0.1 on the 2-D tensors
    only, nanoGPT's grouping) every weight ("after.<name>"; it started from
    hf_gpt2/model.safetensors) and the loss on the same batch ("after.loss").
"""
import argparse
import json
import os
import shutil

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

SEED, B, T, V = 1234, 2, 32, 65
LR, BETAS, EPS, WD = 1e-3, (0.9, 0.99), 1e-8, 0.1


def make_model():
    torch.manual_seed(SEED)
    cfg = GPT2Config(vocab_size=V, n_positions=T, n_embd=64, n_layer=2, n_head=4,
                     activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0)
    model = GPT2LMHeadModel(cfg).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model


def make_llama():
    """A tiny random Llama: GQA (4 heads, 2 key/value heads), RoPE, SwiGLU,
    an untied head; the RMSNorm weights moved off their init (1)."""
    torch.manual_seed(SEED)
    cfg = LlamaConfig(vocab_size=V, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                      hidden_act="silu", attention_bias=False, mlp_bias=False)
    model = LlamaForCausalLM(cfg).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model


def reference(model, path):
    """The batch, logits, loss, gradients and one AdamW step of model into path."""
    model.train()  # dropout is 0: train and eval compute the same
    g = torch.Generator().manual_seed(SEED + 1)
    tok = torch.randint(0, V, (B, T + 1), generator=g)
    x, y = tok[:, :T], tok[:, 1:]
    params = dict(model.named_parameters())
    start = {n: p.detach().clone() for n, p in params.items()}
    logits = model(x).logits
    loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
    loss.backward()
    out = {"ref.x": x.float(), "ref.y": y.float(), "logits": logits.detach().contiguous(),
           "loss": loss.detach().reshape(1)}
    # a tied lm_head.weight is the embedding: one gradient, under the embedding's name
    for n, p in params.items():
        out["grad." + n] = p.grad.detach().clone().contiguous()
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=LR, betas=BETAS, eps=EPS)
    opt.step()
    with torch.no_grad():
        after = model(x).logits
        out["after.loss"] = F.cross_entropy(after.reshape(-1, V), y.reshape(-1)).reshape(1)
    for n, p in params.items():
        out["after." + n] = p.detach().clone().contiguous()
        assert not torch.equal(out["after." + n], start[n]), n
    save_file(out, path, metadata={"script": "scripts/hf_reference.py", "torch": torch.__version__})
    print(f"{path}: loss {loss.item():.7f}, after one AdamW step {out['after.loss'].item():.7f}")


def llama(out):
    folder = os.path.join(out, "hf_llama")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    make_llama().save_pretrained(folder, safe_serialization=True)
    model = LlamaForCausalLM.from_pretrained(folder).float()
    reference(model, os.path.join(out, "hf_llama_reference.safetensors"))


def sharded_copy(src, dst):
    """src's weights as BF16 in two shards, names prefixed, mask buffers added."""
    tensors = load_file(os.path.join(src, "model.safetensors"))
    names = sorted(tensors)
    half = len(names) // 2
    weight_map = {}
    n_layer = json.load(open(os.path.join(src, "config.json")))["n_layer"]
    for k, part in enumerate((names[:half], names[half:])):
        fname = f"model-{k + 1:05d}-of-00002.safetensors"
        out = {"_orig_mod." + n: tensors[n].to(torch.bfloat16).contiguous() for n in part}
        if k == 1:
            for i in range(n_layer):
                mask = torch.tril(torch.ones(T, T)).view(1, 1, T, T).to(torch.bfloat16)
                out[f"_orig_mod.transformer.h.{i}.attn.bias"] = mask
                out[f"_orig_mod.transformer.h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
        save_file(out, os.path.join(dst, fname), metadata={"format": "pt"})
        weight_map.update({n: fname for n in out})
    with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
    shutil.copy(os.path.join(src, "config.json"), os.path.join(dst, "config.json"))


def check_export(folder, out):
    """Loads an `amptrain export --hf` folder with from_pretrained (refusing
    any tensor it would not use or would have to initialise) and writes its
    logits on the reference batch of the same model_type."""
    kind = json.load(open(os.path.join(folder, "config.json")))["model_type"]
    cls = {"gpt2": GPT2LMHeadModel, "llama": LlamaForCausalLM}[kind]
    model, info = cls.from_pretrained(folder, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    assert not bad, f"from_pretrained({folder}): {bad}"
    ref = load_file(os.path.join(out, f"hf_{kind}_reference.safetensors"))
    x = ref["ref.x"].long()
    with torch.no_grad():
        logits = model.float().eval()(x).logits.contiguous()
    save_file({"ref.x": ref["ref.x"], "ref.y": ref["ref.y"], "logits": logits},
              os.path.join(out, f"hf_{kind}_export_check.safetensors"),
              metadata={"script": "scripts/hf_reference.py --check-export", "folder": folder})
    print(f"{folder}: {cls.__name__}.from_pretrained loaded it with nothing missing or unused; "
          f"logits written to hf_{kind}_export_check.safetensors")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/data")
    ap.add_argument("--check-export", metavar="DIR")
    ap.add_argument("--llama", action="store_true", help="write hf_llama/ and its reference only")
    args = ap.parse_args()
    if args.llama:
        llama(args.out)
        return
    if args.check_export:
        check_export(args.check_export, args.out)
        return
    folder = os.path.join(args.out, "hf_gpt2")
    sharded = os.path.join(args.out, "hf_gpt2_sharded")
    for d in (folder, sharded):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    model = make_model()
    model.save_pretrained(folder, safe_serialization=True)
    sharded_copy(folder, sharded)
    # the folder as from_pretrained reads it back: what the test loads
    model = GPT2LMHeadModel.from_pretrained(folder).float()
    reference(model, os.path.join(args.out, "hf_gpt2_reference.safetensors"))

if __name__ == "__main__":
    main()
