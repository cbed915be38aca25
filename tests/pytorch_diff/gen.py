#!/usr/bin/env python3
"""Random differential cases for wgrad vs PyTorch. Writes JSON lines."""
import json, math, random, sys, warnings
import numpy as np
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 0
N = int(sys.argv[2]) if len(sys.argv) > 2 else 600
OUT = sys.argv[3] if len(sys.argv) > 3 else "/tmp/pytorch_diff/cases.jsonl"
ONLY = sys.argv[4].split(",") if len(sys.argv) > 4 and sys.argv[4] else None
R = random.Random(SEED)
import os
DEBUG = os.environ.get("DEBUG")
NP = np.random.default_rng(SEED)


def hexf(a):
    return np.ascontiguousarray(np.asarray(a, dtype="<f4")).tobytes().hex()


def hexi(a):
    return np.ascontiguousarray(np.asarray(a, dtype="<i4")).tobytes().hex()


def rdim(lo=0):
    return R.choice([lo, 1, 1, 2, 2, 3, 3, 4, 5] if lo == 0 else [1, 1, 2, 2, 3, 3, 4, 5])


def rshape(rmin=0, rmax=4, allow_empty=True):
    r = R.randint(rmin, rmax)
    s = [R.choice([1, 2, 2, 3, 3, 4, 5]) for _ in range(r)]
    if allow_empty and r > 0 and R.random() < 0.08:
        s[R.randrange(r)] = 0
    return s


def special(arr, p=0.0):
    if p <= 0:
        return arr
    flat = arr.reshape(-1)
    for i in range(flat.size):
        if R.random() < p:
            flat[i] = R.choice([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.5])
    return arr


class Inp:
    """One input: a base leaf and views applied to it."""

    def __init__(self, shape, dtype="f32", view=None, values=None, grad=True, expand_ok=True, lo=None, hi=None, sp=0.0):
        shape = list(shape)
        self.dtype = dtype
        kinds = ["c", "c", "t", "n", "e", "p"]
        if view is None:
            view = R.choice(kinds)
        views = []
        base = list(shape)
        r = len(shape)
        if view == "t" and r >= 2:
            a, b = R.sample(range(r), 2)
            base[a], base[b] = base[b], base[a]
            views.append(["transpose", a, b])
        elif view == "p" and r >= 3:
            perm = list(range(r))
            R.shuffle(perm)
            # view = base.permute(perm) => view.shape[i] = base.shape[perm[i]]
            base = [0] * r
            for i in range(r):
                base[perm[i]] = shape[i]
            views.append(["permute", perm])
        elif view == "n" and r >= 1:
            d = R.randrange(r)
            extra = R.randint(1, 3)
            st = R.randint(0, extra)
            base[d] = shape[d] + extra
            views.append(["narrow", d, st, shape[d]])
        elif view == "e" and r >= 1 and expand_ok and values is None:
            for d in range(r):
                if R.random() < 0.5:
                    base[d] = 1
            if base != shape:
                views.append(["expand", shape])
            # also sometimes fewer leading dims
        self.base = base
        self.views = views
        n = int(np.prod(base)) if base else 1
        if values is not None:
            # values given in the view's shape: only contiguous views then
            assert not views
            arr = np.asarray(values).reshape(base)
        elif dtype == "f32":
            arr = NP.standard_normal(base).astype(np.float32) if base else np.array(NP.standard_normal(), dtype=np.float32)
            if lo is not None:
                arr = (NP.random(base) * (hi - lo) + lo).astype(np.float32) if base else np.array(NP.random() * (hi - lo) + lo, dtype=np.float32)
            arr = special(arr, sp)
        elif dtype == "i32":
            lo_ = -6 if lo is None else lo
            hi_ = 7 if hi is None else hi
            arr = NP.integers(lo_, hi_, size=base).astype(np.int32) if base else np.array(NP.integers(lo_, hi_), dtype=np.int32)
        elif dtype == "bool":
            arr = (NP.random(base) < 0.5) if base else np.array(NP.random() < 0.5)
        self.arr = np.asarray(arr)
        self.grad = grad and dtype == "f32"

    def torch(self):
        if self.dtype == "f32":
            t = torch.tensor(self.arr.astype(np.float32), dtype=torch.float32)
        elif self.dtype == "i32":
            t = torch.tensor(self.arr.astype(np.int64), dtype=torch.int64)
        else:
            t = torch.tensor(self.arr.astype(bool), dtype=torch.bool)
        if self.grad:
            t.requires_grad_(True)
        self.leaf = t
        for v in self.views:
            if v[0] == "transpose":
                t = t.transpose(v[1], v[2])
            elif v[0] == "permute":
                t = t.permute(v[1])
            elif v[0] == "narrow":
                t = t.narrow(v[1], v[2], v[3])
            elif v[0] == "expand":
                t = t.expand(v[1])
        if self.views and os.environ.get("TORCH_CONTIG", "1") == "1":
            t = t.contiguous()  # dodge PyTorch CPU bugs on odd strides; values are the same
        return t

    def spec(self):
        if self.dtype == "f32":
            data = hexf(self.arr)
        else:
            data = hexi(self.arr.astype(np.int32))
        return {"dtype": self.dtype, "shape": self.base, "data": data, "views": self.views, "grad": self.grad}


def bshapes(k=2):
    out = rshape(0, 4)
    shapes = []
    for _ in range(k):
        r = R.randint(0, len(out))
        s = out[len(out) - r:] if r else []
        s = [1 if (R.random() < 0.3) else d for d in s]
        shapes.append(s)
    return shapes


def fi(shape, **kw):
    return Inp(shape, "f32", **kw)


# --------------------------------------------------------------- ops -----
GEN = {}


def op(name, weight=1):
    def deco(f):
        GEN[name] = (f, weight)
        return f
    return deco


BIN_F = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum,
    "floor_divide": lambda a, b: torch.div(a, b, rounding_mode="floor"), "remainder": torch.remainder,
}
CMP = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


@op("binary", 8)
def g_binary():
    name = R.choice(list(BIN_F))
    sa, sb = bshapes(2)
    sp = 0.05 if R.random() < 0.3 else 0.0
    if name == "pow" and R.random() < 0.6:
        a = fi(sa, lo=0.1, hi=3.0, sp=sp)
    else:
        a = fi(sa, sp=sp)
    b = fi(sb, sp=sp)
    if name in ("floor_divide", "remainder") and R.random() < 0.5:
        a = fi(sa, lo=-10, hi=10, sp=sp)
    f = BIN_F[name]
    return [a, b], {"op": name}, lambda t, p: f(t[0], t[1])


@op("binary_int", 4)
def g_binary_int():
    name = R.choice(["add", "sub", "mul", "div", "maximum", "minimum", "floor_divide", "remainder", "mixed_add", "mixed_mul", "mixed_div"])
    sa, sb = bshapes(2)
    a = Inp(sa, "i32", lo=-20, hi=20)
    zero_ok = R.random() < 0.1
    if name.startswith("mixed"):
        b = fi(sb)
    else:
        b = Inp(sb, "i32", lo=-6, hi=7)
        if not zero_ok and b.arr.size:
            b.arr[b.arr == 0] = 3
    base = name.replace("mixed_", "")
    f = BIN_F[base]
    return [a, b], {"op": base}, lambda t, p: f(t[0], t[1])


