#!/usr/bin/env python3
"""PyTorch side of `cargo xtask bench`: the same workloads as wgrad-bench.

Usage: python3 benches/torch_compare.py [--device cuda|cpu] [--json FILE] [--quick] [--compare WGRAD_JSON]
CUDA is used when present (TF32 off, so fp32 matmul is true fp32), else the
CPU. Timing: warm-up, then `repeats` batches of `iters` iterations, each batch
ended by a synchronize; the median batch time / iters is reported, as in
wgrad-bench. With --compare, prints wgrad/PyTorch ratios per row.
"""
import argparse
import json
import statistics
import time

import torch


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device, iters, repeats):
    for _ in range(3):
        fn()
    sync(device)
    batches = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        sync(device)
        batches.append((time.perf_counter() - start) * 1e3 / iters)
    batches.sort()
    return statistics.median(batches), batches[0], batches[-1]


def mlp_step(sizes, batch, device, mode, capturable=False, bf16=False):
    torch.manual_seed(0)
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=capturable)
    x = torch.randn(batch, sizes[0], device=device)
    y = torch.randint(0, sizes[-1], (batch,), device=device)

    def step():
        opt.zero_grad(set_to_none=not capturable)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if mode == "sync":
            loss.item()

    return step


def cnn_model(device):
    """The MNIST tutorial net without dropout (as wgrad-bench's cnn step)."""
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(9216, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10),
    ).to(device)


def cnn_step(batch, device, mode):
    """One training step: mode "eager", "bf16" (autocast eager), "graph"
    (the whole step captured in a CUDA graph) or "capturable" (the step the
    graph captures: capturable Adam, grads zeroed in place)."""
    if mode == "graph":
        return Captured(lambda _capturable: cnn_step(batch, device, "capturable"))
    model = cnn_model(device)
    x = torch.randn(batch, 1, 28, 28, device=device)
    y = torch.arange(batch, device=device) % 10
    capturable = mode.startswith("capturable")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=capturable)

    def step():
        opt.zero_grad(set_to_none=not capturable)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=mode.endswith("bf16")):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return step


class GptBlock(torch.nn.Module):
    """The `gpt` example's pre-norm block (fused causal SDPA, GELU MLP)."""

    def __init__(self, e, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(e)
        self.c_attn = torch.nn.Linear(e, 3 * e)
        self.attn_proj = torch.nn.Linear(e, e)
        self.ln_2 = torch.nn.LayerNorm(e)
        self.c_fc = torch.nn.Linear(e, 4 * e)
        self.mlp_proj = torch.nn.Linear(4 * e, e)

    def forward(self, x):
        b, t, e = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(e, dim=2)
        heads = lambda y: y.view(b, t, self.heads, e // self.heads).transpose(1, 2)
        y = torch.nn.functional.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).reshape(b, t, e))
        return x + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x))))


class Gpt(torch.nn.Module):
    def __init__(self, vocab, block, layers, heads, e):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, e)
        self.wpe = torch.nn.Embedding(block, e)
        self.blocks = torch.nn.ModuleList([GptBlock(e, heads) for _ in range(layers)])
        self.ln_f = torch.nn.LayerNorm(e)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe.weight[:t]
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def gpt_step(device, mode, quick):
    """T2: the `gpt` example's model (vocab 1024, block 256, 4 layers, 6
    heads, 384 features) at batch 32, AdamW with decay / no-decay groups;
    modes as cnn_step."""
    if mode == "graph":
        return Captured(lambda _capturable: gpt_step(device, "capturable", quick))
    if mode == "bf16 graph":
        return Captured(lambda _capturable: gpt_step(device, "capturable bf16", quick))
    batch, (vocab, block, layers, heads, e) = (2, (64, 32, 1, 2, 32)) if quick else (32, (1024, 256, 4, 6, 384))
    torch.manual_seed(0)
    model = Gpt(vocab, block, layers, heads, e).to(device)
    params = list(model.parameters())
    capturable = mode.startswith("capturable")
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), capturable=capturable)
    i = torch.arange(batch * block, device=device)
    x = ((i * 7) % vocab).view(batch, block)
    y = ((i * 7 + 1) % vocab).view(batch, block)

    def step():
        opt.zero_grad(set_to_none=not capturable)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=mode.endswith("bf16")):
            loss = model(x, y)
        loss.backward()
        opt.step()

    return step


