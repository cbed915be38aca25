#!/usr/bin/env python3
"""Random differential cases for wgrad's optimizers, LR schedulers and the
16-bit dtypes vs PyTorch. Writes JSON lines for train_diff.rs.

    gen_train.py SEED N OUT [kinds]    kinds: optim,sched,half,cast,promote
"""
import json, math, random, sys, warnings
import numpy as np
import torch

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 0
N = int(sys.argv[2]) if len(sys.argv) > 2 else 300
OUT = sys.argv[3] if len(sys.argv) > 3 else "/tmp/pytorch_diff/train.jsonl"
ONLY = sys.argv[4].split(",") if len(sys.argv) > 4 and sys.argv[4] else None
R = random.Random(SEED)
NP = np.random.default_rng(SEED)
TD = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32, "bool": torch.bool}
TN = {v: k for k, v in TD.items()}
TN[torch.int64] = "i32"  # wgrad has no int64: PyTorch's int64 results are wgrad's I32


def hexf(a):
    return np.ascontiguousarray(np.asarray(a, dtype="<f4")).tobytes().hex()


def enc(t):
    """A tensor as {dtype, shape, data}: f32/i32 as 4-byte words, halves as their bits."""
    t = t.detach()
    dt = TN[t.dtype]
    if dt in ("f16", "bf16"):
        data = t.contiguous().view(torch.int16).numpy().astype("<i2").tobytes().hex()
    elif dt == "f32":
        data = hexf(t.numpy())
    else:
        data = np.ascontiguousarray(t.to(torch.int32).numpy().astype("<i4")).tobytes().hex()
    return {"dtype": dt, "shape": list(t.shape), "data": data}


def rshape(rmax=3):
    return [R.choice([1, 2, 3, 4, 5, 7]) for _ in range(R.randint(0, rmax))]


# ---------------------------------------------------------------- optimizers

def optim_cfg(opt):
    if opt == "sgd":
        m = R.choice([0.0, 0.0, 0.9, 0.5])
        nest = m > 0 and R.random() < 0.35
        return {"lr": R.choice([0.1, 0.05, 0.01, 1e-3]), "momentum": m,
                "dampening": 0.0 if nest else R.choice([0.0, 0.0, 0.1, 0.5]), "nesterov": nest,
                "weight_decay": R.choice([0.0, 0.0, 1e-2, 0.1]), "maximize": R.random() < 0.2}
    if opt in ("adam", "adamw"):
        return {"lr": R.choice([1e-3, 1e-2, 0.1]),
                "betas": R.choice([[0.9, 0.999], [0.8, 0.99], [0.5, 0.9], [0.0, 0.99], [0.9, 0.9]]),
                "eps": R.choice([1e-8, 1e-6, 1e-3]),
                "weight_decay": R.choice([0.0, 1e-2, 0.1]) if opt == "adam" or R.random() < 0.7 else 1e-2,
                "amsgrad": R.random() < 0.35, "maximize": R.random() < 0.2}
    if opt == "rmsprop":
        return {"lr": R.choice([1e-2, 1e-3, 0.05]), "alpha": R.choice([0.99, 0.9, 0.5]),
                "eps": R.choice([1e-8, 1e-6, 1e-3]), "weight_decay": R.choice([0.0, 0.0, 1e-2, 0.1]),
                "momentum": R.choice([0.0, 0.0, 0.9, 0.5]), "centered": R.random() < 0.4,
                "maximize": R.random() < 0.2}
    return {"lr": R.choice([0.01, 0.1, 0.5]), "lr_decay": R.choice([0.0, 0.0, 1e-3, 0.1]),
            "weight_decay": R.choice([0.0, 0.0, 1e-2, 0.1]),
            "initial_accumulator_value": R.choice([0.0, 0.0, 0.1, 1.0]),
            "eps": R.choice([1e-10, 1e-6, 1e-3]), "maximize": R.random() < 0.2}