@op("binary_scalar", 4)
def g_binary_scalar():
    name = R.choice(list(BIN_F))
    s = round(R.uniform(-3, 3), 2)
    if R.random() < 0.3:
        s = float(R.choice([0.0, 1.0, 2.0, -1.0, 0.5, 3.0]))
    left = R.random() < 0.3
    if name in ("floor_divide", "remainder") and s == 0.0:
        s = 1.5
    x = fi(rshape(), sp=0.03 if R.random() < 0.3 else 0.0)
    if name == "pow" and not left and R.random() < 0.5:
        x = fi(rshape(), lo=0.1, hi=3)
    f = BIN_F[name]

    def run(t, p):
        st = torch.tensor(s)
        return f(st, t[0]) if left else f(t[0], st)
    return [x], {"op": name, "scalar": s, "left": left}, run


@op("binary_scalar_int", 2)
def g_binary_scalar_int():
    name = R.choice(["add", "sub", "mul", "div", "maximum", "minimum", "floor_divide", "remainder", "pow"])
    s = float(R.choice([2.0, -3.0, 1.0, 0.5, 4.0, -1.5]))
    x = Inp(rshape(), "i32", lo=-20, hi=20)
    f = BIN_F[name]
    if name == "pow":
        x = Inp(rshape(), "i32", lo=0, hi=5)
        s = float(R.choice([2.0, 0.5, 3.0]))
    sv = int(s) if float(s).is_integer() else s
    return [x], {"op": name, "scalar": s, "left": False}, lambda t, p: f(t[0], torch.tensor(sv))


@op("compare", 3)
def g_compare():
    name = R.choice(list(CMP))
    sa, sb = bshapes(2)
    dt = R.choice(["f32", "f32", "i32"])
    a = Inp(sa, dt, lo=-2 if dt == "i32" else None, hi=3 if dt == "i32" else None)
    b = Inp(sb, R.choice([dt, "f32"]), lo=-2 if dt == "i32" else None, hi=3 if dt == "i32" else None)
    if b.dtype == "i32" and dt == "f32":
        b = fi(sb)
    if dt == "f32" and R.random() < 0.3:
        a.arr = np.round(a.arr).astype(np.float32)
        b.arr = np.round(b.arr).astype(np.float32) if b.dtype == "f32" else b.arr
    f = CMP[name]
    return [a, b], {"op": name}, lambda t, p: f(t[0], t[1])


@op("where", 2)
def g_where():
    sm, sa, sb = bshapes(3)
    m = Inp(sm, "bool")
    dts = R.choice([("f32", "f32"), ("f32", "f32"), ("i32", "i32"), ("i32", "f32")])
    a = Inp(sa, dts[0])
    b = Inp(sb, dts[1])
    return [m, a, b], {}, lambda t, p: torch.where(t[0], t[1], t[2])


UN = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "relu": torch.relu, "gelu": F.gelu, "silu": F.silu,
    "square": torch.square, "recip": torch.reciprocal, "erf": torch.erf, "log1p": torch.log1p,
    "expm1": torch.expm1, "sign": torch.sign, "floor": torch.floor, "ceil": torch.ceil,
    "round": torch.round, "mish": F.mish, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}
POS = {"log", "sqrt", "rsqrt", "log1p"}


@op("unary", 8)
def g_unary():
    name = R.choice(list(UN) + ["leaky_relu", "clamp", "softplus", "elu", "hardtanh"])
    sp = 0.08 if R.random() < 0.3 else 0.0
    if name in POS and R.random() < 0.7:
        x = fi(rshape(), lo=0.01 if name != "log1p" else -0.9, hi=4, sp=sp)
    elif name in ("floor", "ceil", "round") and R.random() < 0.5:
        shp = rshape()
        x = fi(shp, lo=-4, hi=4, sp=sp)
        x.arr = (np.round(x.arr * 2) / 2).astype(np.float32)
    else:
        x = fi(rshape(), sp=sp)
        if R.random() < 0.3:
            x.arr = (x.arr * 15).astype(np.float32)
    p = {"op": name}
    if name == "leaky_relu":
        p["slope"] = R.choice([0.01, 0.2, -0.5, 1.5])
        return [x], p, lambda t, p: F.leaky_relu(t[0], p["slope"])
    if name == "clamp":
        lo = R.choice([None, -0.5, 0.0, 0.3])
        hi = R.choice([None, 0.5, 1.0, -1.0])
        if lo is None and hi is None:
            hi = 0.5
        p["min"], p["max"] = lo, hi
        return [x], p, lambda t, p: torch.clamp(t[0], p["min"], p["max"])
    if name == "softplus":
        p["beta"] = R.choice([1.0, 2.0, 0.5])
        p["threshold"] = R.choice([20.0, 1.0, 5.0])
        return [x], p, lambda t, p: F.softplus(t[0], p["beta"], p["threshold"])
    if name == "elu":
        p["alpha"] = R.choice([1.0, 0.5, 2.0])
        return [x], p, lambda t, p: F.elu(t[0], p["alpha"])
    if name == "hardtanh":
        p["min"], p["max"] = R.choice([(-1.0, 1.0), (-0.5, 2.0), (0.0, 0.5)])
        return [x], p, lambda t, p: F.hardtanh(t[0], p["min"], p["max"])
    f = UN[name]
    return [x], p, lambda t, p: f(t[0])


@op("unary_int", 2)
def g_unary_int():
    name = R.choice(["neg", "abs", "relu", "square", "sign", "floor", "ceil", "round", "clamp", "exp", "sqrt", "sigmoid"])
    x = Inp(rshape(), "i32", lo=-9, hi=10)
    p = {"op": name}
    if name == "clamp":
        p["min"], p["max"] = R.choice([(-2.0, 3.0), (None, 1.0), (0.0, None)])
        return [x], p, lambda t, p: torch.clamp(t[0], None if p["min"] is None else int(p["min"]), None if p["max"] is None else int(p["max"]))
    if name == "relu":
        return [x], p, lambda t, p: torch.relu(t[0])
    f = UN[name]
    return [x], p, lambda t, p: f(t[0])


def rdims(r, allow_empty=True):
    if r == 0:
        return R.choice([[], [0], [-1]])
    k = R.randint(0 if allow_empty else 1, r)
    ds = R.sample(range(r), k)
    return [d - r if R.random() < 0.3 else d for d in ds]


@op("reduce", 8)
def g_reduce():
    name = R.choice(["sum", "mean", "prod", "amax", "amin", "var", "std", "logsumexp", "norm"])
    shp = rshape()
    sp = 0.05 if R.random() < 0.2 else 0.0
    x = fi(shp, sp=sp)
    dims = rdims(len(shp))
    if name == "prod" and len(dims) > 1:
        dims = dims[:1]
    keep = R.random() < 0.5
    p = {"op": name, "dims": dims, "keepdim": keep}
    if name in ("var", "std"):
        p["correction"] = R.choice([0, 1, 1, 2])
    if name == "norm":
        p["p"] = R.choice([2.0, 1.0, float("inf"), float("-inf"), 0.0, 3.0, 0.5])
    if name == "logsumexp" and not dims:
        p["dims"] = dims = list(range(len(shp)))

    def run(t, p):
        x = t[0]
        d = p["dims"] if p["dims"] else None
        k = p["keepdim"]
        if name == "sum":
            return x.sum(dim=d, keepdim=k) if d is not None else (x.sum() if not k else x.sum(dim=tuple(range(x.dim())), keepdim=True))
        if name == "mean":
            return x.mean(dim=d, keepdim=k) if d is not None else (x.mean() if not k else x.mean(dim=tuple(range(x.dim())), keepdim=True))
        if name == "prod":
            if d is None:
                r = x.prod()
                return r.reshape([1] * x.dim()) if k else r
            r = x
            for dd in sorted([dd % max(x.dim(), 1) for dd in d], reverse=True):
                r = r.prod(dim=dd, keepdim=True)
            if not k:
                r = r.squeeze(tuple(sorted(set(dd % max(x.dim(), 1) for dd in d)))) if x.dim() > 0 else r.reshape(())
            return r
        if name == "amax":
            return torch.amax(x, dim=d if d is not None else (), keepdim=k)
        if name == "amin":
            return torch.amin(x, dim=d if d is not None else (), keepdim=k)
        if name == "var":
            return torch.var(x, dim=d, correction=p["correction"], keepdim=k)
        if name == "std":
            return torch.std(x, dim=d, correction=p["correction"], keepdim=k)
        if name == "logsumexp":
            return torch.logsumexp(x, dim=d if d is not None else (), keepdim=k)
        if name == "norm":
            return torch.linalg.vector_norm(x, ord=p["p"], dim=d, keepdim=k)
    return [x], p, run


