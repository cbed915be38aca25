//! A tour of the op set: runs the same ops on the CPU and (when one is
//! available) the GPU, and prints whether the results agree.
//!
//! `cargo run --release --example ops_tour`

use wgrad::prelude::*;

type Op = fn(&Tensor, &Tensor) -> Result<Tensor>;

fn tour() -> Vec<(&'static str, Op)> {
    vec![
        ("a + b (broadcast)", |a, b| a.add(&b.narrow(0, 0, 1)?)),
        ("a * b", |a, b| a.mul(b)),
        ("gelu(a)", |a, _| a.gelu()),
        ("sigmoid(a) - tanh(b)", |a, b| a.sigmoid()?.sub(&b.tanh()?)),
        ("where(a > b, a, b)", |a, b| {
            Tensor::where_cond(&a.gt(b)?, a, b)
        }),
        ("sum over rows", |a, _| a.sum(&[0], false)),
        ("var over cols", |a, _| a.var(&[1], 1, true)),
        ("max over all", |a, _| a.max(&[], false)),
        ("softmax(a, -1)", |a, _| a.softmax(-1)),
        ("log_softmax(a^T, 0)", |a, _| a.t()?.log_softmax(0)),
        ("a @ b^T", |a, b| a.matmul_t(b, false, true)),
        ("concat([a, b], 1)", |a, b| Tensor::cat(&[a, b], 1)),
        ("argmax(a, 1) as f32", |a, _| {
            a.argmax(1, false)?.cast(DType::F32)
        }),
    ]
}

fn main() -> anyhow::Result<()> {
    let cpu = Device::Cpu;
    let a = Tensor::randn_with(&[4, 6], 0.0, 1.0, 1, &cpu)?;
    let b = Tensor::randn_with(&[4, 6], 0.0, 1.0, 2, &cpu)?;
    let gpu = match Device::gpu() {
        Ok(g) => Some(g),
        Err(e) => {
            println!("no GPU ({e}); showing CPU results only");
            None
        }
    };
    if let Some(g) = &gpu {
        println!("GPU: {g}");
    }
    let mut all_agree = true;
    for (name, op) in tour() {
        let on_cpu = op(&a, &b)?.to_vec_f32()?;
        let Some(g) = &gpu else {
            println!("{name:<24} cpu {:?}", &on_cpu[..on_cpu.len().min(4)]);
            continue;
        };
        let on_gpu = op(&a.to(g)?, &b.to(g)?)?.to_vec_f32()?;
        let worst = on_cpu
            .iter()
            .zip(&on_gpu)
            .map(|(c, g)| (c - g).abs() / c.abs().max(1.0))
            .fold(0.0f32, f32::max);
        let agree = on_cpu.len() == on_gpu.len() && worst < 1e-4;
        all_agree &= agree;
        println!(
            "{name:<24} {} (max rel. diff {worst:.1e}, first values {:?})",
            if agree { "agree" } else { "DIFFER" },
            &on_gpu[..on_gpu.len().min(3)]
        );
    }
    if gpu.is_some() {
        println!(
            "{}",
            if all_agree {
                "CPU and GPU agree on every op"
            } else {
                "CPU and GPU DISAGREE"
            }
        );
        if !all_agree {
            std::process::exit(1);
        }
    }
    Ok(())
}