def torch_opt(opt, groups):
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
           "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad}[opt]
    pg = []
    for params, cfg in groups:
        c = dict(cfg)
        if "betas" in c:
            c["betas"] = tuple(c["betas"])
        pg.append({"params": params, **c})
    kw = {"initial_accumulator_value": groups[0][1]["initial_accumulator_value"]} if opt == "adagrad" else {}
    return cls(pg, foreach=False, **kw)


def g_optim():
    opt = R.choice(["sgd", "adam", "adamw", "rmsprop", "adagrad"])
    n = R.randint(1, 5)
    shapes = [rshape() for _ in range(n)]
    ps = [torch.tensor(NP.standard_normal(s).astype(np.float32)).requires_grad_(True) for s in shapes]
    # groups: consecutive runs of parameters, each with its own settings
    cuts = sorted(R.sample(range(1, n), R.randint(0, min(2, n - 1)))) if n > 1 else []
    bounds = [0] + cuts + [n]
    base = optim_cfg(opt)
    groups = []
    for a, b in zip(bounds, bounds[1:]):
        cfg = dict(base)
        if groups:  # later groups differ in lr / weight_decay (or everything)
            other = optim_cfg(opt)
            for k in ("lr", "weight_decay") if R.random() < 0.6 else other:
                cfg[k] = other[k]
        if opt == "adagrad":
            # torch.optim.Adagrad fills its state in __init__ from the constructor's
            # initial_accumulator_value, ignoring a group's own value
            cfg["initial_accumulator_value"] = base["initial_accumulator_value"]
        groups.append((list(range(a, b)), cfg))
    o = torch_opt(opt, [([ps[i] for i in idx], cfg) for idx, cfg in groups])
    steps = R.randint(20, 50)
    scale = R.choice([1.0, 1.0, 1e-3, 100.0])
    lr_change = R.randint(1, steps - 1) if R.random() < 0.3 else None
    sd_at = R.randint(1, steps - 1) if R.random() < 0.4 else None
    case = {"opt": opt, "groups": [{"params": idx, "cfg": cfg} for idx, cfg in groups],
            "params": [enc(p) for p in ps], "lr_change": lr_change, "sd_at": sd_at,
            "grads": [], "expect": []}
    for s in range(steps):
        if s == lr_change:
            for g in o.param_groups:
                g["lr"] *= 0.5
        grads = []
        for p in ps:
            if R.random() < 0.06:
                p.grad = None
                grads.append(None)
            else:
                g = torch.tensor((NP.standard_normal(list(p.shape)) * scale).astype(np.float32))
                if R.random() < 0.05 and g.numel():
                    g.view(-1)[0] = 0.0
                p.grad = g
                grads.append(hexf(g.numpy()))
        o.step()
        case["grads"].append(grads)
        case["expect"].append([hexf(p.detach().numpy()) for p in ps])
    return case


# ---------------------------------------------------------------- schedulers