@op("reduce_int", 2)
def g_reduce_int():
    name = R.choice(["sum", "amax", "amin", "argmax", "argmin", "cumsum", "max_dim"])
    shp = rshape()
    x = Inp(shp, "i32", lo=-5, hi=6)
    r = len(shp)
    keep = R.random() < 0.5
    if name in ("argmax", "argmin", "cumsum", "max_dim"):
        d = R.randrange(-max(r, 1), max(r, 1))
        p = {"op": name, "dim": d, "keepdim": keep}
        if name == "cumsum":
            return [x], p, lambda t, p: torch.cumsum(t[0], p["dim"]).to(torch.int32)
        if name == "max_dim":
            return [x], p, lambda t, p: tuple(torch.max(t[0], p["dim"], keepdim=p["keepdim"]))
        f = torch.argmax if name == "argmax" else torch.argmin
        return [x], p, lambda t, p: f(t[0], p["dim"], keepdim=p["keepdim"])
    dims = rdims(r)
    p = {"op": name, "dims": dims, "keepdim": keep}

    def run(t, p):
        x = t[0]
        d = p["dims"] if p["dims"] else None
        if name == "sum":
            return x.sum(dim=d, keepdim=keep) if d is not None else (x.sum() if not keep else x.sum(dim=tuple(range(x.dim())), keepdim=True))
        f = torch.amax if name == "amax" else torch.amin
        return f(x, dim=d if d is not None else (), keepdim=keep)
    return [x], p, run


@op("dimred", 6)
def g_dimred():
    name = R.choice(["max_dim", "min_dim", "argmax", "argmin", "argmax_all", "argmin_all", "cumsum", "cumprod", "softmax", "log_softmax", "any", "all"])
    shp = rshape()
    r = len(shp)
    ties = R.random() < 0.3
    x = fi(shp, sp=0.05 if R.random() < 0.2 else 0.0)
    if ties:
        x.arr = np.round(x.arr).astype(np.float32)
    d = R.randrange(-max(r, 1), max(r, 1))
    keep = R.random() < 0.5
    p = {"op": name, "dim": d, "keepdim": keep}
    if name in ("max_dim", "min_dim"):
        f = torch.max if name == "max_dim" else torch.min
        return [x], p, lambda t, p: tuple(f(t[0], p["dim"], keepdim=p["keepdim"]))
    if name in ("argmax", "argmin"):
        f = torch.argmax if name == "argmax" else torch.argmin
        return [x], p, lambda t, p: f(t[0], p["dim"], keepdim=p["keepdim"])
    if name in ("argmax_all", "argmin_all"):
        f = torch.argmax if name == "argmax_all" else torch.argmin
        return [x], p, lambda t, p: f(t[0])
    if name == "cumsum":
        return [x], p, lambda t, p: torch.cumsum(t[0], p["dim"])
    if name == "cumprod":
        if R.random() < 0.3 and x.arr.size:
            x.arr.reshape(-1)[R.randrange(x.arr.size)] = 0.0
        return [x], p, lambda t, p: torch.cumprod(t[0], p["dim"])
    if name == "softmax":
        return [x], p, lambda t, p: torch.softmax(t[0], p["dim"])
    if name == "log_softmax":
        return [x], p, lambda t, p: torch.log_softmax(t[0], p["dim"])
    dims = rdims(r)
    p["dims"] = dims
    x.arr = np.where(NP.random(x.arr.shape) < 0.3, 0.0, x.arr).astype(np.float32)
    x.grad = False
    f = torch.any if name == "any" else torch.all

    def run(t, p):
        if not p["dims"]:
            return f(t[0]) if not keep else f(t[0].reshape(-1)).reshape([1] * t[0].dim())
        return f(t[0], dim=tuple(p["dims"]), keepdim=keep)
    return [x], p, run


@op("matmul", 5)
def g_matmul():
    m, k, n = rdim(), rdim(), rdim()
    ra, rb = R.randint(1, 4), R.randint(1, 4)
    batch = [R.choice([1, 2, 3]) for _ in range(2)]
    sa = ([k] if ra == 1 else [m, k])
    sb = ([k] if rb == 1 else [k, n])
    ba = batch[2 - max(0, ra - 2):] if ra > 2 else []
    bb = batch[2 - max(0, rb - 2):] if rb > 2 else []
    ba = [1 if R.random() < 0.3 else d for d in ba]
    bb = [1 if R.random() < 0.3 else d for d in bb]
    a = fi(ba + sa)
    b = fi(bb + sb)
    mode = R.choice(["matmul", "matmul", "matmul_t"])
    p = {"op": mode}
    if mode == "matmul_t" and ra >= 2 and rb >= 2:
        ta, tb = R.random() < 0.5, R.random() < 0.5
        p["ta"], p["tb"] = ta, tb
        if ta:
            sa2 = ba + [k, m]
            a = fi(sa2)
        if tb:
            b = fi(bb + [n, k])
        return [a, b], p, lambda t, p: torch.matmul(t[0].mT if ta else t[0], t[1].mT if tb else t[1])
    p["op"] = "matmul"
    return [a, b], p, lambda t, p: torch.matmul(t[0], t[1])


@op("linear", 3)
def g_linear():
    inn, out = rdim(), rdim()
    lead = rshape(0, 3)
    x = fi(lead + [inn])
    w = fi([out, inn])
    bias = R.random() < 0.6
    ins = [x, w] + ([fi([out])] if bias else [])
    return ins, {"bias": bias}, lambda t, p: F.linear(t[0], t[1], t[2] if p["bias"] else None)


