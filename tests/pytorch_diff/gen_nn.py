#!/usr/bin/env python3
"""Round 3: random cases for the newer nn modules, functions and losses.

SEED N OUT [kinds]; writes JSON lines for nn_diff.rs. Reuses gen.py's
inputs (hex floats, views, specials). A case may carry module parameters
("params": name -> spec, loaded into wgrad by name) whose gradients are
compared too ("pgrads").
"""
import json, math, os, sys, warnings
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen as G  # noqa: E402  (same argv: SEED N OUT [kinds])

warnings.filterwarnings("ignore")
torch.set_num_threads(1)
R, NP, Inp, fi, hexf, hexi, rshape, fix = G.R, G.NP, G.Inp, G.fi, G.hexf, G.hexi, G.rshape, G.fix
SEED, N, OUT = G.SEED, G.N, G.OUT
ONLY = sys.argv[4].split(",") if len(sys.argv) > 4 and sys.argv[4] else None
BAD = 0.08  # share of cases given a bad argument on purpose


def bad():
    return R.random() < BAD


def kinks(inp, vals, p=0.25):
    """Sets random elements of an f32 input to the given kink values."""
    flat = inp.arr.reshape(-1)
    for i in range(flat.size):
        if R.random() < p:
            flat[i] = np.float32(R.choice(vals))
    return inp


def spec_of(t):
    t = t.detach().contiguous()
    return {"dtype": "f32", "shape": list(t.shape), "data": hexf(t.numpy()), "views": [], "grad": True}


def randomize(mod, scale=1.0):
    with torch.no_grad():
        for _, prm in mod.named_parameters():
            prm.copy_(torch.tensor(NP.standard_normal(list(prm.shape)).astype(np.float32) * scale))
    return mod


GEN = {}


class Raises(nn.Module):
    """A module PyTorch's constructor refused: its forward raises."""

    def forward(self, *a):
        raise ValueError("constructor raised")


def kind(name, weight=1):
    def deco(f):
        GEN[name] = (f, weight)
        return f
    return deco


# ----------------------------------------------------------- activations --
ACTS = ["gelu_tanh", "elu", "selu", "celu", "softplus", "hardtanh", "relu6", "mish", "hardswish",
        "hardsigmoid", "logsigmoid", "softsign", "softmax", "log_softmax", "softmin", "glu", "tanhshrink",
        "threshold", "hardshrink", "softshrink", "prelu", "leaky_relu"]
FUNCTIONAL = {"gelu_tanh", "elu", "softplus", "hardtanh", "mish", "leaky_relu", "softmax", "log_softmax"}


@kind("act", 6)
def g_act():
    name = R.choice(ACTS)
    p = {"op": name, "functional": name in FUNCTIONAL and R.random() < 0.5}
    shp = rshape(0, 4)
    sp = 0.04 if R.random() < 0.25 else 0.0
    x = fi(shp, sp=sp)
    x.arr *= np.float32(R.choice([1.0, 1.0, 3.0]))
    kv = [0.0, -0.0]
    if name in ("elu", "celu"):
        p["alpha"] = R.choice([1.0, 0.5, 2.0, round(R.uniform(0.1, 3), 3), -0.7])
        if name == "celu" and bad():
            p["alpha"] = 0.0
        mod = (nn.ELU if name == "elu" else nn.CELU)(p["alpha"])
    elif name == "softplus":
        p["beta"] = R.choice([1.0, 0.5, 2.0, round(R.uniform(0.2, 4), 3)])
        p["threshold"] = R.choice([20.0, 1.0, 2.0, round(R.uniform(0.5, 5), 3)])
        kv += [p["threshold"] / p["beta"]]
        mod = nn.Softplus(p["beta"], p["threshold"])
    elif name == "hardtanh":
        lo = round(R.uniform(-3, 1), 2)
        hi = round(lo + R.uniform(0, 3), 2)
        if bad():
            lo, hi = hi + 1, lo
        p["min"], p["max"] = lo, hi
        kv += [lo, hi]
        try:
            mod = nn.Hardtanh(lo, hi)
        except Exception:
            mod = None
    elif name == "relu6":
        kv += [6.0]
        x.arr *= 4
        mod = nn.ReLU6()
    elif name in ("hardswish", "hardsigmoid"):
        kv += [3.0, -3.0]
        x.arr *= 2
        mod = nn.Hardswish() if name == "hardswish" else nn.Hardsigmoid()
    elif name in ("softmax", "log_softmax", "softmin", "glu"):
        r = len(shp)
        if name == "glu":
            if r == 0:
                shp = [2]
            r = len(shp)
            d = R.randrange(r)
            if not bad():
                shp[d] = 2 * R.randint(0 if R.random() < 0.1 else 1, 3)
            x = fi(shp, sp=sp)
            p["dim"] = d - r if R.random() < 0.5 else d
        else:
            lo_, hi_ = (-1, 0) if r == 0 else (-r, r - 1)
            p["dim"] = R.randint(lo_, hi_) if not bad() else hi_ + 1
        mod = {"softmax": nn.Softmax, "log_softmax": nn.LogSoftmax, "softmin": nn.Softmin, "glu": nn.GLU}[name](p["dim"])
    elif name == "threshold":
        p["threshold"] = round(R.uniform(-1, 1), 2)
        p["value"] = R.choice([0.0, -1.0, 2.5])
        kv += [p["threshold"]]
        mod = nn.Threshold(p["threshold"], p["value"])
    elif name in ("hardshrink", "softshrink"):
        p["lambd"] = R.choice([0.5, 0.0, round(R.uniform(0, 1.5), 2)])
        if bad():
            p["lambd"] = -0.5
        kv += [p["lambd"], -p["lambd"]]
        mod = (nn.Hardshrink if name == "hardshrink" else nn.Softshrink)(p["lambd"])
    elif name == "prelu":
        if len(shp) == 0 or R.random() < 0.4:
            p["num"] = 1
        else:
            p["num"] = shp[1] if len(shp) >= 2 else shp[0]
            if bad():
                p["num"] += 1
            if p["num"] == 0:
                p["num"] = 1
        mod = randomize(nn.PReLU(p["num"]), 0.5)
    elif name == "leaky_relu":
        p["slope"] = R.choice([0.01, 0.2, -0.3, 1.5, 0.0])
        mod = nn.LeakyReLU(p["slope"])
    else:
        mod = {"gelu_tanh": nn.GELU("tanh"), "selu": nn.SELU(), "mish": nn.Mish(), "logsigmoid": nn.LogSigmoid(),
               "softsign": nn.Softsign(), "tanhshrink": nn.Tanhshrink()}[name]
    if x.arr.size and name not in ("glu",):
        kinks(x, kv, 0.2)
    return [x], p, (lambda t, p: mod(t[0])) if mod is not None else (lambda t, p: (_ for _ in ()).throw(ValueError("bad"))), mod