LAMBDAS = {"pow95": lambda e: 0.95 ** e, "inv": lambda e: 1.0 / (e + 1),
           "warm10": lambda e: min(1.0, (e + 1) / 10), "step3": lambda e: 0.5 ** (e // 3)}


def rand_sched(steps, allow_combo=True):
    S = torch.optim.lr_scheduler
    k = R.choice(["step", "multistep", "exp", "cosine", "warm_restarts", "lambda", "linear",
                  "onecycle", "plateau"] + (["sequential", "chained"] if allow_combo else []))
    if k == "step":
        a = {"step_size": R.randint(1, 30), "gamma": R.choice([0.1, 0.5, 0.9])}
        return k, a, lambda o: S.StepLR(o, a["step_size"], a["gamma"])
    if k == "multistep":
        a = {"milestones": sorted(R.sample(range(1, steps), R.randint(1, 4))), "gamma": R.choice([0.1, 0.5, 0.3])}
        if R.random() < 0.2:
            a["milestones"].append(a["milestones"][-1])  # a repeated milestone
        return k, a, lambda o: S.MultiStepLR(o, a["milestones"], a["gamma"])
    if k == "exp":
        a = {"gamma": R.choice([0.9, 0.95, 0.99, 0.5])}
        return k, a, lambda o: S.ExponentialLR(o, a["gamma"])
    if k == "cosine":
        a = {"t_max": R.randint(1, steps + 20), "eta_min": R.choice([0.0, 0.0, 1e-3, 0.01])}
        return k, a, lambda o: S.CosineAnnealingLR(o, a["t_max"], a["eta_min"])
    if k == "warm_restarts":
        a = {"t_0": R.randint(1, 30), "t_mult": R.choice([1, 1, 2, 3]), "eta_min": R.choice([0.0, 1e-3])}
        return k, a, lambda o: S.CosineAnnealingWarmRestarts(o, a["t_0"], a["t_mult"], a["eta_min"])
    if k == "lambda":
        a = {"fn": R.choice(list(LAMBDAS))}
        return k, a, lambda o: S.LambdaLR(o, LAMBDAS[a["fn"]])
    if k == "linear":
        a = {"start_factor": R.choice([1.0 / 3, 0.1, 0.5, 1.0]), "end_factor": R.choice([1.0, 0.5, 0.0, 0.2]),
             "total_iters": R.randint(1, 40)}
        return k, a, lambda o: S.LinearLR(o, a["start_factor"], a["end_factor"], a["total_iters"])
    if k == "onecycle":
        a = {"max_lr": R.choice([0.1, 1.0, 0.01]), "total_steps": steps + 1, "pct_start": R.choice([0.3, 0.1, 0.5, 0.25]),
             "anneal": R.choice(["cos", "linear"]), "three_phase": R.random() < 0.4,
             "div_factor": R.choice([25.0, 10.0]), "final_div_factor": R.choice([1e4, 100.0]),
             "cycle_momentum": R.random() < 0.7, "base_momentum": R.choice([0.85, 0.8]),
             "max_momentum": R.choice([0.95, 0.9])}
        return k, a, lambda o: S.OneCycleLR(o, a["max_lr"], total_steps=a["total_steps"], pct_start=a["pct_start"],
                                            anneal_strategy=a["anneal"], three_phase=a["three_phase"],
                                            div_factor=a["div_factor"], final_div_factor=a["final_div_factor"],
                                            cycle_momentum=a["cycle_momentum"], base_momentum=a["base_momentum"],
                                            max_momentum=a["max_momentum"])
    if k == "plateau":
        a = {"mode": R.choice(["min", "max"]), "factor": R.choice([0.1, 0.5, 0.3]), "patience": R.randint(0, 5),
             "threshold": R.choice([1e-4, 0.01, 0.1, 0.0]), "threshold_mode": R.choice(["rel", "abs"]),
             "cooldown": R.randint(0, 3), "min_lr": R.choice([0.0, 1e-3, 0.02]), "eps": R.choice([1e-8, 1e-3])}
        # metrics that improve, stall and repeat exactly
        m, ms = 10.0, []
        for _ in range(steps):
            r = R.random()
            if r < 0.35:
                m = m - R.choice([1.0, 0.5, 0.01, 0.001]) * (1 if a["mode"] == "min" else -1)
            elif r < 0.5:
                m = m + R.choice([1.0, 0.1])
            elif r < 0.55:
                m = m * (1 - 1e-5)
            ms.append(round(m, 6))
        a["metrics"] = ms
        return k, a, lambda o: S.ReduceLROnPlateau(o, a["mode"], a["factor"], a["patience"], a["threshold"],
                                                   a["threshold_mode"], a["cooldown"], a["min_lr"], a["eps"])
    subs, makers = [], []
    for _ in range(R.randint(2, 3)):
        while True:
            sk, sa, sm = rand_sched(steps, allow_combo=False)
            if sk not in ("plateau", "onecycle"):
                break
        subs.append({"kind": sk, "args": sa})
        makers.append(sm)
    if k == "sequential":
        a = {"subs": subs, "milestones": sorted(R.sample(range(1, steps), len(subs) - 1))}
        return k, a, lambda o: S.SequentialLR(o, [m(o) for m in makers], a["milestones"])
    a = {"subs": subs}
    return k, a, lambda o: S.ChainedScheduler([m(o) for m in makers])


def g_sched():
    steps = R.choice([100, 100, 60, 30])
    k, a, make = rand_sched(steps)
    opt = R.choice(["sgd", "adam"])
    lrs = R.sample([0.1, 0.05, 1.0, 0.01, 0.3], R.randint(1, 2))
    p = [torch.zeros(1, requires_grad=True) for _ in lrs]
    if opt == "sgd":
        o = torch.optim.SGD([{"params": [q], "lr": lr} for q, lr in zip(p, lrs)], momentum=0.9)
    else:
        o = torch.optim.Adam([{"params": [q], "lr": lr} for q, lr in zip(p, lrs)])
    s = make(o)
    mom = lambda: [g["momentum"] if opt == "sgd" else g["betas"][0] for g in o.param_groups]
    out_l, out_m = [[g["lr"] for g in o.param_groups]], [mom()]
    for i in range(steps):
        o.step()
        if k == "plateau":
            s.step(a["metrics"][i])
        else:
            s.step()
        out_l.append([g["lr"] for g in o.param_groups])
        out_m.append(mom())
    return {"sched": k, "args": a, "opt": opt, "lrs": lrs, "steps": steps, "expect_lr": out_l, "expect_mom": out_m}


# ---------------------------------------------------------------- 16-bit dtypes

BIN = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
       "minimum": torch.minimum, "pow": torch.pow}
UN = {"exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
      "relu": torch.relu, "gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu, "sin": torch.sin,
      "neg": torch.neg, "abs": torch.abs, "recip": torch.reciprocal, "rsqrt": torch.rsqrt, "erf": torch.erf,
      "square": torch.square, "expm1": torch.expm1, "log1p": torch.log1p}
RED = ["sum", "mean", "amax", "amin", "softmax", "log_softmax", "logsumexp", "var", "norm", "cumsum", "prod"]


def rand_half(shape, dt, scale=1.0, positive=False):
    a = NP.standard_normal(shape).astype(np.float32) * scale
    if positive:
        a = np.abs(a) + 0.05
    return torch.tensor(a).to(TD[dt])


def g_half():
    dt = R.choice(["f16", "bf16"])
    fam = R.choice(["binary", "unary", "unary", "reduce", "matmul", "scalar", "zerod"])
    if fam == "binary":
        name = R.choice(list(BIN))
        s = rshape()
        s2 = [1 if R.random() < 0.3 else d for d in s]
        a = rand_half(s, dt, positive=name == "pow")
        b = rand_half(s2, dt, scale=R.choice([1.0, 100.0]) if name != "pow" else 1.0)
        if R.random() < 0.5:
            a, b = a.requires_grad_(), b.requires_grad_()
        out = BIN[name](a, b)
        ins = [a, b]
        p = {"op": name}
    elif fam == "scalar":  # Python numbers, on either side (Python's operators)
        name = R.choice(["add", "sub", "mul", "div", "pow"])
        sc = R.choice([0.1, 3.0, 1.0 / 3, 1000.0, 2.5, 1.2345678])
        left = R.random() < 0.5
        a = rand_half(rshape(), dt, positive=name == "pow").requires_grad_()
        f = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
             "div": lambda x, y: x / y, "pow": lambda x, y: x ** y}[name]
        out = f(sc, a) if left else f(a, sc)
        ins, p = [a], {"op": name, "scalar": sc, "left": left}
    elif fam == "zerod":  # a 0-d tensor of another dtype with a half tensor
        name = R.choice(["add", "sub", "mul", "div", "maximum", "minimum", "pow", "lt", "eq"])
        zdt = R.choice(["f32", "f32", "i32", "f16" if dt == "bf16" else "bf16"])
        v = R.choice([1.2345678, 4.0653, 1000.3, 0.1, 3.0])
        z = torch.tensor(int(v * 10) if zdt == "i32" else v).to(TD[zdt])
        a = rand_half(rshape(), dt, scale=R.choice([1.0, 1000.0]), positive=name == "pow")
        left = R.random() < 0.5
        f = dict(BIN, lt=torch.lt, eq=torch.eq)[name]
        out = f(z, a) if left else f(a, z)
        ins, p = ([z, a] if left else [a, z]), {"op": name}
    elif fam == "unary":
        name = R.choice(list(UN))
        pos = name in ("log", "sqrt", "rsqrt", "log1p")
        a = rand_half(rshape(), dt, scale=R.choice([1.0, 4.0]), positive=pos).requires_grad_()
        out, ins, p = UN[name](a), [a], {"op": name}
    elif fam == "reduce":
        name = R.choice(RED)
        s = rshape() or [3]
        s = [max(d, 1) for d in s]
        a = rand_half(s, dt, scale=0.5 if name == "prod" else R.choice([1.0, 10.0])).requires_grad_()
        dim = R.randrange(len(s))
        keep = R.random() < 0.3
        f = {"sum": lambda x: x.sum(dim, keepdim=keep), "mean": lambda x: x.mean(dim, keepdim=keep),
             "amax": lambda x: x.amax(dim, keepdim=keep), "amin": lambda x: x.amin(dim, keepdim=keep),
             "softmax": lambda x: x.softmax(dim), "log_softmax": lambda x: x.log_softmax(dim),
             "logsumexp": lambda x: x.logsumexp(dim, keepdim=keep), "var": lambda x: x.var(dim, keepdim=keep),
             "norm": lambda x: torch.linalg.vector_norm(x, 2, dim, keepdim=keep),
             "cumsum": lambda x: x.cumsum(dim), "prod": lambda x: x.prod(dim, keepdim=keep)}[name]
        out, ins, p = f(a), [a], {"op": name, "dim": dim, "keep": keep}
    else:
        m, k, n = R.randint(1, 9), R.randint(1, 40), R.randint(1, 9)
        batch = [R.randint(1, 3)] if R.random() < 0.3 else []
        a = rand_half(batch + [m, k], dt).requires_grad_()
        b = rand_half([k, n], dt).requires_grad_()
        out, ins, p = a @ b, [a, b], {"op": "matmul"}
    case = {"fam": fam, "dtype": dt, "p": p, "inputs": [enc(t) for t in ins], "out": enc(out)}
    leaves = [t for t in ins if t.requires_grad]
    if fam == "zerod":
        leaves = []
    if leaves and out.requires_grad:
        up = rand_half(list(out.shape), dt)
        gs = torch.autograd.grad(out, leaves, up, allow_unused=True)
        case["upstream"] = enc(up)
        case["grads"] = [enc(g) for g in gs]
    return case