@op("structure", 10)
def g_structure():
    name = R.choice(["cat", "stack", "split", "chunk", "narrow", "select", "slice", "flip", "roll", "repeat",
                     "transpose", "permute", "reshape", "flatten", "squeeze", "unsqueeze", "expand", "tril", "triu", "unbind"])
    shp = rshape()
    r = len(shp)
    p = {"op": name}
    if name in ("cat", "stack"):
        k = R.randint(1, 3)
        if name == "cat":
            if r == 0:
                shp = [2]; r = 1
            d = R.randrange(-r, r)
            ins = []
            for _ in range(k):
                s = list(shp)
                s[d] = R.choice([0, 1, 2, 3])
                ins.append(fi(s))
        else:
            d = R.randrange(-r - 1, r + 1)
            ins = [fi(shp) for _ in range(k)]
        p["dim"] = d
        f = torch.cat if name == "cat" else torch.stack
        return ins, p, lambda t, p: f(list(t), p["dim"])
    if name in ("tril", "triu"):
        shp = rshape(2, 4)
        x = fi(shp)
        p["diag"] = R.randint(-3, 3)
        f = torch.tril if name == "tril" else torch.triu
        return [x], p, lambda t, p: f(t[0], p["diag"])
    if r == 0 and name in ("split", "chunk", "narrow", "select", "slice", "roll", "unbind", "transpose"):
        shp = [3]; r = 1
    x = fi(shp)
    d = R.randrange(-r, r) if r else 0
    p["dim"] = d
    n = shp[d] if r else 1
    if name == "split":
        p["size"] = R.randint(1, 4)
        return [x], p, lambda t, p: tuple(torch.split(t[0], p["size"], p["dim"]))
    if name == "chunk":
        p["chunks"] = R.randint(1, 4)
        return [x], p, lambda t, p: tuple(torch.chunk(t[0], p["chunks"], p["dim"]))
    if name == "unbind":
        return [x], p, lambda t, p: tuple(torch.unbind(t[0], p["dim"]))
    if name == "narrow":
        st = R.randint(0, n)
        p["start"], p["len"] = st, R.randint(0, n - st)
        return [x], p, lambda t, p: t[0].narrow(p["dim"], p["start"], p["len"])
    if name == "select":
        p["index"] = R.randint(-n, max(n - 1, -n)) if n else 0
        return [x], p, lambda t, p: t[0].select(p["dim"], p["index"])
    if name == "slice":
        st = R.choice([None, R.randint(-6, 6)])
        en = R.choice([None, R.randint(-6, 6)])
        step = R.choice([1, 1, 2, 3])
        p.update(start=st, end=en, step=step)

        def run(t, p):
            idx = [slice(None)] * t[0].dim()
            idx[p["dim"]] = slice(p["start"], p["end"], p["step"])
            return t[0][tuple(idx)]
        return [x], p, run
    if name == "flip":
        p["dims"] = R.sample(range(r), R.randint(0, r)) if r else []
        return [x], p, lambda t, p: torch.flip(t[0], p["dims"])
    if name == "roll":
        if R.random() < 0.3:
            p["shifts"], p["dims"] = [R.randint(-7, 7)], []
            return [x], p, lambda t, p: torch.roll(t[0], p["shifts"][0])
        ds = R.sample(range(r), R.randint(1, r))
        p["shifts"], p["dims"] = [R.randint(-7, 7) for _ in ds], ds
        return [x], p, lambda t, p: torch.roll(t[0], p["shifts"], p["dims"])
    if name == "repeat":
        p["reps"] = [R.randint(0, 3) if R.random() < 0.15 else R.randint(1, 3) for _ in range(r + R.randint(0, 1))]
        if len(p["reps"]) + 0 > 4:
            p["reps"] = p["reps"][:4] if r < 4 else p["reps"]
        return [x], p, lambda t, p: t[0].repeat(*p["reps"]) if p["reps"] else t[0].repeat(())
    if name == "transpose":
        p["a"], p["b"] = R.randrange(-r, r), R.randrange(-r, r)
        return [x], p, lambda t, p: t[0].transpose(p["a"], p["b"])
    if name == "permute":
        perm = list(range(r)); R.shuffle(perm)
        p["perm"] = perm
        return [x], p, lambda t, p: t[0].permute(p["perm"])
    if name == "reshape":
        total = int(np.prod(shp)) if shp else 1
        # factorize
        facs = []
        m = total
        for f in [2, 3, 5, 2, 3]:
            if m % f == 0 and m > 1 and R.random() < 0.6:
                facs.append(f); m //= f
        facs.append(m)
        if R.random() < 0.2:
            facs.append(1)
        R.shuffle(facs)
        if total and R.random() < 0.5:
            facs[R.randrange(len(facs))] = -1
        p["shape"] = facs
        return [x], p, lambda t, p: t[0].reshape(p["shape"])
    if name == "flatten":
        p["start"] = R.randrange(0, max(r, 1))
        return [x], p, lambda t, p: torch.flatten(t[0], p["start"])
    if name == "squeeze":
        return [x], p, lambda t, p: t[0].squeeze(p["dim"])
    if name == "unsqueeze":
        p["dim"] = R.randrange(-r - 1, r + 1)
        return [x], p, lambda t, p: t[0].unsqueeze(p["dim"])
    if name == "expand":
        shp1 = [1 if R.random() < 0.5 else s for s in shp]
        x = fi(shp1)
        tgt = [R.choice([s, 2, 3]) if s == 1 else s for s in shp1]
        lead = [R.randint(1, 3) for _ in range(R.randint(0, 1))]
        p["shape"] = lead + tgt
        return [x], p, lambda t, p: t[0].expand(p["shape"])
    raise Exception(name)


@op("index", 8)
def g_index():
    name = R.choice(["index_select", "gather", "scatter_add", "index_add", "scatter", "masked_fill", "masked_select", "index_put", "one_hot", "embedding"])
    shp = rshape(1, 4)
    r = len(shp)
    d = R.randrange(-r, r)
    n = shp[d]
    p = {"op": name, "dim": d}
    x = fi(shp)
    if name == "index_select":
        k = R.randint(0, 5)
        neg = R.random() < 0.1
        idx = Inp([k], "i32", lo=-n if neg else 0, hi=max(n, 1), view="c") if n else Inp([0], "i32", view="c")
        return [x, idx], p, lambda t, p: torch.index_select(t[0], p["dim"], t[1])
    if name == "gather":
        ishape = [R.randint(0, s) if i != (d % r) else R.randint(0, 4) for i, s in enumerate(shp)]
        idx = Inp(ishape, "i32", lo=0, hi=max(n, 1), view="c")
        if n == 0:
            idx = Inp([0] * r, "i32", view="c")
        return [x, idx], p, lambda t, p: torch.gather(t[0], p["dim"], t[1])
    if name in ("scatter_add", "scatter"):
        ishape = [R.randint(0, s) if i != (d % r) else R.randint(0, 4) for i, s in enumerate(shp)]
        if n == 0:
            ishape = [0] * r
        if name == "scatter":
            # unique index per target row to keep it deterministic
            ishape[d % r] = min(ishape[d % r], n)
            idx_arr = np.zeros(ishape, dtype=np.int32)
            it = np.moveaxis(idx_arr, d % r, -1)
            for pos in np.ndindex(it.shape[:-1]):
                it[pos] = np.array(R.sample(range(n), it.shape[-1]), dtype=np.int32)
            idx = Inp(ishape, "i32", view="c", values=np.moveaxis(it, -1, d % r).copy())
        else:
            idx = Inp(ishape, "i32", lo=0, hi=max(n, 1), view="c")
        src_shape = [s + R.randint(0, 1) for s in ishape]
        src = fi(src_shape)
        f = torch.scatter_add if name == "scatter_add" else torch.scatter
        return [x, idx, src], p, lambda t, p: f(t[0], p["dim"], t[1], t[2])
    if name == "index_add":
        k = R.randint(0, 5)
        idx = Inp([k], "i32", lo=0, hi=max(n, 1), view="c") if n else Inp([0], "i32", view="c")
        ss = list(shp); ss[d] = idx.arr.size
        src = fi(ss)
        p["alpha"] = R.choice([1.0, 1.0, 2.0])
        return [x, idx, src], p, lambda t, p: t[0].index_add(p["dim"], t[1], t[2])
    if name in ("masked_fill", "masked_select"):
        ms = [1 if R.random() < 0.3 else s for s in shp]
        ms = ms[R.randint(0, r):]
        m = Inp(ms, "bool")
        p["value"] = R.choice([0.0, -1e9, 2.5, float("-inf")])
        if name == "masked_fill":
            return [x, m], p, lambda t, p: t[0].masked_fill(t[1], p["value"])
        return [x, m], p, lambda t, p: t[0].masked_select(t[1])
    if name == "index_put":
        n0 = shp[0]
        k = R.randint(0, 4)
        acc = R.random() < 0.5
        if acc:
            idx = Inp([k], "i32", lo=-n0, hi=max(n0, 1), view="c") if n0 else Inp([0], "i32", view="c")
        else:
            vals = R.sample(range(-n0, n0), min(k, n0)) if n0 else []
            # avoid duplicates mod n0
            seen, uv = set(), []
            for v in vals:
                if v % n0 not in seen:
                    seen.add(v % n0); uv.append(v)
            idx = Inp([len(uv)], "i32", view="c", values=np.array(uv, dtype=np.int32))
        vs = [idx.arr.size] + shp[1:]
        vs = vs[R.randint(0, len(vs)):] if R.random() < 0.3 else vs
        v = fi(vs)
        p["acc"] = acc
        return [x, idx, v], p, lambda t, p: t[0].index_put((t[1],), t[2], accumulate=p["acc"])
    if name == "one_hot":
        c = R.randint(1, 5)
        idx = Inp(rshape(0, 3), "i32", lo=0, hi=c)
        p["classes"] = c
        return [idx], p, lambda t, p: F.one_hot(t[0], p["classes"]).float()
    if name == "embedding":
        V, D = R.randint(1, 6), R.randint(1, 4)
        w = fi([V, D])
        idx = Inp(rshape(0, 3), "i32", lo=0, hi=V)
        pad = R.choice([None, None, 0, -1, V - 1])
        p["pad"] = pad
        return [idx, w], p, lambda t, p: F.embedding(t[0], t[1], padding_idx=p["pad"])
    raise Exception(name)


