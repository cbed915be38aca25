//! `scaled_dot_product_attention`: the fused op against the same attention
//! composed of matmul, masking and softmax (forward and gradients), the GPU
//! kernels against the CPU (dropout included: both draw the same mask),
//! a gradcheck, fully masked rows, and bad input.

use crate::common::{gpu, max_rel_err};
use wgrad::gradcheck::{GradcheckOptions, gradcheck};
use wgrad::{AttentionArgs, CompareOp, DType, Device, Result, Tensor};

/// How a case masks its scores.
#[derive(Clone, Copy, Debug)]
enum Masking {
    None,
    Causal,
    Boolean,
    Additive,
}

/// One attention configuration: q/k/v shapes and masking.
struct Case {
    q: &'static [usize],
    k: &'static [usize],
    v: &'static [usize],
    masking: Masking,
    /// Shape of the explicit mask (broadcast to `[..., L, S]`).
    mask: &'static [usize],
    scale: Option<f64>,
}

const CASES: &[Case] = &[
    // Multi-head self-attention, causal.
    Case {
        q: &[2, 3, 5, 8],
        k: &[2, 3, 5, 8],
        v: &[2, 3, 5, 8],
        masking: Masking::Causal,
        mask: &[],
        scale: None,
    },
    // Cross-attention, L != S, Ev != E, unbatched key/value broadcast.
    Case {
        q: &[2, 7, 6],
        k: &[9, 6],
        v: &[9, 3],
        masking: Masking::None,
        mask: &[],
        scale: Some(0.3),
    },
    // Causal with more keys than queries (top-left aligned).
    Case {
        q: &[1, 4, 5],
        k: &[1, 70, 5],
        v: &[1, 70, 4],
        masking: Masking::Causal,
        mask: &[],
        scale: None,
    },
    // Boolean [L, S] mask broadcast over batch and heads, tiles past 64.
    Case {
        q: &[2, 2, 67, 16],
        k: &[2, 2, 80, 16],
        v: &[2, 2, 80, 12],
        masking: Masking::Boolean,
        mask: &[67, 80],
        scale: None,
    },
    // Additive per-head mask, head dim over one 64-column chunk.
    Case {
        q: &[1, 2, 10, 70],
        k: &[1, 2, 11, 70],
        v: &[1, 2, 11, 66],
        masking: Masking::Additive,
        mask: &[2, 1, 11],
        scale: None,
    },
    // Batch dims broadcast between q and k/v.
    Case {
        q: &[2, 1, 3, 4],
        k: &[1, 3, 5, 4],
        v: &[5, 2],
        masking: Masking::None,
        mask: &[],
        scale: None,
    },
    // Several full tiles each way: causal with head dim 64, and cross
    // attention whose lengths and value dim are not tile multiples.
    Case {
        q: &[1, 2, 200, 64],
        k: &[1, 2, 200, 64],
        v: &[1, 2, 200, 64],
        masking: Masking::Causal,
        mask: &[],
        scale: None,
    },
    // Causal with more queries than keys, over several row blocks: the
    // blocks past the last key see every key (the CPU's visible-key cut).
    Case {
        q: &[1, 150, 8],
        k: &[1, 90, 8],
        v: &[1, 90, 6],
        masking: Masking::Causal,
        mask: &[],
        scale: None,
    },
    Case {
        q: &[1, 130, 72],
        k: &[1, 150, 72],
        v: &[1, 150, 72],
        masking: Masking::Additive,
        mask: &[130, 150],
        scale: None,
    },
];

fn randn(shape: &[usize], seed: u64, d: &Device) -> Tensor {
    Tensor::randn_with(shape, 0.0, 1.0, seed, d).unwrap()
}

/// The case's mask on `d` (None for no mask and causal).
fn make_mask(case: &Case, seed: u64, d: &Device) -> Option<Tensor> {
    match case.masking {
        Masking::None | Masking::Causal => None,
        // About one key in four masked, never a whole row (the composite
        // reference would give NaN there).
        Masking::Boolean => {
            let u = Tensor::rand_with(case.mask, 0.0, 1.0, seed, d).unwrap();
            let mut keep = u.ge_scalar(0.25).unwrap();
            let first = Tensor::arange(0.0, case.mask[1] as f64, 1.0, DType::F32, d).unwrap();
            let first = first.eq_scalar(0.0).unwrap();
            keep = keep
                .cast(DType::F32)
                .unwrap()
                .maximum(&first.cast(DType::F32).unwrap())
                .unwrap()
                .gt_scalar(0.5)
                .unwrap();
            Some(keep)
        }
        Masking::Additive => Some(randn(case.mask, seed, d)),
    }
}