SPECIAL = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 65504.0, 65519.0, 65520.0, 70000.0, -70000.0,
           6e-8, 3e-8, 1e-8, 1e-40, 1.00048828125, 1.000244140625, 1.00390625, 1.001953125, 3.4e38, -3.4e38,
           2049.0, 4097.0, 16777217.0, 0.5, -2.5, 1e5, 123456.789]


def g_cast():
    src = R.choice(["f32", "f16", "bf16", "i32", "bool"])
    dst = R.choice([d for d in ["f32", "f16", "bf16", "i32", "bool"] if d != src])
    n = R.randint(1, 30)
    if src == "bool":
        x = torch.tensor(NP.random(n) < 0.5)
    elif src == "i32":
        x = torch.tensor(NP.integers(-70000, 70000, n).astype(np.int32))
        x[: min(3, n)] = torch.tensor([2049, 65519, 16777217][: min(3, n)], dtype=torch.int32)
    else:
        v = [R.choice(SPECIAL) if R.random() < 0.5 else float(NP.standard_normal() * R.choice([1, 100, 1e5]))
             for _ in range(n)]
        x = torch.tensor(v, dtype=torch.float32).to(TD[src])
        if dst == "i32":  # out of range / NaN -> int is undefined behaviour in C++
            x = torch.where(x.float().abs() < 2e9, x, torch.zeros_like(x))
            x = torch.where(torch.isfinite(x), x, torch.zeros_like(x))
    return {"src": src, "dst": dst, "x": enc(x), "out": enc(x.to(TD[dst]))}