@op("sort", 4)
def g_sort():
    name = R.choice(["sort", "argsort", "topk"])
    shp = rshape()
    r = len(shp)
    x = fi(shp, expand_ok=(name != "topk"), sp=0.05 if R.random() < 0.2 and name != "topk" else 0.0)
    if name != "topk" and R.random() < 0.3:
        x.arr = np.round(x.arr).astype(np.float32)
    d = R.randrange(-max(r, 1), max(r, 1))
    desc = R.random() < 0.5
    p = {"op": name, "dim": d, "desc": desc}
    if name == "sort":
        return [x], p, lambda t, p: tuple(torch.sort(t[0], dim=p["dim"], descending=p["desc"], stable=True))
    if name == "argsort":
        return [x], p, lambda t, p: torch.argsort(t[0], dim=p["dim"], descending=p["desc"], stable=True)
    n = shp[d] if r else 1
    p["k"] = R.randint(0, n)
    return [x], p, lambda t, p: tuple(torch.topk(t[0], p["k"], dim=p["dim"], largest=p["desc"], sorted=True))


@op("layer_norm", 3)
def g_layer_norm():
    shp = rshape(1, 4)
    k = R.randint(1, min(2, len(shp)))
    ns = shp[-k:]
    x = fi(shp)
    aff = R.choice(["none", "w", "wb"])
    ins = [x]
    if aff != "none":
        ins.append(fi(ns))
    if aff == "wb":
        ins.append(fi(ns))
    eps = R.choice([1e-5, 1e-3])
    p = {"ns": ns, "aff": aff, "eps": eps}
    return ins, p, lambda t, p: F.layer_norm(t[0], p["ns"], t[1] if len(t) > 1 else None, t[2] if len(t) > 2 else None, p["eps"])


@op("loss", 8)
def g_loss():
    name = R.choice(["cross_entropy", "cross_entropy_prob", "nll_loss", "mse", "l1", "smooth_l1", "huber", "bce", "bce_logits", "kl_div"])
    red = R.choice(["mean", "sum", "none"])
    p = {"op": name, "red": red}
    if name in ("cross_entropy", "nll_loss", "cross_entropy_prob"):
        N, C = rdim(), R.randint(1, 5)
        extra = [] if R.random() < 0.7 else [R.randint(1, 3)]
        if R.random() < 0.15:
            shp_l = [C]  # unbatched
            tshape = []
        else:
            shp_l = [N, C] + extra
            tshape = [N] + extra
        logits = fi(shp_l)
        ii = R.choice([-100, -100, 0, 1, -1])
        tgt = Inp(tshape, "i32", lo=0, hi=C)
        if R.random() < 0.3 and tgt.arr.size:
            tgt.arr.reshape(-1)[R.randrange(tgt.arr.size)] = ii
        p["ii"] = ii
        if name == "nll_loss":
            return [logits, tgt], p, lambda t, p: F.nll_loss(t[0], t[1], ignore_index=p["ii"], reduction=p["red"])
        p["ls"] = R.choice([0.0, 0.0, 0.1, 0.5])
        if name == "cross_entropy_prob":
            pr = fi(shp_l, grad=False)
            pr.arr = np.abs(pr.arr)
            return [logits, pr], p, lambda t, p: F.cross_entropy(t[0], t[1], label_smoothing=p["ls"], reduction=p["red"])
        return [logits, tgt], p, lambda t, p: F.cross_entropy(t[0], t[1], ignore_index=p["ii"], label_smoothing=p["ls"], reduction=p["red"])
    shp = rshape()
    a, b = fi(shp), fi(shp)
    if name == "mse":
        return [a, b], p, lambda t, p: F.mse_loss(t[0], t[1], reduction=p["red"])
    if name == "l1":
        return [a, b], p, lambda t, p: F.l1_loss(t[0], t[1], reduction=p["red"])
    if name == "smooth_l1":
        p["beta"] = R.choice([1.0, 0.5, 0.0, 2.0])
        return [a, b], p, lambda t, p: F.smooth_l1_loss(t[0], t[1], reduction=p["red"], beta=p["beta"])
    if name == "huber":
        p["delta"] = R.choice([1.0, 0.5, 2.0])
        return [a, b], p, lambda t, p: F.huber_loss(t[0], t[1], reduction=p["red"], delta=p["delta"])
    if name == "bce":
        a = fi(shp, lo=0.0, hi=1.0)
        b = fi(shp, lo=0.0, hi=1.0)
        if R.random() < 0.3:
            b.arr = np.round(b.arr).astype(np.float32)
        w = R.random() < 0.3
        ins = [a, b] + ([fi(shp[R.randint(0, len(shp)):], grad=False)] if w else [])
        p["w"] = w
        return ins, p, lambda t, p: F.binary_cross_entropy(t[0], t[1], weight=t[2] if p["w"] else None, reduction=p["red"])
    if name == "bce_logits":
        b = fi(shp, lo=0.0, hi=1.0)
        w = R.random() < 0.3
        pw = R.random() < 0.3 and len(shp) >= 1
        ins = [a, b]
        if w:
            ins.append(fi(shp[R.randint(0, len(shp)):], grad=False))
        if pw:
            ins.append(fi(shp[-1:], lo=0.5, hi=3.0, grad=False))
        p["w"], p["pw"] = w, pw

        def run(t, p):
            i = 2
            ww = pp = None
            if p["w"]:
                ww = t[i]; i += 1
            if p["pw"]:
                pp = t[i]
            return F.binary_cross_entropy_with_logits(t[0], t[1], weight=ww, pos_weight=pp, reduction=p["red"])
        return ins, p, run
    if name == "kl_div":
        p["red"] = R.choice(["mean", "sum", "none", "batchmean"])
        p["lt"] = R.random() < 0.3
        if not p["lt"]:
            b = fi(shp, lo=0.0, hi=1.0)
            if b.arr.size and R.random() < 0.3:
                b.arr.reshape(-1)[0] = 0.0
        return [a, b], p, lambda t, p: F.kl_div(t[0], t[1], reduction=p["red"], log_target=p["lt"])
    raise Exception(name)