/// The attention composed of differentiable ops (the reference).
fn composite(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    case: &Case,
) -> Result<Tensor> {
    let e = *q.shape().last().unwrap();
    let scale = case.scale.unwrap_or(1.0 / (e as f64).sqrt());
    let mut s = q.matmul(&k.transpose(-2, -1)?)?.mul_scalar(scale as f32)?;
    let (l, n) = (s.shape()[s.rank() - 2], s.shape()[s.rank() - 1]);
    let d = q.device();
    match case.masking {
        Masking::None => {}
        Masking::Causal => {
            let i =
                Tensor::arange(0.0, l as f64, 1.0, DType::F32, &d)?.reshape(&[l as isize, 1])?;
            let j =
                Tensor::arange(0.0, n as f64, 1.0, DType::F32, &d)?.reshape(&[1, n as isize])?;
            let allowed = j.compare(&i, CompareOp::Le)?;
            let ninf = Tensor::full(&[], f64::NEG_INFINITY, DType::F32, &d)?;
            s = Tensor::where_cond(&allowed, &s, &ninf)?;
        }
        Masking::Boolean => {
            let ninf = Tensor::full(&[], f64::NEG_INFINITY, DType::F32, &d)?;
            s = Tensor::where_cond(mask.unwrap(), &s, &ninf)?;
        }
        Masking::Additive => s = s.add(mask.unwrap())?,
    }
    s.softmax(-1)?.matmul(v)
}

fn fused(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    case: &Case,
    dropout: f64,
) -> Result<Tensor> {
    let causal = matches!(case.masking, Masking::Causal);
    if dropout == 0.0 {
        return q.scaled_dot_product_attention(k, v, mask, dropout, causal, case.scale);
    }
    // An explicit seed: the default generator is shared with tests running
    // in parallel, so two draws from it could differ.
    let args = AttentionArgs {
        dropout_p: dropout,
        is_causal: causal,
        scale: case.scale,
    };
    q.scaled_dot_product_attention_with(k, v, mask, &args, 7)
}

/// Output and q/k/v gradients under a fixed upstream gradient.
fn run(
    f: impl Fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>,
    inputs: [&Tensor; 3],
    upstream_seed: u64,
) -> (Vec<f32>, [Vec<f32>; 3]) {
    let leaves: Vec<Tensor> = inputs
        .iter()
        .map(|t| t.detach().with_requires_grad(true).unwrap())
        .collect();
    let y = f(&leaves[0], &leaves[1], &leaves[2]).unwrap();
    let g = randn(&y.shape(), upstream_seed, &y.device());
    y.mul(&g).unwrap().sum_all().unwrap().backward().unwrap();
    let grad = |t: &Tensor| t.grad().unwrap().to_vec::<f32>().unwrap();
    (
        y.to_vec::<f32>().unwrap(),
        [grad(&leaves[0]), grad(&leaves[1]), grad(&leaves[2])],
    )
}

fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let err = max_rel_err(got, want);
    assert!(err <= tol, "{what}: max relative error {err} > {tol}");
}

#[test]
fn fused_attention_matches_the_composite_on_the_cpu() {
    let d = Device::Cpu;
    for (n, case) in CASES.iter().enumerate() {
        let s = 100 * n as u64;
        let (q, k, v) = (
            randn(case.q, s, &d),
            randn(case.k, s + 1, &d),
            randn(case.v, s + 2, &d),
        );
        let mask = make_mask(case, s + 3, &d);
        let m = mask.as_ref();
        let (y, g) = run(|q, k, v| fused(q, k, v, m, case, 0.0), [&q, &k, &v], s + 4);
        let (y_ref, g_ref) = run(|q, k, v| composite(q, k, v, m, case), [&q, &k, &v], s + 4);
        assert_close(&format!("case {n} output"), &y, &y_ref, 1e-5);
        for (i, name) in ["dq", "dk", "dv"].iter().enumerate() {
            assert_close(&format!("case {n} {name}"), &g[i], &g_ref[i], 1e-4);
        }
    }
}

#[test]
fn gpu_attention_matches_the_cpu_with_and_without_dropout() {
    let Some(gpu) = gpu() else { return };
    gpu_matches_cpu(&gpu);
}