def g_promote():
    dts = ["f32", "f16", "bf16", "i32", "bool"]
    op = R.choice(["add", "sub", "mul", "div", "maximum", "where"])
    a_dt, b_dt = R.choice(dts), R.choice(dts)
    if op != "where" and a_dt == b_dt == "bool":  # wgrad: no arithmetic between two masks (documented)
        b_dt = "i32"
    if op == "sub" and "bool" in (a_dt, b_dt):
        a_dt = "i32" if a_dt == "bool" else a_dt
        b_dt = "i32" if b_dt == "bool" else b_dt
    scalar = None
    if R.random() < 0.3:
        # (a mask with a whole-number scalar is F32 in wgrad, documented: its
        # f32 scalar can't tell `mask + 2` (int64 in PyTorch) from `mask + 2.0`)
        scalar = R.choice([2, -3, 0.5, 2.5] if a_dt != "bool" else [0.5, 2.5])
        if op == "maximum":  # torch.maximum takes tensors only
            op = "add"
    shapes = [[3], []]
    a_shape = [3] if R.random() < 0.7 else []
    b_shape = [3] if R.random() < 0.7 else []

    def mk(dt, shape):
        if dt == "bool":
            return torch.tensor(NP.random(shape) < 0.5)
        if dt == "i32":
            return torch.tensor(NP.integers(1, 6, shape).astype(np.int32))
        return torch.tensor((NP.standard_normal(shape) + 3).astype(np.float32)).to(TD[dt])
    a = mk(a_dt, a_shape)
    b = mk(b_dt, b_shape) if scalar is None else None
    f = BIN.get(op)
    try:
        if op == "where":
            c = torch.tensor(NP.random([3]) < 0.5)
            out = torch.where(c, a, b if scalar is None else scalar)
            ins = [c, a] + ([b] if scalar is None else [])
        else:
            out = f(a, b if scalar is None else scalar)
            ins = [a] + ([b] if scalar is None else [])
    except Exception as e:
        return {"op": op, "scalar": scalar, "inputs": [enc(t) for t in [a] + ([b] if b is not None else [])],
                "error": f"{type(e).__name__}: {str(e)[:150]}"}
    return {"op": op, "scalar": scalar, "inputs": [enc(t) for t in ins], "out": enc(out)}


GEN = {"optim": (g_optim, 4), "sched": (g_sched, 4), "half": (g_half, 4), "cast": (g_cast, 2), "promote": (g_promote, 2)}


def fix(o):
    if isinstance(o, float) and not math.isfinite(o):
        return "nan" if math.isnan(o) else ("inf" if o > 0 else "-inf")
    if isinstance(o, dict):
        return {k: fix(v) for k, v in o.items()}
    if isinstance(o, list):
        return [fix(v) for v in o]
    return o


def main():
    kinds = [k for k in GEN if ONLY is None or k in ONLY]
    weights = [GEN[k][1] for k in kinds]
    with open(OUT, "w") as fh:
        for cid in range(N):
            kind = R.choices(kinds, weights)[0]
            case = GEN[kind][0]()
            case["id"], case["kind"] = cid, kind
            fh.write(json.dumps(fix(case)) + "\n")


if __name__ == "__main__":
    main()