@op("conv2d", 4)
def g_conv():
    N = R.randint(1, 3)
    g = R.choice([1, 1, 2, 3])
    cin = g * R.randint(1, 2)
    cout = g * R.randint(1, 2)
    kh, kw = R.randint(1, 3), R.randint(1, 3)
    H, W = R.randint(1, 7), R.randint(1, 7)
    st = [R.randint(1, 3), R.randint(1, 3)]
    pad = [R.randint(0, 2), R.randint(0, 2)]
    dil = [R.randint(1, 2), R.randint(1, 2)]
    unb = R.random() < 0.1
    x = fi(([] if unb else [N]) + [cin, H, W])
    w = fi([cout, cin // g, kh, kw])
    bias = R.random() < 0.5
    ins = [x, w] + ([fi([cout])] if bias else [])
    p = {"stride": st, "pad": pad, "dil": dil, "groups": g, "bias": bias}
    return ins, p, lambda t, p: F.conv2d(t[0], t[1], t[2] if p["bias"] else None, stride=p["stride"], padding=p["pad"], dilation=p["dil"], groups=p["groups"])


@op("pool", 4)
def g_pool():
    name = R.choice(["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"])
    N, C, H, W = R.randint(1, 2), R.randint(1, 3), R.randint(1, 7), R.randint(1, 7)
    unb = R.random() < 0.15
    x = fi(([] if unb else [N]) + [C, H, W])
    p = {"op": name}
    if name == "adaptive_avg_pool2d":
        p["out"] = [R.randint(1, 5), R.randint(1, 5)]
        return [x], p, lambda t, p: F.adaptive_avg_pool2d(t[0], p["out"])
    k = [R.randint(1, 3), R.randint(1, 3)]
    s = [R.randint(1, 3), R.randint(1, 3)]
    pad = [R.randint(0, k[0] // 2), R.randint(0, k[1] // 2)]
    ceil = R.random() < 0.3
    p.update(k=k, s=s, pad=pad, ceil=ceil)
    if name == "max_pool2d":
        if R.random() < 0.3:
            x.arr = np.round(x.arr).astype(np.float32)
        p["dil"] = [R.randint(1, 2), R.randint(1, 2)]
        # PyTorch corrupts memory when a window lies wholly in the padding
        HW = (H, W)
        for ax in range(2):
            ek = (k[ax] - 1) * p["dil"][ax] + 1
            L = HW[ax] + 2 * pad[ax]
            if L < ek:
                continue
            no = (L - ek + (s[ax] - 1 if ceil else 0)) // s[ax] + 1
            for o in range(no):
                taps = [o * s[ax] - pad[ax] + j * p["dil"][ax] for j in range(k[ax])]
                if not any(0 <= tp < HW[ax] for tp in taps):
                    p["dil"][ax] = 1
                    break
        return [x], p, lambda t, p: F.max_pool2d(t[0], p["k"], p["s"], p["pad"], p["dil"], ceil_mode=p["ceil"])
    p["cip"] = R.random() < 0.5
    p["div"] = R.choice([None, None, 3])
    return [x], p, lambda t, p: F.avg_pool2d(t[0], p["k"], p["s"], p["pad"], ceil_mode=p["ceil"], count_include_pad=p["cip"], divisor_override=p["div"])


@op("sdpa", 4)
def g_sdpa():
    B = [R.randint(1, 2) for _ in range(R.randint(0, 2))]
    L, S, E, Ev = R.randint(1, 5), R.randint(1, 5), R.randint(1, 4), R.randint(1, 4)
    q, k, v = fi(B + [L, E]), fi(B + [S, E]), fi(B + [S, Ev])
    mk = R.choice(["none", "none", "bool", "float", "causal"])
    p = {"mask": mk, "scale": R.choice([None, None, 0.5])}
    ins = [q, k, v]
    if mk == "bool":
        ins.append(Inp([L, S], "bool"))
    elif mk == "float":
        ins.append(fi([L, S], grad=False))
    if mk == "causal":
        p["causal"] = True

    def run(t, p):
        m = t[3] if len(t) > 3 else None
        return F.scaled_dot_product_attention(t[0], t[1], t[2], attn_mask=m, is_causal=p["mask"] == "causal", scale=p["scale"])
    return ins, p, run


def big_shape(total_max=6000, rmin=1, rmax=3):
    r = R.randint(rmin, rmax)
    s = []
    for i in range(r):
        s.append(R.choice([1, 3, 7, 17, 33, 64, 65, 127, 129, 255, 257, 513, 1025, 2049]))
    while int(np.prod(s)) > total_max:
        j = max(range(r), key=lambda i: s[i])
        s[j] = max(1, s[j] // 3)
    return s


@op("big", 8)
def g_big():
    name = R.choice(["sum", "mean", "var", "amax", "max_dim", "argmax", "softmax", "log_softmax", "cumsum", "sort", "topk", "logsumexp", "norm", "matmul", "layer_norm", "cross_entropy", "sdpa", "conv2d", "prod", "any", "max_pool2d", "index_add", "scatter_add", "masked_select"])
    p = {"op": name}
    if name == "matmul":
        m, k, n = [R.choice([1, 5, 31, 63, 64, 65, 100, 130, 257]) for _ in range(3)]
        b = R.choice([[], [2], [3, 1]])
        a_ = fi(b + [m, k]); b_ = fi(([1] if b else []) + [k, n])
        return [a_, b_], p, lambda t, p: torch.matmul(t[0], t[1])
    if name == "layer_norm":
        D = R.choice([63, 64, 65, 255, 256, 513, 1025])
        x = fi([R.randint(1, 9), D]); w = fi([D]); b = fi([D])
        p["ns"] = [D]
        return [x, w, b], p, lambda t, p: F.layer_norm(t[0], [D], t[1], t[2])
    if name == "cross_entropy":
        N, C = R.randint(1, 40), R.choice([2, 10, 100, 257, 1000, 2049])
        x = fi([N, C]); y = Inp([N], "i32", lo=0, hi=C)
        p.update(red=R.choice(["mean", "sum", "none"]), ls=R.choice([0.0, 0.1]), ii=-100)
        return [x, y], p, lambda t, p: F.cross_entropy(t[0], t[1], reduction=p["red"], label_smoothing=p["ls"])
    if name == "sdpa":
        B, H = R.randint(1, 2), R.randint(1, 2)
        L, S = R.choice([1, 63, 64, 65, 130]), R.choice([1, 63, 64, 65, 130])
        E = R.choice([8, 16, 32, 64])
        q, k, v = fi([B, H, L, E]), fi([B, H, S, E]), fi([B, H, S, E])
        causal = R.random() < 0.4
        p["causal"] = causal
        return [q, k, v], p, lambda t, p: F.scaled_dot_product_attention(t[0], t[1], t[2], is_causal=p["causal"])
    if name == "conv2d":
        N, Ci, Co = R.randint(1, 2), R.choice([3, 8, 16]), R.choice([4, 8, 32])
        H = R.choice([8, 15, 32]); k = R.choice([1, 3, 5])
        st = R.choice([1, 2]); pad = R.randint(0, k // 2)
        x = fi([N, Ci, H, H]); w = fi([Co, Ci, k, k]); b = fi([Co])
        p.update(stride=[st, st], pad=[pad, pad], dil=[1, 1], groups=1, bias=True)
        return [x, w, b], p, lambda t, p: F.conv2d(t[0], t[1], t[2], stride=st, padding=pad)
    if name == "max_pool2d":
        x = fi([2, 3, R.choice([16, 33]), R.choice([16, 31])])
        p.update(k=[3, 3], s=[2, 2], pad=[1, 1], ceil=False, dil=[1, 1])
        return [x], p, lambda t, p: F.max_pool2d(t[0], 3, 2, 1)
    if name in ("index_add", "scatter_add"):
        n, d = R.choice([10, 100]), R.choice([7, 64, 300])
        x = fi([n, d])
        k = R.choice([50, 500, 2000])
        if name == "index_add":
            idx = Inp([k], "i32", lo=0, hi=n, view="c"); src = fi([k, d])
            return [x, idx, src], {"op": name, "dim": 0}, lambda t, p: t[0].index_add(0, t[1], t[2])
        idx = Inp([k // 10 + 1, d], "i32", lo=0, hi=n, view="c"); src = fi([k // 10 + 1, d])
        return [x, idx, src], {"op": name, "dim": 0}, lambda t, p: torch.scatter_add(t[0], 0, t[1], t[2])
    shp = big_shape()
    r = len(shp)
    x = fi(shp, expand_ok=name not in ("topk",))
    if name == "masked_select":
        m = Inp(shp, "bool")
        return [x, m], p, lambda t, p: t[0].masked_select(t[1])
    d = R.randrange(-r, r)
    p.update(dim=d, keepdim=R.random() < 0.5, dims=[d])
    if name in ("sum", "mean", "amax", "logsumexp", "any"):
        if R.random() < 0.3:
            p["dims"] = []
        if name == "any":
            x.arr = (NP.random(x.arr.shape) < 0.001).astype(np.float32); x.grad = False
            return [x], p, lambda t, p: torch.any(t[0], dim=tuple(p["dims"]) if p["dims"] else tuple(range(t[0].dim())), keepdim=p["keepdim"])
        f = {"sum": torch.sum, "mean": torch.mean, "amax": torch.amax, "logsumexp": torch.logsumexp}[name]
        return [x], p, lambda t, p: f(t[0], dim=tuple(p["dims"]) if p["dims"] else tuple(range(t[0].dim())), keepdim=p["keepdim"])
    if name == "prod":
        x.arr = (1 + 0.01 * x.arr).astype(np.float32)
        return [x], p, lambda t, p: torch.prod(t[0], p["dim"], keepdim=p["keepdim"])
    if name == "var":
        p["correction"] = 1
        return [x], p, lambda t, p: torch.var(t[0], p["dims"], keepdim=p["keepdim"])
    if name == "norm":
        p["p"] = R.choice([2.0, 1.0, 3.0])
        return [x], p, lambda t, p: torch.linalg.vector_norm(t[0], p["p"], p["dims"], keepdim=p["keepdim"])
    if name == "max_dim":
        return [x], p, lambda t, p: tuple(torch.max(t[0], p["dim"], keepdim=p["keepdim"]))
    if name == "argmax":
        return [x], p, lambda t, p: torch.argmax(t[0], p["dim"], keepdim=p["keepdim"])
    if name in ("softmax", "log_softmax", "cumsum"):
        f = {"softmax": torch.softmax, "log_softmax": torch.log_softmax, "cumsum": torch.cumsum}[name]
        return [x], p, lambda t, p: f(t[0], p["dim"])
    if name == "sort":
        p["desc"] = R.random() < 0.5
        if R.random() < 0.5:
            x.arr = np.round(x.arr * 2).astype(np.float32)
        return [x], p, lambda t, p: tuple(torch.sort(t[0], dim=p["dim"], descending=p["desc"], stable=True))
    if name == "topk":
        p["desc"] = R.random() < 0.5
        p["k"] = R.randint(0, min(shp[d], 40))
        return [x], p, lambda t, p: tuple(torch.topk(t[0], p["k"], p["dim"], largest=p["desc"]))
    raise Exception(name)


@op("nn2", 8)
def g_nn2():
    name = R.choice(["pad", "pad", "interpolate", "interpolate", "conv_transpose2d", "conv1d", "group_norm", "batch_norm", "ce_weighted", "ce_weighted", "max_pool1d", "avg_pool1d", "sdpa_masked"])
    p = {"op": name}
    if name == "pad":
        mode = R.choice(["constant", "constant", "reflect", "replicate", "circular"])
        p["mode"] = mode
        if mode == "constant":
            shp = rshape(1, 4)
            k = R.randint(1, len(shp))
            pads = [R.randint(-2, 3) for _ in range(2 * k)]
            p["value"] = R.choice([0.0, 1.5])
        else:
            shp = rshape(2, 4, allow_empty=False)
            k = R.randint(1, min(len(shp) - 1, 2))
            pads = []
            for i in range(k):
                sz = shp[-1 - i]
                lim = sz - 1 if mode == "reflect" else (sz if mode == "circular" else 3)
                pads += [R.randint(0, max(lim, 0)), R.randint(0, max(lim, 0))]
            p["value"] = 0.0
        p["pads"] = pads
        x = fi(shp)
        return [x], p, lambda t, p: F.pad(t[0], p["pads"], mode=p["mode"], value=p["value"] if p["mode"] == "constant" else None)
    if name == "interpolate":
        sp = R.choice([1, 2])
        mode = R.choice(["nearest", "nearest-exact", "linear"])
        shp = [R.randint(1, 2), R.randint(1, 3)] + [R.randint(1, 6) for _ in range(sp)]
        x = fi(shp)
        p["mode"] = mode
        p["ac"] = mode == "linear" and R.random() < 0.5
        if R.random() < 0.5:
            p["size"] = [R.randint(1, 9) for _ in range(sp)]
            p["scale"] = None
        else:
            p["size"] = None
            p["scale"] = [R.choice([0.5, 1.0, 1.5, 2.0, 3.0, 0.7]) for _ in range(sp)]
        tm = mode if mode != "linear" else ("linear" if sp == 1 else "bilinear")
        return [x], p, lambda t, p: F.interpolate(t[0], size=p["size"], scale_factor=p["scale"], mode=tm, align_corners=p["ac"] if mode == "linear" else None)
    if name == "conv_transpose2d":
        g = R.choice([1, 1, 2])
        cin, cout = g * R.randint(1, 2), g * R.randint(1, 2)
        kh, kw = R.randint(1, 3), R.randint(1, 3)
        st = [R.randint(1, 3), R.randint(1, 3)]
        dil = [R.randint(1, 2), R.randint(1, 2)]
        pad = [R.randint(0, 2), R.randint(0, 2)]
        op_ = [R.randint(0, max(st[i], dil[i]) - 1) for i in range(2)]
        x = fi([R.randint(1, 2), cin, R.randint(1, 5), R.randint(1, 5)])
        w = fi([cin, cout // g, kh, kw])
        bias = R.random() < 0.5
        p.update(stride=st, pad=pad, dil=dil, opad=op_, groups=g, bias=bias)
        ins = [x, w] + ([fi([cout])] if bias else [])
        return ins, p, lambda t, p: F.conv_transpose2d(t[0], t[1], t[2] if p["bias"] else None, stride=p["stride"], padding=p["pad"], output_padding=p["opad"], groups=p["groups"], dilation=p["dil"])
    if name == "conv1d":
        g = R.choice([1, 1, 2])
        cin, cout = g * R.randint(1, 2), g * R.randint(1, 3)
        k = R.randint(1, 4)
        st, pad, dil = R.randint(1, 3), R.randint(0, 2), R.randint(1, 2)
        unb = R.random() < 0.2
        x = fi(([] if unb else [R.randint(1, 2)]) + [cin, R.randint(1, 9)])
        w = fi([cout, cin // g, k])
        bias = R.random() < 0.5
        p.update(stride=st, pad=pad, dil=dil, groups=g, bias=bias)
        ins = [x, w] + ([fi([cout])] if bias else [])
        return ins, p, lambda t, p: F.conv1d(t[0], t[1], t[2] if p["bias"] else None, stride=p["stride"], padding=p["pad"], dilation=p["dil"], groups=p["groups"])
    if name == "group_norm":
        G = R.randint(1, 3)
        C = G * R.randint(1, 3)
        x = fi([R.randint(1, 3), C] + [R.randint(1, 4) for _ in range(R.randint(0, 2))])
        aff = R.random() < 0.6
        ins = [x] + ([fi([C]), fi([C])] if aff else [])
        p.update(groups=G, aff=aff, eps=1e-5)
        return ins, p, lambda t, p: F.group_norm(t[0], p["groups"], t[1] if p["aff"] else None, t[2] if p["aff"] else None, 1e-5)
    if name == "batch_norm":
        C = R.randint(1, 4)
        N = R.randint(2, 4)
        x = fi([N, C] + [R.randint(1, 4) for _ in range(R.randint(0, 2))])
        training = R.random() < 0.6
        aff = R.random() < 0.6
        ins = [x] + ([fi([C]), fi([C])] if aff else [])
        if not training:
            ins += [fi([C], grad=False), fi([C], lo=0.5, hi=2.0, grad=False)]
        p.update(training=training, aff=aff)

        def run(t, p):
            w = t[1] if p["aff"] else None
            b = t[2] if p["aff"] else None
            if p["training"]:
                return F.batch_norm(t[0], None, None, w, b, training=True, eps=1e-5)
            rm, rv = t[-2], t[-1]
            return F.batch_norm(t[0], rm, rv, w, b, training=False, eps=1e-5)
        return ins, p, run
    if name == "ce_weighted":
        N, C = rdim(), R.randint(1, 5)
        extra = [] if R.random() < 0.7 else [R.randint(1, 3)]
        logits = fi([N, C] + extra)
        w = fi([C], lo=0.1, hi=2.0, grad=False)
        ii = R.choice([-100, 0, 1])
        p.update(red=R.choice(["mean", "sum", "none"]), ls=R.choice([0.0, 0.0, 0.1, 0.3]), ii=ii)
        if R.random() < 0.3:
            pr = fi([N, C] + extra, lo=0.0, hi=1.0, grad=False)
            p["prob"] = True
            return [logits, pr, w], p, lambda t, p: F.cross_entropy(t[0], t[1], weight=t[2], label_smoothing=p["ls"], reduction=p["red"])
        tgt = Inp([N] + extra, "i32", lo=0, hi=C)
        if R.random() < 0.4 and tgt.arr.size:
            tgt.arr.reshape(-1)[R.randrange(tgt.arr.size)] = ii
        return [logits, tgt, w], p, lambda t, p: F.cross_entropy(t[0], t[1], weight=t[2], ignore_index=p["ii"], label_smoothing=p["ls"], reduction=p["red"])
    if name in ("max_pool1d", "avg_pool1d"):
        x = fi([R.randint(1, 2), R.randint(1, 3), R.randint(1, 9)])
        k = R.randint(1, 3)
        st = R.choice([None, 1, 2, 3])
        pad = R.randint(0, k // 2)
        ceil = R.random() < 0.3
        p.update(k=k, st=st, pad=pad, ceil=ceil, cip=R.random() < 0.5)
        if name == "max_pool1d":
            return [x], p, lambda t, p: F.max_pool1d(t[0], p["k"], p["st"], p["pad"], 1, ceil_mode=p["ceil"])
        return [x], p, lambda t, p: F.avg_pool1d(t[0], p["k"], p["st"], p["pad"], ceil_mode=p["ceil"], count_include_pad=p["cip"])
    if name == "sdpa_masked":
        B = [R.randint(1, 2)]
        L, S, E = R.randint(1, 4), R.randint(1, 4), R.randint(1, 4)
        q, k, v = fi(B + [L, E]), fi(B + [S, E]), fi(B + [S, E])
        kind_ = R.choice(["bool", "float"])
        mshape = R.choice([[L, S], B + [L, S], [1, S], [L, 1]])
        if kind_ == "bool":
            m = Inp(mshape, "bool")
            m.arr = m.arr & (NP.random(m.arr.shape) < 0.6)
        else:
            m = fi(mshape, grad=False)
            m.arr = np.where(NP.random(m.arr.shape) < 0.4, -np.inf, m.arr).astype(np.float32)
        p["mk"] = kind_
        return [q, k, v, m], p, lambda t, p: F.scaled_dot_product_attention(t[0], t[1], t[2], attn_mask=t[3])
    raise Exception(name)


# ------------------------------------------------------------- driver ----
def out_spec(o):
    o = o.detach()
    if o.dtype == torch.bool:
        return {"dtype": "bool", "shape": list(o.shape), "data": hexi(o.numpy().astype(np.int32))}
    if o.dtype in (torch.int64, torch.int32):
        return {"dtype": "i32", "shape": list(o.shape), "data": hexi(o.numpy().astype(np.int32))}
    return {"dtype": "f32", "shape": list(o.shape), "data": hexf(o.numpy())}


def make_case(cid, kind):
    f, _ = GEN[kind]
    ins, params, run = f()
    ts = [i.torch() for i in ins]
    if DEBUG:
        print(cid, kind, params, [(i.dtype, i.base, i.views) for i in ins], file=sys.stderr, flush=True)
    if kind == "big":
        o = params["op"]
        params["big"] = True
        if o in ("matmul",):
            kind = "matmul"
        elif o == "layer_norm":
            kind = "layer_norm"; params.update(aff="wb", eps=1e-5)
        elif o == "cross_entropy":
            kind = "loss"
        elif o == "sdpa":
            kind = "sdpa"; params.update(mask="causal" if params["causal"] else "none", scale=None)
        elif o == "conv2d":
            kind = "conv2d"
        elif o == "max_pool2d":
            kind = "pool"
        elif o in ("index_add", "scatter_add", "masked_select"):
            kind = "index"; params["dim"] = 0
        elif o in ("sum", "mean", "amax", "logsumexp", "var", "norm", "prod"):
            kind = "reduce"
        elif o in ("any", "max_dim", "argmax", "softmax", "log_softmax", "cumsum"):
            kind = "dimred"
        elif o in ("sort", "topk"):
            kind = "sort"
    case = {"id": cid, "kind": kind, "p": params, "inputs": [i.spec() for i in ins]}
    try:
        res = run(ts, params)
    except Exception as e:
        case["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        return case
    outs = list(res) if isinstance(res, (tuple, list)) else [res]
    case["outputs"] = [out_spec(o) for o in outs]
    leaves = [i.leaf for i in ins if i.grad]
    fouts = [o for o in outs if o.dtype == torch.float32 and o.requires_grad]
    if leaves and fouts:
        ups = [torch.tensor(NP.standard_normal(list(o.shape)).astype(np.float32)) for o in fouts]
        case["upstream"] = [hexf(u.numpy()) for u in ups]
        case["diff_outputs"] = [j for j, o in enumerate(outs) if o.dtype == torch.float32 and o.requires_grad]
        try:
            gs = torch.autograd.grad(fouts, leaves, ups, allow_unused=True)
            case["grads"] = [hexf((g if g is not None else torch.zeros_like(l)).numpy()) for g, l in zip(gs, leaves)]
        except Exception as e:
            case["grad_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    return case


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
            case = make_case(cid, kind)
            fh.write(json.dumps(fix(case)) + "\n")
            fh.flush()


if __name__ == "__main__":
    main()