/// The backward's opt-in dq pass, which reads the score-gradient tiles the
/// dk/dv pass saved instead of recomputing them (the limit is process-wide,
/// so parallel tests may take this path meanwhile too: both are exact).
#[test]
fn gpu_attention_with_saved_score_gradients_matches_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let before = wgrad_gpu::set_attention_saved_ds_limit(1 << 30);
    gpu_matches_cpu(&gpu);
    wgrad_gpu::set_attention_saved_ds_limit(before);
}

fn gpu_matches_cpu(gpu: &Device) {
    for (n, case) in CASES.iter().enumerate() {
        for dropout in [0.0, 0.3] {
            let s = 100 * n as u64;
            let cpu = Device::Cpu;
            let (q, k, v) = (
                randn(case.q, s, &cpu),
                randn(case.k, s + 1, &cpu),
                randn(case.v, s + 2, &cpu),
            );
            let mask = make_mask(case, s + 3, &cpu);
            let to = |t: &Tensor| t.to(gpu).unwrap();
            let gmask = mask.as_ref().map(to);
            // The dropout mask comes from one seed: the same on both devices.
            let (y, g) = run(
                |q, k, v| fused(q, k, v, mask.as_ref(), case, dropout),
                [&q, &k, &v],
                s + 4,
            );
            let (gq, gk, gv) = (to(&q), to(&k), to(&v));
            let (yg, gg) = run(
                |q, k, v| fused(q, k, v, gmask.as_ref(), case, dropout),
                [&gq, &gk, &gv],
                s + 4,
            );
            assert_close(&format!("case {n} p={dropout} output"), &yg, &y, 1e-5);
            for (i, name) in ["dq", "dk", "dv"].iter().enumerate() {
                assert_close(&format!("case {n} p={dropout} {name}"), &gg[i], &g[i], 1e-4);
            }
        }
    }
}

#[test]
fn gpu_attention_reads_transposed_views_in_place() {
    let Some(gpu) = gpu() else { return };
    // [B, T, H, D] projections viewed as [B, H, T, D], as MultiheadAttention does.
    let cpu = Device::Cpu;
    let base: Vec<Tensor> = (0..3).map(|i| randn(&[2, 9, 3, 8], 50 + i, &cpu)).collect();
    let run_on = |d: &Device| {
        let t: Vec<Tensor> = base
            .iter()
            .map(|b| b.to(d).unwrap().transpose(1, 2).unwrap())
            .collect();
        t[0].scaled_dot_product_attention(&t[1], &t[2], None, 0.0, true, None)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()
    };
    assert_close("transposed views", &run_on(&gpu), &run_on(&cpu), 1e-5);
}

/// q, k and v split out of one [B, T, 3 C] projection and viewed as
/// [B, H, T, D] (a GPT block): the GPU writes the output and the
/// gradients with rows outside the heads, so the output's transpose back
/// to [B, T, H, D] is contiguous (no copy); values and the projection's
/// gradient as the CPU's, with dropout and with saved score gradients.
#[test]
fn gpu_attention_on_split_projection_views_matches_the_cpu() {
    // A device of its own: the test counts its dispatches.
    let Some(gpu) = wgrad_test_support::own_gpu().map(Device::Gpu) else {
        return;
    };
    let cpu = Device::Cpu;
    for (n, &(b, t, h, d)) in [(2, 70, 3, 8), (1, 130, 2, 64)].iter().enumerate() {
        let c = h * d;
        let qkv = randn(&[b, t, 3 * c], 60 + n as u64, &cpu);
        let upstream = randn(&[b, t, c], 70 + n as u64, &cpu);
        for (dropout, saved_ds) in [(0.0, false), (0.2, false), (0.0, true)] {
            let before = saved_ds.then(|| wgrad_gpu::set_attention_saved_ds_limit(1 << 30));
            let run_on = |dev: &Device| {
                let x = qkv
                    .to(dev)
                    .unwrap()
                    .detach()
                    .with_requires_grad(true)
                    .unwrap();
                let heads = |i: usize| {
                    x.narrow(2, i * c, c)
                        .unwrap()
                        .reshape(&[b as isize, t as isize, h as isize, d as isize])
                        .unwrap()
                        .transpose(1, 2)
                        .unwrap()
                };
                let args = AttentionArgs {
                    dropout_p: dropout,
                    is_causal: true,
                    scale: None,
                };
                let y = heads(0)
                    .scaled_dot_product_attention_with(&heads(1), &heads(2), None, &args, 11)
                    .unwrap()
                    .transpose(1, 2)
                    .unwrap();
                let contiguous = y.storage().is_contiguous();
                let y = y.reshape(&[b as isize, t as isize, c as isize]).unwrap();
                let loss = y
                    .mul(&upstream.to(dev).unwrap())
                    .unwrap()
                    .sum_all()
                    .unwrap();
                let before = match dev {
                    Device::Gpu(g) => Some(g.stats()),
                    _ => None,
                };
                loss.backward().unwrap();
                // The backward's dispatches: the seed, y's gradient (a
                // mul), the attention's three (stats, dk/dv, dq), and
                // nothing to join dq, dk and dv into x's gradient: the
                // attention wrote them side by side into one buffer.
                if let (Device::Gpu(g), Some(before)) = (dev, before) {
                    let dispatches = g.stats().since(&before).dispatches;
                    assert!(dispatches <= 5, "backward took {dispatches} dispatches");
                }
                let grad = x.grad().unwrap().to_vec::<f32>().unwrap();
                (y.to_vec::<f32>().unwrap(), grad, contiguous)
            };
            let (y, g, _) = run_on(&cpu);
            let (yg, gg, contiguous) = run_on(&gpu);
            if let Some(limit) = before {
                wgrad_gpu::set_attention_saved_ds_limit(limit);
            }
            let what = format!("case {n} p={dropout} saved_ds={saved_ds}");
            assert!(
                contiguous,
                "{what}: output transposed back is not contiguous"
            );
            assert_close(&format!("{what} output"), &yg, &y, 1e-5);
            assert_close(&format!("{what} qkv grad"), &gg, &g, 1e-4);
        }
    }
}