# ---------------------------------------------------------------- norms --
@kind("norm", 4)
def g_norm():
    name = R.choice(["rms_norm", "rms_norm", "instance_norm", "instance_norm", "group_norm", "layer_norm"])
    p = {"op": name}
    if name == "rms_norm":
        shp = rshape(1, 4, allow_empty=False)
        k = R.randint(1, min(3, len(shp)))
        ns = shp[len(shp) - k:]
        p["ns"] = list(ns) if not bad() else [d + 1 for d in ns]
        p["eps"] = R.choice([None, None, 1e-5, 1e-3, 0.1])
        p["affine"] = R.random() < 0.6
        mod = nn.RMSNorm(p["ns"], eps=p["eps"], elementwise_affine=p["affine"])
        if p["affine"]:
            randomize(mod)
        x = fi(shp)
    elif name == "instance_norm":
        sp = R.choice([1, 2])
        C = R.randint(1, 4)
        unb = R.random() < 0.25
        spatial = [R.randint(1, 5) for _ in range(sp)]
        shp = ([] if unb else [R.randint(1, 3)]) + [C] + spatial
        if bad():
            shp = shp[1:] if len(shp) > 2 else shp + [2, 2]
        p.update(sp=sp, C=C, affine=R.random() < 0.6, eval=R.random() < 0.3, eps=R.choice([1e-5, 1e-3]))
        mod = (nn.InstanceNorm1d if sp == 1 else nn.InstanceNorm2d)(C, eps=p["eps"], affine=p["affine"])
        if p["affine"]:
            randomize(mod)
        if p["eval"]:
            mod.eval()
        x = fi(shp)
    elif name == "group_norm":
        Gs = R.randint(1, 3)
        C = Gs * R.randint(1, 3)
        if bad():
            C += 1
        p.update(groups=Gs, C=C, affine=R.random() < 0.6, eps=R.choice([1e-5, 1e-3]))
        try:
            mod = nn.GroupNorm(Gs, C, eps=p["eps"], affine=p["affine"])
        except ValueError:
            mod = Raises()
        if p["affine"] and not isinstance(mod, Raises):
            randomize(mod)
        x = fi([R.randint(1, 3), C] + [R.randint(1, 4) for _ in range(R.randint(0, 2))])
    else:
        shp = rshape(1, 4, allow_empty=False)
        k = R.randint(1, min(3, len(shp)))
        p["ns"] = shp[len(shp) - k:]
        p.update(affine=R.random() < 0.7, bias=R.random() < 0.5, eps=R.choice([1e-5, 1e-3]))
        mod = nn.LayerNorm(p["ns"], eps=p["eps"], elementwise_affine=p["affine"], bias=p["bias"])
        if p["affine"]:
            randomize(mod)
        x = fi(shp)
    if x.views and x.views[0][0] == "expand":
        x = fi(shp_of(x), view="c")
    return [x], p, lambda t, p: mod(t[0]), mod


def shp_of(inp):
    """The view's shape of an input."""
    return list(inp.views[0][1]) if inp.views and inp.views[0][0] == "expand" else list(inp.base)


# ---------------------------------------------------------- shape layers --
PADS = {("zero", 1): nn.ZeroPad1d, ("zero", 2): nn.ZeroPad2d, ("constant", 1): nn.ConstantPad1d,
        ("constant", 2): nn.ConstantPad2d, ("reflection", 1): nn.ReflectionPad1d, ("reflection", 2): nn.ReflectionPad2d,
        ("replication", 1): nn.ReplicationPad1d, ("replication", 2): nn.ReplicationPad2d,
        ("circular", 1): nn.CircularPad1d, ("circular", 2): nn.CircularPad2d}


