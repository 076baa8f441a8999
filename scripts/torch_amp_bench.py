#!/usr/bin/env python3
"""PyTorch reference timings for amptrain's bench: one MLP training step
(Linear-ReLU-...-Linear, cross-entropy, SGD with momentum) on CUDA under

  fp32   true FP32 matmuls (TF32 off)
  tf32   FP32 with TF32 tensor-core matmuls
  fp16   torch.autocast(float16) + torch.amp.GradScaler (PyTorch AMP)
  bf16   torch.autocast(bfloat16), no scaler

Reports the median step time over --steps timed steps after --warmup
untimed ones (CUDA events around each step), the GEMM throughput that
implies, and the peak memory (torch.cuda.max_memory_allocated) of each mode,
as one table.

Exit status: 0 ok, 1 runtime failure, 2 usage error, 3 not applicable
(no torch, or torch without a CUDA device).
"""
import argparse
import statistics
import sys


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--features", type=int, default=784)
    p.add_argument("--hidden", default="4096,4096", help="comma-separated widths")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--steps", type=int, default=50, help="timed steps per mode")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    p.add_argument("--modes", default="fp32,tf32,fp16,bf16")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    try:
        a.hidden = [int(w) for w in a.hidden.split(",") if w]
    except ValueError:
        p.error("--hidden: expected comma-separated integers, e.g. 4096,4096")
    if not a.hidden or min(a.hidden) < 1:
        p.error("--hidden: expected at least one positive width")
    a.modes = [m for m in a.modes.split(",") if m]
    for m in a.modes:
        if m not in ("fp32", "tf32", "fp16", "bf16"):
            p.error("--modes: unknown mode %r (fp32, tf32, fp16, bf16)" % m)
    if a.steps < 1 or a.warmup < 0 or a.batch < 1:
        p.error("--steps >= 1, --warmup >= 0, --batch >= 1")
    return a


def gemm_flops(a):
    """Flops of the step's GEMMs: forward, dW for every layer, dX for all but the first."""
    widths = [a.features] + a.hidden + [a.classes]
    fwd = sum(2 * a.batch * i * o for i, o in zip(widths[:-1], widths[1:]))
    dx = sum(2 * a.batch * i * o for i, o in zip(widths[1:-1], widths[2:]))
    return fwd * 2 + dx


def run_mode(torch, a, mode, x, y):
    nn = torch.nn
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    torch.manual_seed(a.seed)
    widths = [a.features] + a.hidden + [a.classes]
    layers = []
    for i, (fi, fo) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(nn.Linear(fi, fo))
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(mode)
    scaler = torch.amp.GradScaler("cuda") if mode == "fp16" else None

    def step():
        opt.zero_grad(set_to_none=True)
        if dtype is not None:
            with torch.autocast("cuda", dtype=dtype):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    loss = None
    for _ in range(a.steps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        loss = step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    peak = torch.cuda.max_memory_allocated()
    final = float(loss.detach().float().item())
    del model, opt, scaler
    torch.cuda.empty_cache()
    return statistics.median(times), min(times), peak, final


def main(argv):
    a = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch_amp_bench: python3 has no torch: skipped", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_amp_bench: torch %s sees no CUDA device: skipped" % torch.__version__,
              file=sys.stderr)
        return 3
    dev = torch.cuda.get_device_name(0)
    g = torch.Generator(device="cuda").manual_seed(a.seed)
    x = torch.randn(a.batch, a.features, device="cuda", generator=g)
    y = torch.randint(0, a.classes, (a.batch,), device="cuda", generator=g)
    flops = gemm_flops(a)
    shape = "-".join(str(w) for w in [a.features] + a.hidden + [a.classes])
    print("PyTorch %s on %s: MLP %s, batch %d, SGD momentum, median of %d steps after %d warm-up"
          % (torch.__version__, dev, shape, a.batch, a.steps, a.warmup))
    print("| %-6s | %14s | %10s | %12s | %13s | %10s |"
          % ("mode", "median ms/step", "min ms", "GEMM TFLOP/s", "peak MiB", "last loss"))
    print("|%s|%s|%s|%s|%s|%s|" % ("-" * 8, "-" * 16 + ":", "-" * 11 + ":", "-" * 13 + ":",
                                   "-" * 14 + ":", "-" * 11 + ":"))
    rc = 0
    for mode in a.modes:
        try:
            med, mn, peak, final = run_mode(torch, a, mode, x, y)
        except RuntimeError as e:  # e.g. out of memory, or bf16 unsupported
            print("| %-6s | failed: %s" % (mode, str(e).splitlines()[0]))
            rc = 1
            continue
        print("| %-6s | %14.3f | %10.3f | %12.2f | %13.1f | %10.4f |"
              % (mode, med, mn, flops / (med * 1e-3) / 1e12, peak / 2**20, final))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