#[test]
fn attention_gradcheck_on_the_cpu() {
    let d = Device::Cpu;
    let q = randn(&[2, 3, 4], 1, &d).with_requires_grad(true).unwrap();
    let k = randn(&[2, 5, 4], 2, &d).with_requires_grad(true).unwrap();
    let v = randn(&[2, 5, 3], 3, &d).with_requires_grad(true).unwrap();
    let mask = randn(&[3, 5], 4, &d);
    for causal in [false, true] {
        let report = gradcheck(
            |x| {
                let m = (!causal).then_some(&mask);
                x[0].scaled_dot_product_attention(&x[1], &x[2], m, 0.0, causal, Some(0.7))
            },
            &[q.clone(), k.clone(), v.clone()],
            GradcheckOptions::default(),
        )
        .unwrap();
        report.check().unwrap();
    }
}

#[test]
fn fully_masked_rows_give_zeros_and_zero_gradients() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for d in devices {
        let q = randn(&[3, 4], 1, &d).with_requires_grad(true).unwrap();
        let k = randn(&[5, 4], 2, &d).with_requires_grad(true).unwrap();
        let v = randn(&[5, 2], 3, &d).with_requires_grad(true).unwrap();
        // Row 1 sees no key.
        let rows = Tensor::from_vec(vec![0.0f32, 1.0, 0.0], &[3, 1], &d).unwrap();
        let mask = rows.eq_scalar(0.0).unwrap().broadcast_to(&[3, 5]).unwrap();
        let y = q
            .scaled_dot_product_attention(&k, &v, Some(&mask), 0.0, false, None)
            .unwrap();
        let out = y.to_vec::<f32>().unwrap();
        assert_eq!(&out[2..4], &[0.0, 0.0], "{d}: masked row");
        assert!(out.iter().all(|x| x.is_finite()), "{d}: {out:?}");
        y.sum_all().unwrap().backward().unwrap();
        let dq = q.grad().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(&dq[4..8], &[0.0; 4], "{d}: masked row's dq");
        assert!(dq.iter().all(|x| x.is_finite()));
    }
}