@kind("shape", 4)
def g_shape():
    name = R.choice(["pixel_shuffle", "pixel_unshuffle", "unflatten", "flatten", "pad", "pad", "pad"])
    p = {"op": name}
    if name == "pixel_shuffle":
        r = R.randint(1, 3)
        lead = [R.randint(1, 2) for _ in range(R.randint(0, 2))]
        c = R.randint(1, 2) * r * r + (1 if bad() else 0)
        x = fi(lead + [c, R.randint(0 if R.random() < 0.1 else 1, 3), R.randint(1, 3)])
        p["r"] = r
        mod = nn.PixelShuffle(r)
    elif name == "pixel_unshuffle":
        r = R.randint(1, 3)
        lead = [R.randint(1, 2) for _ in range(R.randint(0, 2))]
        h, w = r * R.randint(1, 2), r * R.randint(1, 2) + (1 if bad() else 0)
        x = fi(lead + [R.randint(1, 2), h, w])
        p["r"] = r
        mod = nn.PixelUnshuffle(r)
    elif name == "unflatten":
        shp = rshape(1, 3)
        d = R.randrange(len(shp))
        n = shp[d]
        facs = [f for f in range(1, n + 1) if n % f == 0] if n else [1]
        a = R.choice(facs) if n else R.choice([1, 2])
        sizes = [a, n // a if n else 0]
        if R.random() < 0.4:
            sizes[R.randrange(2)] = -1
        if bad():
            sizes[0] += 1
        p["dim"] = d - len(shp) if R.random() < 0.5 else d
        p["sizes"] = sizes
        x = fi(shp)
        mod = nn.Unflatten(p["dim"], sizes)
    elif name == "flatten":
        shp = rshape(1, 4)
        p["start"] = R.randrange(len(shp))
        x = fi(shp)
        mod = nn.Flatten(p["start"])
    else:
        mode = R.choice(["zero", "constant", "reflection", "replication", "circular"])
        sd = R.choice([1, 2])
        unb = R.random() < 0.3
        lead = [] if unb else [R.randint(1, 2)]
        shp = lead + [R.randint(1, 3)] + [R.randint(1, 5) for _ in range(sd)]
        pads = []
        for i in range(sd):
            sz = shp[-1 - i]
            if mode == "reflection":
                lim = sz - 1
            elif mode == "circular":
                lim = sz
            else:
                lim = 3
            lo = -1 if R.random() < 0.3 else 0
            pads += [R.randint(lo, max(lim, 0)), R.randint(lo, max(lim, 0))]
        if bad():
            pads[0] += 6
        p.update(mode=mode, sd=sd, pads=pads, value=R.choice([0.0, 1.5, -2.0]))
        x = fi(shp)
        try:
            if mode == "constant":
                mod = PADS[(mode, sd)](tuple(pads), p["value"])
            else:
                mod = PADS[(mode, sd)](tuple(pads))
        except Exception:
            mod = None
    return [x], p, (lambda t, p: mod(t[0])) if mod is not None else (lambda t, p: (_ for _ in ()).throw(ValueError("bad"))), None


# ---------------------------------------------------------------- pools --
@kind("pool", 3)
def g_pool():
    name = R.choice(["adaptive_max1d", "adaptive_max2d", "adaptive_avg1d", "adaptive_avg2d", "max_pool1d", "avg_pool1d"])
    p = {"op": name, "module": R.random() < 0.5}
    unb = R.random() < 0.25
    lead = [] if unb else [R.randint(1, 2)]
    if name.endswith("1d") and name.startswith("adaptive"):
        L = R.randint(1, 8)
        x = fi(lead + [R.randint(1, 3), L])
        p["out"] = [R.randint(1, L + 3)] if not bad() else [0]
    elif name.startswith("adaptive"):
        H, W = R.randint(1, 7), R.randint(1, 7)
        x = fi(lead + [R.randint(1, 3), H, W])
        p["out"] = [R.randint(1, H + 3), R.randint(1, W + 3)] if not bad() else [0, 2]
    else:
        x = fi(lead + [R.randint(1, 3), R.randint(1, 10)])
        k = R.randint(1, 4)
        p.update(k=k, st=R.choice([None, 1, 2, 3]), pad=R.randint(0, k // 2), dil=R.choice([1, 1, 2]) if name == "max_pool1d" else 1,
                 ceil=R.random() < 0.3, cip=R.random() < 0.5)
        if bad():
            p["pad"] = k
    if name.startswith("adaptive_max"):
        # ties would make PyTorch's single argmax and an even split differ
        x.arr = (x.arr + NP.random(x.arr.shape).astype(np.float32) * 1e-3).astype(np.float32)
        f = F.adaptive_max_pool1d if name.endswith("1d") else F.adaptive_max_pool2d
        return [x], p, lambda t, p: f(t[0], p["out"] if len(p["out"]) > 1 else p["out"][0]), None
    if name.startswith("adaptive_avg"):
        f = F.adaptive_avg_pool1d if name.endswith("1d") else F.adaptive_avg_pool2d
        return [x], p, lambda t, p: f(t[0], p["out"] if len(p["out"]) > 1 else p["out"][0]), None
    if name == "max_pool1d":
        return [x], p, lambda t, p: F.max_pool1d(t[0], p["k"], p["st"], p["pad"], p["dil"], ceil_mode=p["ceil"]), None
    return [x], p, lambda t, p: F.avg_pool1d(t[0], p["k"], p["st"], p["pad"], ceil_mode=p["ceil"], count_include_pad=p["cip"]), None


# ------------------------------------------------- conv / bilinear / interp --
@kind("conv", 4)
def g_conv():
    name = R.choice(["conv_transpose1d", "conv_transpose2d", "bilinear", "interpolate", "interpolate"])
    p = {"op": name}
    if name.startswith("conv_transpose"):
        sd = 1 if name.endswith("1d") else 2
        g = R.choice([1, 1, 2, 3])
        cin, cout = g * R.randint(1, 2), g * R.randint(1, 2)
        k = [R.randint(1, 3) for _ in range(sd)]
        st = [R.randint(1, 3) for _ in range(sd)]
        dil = [R.randint(1, 2) for _ in range(sd)]
        pad = [R.randint(0, 2) for _ in range(sd)]
        opad = [R.randint(0, max(st[i], dil[i]) - 1) for i in range(sd)]
        if bad():
            opad[0] = max(st[0], dil[0])
        bias = R.random() < 0.5
        unb = R.random() < 0.2
        x = fi(([] if unb else [R.randint(1, 2)]) + [cin] + [R.randint(1, 5) for _ in range(sd)])
        p.update(cin=cin, cout=cout, k=k, stride=st, pad=pad, opad=opad, dil=dil, groups=g, bias=bias)
        C = nn.ConvTranspose1d if sd == 1 else nn.ConvTranspose2d
        mod = C(cin, cout, k if sd == 2 else k[0], stride=st, padding=pad, output_padding=opad, groups=g, bias=bias, dilation=dil)
        randomize(mod, 0.5)
        return [x], p, lambda t, p: mod(t[0]), mod
    if name == "bilinear":
        i1, i2, o = R.randint(1, 4), R.randint(1, 4), R.randint(1, 4)
        batch = R.choice([[], [R.randint(0, 3)], [R.randint(1, 3)], [2, R.randint(1, 3)]])
        p.update(i1=i1, i2=i2, o=o, bias=R.random() < 0.6)
        mod = randomize(nn.Bilinear(i1, i2, o, bias=p["bias"]), 0.5)
        b2 = list(batch)
        if bad():
            b2 = b2 + [3] if b2 else [3]
        x1, x2 = fi(batch + [i1]), fi(b2 + [i2])
        return [x1, x2], p, lambda t, p: mod(t[0], t[1]), mod
    # interpolate
    mode = R.choice(["nearest", "bilinear", "bilinear", "bicubic", "bicubic", "area", "linear"])
    sd = 1 if mode == "linear" else (2 if mode in ("bilinear", "bicubic") else R.choice([1, 2]))
    shp = [R.randint(1, 2), R.randint(1, 3)] + [R.randint(1, 6) for _ in range(sd)]
    x = fi(shp)
    p["mode"] = mode
    p["ac"] = mode in ("bilinear", "bicubic", "linear") and R.random() < 0.5
    if bad():
        p["ac"] = True
    if R.random() < 0.5:
        p["size"] = [R.randint(1, 9) for _ in range(sd)]
        p["scale"] = None
    else:
        p["size"] = None
        p["scale"] = [R.choice([0.5, 1.0, 1.5, 2.0, 3.0, 0.7, 2.5]) for _ in range(sd)]
    ac = p["ac"] if (mode in ("bilinear", "bicubic", "linear") or p["ac"]) else None
    return [x], p, lambda t, p: F.interpolate(t[0], size=p["size"], scale_factor=p["scale"], mode=mode, align_corners=ac), None


# --------------------------------------------------------------- einsum --
@kind("einsum", 3)
def g_einsum():
    letters = list("abcdefg")
    nl = R.randint(1, 5)
    used = letters[:nl]
    sizes = {c: R.randint(1, 4) for c in used}
    nops = R.randint(1, 3)
    ell = R.random() < 0.3
    ell_shape = [R.randint(1, 3) for _ in range(R.randint(0, 2))]
    terms, shapes = [], []
    for _ in range(nops):
        k = R.randint(0, min(4, nl))
        sub = [R.choice(used) for _ in range(k)]
        if R.random() < 0.5:
            sub = list(dict.fromkeys(sub))  # mostly no repeats
        shp = [sizes[c] for c in sub]
        # broadcasting: a label of size 1 in this operand
        for i, c in enumerate(sub):
            if R.random() < 0.1 and sub.count(c) == 1:
                shp[i] = 1
        term = "".join(sub)
        if ell:
            es = ell_shape[R.randint(0, len(ell_shape)):] if ell_shape else []
            es = [1 if R.random() < 0.3 else d for d in es]
            pos = R.randint(0, len(sub))
            term = "".join(sub[:pos]) + "..." + "".join(sub[pos:])
            shp = shp[:pos] + es + shp[pos:]
        terms.append(term)
        shapes.append(shp)
    present = sorted(set("".join(terms)) - set("."))
    if R.random() < 0.35:
        eq = ",".join(terms)
    else:
        outl = [c for c in present if R.random() < 0.5]
        R.shuffle(outl)
        out = "".join(outl)
        if ell:
            pos = R.randint(0, len(out))
            out = out[:pos] + "..." + out[pos:]
        eq = ",".join(terms) + "->" + out
    if bad() and shapes and shapes[0]:
        shapes[0][0] += 1
    xs = [fi(s) for s in shapes]
    return xs, {"op": "einsum", "eq": eq}, lambda t, p: torch.einsum(p["eq"], *t), None


# ------------------------------------------------------ tensor functions --
TFN = ["linspace", "logspace", "eye", "diag", "diagonal", "trace", "lerp", "lerp_scalar", "logaddexp", "hypot",
       "amax", "amin", "aminmax", "var_mean", "std_mean", "median", "median_dim", "count_nonzero", "movedim",
       "swapaxes", "tile", "meshgrid", "outer", "dot", "mv", "bmm", "addmm", "baddbmm", "cdist",
       "cosine_similarity", "pairwise_distance", "normalize"]


def rdims(r):
    if r == 0:
        return R.choice([[], [0], [-1]])
    k = R.randint(0, r)
    ds = R.sample(range(r), k)
    return [d - r if R.random() < 0.3 else d for d in ds]


@kind("tensor", 7)
def g_tensor():
    name = R.choice(TFN)
    p = {"op": name}
    no = lambda t, p: None  # noqa: E731
    if name in ("linspace", "logspace"):
        p.update(start=round(R.uniform(-5, 5), 3), end=round(R.uniform(-5, 5), 3), steps=R.randint(0, 7),
                 base=R.choice([10.0, 2.0, 0.5, math.e]))
        if name == "linspace":
            return [], p, lambda t, p: torch.linspace(p["start"], p["end"], p["steps"]), None
        return [], p, lambda t, p: torch.logspace(p["start"] / 3, p["end"] / 3, p["steps"], p["base"]), None
    if name == "eye":
        p.update(n=R.randint(0, 4), m=R.choice([None, R.randint(0, 4)]))
        return [], p, lambda t, p: torch.eye(p["n"], p["m"]) if p["m"] is not None else torch.eye(p["n"]), None
    if name == "diag":
        r = R.choice([1, 2]) if not bad() else 3
        x = fi([R.randint(0, 4) for _ in range(r)])
        p["off"] = R.randint(-3, 3)
        return [x], p, lambda t, p: torch.diag(t[0], p["off"]), None
    if name == "diagonal":
        r = R.randint(2, 4)
        x = fi(rshape(r, r))
        d1, d2 = R.sample(range(r), 2)
        if bad():
            d2 = d1
        p.update(off=R.randint(-3, 3), d1=d1 - r if R.random() < 0.3 else d1, d2=d2)
        return [x], p, lambda t, p: torch.diagonal(t[0], p["off"], p["d1"], p["d2"]), None
    if name == "trace":
        x = fi(rshape(2, 2) if not bad() else rshape(3, 3))
        return [x], p, lambda t, p: torch.trace(t[0]), None
    if name in ("lerp", "logaddexp", "hypot"):
        sh = G.bshapes(3)
        if bad():
            sh[0] = sh[0] + [7]
        a, b = fi(sh[0], sp=0.03), fi(sh[1], sp=0.03)
        if name == "lerp":
            w = fi(sh[2])
            return [a, b, w], p, lambda t, p: torch.lerp(t[0], t[1], t[2]), None
        if name == "hypot" and R.random() < 0.3:
            a.arr[...] = 0
        f = torch.logaddexp if name == "logaddexp" else torch.hypot
        return [a, b], p, lambda t, p: f(t[0], t[1]), None
    if name == "lerp_scalar":
        sa, sb = G.bshapes(2)
        p["w"] = R.choice([0.0, 0.25, 0.5, 0.75, 1.0, -0.5, 1.5])
        return [fi(sa), fi(sb)], p, lambda t, p: torch.lerp(t[0], t[1], p["w"]), None
    if name in ("amax", "amin"):
        shp = rshape(0, 4)
        x = fi(shp)
        if x.arr.size and R.random() < 0.3:  # ties share the gradient
            x.arr = np.round(x.arr).astype(np.float32)
        p.update(dims=rdims(len(shp)), keepdim=R.random() < 0.5)
        f = torch.amax if name == "amax" else torch.amin
        return [x], p, lambda t, p: f(t[0], p["dims"], p["keepdim"]), None
    if name == "aminmax":
        shp = rshape(0, 3)
        x = fi(shp)
        r = len(shp)
        p.update(dim=None if R.random() < 0.4 else R.randint(-max(r, 1), max(r, 1) - 1), keepdim=R.random() < 0.5)
        return [x], p, lambda t, p: tuple(torch.aminmax(t[0], dim=p["dim"], keepdim=p["keepdim"])), None
    if name in ("var_mean", "std_mean"):
        shp = rshape(0, 4)
        x = fi(shp)
        p.update(dims=rdims(len(shp)), correction=R.choice([0, 1, 1, 2]), keepdim=R.random() < 0.5)
        f = torch.var_mean if name == "var_mean" else torch.std_mean
        return [x], p, lambda t, p: tuple(f(t[0], p["dims"] if p["dims"] else None, correction=p["correction"], keepdim=p["keepdim"])), None
    if name == "median":
        x = fi(rshape(0, 3), sp=0.03 if R.random() < 0.3 else 0.0)
        return [x], p, lambda t, p: torch.median(t[0]), None
    if name == "median_dim":
        shp = rshape(0, 3)
        x = fi(shp, sp=0.03 if R.random() < 0.3 else 0.0)
        r = max(len(shp), 1)
        p.update(dim=R.randint(-r, r - 1), keepdim=R.random() < 0.5)
        return [x], p, lambda t, p: tuple(torch.median(t[0], p["dim"], p["keepdim"])), None
    if name == "count_nonzero":
        shp = rshape(0, 4)
        x = fi(shp, grad=False)
        kinks(x, [0.0, -0.0], 0.4)
        p["dims"] = list(dict.fromkeys(d % max(len(shp), 1) for d in rdims(len(shp))))
        return [x], p, lambda t, p: torch.count_nonzero(t[0], p["dims"] if p["dims"] else None), None
    if name == "movedim":
        shp = rshape(1, 4)
        r = len(shp)
        k = R.randint(1, r)
        src = R.sample(range(r), k)
        dst = R.sample(range(r), k)
        if bad():
            dst[0] = r
        p.update(src=[s - r if R.random() < 0.3 else s for s in src], dst=dst)
        return [fi(shp)], p, lambda t, p: torch.movedim(t[0], p["src"], p["dst"]), None
    if name == "swapaxes":
        shp = rshape(0, 4)
        r = max(len(shp), 1)
        p.update(a=R.randint(-r, r - 1), b=R.randint(-r, r - 1))
        return [fi(shp)], p, lambda t, p: torch.swapaxes(t[0], p["a"], p["b"]), None
    if name == "tile":
        shp = rshape(0, 3)
        p["reps"] = [R.randint(0 if R.random() < 0.1 else 1, 3) for _ in range(R.randint(0, 4))]
        return [fi(shp)], p, lambda t, p: torch.tile(t[0], p["reps"]), None
    if name == "meshgrid":
        k = R.randint(1, 3)
        xs = [fi([R.randint(0 if R.random() < 0.1 else 1, 4)] if R.random() < 0.85 else []) for _ in range(k)]
        if bad():
            xs[0] = fi([2, 2])
        p["indexing"] = R.choice(["ij", "xy"])
        return xs, p, lambda t, p: tuple(torch.meshgrid(*t, indexing=p["indexing"])), None
    if name in ("outer", "dot"):
        n = R.randint(0, 5)
        m = R.randint(0, 5) if name == "outer" else (n if not bad() else n + 1)
        return [fi([n]), fi([m])], p, lambda t, p: getattr(torch, name)(t[0], t[1]), None
    if name == "mv":
        n, m = R.randint(0, 4), R.randint(0, 4)
        return [fi([n, m]), fi([m if not bad() else m + 1])], p, lambda t, p: torch.mv(t[0], t[1]), None
    if name == "bmm":
        b, n, k, m = R.randint(0, 3), R.randint(1, 4), R.randint(0, 4), R.randint(1, 4)
        return [fi([b, n, k]), fi([b, k if not bad() else k + 1, m])], p, lambda t, p: torch.bmm(t[0], t[1]), None
    if name in ("addmm", "baddbmm"):
        n, k, m = R.randint(1, 4), R.randint(0, 4), R.randint(1, 4)
        lead = [] if name == "addmm" else [R.randint(1, 3)]
        full = lead + [n, m]
        ishape = full[len(full) - R.randint(0, len(full)):]
        ishape = [1 if R.random() < 0.3 else d for d in ishape]
        p.update(alpha=R.choice([1.0, 0.5, -2.0, 0.0]), beta=R.choice([1.0, 0.0, 0.5, -1.0]))
        ins = [fi(ishape, sp=0.05 if p["beta"] == 0 and R.random() < 0.5 else 0.0), fi(lead + [n, k]), fi(lead + [k if not bad() else k + 1, m])]
        f = torch.addmm if name == "addmm" else torch.baddbmm
        return ins, p, lambda t, p: f(t[0], t[1], t[2], beta=p["beta"], alpha=p["alpha"]), None
    if name == "cdist":
        lead = R.choice([[], [R.randint(1, 2)]])
        P, Q, M = R.randint(1, 4), R.randint(1, 4), R.randint(1, 4)
        p["p"] = R.choice([1.0, 2.0, 2.0, "inf", 0.5, 3.0])
        pp = float("inf") if p["p"] == "inf" else p["p"]
        a, b = fi(lead + [P, M]), fi(lead + [Q, M if not bad() else M + 1])
        if R.random() < 0.2 and not a.views and not b.views and a.arr.shape[-1] == b.arr.shape[-1] and a.arr.size and b.arr.size:
            b.arr[..., 0, :] = a.arr[..., 0, :]  # a zero distance
        return [a, b], p, lambda t, p: torch.cdist(t[0], t[1], pp), None
    if name == "cosine_similarity":
        sa, sb = G.bshapes(2)
        if not sa and not sb:
            sa = [3]
        r = max(len(sa), len(sb), 1)
        p.update(dim=R.randint(-r, r - 1), eps=R.choice([1e-8, 1e-3]))
        a, b = fi(sa), fi(sb)
        if R.random() < 0.15:
            a.arr[...] = 0
        return [a, b], p, lambda t, p: F.cosine_similarity(t[0], t[1], p["dim"], p["eps"]), None
    if name == "pairwise_distance":
        sa, sb = G.bshapes(2)
        p.update(p=R.choice([1.0, 2.0, 3.0, "inf"]), eps=R.choice([1e-6, 0.0, 0.1]), keepdim=R.random() < 0.5)
        pp = float("inf") if p["p"] == "inf" else p["p"]
        return [fi(sa), fi(sb)], p, lambda t, p: F.pairwise_distance(t[0], t[1], pp, p["eps"], p["keepdim"]), None
    # normalize
    shp = rshape(0, 4)
    r = max(len(shp), 1)
    p.update(p=R.choice([1.0, 2.0, 2.0, 3.0, "inf"]), dim=R.randint(-r, r - 1), eps=R.choice([1e-12, 1e-3]))
    pp = float("inf") if p["p"] == "inf" else p["p"]
    x = fi(shp)
    if R.random() < 0.15:
        x.arr[...] = 0
    return [x], p, lambda t, p: F.normalize(t[0], pp, p["dim"], p["eps"]), None


# ---------------------------------------------------------------- losses --
LOSSES = ["margin_ranking", "hinge_embedding", "soft_margin", "multilabel_soft_margin", "cosine_embedding",
          "triplet_margin", "poisson_nll", "gaussian_nll", "kl_div", "smooth_l1", "huber"]


def pm1(shape):
    i = Inp(shape, "f32", grad=False)
    i.arr = np.where(NP.random(i.arr.shape) < 0.5, -1.0, 1.0).astype(np.float32)
    return i


@kind("loss", 5)
def g_loss():
    name = R.choice(LOSSES)
    red = R.choice(["none", "mean", "sum"])
    p = {"op": name, "red": red}
    if name == "margin_ranking":
        sh = G.bshapes(3)
        p["margin"] = R.choice([0.0, 0.5, -0.2])
        return [fi(sh[0]), fi(sh[1]), pm1(sh[2])], p, lambda t, p: F.margin_ranking_loss(t[0], t[1], t[2], p["margin"], reduction=red), None
    if name == "hinge_embedding":
        shp = rshape(0, 3)
        p["margin"] = R.choice([1.0, 0.5, 2.0])
        x = fi(shp)
        kinks(x, [p["margin"], 0.0], 0.1)
        return [x, pm1(shp if not bad() else shp + [3])], p, lambda t, p: F.hinge_embedding_loss(t[0], t[1], p["margin"], reduction=red), None
    if name == "soft_margin":
        shp = rshape(0, 3)
        return [fi(shp), pm1(shp)], p, lambda t, p: F.soft_margin_loss(t[0], t[1], reduction=red), None
    if name == "multilabel_soft_margin":
        n, c = R.randint(1, 4), R.randint(1, 5)
        s = [n, c] if R.random() < 0.85 else [c]
        x = fi(s)
        y = Inp(s, "f32", grad=False, view="c")
        y.arr = (NP.random(s) < 0.5).astype(np.float32)
        p["weight"] = R.random() < 0.4
        ins = [x, y] + ([fi([c], grad=False, lo=0.1, hi=2.0)] if p["weight"] else [])
        return ins, p, lambda t, p: F.multilabel_soft_margin_loss(t[0], t[1], weight=t[2] if p["weight"] else None, reduction=red), None
    if name == "cosine_embedding":
        n, d = R.randint(1, 4), R.randint(1, 4)
        unb = R.random() < 0.2
        s = [d] if unb else [n, d]
        p["margin"] = R.choice([0.0, 0.3, -0.5])
        a, b = fi(s), fi(s if not bad() else [n + 1, d])
        if R.random() < 0.1:
            a.arr[...] = 0
        return [a, b, pm1([] if unb else [n])], p, lambda t, p: F.cosine_embedding_loss(t[0], t[1], t[2], p["margin"], reduction=red), None
    if name == "triplet_margin":
        n, d = R.randint(1, 4), R.randint(1, 4)
        s = [d] if R.random() < 0.2 else [n, d]
        p.update(margin=R.choice([1.0, 0.5, 0.0]), p=R.choice([1.0, 2.0, 3.0]), eps=R.choice([1e-6, 0.0]), swap=R.random() < 0.5)
        return [fi(s), fi(s), fi(s)], p, lambda t, p: F.triplet_margin_loss(t[0], t[1], t[2], p["margin"], p["p"], p["eps"], p["swap"], reduction=red), None
    if name == "poisson_nll":
        shp = rshape(0, 3)
        p.update(log_input=R.random() < 0.5, full=R.random() < 0.5, eps=R.choice([1e-8, 1e-3]))
        x = fi(shp) if p["log_input"] else fi(shp, lo=0.0, hi=3.0)
        tgt = fi(shp, lo=0.0, hi=4.0, grad=R.random() < 0.3)
        if tgt.arr.size and R.random() < 0.5:
            tgt.arr = np.round(tgt.arr).astype(np.float32)  # 0 and 1 targets: the Stirling term's mask
        return [x, tgt], p, lambda t, p: F.poisson_nll_loss(t[0], t[1], p["log_input"], p["full"], eps=p["eps"], reduction=red), None
    if name == "gaussian_nll":
        n, d = R.randint(1, 4), R.randint(1, 4)
        s = R.choice([[n, d], [n, d], [d], [n, 2, d]])
        vs = R.choice([list(s), s[:-1] + [1], s[:-1]] if len(s) > 1 else [list(s), [1]])
        p.update(full=R.random() < 0.5, eps=R.choice([1e-6, 0.1]))
        v = fi(vs, lo=0.0 if R.random() < 0.2 else 0.05, hi=2.0)
        if bad():
            v.arr = v.arr - 3
        return [fi(s), fi(s), v], p, lambda t, p: F.gaussian_nll_loss(t[0], t[1], t[2], full=p["full"], eps=p["eps"], reduction=red), None
    if name == "kl_div":
        shp = rshape(0, 3)
        p["log_target"] = R.random() < 0.5
        if R.random() < 0.2:
            p["red"] = red = "batchmean"
        x = fi(shp)
        tgt = fi(shp, grad=R.random() < 0.4) if p["log_target"] else fi(shp, lo=0.0, hi=1.0, grad=R.random() < 0.4)
        if not p["log_target"] and tgt.arr.size:
            kinks(tgt, [0.0], 0.2)
        return [x, tgt], p, lambda t, p: F.kl_div(t[0], t[1], reduction=red, log_target=p["log_target"]), None
    # wgrad's regression losses want equal shapes (docs/PYTORCH.md);
    # PyTorch broadcasts with a warning.
    sa = rshape(0, 4)
    x, y = fi(sa), fi(sa, grad=R.random() < 0.5)
    if name == "smooth_l1":
        p["beta"] = R.choice([1.0, 0.5, 0.0, 2.0])
        if bad():
            p["beta"] = -1.0
        return [x, y], p, lambda t, p: F.smooth_l1_loss(t[0], t[1], reduction=red, beta=p["beta"]), None
    p["delta"] = R.choice([1.0, 0.5, 2.0])
    if bad():
        p["delta"] = 0.0
    return [x, y], p, lambda t, p: F.huber_loss(t[0], t[1], reduction=red, delta=p["delta"]), None


# ------------------------------------------------------------ recurrent --
@kind("rnn", 4)
def g_rnn():
    name = R.choice(["rnn", "lstm", "gru", "rnn", "lstm", "gru", "rnn_cell", "lstm_cell", "gru_cell"])
    I, H = R.randint(1, 4), R.randint(1, 4)
    bias = R.random() < 0.7
    p = {"op": name, "input_size": I, "hidden_size": H, "bias": bias}
    if name.endswith("_cell"):
        nl = R.choice(["tanh", "relu"]) if name == "rnn_cell" else "tanh"
        p["nonlinearity"] = nl
        mod = {"rnn_cell": lambda: nn.RNNCell(I, H, bias, nl), "lstm_cell": lambda: nn.LSTMCell(I, H, bias),
               "gru_cell": lambda: nn.GRUCell(I, H, bias)}[name]()
        randomize(mod, 0.6)
        unb = R.random() < 0.25
        B = R.randint(1, 3)
        x = fi([I if not bad() else I + 1] if unb else [B, I])
        hs = [H] if unb else [B, H]
        p["h0"] = R.random() < 0.6
        ins = [x]
        if p["h0"]:
            ins += [fi(hs)] + ([fi(hs)] if name == "lstm_cell" else [])
        if name == "lstm_cell":
            run = lambda t, p: tuple(mod(t[0], (t[1], t[2]) if p["h0"] else None))  # noqa: E731
        else:
            run = lambda t, p: mod(t[0], t[1] if p["h0"] else None)  # noqa: E731
        return ins, p, run, mod
    L = R.randint(1, 3)
    bid = R.random() < 0.5
    bf = R.random() < 0.5
    nl = R.choice(["tanh", "relu"]) if name == "rnn" else "tanh"
    p.update(num_layers=L, bidirectional=bid, batch_first=bf, nonlinearity=nl)
    kw = dict(num_layers=L, bias=bias, batch_first=bf, bidirectional=bid)
    if name == "rnn":
        mod = nn.RNN(I, H, nonlinearity=nl, **kw)
    else:
        mod = (nn.LSTM if name == "lstm" else nn.GRU)(I, H, **kw)
    randomize(mod, 0.5)
    T, B = R.randint(1, 4), R.randint(1, 3)
    unb = R.random() < 0.2
    p["unbatched"] = unb
    if unb:
        xs = [T, I]
    else:
        xs = [B, T, I] if bf else [T, B, I]
    if bad():
        xs[-1] += 1
    D = 2 if bid else 1
    hs = [L * D, H] if unb else [L * D, B, H]
    p["h0"] = R.random() < 0.6
    ins = [fi(xs)]
    if p["h0"]:
        ins += [fi(hs)] + ([fi(hs)] if name == "lstm" else [])
    if name == "lstm":
        def run(t, p):
            o, (h, c) = mod(t[0], (t[1], t[2]) if p["h0"] else None)
            return (o, h, c)
    else:
        def run(t, p):
            o, h = mod(t[0], t[1] if p["h0"] else None)
            return (o, h)
    return ins, p, run, mod


# ------------------------------------------------- attention modules -----
def attn_masks(p, ins, N, H, L, S, unb, allow_3d=True):
    """Appends a random key_padding_mask and attn_mask (bool or float, 2-D
    or 3-D, or the causal one) to ins; records their kinds in p."""
    kpm = R.choice([None, None, "bool", "float"])
    if kpm:
        shape = [S] if unb else [N, S]
        ins.append(Inp(shape, "bool", grad=False, view="c") if kpm == "bool" else fi(shape, grad=False, view="c"))
    choices = [None, None, "bool", "float", "causal"] + (["bool3", "float3"] if allow_3d else [])
    am = R.choice(choices)
    if am == "causal" and L != S:
        am = "bool"
    if am == "causal":
        ins.append(Inp([L, L], values=torch.triu(torch.full((L, L), float("-inf")), 1).numpy(), grad=False, view="c"))
    elif am:
        shape = [L, S] if not am.endswith("3") else [H if unb else N * H, L, S]
        ins.append(Inp(shape, "bool", grad=False, view="c") if am.startswith("bool") else fi(shape, grad=False, view="c"))
    p.update(kpm=kpm, am=am, causal=am == "causal")


def split_masks(t, p, first):
    kpm = t[first] if p["kpm"] else None
    am = t[first + (1 if p["kpm"] else 0)] if p["am"] else None
    return kpm, am


@kind("mha", 3)
def g_mha():
    H = R.choice([1, 2, 3])
    E = H * R.choice([1, 2, 3])
    bias = R.random() < 0.7
    bf = R.random() < 0.5
    unb = R.random() < 0.2
    N, L = R.randint(1, 3), R.randint(1, 4)
    kdim = R.choice([None, None, None, R.randint(1, 5)])
    vdim = R.choice([None, None, None, R.randint(1, 5)])
    abkv, aza = R.random() < 0.25, R.random() < 0.25
    self_attn = R.random() < 0.4 and kdim in (None, E) and vdim in (None, E)
    S = L if self_attn else R.randint(1, 4)
    mod = nn.MultiheadAttention(E, H, dropout=0.0, bias=bias, batch_first=bf, add_bias_kv=abkv,
                                add_zero_attn=aza, kdim=kdim, vdim=vdim)
    randomize(mod, 0.5)

    def shp(T, F=E):
        if unb:
            return [T, F]
        return [N, T, F] if bf else [T, N, F]

    ins = [fi(shp(L))]
    if not self_attn:
        ins += [fi(shp(S, kdim or E)), fi(shp(S, vdim or E))]
    p = {"op": "mha", "E": E, "H": H, "bias": bias, "batch_first": bf, "self": self_attn,
         "nw": R.random() < 0.6, "avg": R.random() < 0.6, "kdim": kdim, "vdim": vdim,
         "add_bias_kv": abkv, "add_zero_attn": aza}
    attn_masks(p, ins, N, H, L, S, unb)

    def run(t, p):
        q = t[0]
        k, v = (q, q) if p["self"] else (t[1], t[2])
        kpm, am = split_masks(t, p, 1 if p["self"] else 3)
        o, w = mod(q, k, v, key_padding_mask=kpm, need_weights=p["nw"], attn_mask=am,
                   average_attn_weights=p["avg"], is_causal=p["causal"])
        return (o, w) if w is not None else (o,)
    return ins, p, run, mod


@kind("tlayer", 3)
def g_tlayer():
    H = R.choice([1, 2])
    E = H * R.choice([2, 3])
    F_ = R.randint(1, 6)
    dec = R.random() < 0.4
    bf = R.random() < 0.5
    nf = R.random() < 0.5
    act = R.choice(["relu", "gelu"])
    bias = R.random() < 0.8
    eps = R.choice([1e-5, 1e-3])
    kw = dict(dim_feedforward=F_, dropout=0.0, activation=act, layer_norm_eps=eps, batch_first=bf,
              norm_first=nf, bias=bias)
    mod = (nn.TransformerDecoderLayer if dec else nn.TransformerEncoderLayer)(E, H, **kw)
    randomize(mod, 0.5)
    unb = R.random() < 0.15
    N, L = R.randint(1, 3), R.randint(1, 4)

    def shp(T):
        if unb:
            return [T, E]
        return [N, T, E] if bf else [T, N, E]

    p = {"op": "decoder" if dec else "encoder", "E": E, "H": H, "F": F_, "batch_first": bf, "norm_first": nf,
         "act": act, "bias": bias, "eps": eps}
    ins = [fi(shp(L))]
    if dec:
        S = R.randint(1, 4)
        ins.append(fi(shp(S)))
    # Masks of the (first) self-attention only.
    attn_masks(p, ins, N, H, L, L, unb, allow_3d=False)
    if p["kpm"] == "float" or p["am"] == "float":
        # PyTorch's layers take bool or float masks of one kind only.
        p["kpm"] = p["kpm"] and "bool"

    def run(t, p):
        first = 2 if p["op"] == "decoder" else 1
        kpm, am = split_masks(t, p, first)
        if p["op"] == "decoder":
            return mod(t[0], t[1], tgt_mask=am, tgt_key_padding_mask=kpm, tgt_is_causal=p["causal"])
        return mod(t[0], src_mask=am, src_key_padding_mask=kpm, is_causal=p["causal"])
    return ins, p, run, mod


# ------------------------------------------------------------- driver ----
def make_case(cid, k):
    f, _ = GEN[k]
    ins, params, run, mod = f()
    ts = [i.torch() for i in ins]
    case = {"id": cid, "kind": k, "p": params, "inputs": [i.spec() for i in ins]}
    named = list(mod.named_parameters()) if mod is not None else []
    if named:
        case["params"] = {n: spec_of(t) for n, t in named}
    try:
        res = run(ts, params)
    except Exception as e:
        case["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        return case
    outs = list(res) if isinstance(res, (tuple, list)) else [res]
    case["outputs"] = [G.out_spec(o) for o in outs]
    leaves = [i.leaf for i in ins if i.grad] + [t for _, t in named]
    fouts = [o for o in outs if o.dtype == torch.float32 and o.requires_grad]
    if leaves and fouts:
        ups = [torch.tensor(NP.standard_normal(list(o.shape)).astype(np.float32)) for o in fouts]
        case["upstream"] = [hexf(u.numpy()) for u in ups]
        case["diff_outputs"] = [j for j, o in enumerate(outs) if o.dtype == torch.float32 and o.requires_grad]
        try:
            gs = torch.autograd.grad(fouts, leaves, ups, allow_unused=True)
            gs = [hexf((g if g is not None else torch.zeros_like(l)).numpy()) for g, l in zip(gs, leaves)]
            ni = len(leaves) - len(named)
            case["grads"] = gs[:ni]
            if named:
                case["pgrads"] = {n: g for (n, _), g in zip(named, gs[ni:])}
        except Exception as e:
            case["grad_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    if mod is not None and hasattr(mod, "running_mean") and getattr(mod, "running_mean", None) is not None:
        case["buffers"] = {"running_mean": spec_of(mod.running_mean), "running_var": spec_of(mod.running_var)}
    return case


def main():
    kinds = [k for k in GEN if ONLY is None or k in ONLY]
    weights = [GEN[k][1] for k in kinds]
    with open(OUT, "w") as fh:
        for cid in range(N):
            k = R.choices(kinds, weights)[0]
            for _ in range(20):
                try:
                    case = make_case(cid, k)
                    break
                except Exception as e:  # a generator slip: draw again
                    print(f"case {cid} ({k}): generator error {e!r}", file=sys.stderr)
            fh.write(json.dumps(fix(case)) + "\n")
            fh.flush()


if __name__ == "__main__":
    main()