class Captured:
    """`make_step(capturable)` -> step fn, captured in a CUDA graph at the
    first call (warm-up on a side stream first, as torch.cuda.graphs
    documents) and replayed after: each graph is made when its workload's
    turn comes, so one graph's set-up never interleaves with another's."""

    def __init__(self, make_step):
        self.make_step = make_step
        self.graph = None

    def __call__(self):
        if self.graph is None:
            step = self.make_step(True)
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(3):
                    step()
            torch.cuda.current_stream().wait_stream(stream)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                step()
        self.graph.replay()


def workloads(device, quick):
    elems = 1 << 20 if quick else 64 << 20
    label = "1M" if quick else "64M"
    a = torch.randn(elems, device=device)
    b = torch.randn(elems, device=device)
    out = [
        (f"add {label} f32", lambda: a + b, 3 * 4 * elems, "GB/s", 20),
        (f"exp {label} f32", lambda: a.exp(), 2 * 4 * elems, "GB/s", 20),
        (f"sum {label} f32", lambda: a.sum(), 4 * elems, "GB/s", 20),
    ]
    rows, cols = (512, 512) if quick else (8192, 4096)
    m = torch.randn(rows, cols, device=device)
    out.append((f"softmax {rows}x{cols}", lambda: torch.softmax(m, -1), 2 * 4 * rows * cols, "GB/s", 20))
    for n in ([256] if quick else [1024, 2048, 4096]):
        x = torch.randn(n, n, device=device)
        y = torch.randn(n, n, device=device)
        out.append((f"matmul {n}", lambda x=x, y=y: x @ y, 2 * n**3, "TFLOP/s", 5 if n >= 4096 else 10))
        if device.type == "cuda":
            for dt, tag in [(torch.float16, "f16"), (torch.bfloat16, "bf16")]:
                xl, yl = x.to(dt), y.to(dt)
                out.append((f"matmul {n} {tag}", lambda x=xl, y=yl: x @ y, 2 * n**3, "TFLOP/s", 5 if n >= 4096 else 10))
    batch = 2 if quick else 32
    for name, cin, cout, size, k, stride, groups in [
        ("conv 64ch 56x56 3x3", 64, 64, 56, 3, 1, 1),
        ("conv 128ch 28x28 3x3", 128, 128, 28, 3, 1, 1),
        ("conv 256ch 14x14 3x3", 256, 256, 14, 3, 1, 1),
        ("conv 256->64 56x56 1x1", 256, 64, 56, 1, 1, 1),
        ("conv 64->128 56x56 3x3 s2", 64, 128, 56, 3, 2, 1),
        ("conv depthwise 256ch 56x56 3x3", 256, 256, 56, 3, 1, 256),
        ("conv depthwise 96ch 56x56 7x7", 96, 96, 56, 7, 1, 96),
    ]:
        size = size // 4 if quick else size
        x = torch.randn(batch, cin, size, size, device=device, requires_grad=True)
        w = torch.randn(cout, cin // groups, k, k, device=device, requires_grad=True)
        out_size = (size + 2 * (k // 2) - k) // stride + 1
        up = torch.randn(batch, cout, out_size, out_size, device=device)
        flops = 2 * batch * cout * out_size * out_size * (cin // groups) * k * k

        def conv_step(x=x, w=w, up=up, stride=stride, pad=k // 2, groups=groups):
            x.grad = None
            w.grad = None
            torch.nn.functional.conv2d(x, w, stride=stride, padding=pad, groups=groups).backward(up)

        out.append((f"{name} fwd+bwd", conv_step, 3 * flops, "TFLOP/s", 10))
    b, h, t, d = (1, 2, 128, 64) if quick else (8, 8, 1024, 64)
    q, k, v = (torch.randn(b, h, t, d, device=device, requires_grad=True) for _ in range(3))
    up = torch.randn(b, h, t, d, device=device)

    def attention_step():
        for x in (q, k, v):
            x.grad = None
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).backward(up)

    # FlashAttention's FLOP convention (as wgrad-bench): 4*B*H*T^2*D forward,
    # halved by the causal mask, x3.5 for forward + backward.
    out.append((f"attention b{b} h{h} t{t} d{d} causal fwd+bwd", attention_step,
                3.5 * 4 * b * h * t * t * d / 2, "TFLOP/s", 10))
    for cnn_batch in [8] if quick else [64, 128]:
        out.append((f"cnn step b{cnn_batch}", cnn_step(cnn_batch, device, "eager"), 0, "ms", 20))
        if device.type == "cuda":
            out.append((f"cnn step b{cnn_batch} graph", cnn_step(cnn_batch, device, "graph"), 0, "ms", 20))
            out.append((f"cnn step b{cnn_batch} bf16", cnn_step(cnn_batch, device, "bf16"), 0, "ms", 20))
    out.append(("T2 gpt step", gpt_step(device, "eager", quick), 0, "ms", 10))
    if device.type == "cuda":
        out.append(("T2 gpt step graph", gpt_step(device, "graph", quick), 0, "ms", 10))
        out.append(("T2 gpt step bf16", gpt_step(device, "bf16", quick), 0, "ms", 10))
        out.append(("T2 gpt step bf16 graph", gpt_step(device, "bf16 graph", quick), 0, "ms", 10))
    for name, sizes, batch in [("W1", [784, 256, 256, 10], 128), ("W2", [784, 1024, 1024, 10], 1024)]:
        for mode in ["async", "sync"]:
            out.append((f"{name} {mode}", mlp_step(sizes, batch, device, mode), 0, "ms", 20))
        if device.type == "cuda":
            graph = Captured(lambda c, sizes=sizes, batch=batch: mlp_step(sizes, batch, device, "async", c))
            out.append((f"{name} graph", graph, 0, "ms", 20))
            out.append((f"{name} bf16", mlp_step(sizes, batch, device, "async", bf16=True), 0, "ms", 20))
            graph = Captured(lambda c, sizes=sizes, batch=batch: mlp_step(sizes, batch, device, "async", c, bf16=True))
            out.append((f"{name} bf16 graph", graph, 0, "ms", 20))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--json")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--compare", help="wgrad-bench JSON to print ratios against")
    p.add_argument("--only", help="run only the workloads whose name contains this")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    name = torch.cuda.get_device_name() if device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    print(f"torch {torch.__version__} on {name}")
    rows = []
    for label, fn, amount, unit, iters in workloads(device, args.quick):
        if args.only and args.only not in label:
            continue
        med, lo, hi = timed(fn, device, iters, args.repeats)
        rate = None
        if unit == "GB/s":
            rate = amount / (med * 1e-3) / 1e9
        elif unit == "TFLOP/s":
            rate = amount / (med * 1e-3) / 1e12
        rows.append({"name": label, "median_ms": med, "min_ms": lo, "max_ms": hi, "rate": rate, "unit": unit})
        rate_s = f"{rate:10.3f} {unit}" if rate is not None else ""
        print(f"{label:<28} {med:>10.4f} ms  (min {lo:.4f}, max {hi:.4f})  {rate_s}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "rows": rows}, f, indent=2)
    if args.compare:
        with open(args.compare) as f:
            ours = {r["name"]: r for r in json.load(f)["rows"]}
        print(f"\n{'workload':<28} {'wgrad ms':>10} {'torch ms':>10} {'wgrad/torch time':>17}")
        for r in rows:
            o = ours.get(r["name"])
            if o:
                print(f"{r['name']:<28} {o['median_ms']:>10.4f} {r['median_ms']:>10.4f} {o['median_ms'] / r['median_ms']:>17.2f}")


if __name__ == "__main__":
    main()