#[test]
fn attention_errors_name_the_op_and_the_shapes() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for d in devices {
        let z = |s: &[usize]| Tensor::zeros(s, &d).unwrap();
        let fails = |what: &str, r: Result<Tensor>, needles: &[&str]| {
            let e = r.expect_err(what).to_string();
            assert!(e.contains("scaled_dot_product_attention"), "{what}: {e}");
            for n in needles {
                assert!(e.contains(n), "{what}: {e:?} lacks {n:?}");
            }
        };
        let q = z(&[2, 3, 4]);
        fails(
            "head dim",
            q.scaled_dot_product_attention(&z(&[2, 5, 3]), &z(&[2, 5, 3]), None, 0.0, false, None),
            &["[2, 5, 3]"],
        );
        fails(
            "kv length",
            q.scaled_dot_product_attention(&z(&[2, 5, 4]), &z(&[2, 6, 4]), None, 0.0, false, None),
            &["[2, 6, 4]"],
        );
        fails(
            "batch",
            q.scaled_dot_product_attention(&z(&[3, 5, 4]), &z(&[3, 5, 4]), None, 0.0, false, None),
            &["[3, 5, 4]"],
        );
        let kv = z(&[2, 5, 4]);
        fails(
            "mask shape",
            q.scaled_dot_product_attention(&kv, &kv, Some(&z(&[3, 4])), 0.0, false, None),
            &["[3, 4]"],
        );
        fails(
            "dropout",
            q.scaled_dot_product_attention(&kv, &kv, None, 1.5, false, None),
            &["dropout_p", "1.5"],
        );
        fails(
            "mask and causal",
            q.scaled_dot_product_attention(&kv, &kv, Some(&z(&[3, 5])), 0.0, true, None),
            &["is_causal"],
        );
        let int_mask = z(&[3, 5]).cast(DType::I32).unwrap();
        fails(
            "mask dtype",
            q.scaled_dot_product_attention(&kv, &kv, Some(&int_mask), 0.0, false, None),
            &["int32"],
        );
        fails(
            "rank",
            z(&[4]).scaled_dot_product_attention(&kv, &kv, None, 0.0, false, None),
            &["[4]"],
        );
        let int_q = q.cast(DType::I32).unwrap();
        assert!(
            int_q
                .scaled_dot_product_attention(&kv, &kv, None, 0.0, false, None)
                .is_err()
        );
    }
}

#[test]
fn empty_attention_shapes_work() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for d in devices {
        let z = |s: &[usize]| Tensor::zeros(s, &d).unwrap();
        // No queries, no batch items, no keys.
        let y = z(&[2, 0, 4])
            .scaled_dot_product_attention(&z(&[2, 5, 4]), &z(&[2, 5, 3]), None, 0.0, false, None)
            .unwrap();
        assert_eq!(y.shape(), [2, 0, 3]);
        let y = z(&[0, 3, 4])
            .scaled_dot_product_attention(&z(&[0, 5, 4]), &z(&[0, 5, 3]), None, 0.0, false, None)
            .unwrap();
        assert_eq!(y.shape(), [0, 3, 3]);
        let y = z(&[3, 4])
            .scaled_dot_product_attention(&z(&[0, 4]), &z(&[0, 2]), None, 0.0, false, None)
            .unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0; 6]);
    }
}

#[test]
fn an_additive_mask_that_requires_grad_gets_its_gradient() {
    let d = Device::Cpu;
    let q = randn(&[2, 3, 4], 11, &d).with_requires_grad(true).unwrap();
    let k = randn(&[2, 5, 4], 12, &d).with_requires_grad(true).unwrap();
    let v = randn(&[2, 5, 3], 13, &d).with_requires_grad(true).unwrap();
    let mask = randn(&[3, 5], 14, &d).with_requires_grad(true).unwrap();
    let report = gradcheck(
        |x| x[0].scaled_dot_product_attention(&x[1], &x[2], Some(&x[3]), 0.0, false, None),
        &[q.clone(), k.clone(), v.clone(), mask.clone()],
        GradcheckOptions::default(),
    )
    .unwrap();
    report.check().unwrap();
    // The same values as the fused path, and the same gradients on the GPU.
    let fused = q
        .scaled_dot_product_attention(&k, &v, Some(&mask.detach()), 0.0, false, None)
        .unwrap();
    let written = q
        .scaled_dot_product_attention(&k, &v, Some(&mask), 0.0, false, None)
        .unwrap();
    assert_close(
        "composite vs fused",
        &written.to_vec::<f32>().unwrap(),
        &fused.to_vec::<f32>().unwrap(),
        1e-5,
    );
    if let Some(gpu) = gpu() {
        let grads = |dev: &Device| {
            let m = mask
                .detach()
                .to(dev)
                .unwrap()
                .with_requires_grad(true)
                .unwrap();
            let (qd, kd, vd) = (
                q.detach().to(dev).unwrap(),
                k.detach().to(dev).unwrap(),
                v.detach().to(dev).unwrap(),
            );
            let y = qd
                .scaled_dot_product_attention(&kd, &vd, Some(&m), 0.0, false, None)
                .unwrap();
            y.sum_all().unwrap().backward().unwrap();
            m.grad().unwrap().to_vec::<f32>().unwrap()
        };
        assert_close(
            "mask grad on the GPU",
            &grads(&gpu),
            &grads(&Device::Cpu),
            1e-4,
        );
    }
}
