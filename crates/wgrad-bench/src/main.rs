//! `wgrad-bench`: times ops and training steps on one device and prints a
//! table (and `--json FILE`). Run through `cargo xtask bench -- --device gpu`.
//!
//! Method: each workload runs a few warm-up iterations, then `repeats`
//! batches of `iters` iterations, each batch ended by a device
//! synchronize; the reported time is the median batch time / `iters`.

mod workloads;

use std::time::Instant;

use anyhow::{Context, anyhow, bail};
use wgrad::prelude::*;

/// One thing to time.
pub struct Workload {
    pub name: String,
    /// Work per iteration in `unit`s (bytes moved or FLOPs).
    pub amount: f64,
    /// `GB/s`, `TFLOP/s`, or `ms` (time only).
    pub unit: &'static str,
    pub iters: usize,
    pub run: Box<dyn FnMut() -> Result<()>>,
}

struct Row {
    name: String,
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
    rate: Option<(f64, &'static str)>,
}

struct Args {
    device: Device,
    device_name: String,
    json: Option<String>,
    quick: bool,
    only: Option<String>,
    repeats: usize,
    profile: bool,
    /// `--timeline`: with `--profile`, also list the last profiled
    /// iteration's dispatches in order, with their grids and times.
    timeline: bool,
    /// `--autocast f16|bf16`: every workload runs inside this region (the
    /// forward passes in the lower precision; backward and the optimizer
    /// steps are unaffected by a region, as in PyTorch).
    autocast: Option<wgrad::AutocastGuard>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        device: Device::Cpu,
        device_name: "cpu".into(),
        json: None,
        quick: false,
        only: None,
        repeats: 7,
        profile: false,
        timeline: false,
        autocast: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| anyhow!("{flag} needs a value"));
        match a.as_str() {
            "--device" => {
                args.device_name = value("--device")?;
                args.device = Device::parse(&args.device_name)
                    .with_context(|| format!("--device {}", args.device_name))?;
            }
            "--json" => args.json = Some(value("--json")?),
            "--only" => args.only = Some(value("--only")?),
            "--repeats" => {
                let repeats = value("--repeats")?;
                args.repeats = repeats
                    .parse()
                    .with_context(|| format!("--repeats takes a number, not {repeats:?}"))?
            }
            "--quick" => args.quick = true,
            "--profile" => args.profile = true,
            "--timeline" => {
                args.profile = true;
                args.timeline = true;
            }
            // torch.set_float32_matmul_precision: "medium" puts f32 products
            // on the tensor cores where the GPU has them.
            "--matmul-precision" => {
                wgrad::set_float32_matmul_precision(&value("--matmul-precision")?)?;
            }
            "--autocast" => {
                let dtype = match value("--autocast")?.as_str() {
                    "f16" | "float16" => wgrad::DType::F16,
                    "bf16" | "bfloat16" => wgrad::DType::BF16,
                    other => bail!("--autocast takes f16 or bf16, not {other:?}"),
                };
                args.autocast = Some(wgrad::AutocastGuard::new(dtype)?);
            }
            "-h" | "--help" => {
                println!(
                    "usage: wgrad-bench [--device cpu|gpu|auto] [--json FILE] [--only SUBSTRING] [--repeats N] [--quick] [--profile] [--timeline] [--matmul-precision highest|high|medium] [--autocast f16|bf16]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (--help lists them)"),
        }
    }
    Ok(args)
}

fn time(workload: &mut Workload, device: &Device, repeats: usize) -> Result<Row> {
    for _ in 0..3 {
        (workload.run)()?;
    }
    device.synchronize()?;
    let mut batches = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        for _ in 0..workload.iters {
            (workload.run)()?;
        }
        device.synchronize()?;
        batches.push(start.elapsed().as_secs_f64() * 1e3 / workload.iters as f64);
    }
    batches.sort_by(f64::total_cmp);
    let median_ms = batches[batches.len() / 2];
    let rate = match workload.unit {
        "GB/s" => Some((workload.amount / (median_ms * 1e-3) / 1e9, "GB/s")),
        "TFLOP/s" => Some((workload.amount / (median_ms * 1e-3) / 1e12, "TFLOP/s")),
        _ => None,
    };
    Ok(Row {
        name: workload.name.clone(),
        median_ms,
        min_ms: batches[0],
        max_ms: batches[batches.len() - 1],
        rate,
    })
}

/// Per-kernel GPU time of a few iterations, from timestamp queries.
fn profile(workload: &mut Workload, device: &Device, timeline: bool) -> Result<()> {
    let Device::Gpu(gpu) = device else {
        return Ok(());
    };
    const ITERS: usize = 5;
    // One profiling session per iteration: a session times at most 2048
    // dispatches, which five T2 steps overran (the later ones went untimed
    // and the per-iteration figure came out low).
    let mut totals: Vec<(&'static str, u64, f64)> = Vec::new();
    // Host time: recording a step submits nothing (the profile report
    // does), so timing `run` alone gives what the CPU spends per step
    // (autograd, kernel choice, wgpu's encoding); when it exceeds the GPU
    // time, the step is host-bound.
    let mut host = std::time::Duration::ZERO;
    let mut dispatches = 0u64;
    let mut last = Vec::new();
    for _ in 0..ITERS {
        gpu.start_profiling()?;
        let before = gpu.stats();
        let start = std::time::Instant::now();
        (workload.run)()?;
        host += start.elapsed();
        dispatches += gpu.stats().since(&before).dispatches;
        last = gpu.profile_timeline()?;
        for d in &last {
            match totals.iter_mut().find(|t| t.0 == d.kernel) {
                Some(t) => {
                    t.1 += 1;
                    t.2 += d.us;
                }
                None => totals.push((d.kernel, 1, d.us)),
            }
        }
    }
    totals.sort_by(|a, b| b.2.total_cmp(&a.2));
    let total: f64 = totals.iter().map(|k| k.2).sum();
    println!(
        "    GPU time per iteration (timestamp queries): {:.1} us in {} kernels",
        total / ITERS as f64,
        totals.len()
    );
    println!(
        "    host time per iteration (recording, no submit): {:.1} us for {} dispatches",
        host.as_secs_f64() * 1e6 / ITERS as f64,
        dispatches / ITERS as u64
    );
    for (kernel, dispatches, us) in totals.iter().take(8) {
        println!(
            "      {:<28} {:>9.1} us  {:>5.1}%  ({} dispatches)",
            kernel,
            us / ITERS as f64,
            100.0 * us / total.max(1e-9),
            dispatches / ITERS as u64
        );
    }
    if timeline {
        for (i, d) in last.iter().enumerate() {
            let [x, y, z] = d.workgroups;
            println!(
                "      #{i:<4} {:<28} {x:>6} x {y} x {z} {:>9.1} us",
                d.kernel, d.us
            );
        }
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    println!("device: {}", args.device);
    if let Some(dtype) = wgrad::autocast_dtype() {
        println!("autocast: {dtype}");
    }
    let mut rows = Vec::new();
    for mut w in workloads::all(
        &args.device,
        args.quick,
        workloads::Only(args.only.as_deref()),
    )? {
        if args
            .only
            .as_ref()
            .is_some_and(|o| !w.name.contains(o.as_str()))
        {
            continue;
        }
        match time(&mut w, &args.device, args.repeats) {
            Ok(row) => {
                let rate = row
                    .rate
                    .map_or(String::new(), |(v, u)| format!("{v:10.3} {u}"));
                println!(
                    "{:<28} {:>10.4} ms  (min {:.4}, max {:.4})  {rate}",
                    row.name, row.median_ms, row.min_ms, row.max_ms
                );
                rows.push(row);
                if args.profile {
                    profile(&mut w, &args.device, args.timeline)?;
                }
            }
            Err(e) => println!("{:<28} skipped: {e}", w.name),
        }
    }
    if let Some(path) = &args.json {
        let mut out = format!(
            "{{\n  \"device\": {:?},\n  \"device_kind\": {:?},\n  \"rows\": [\n",
            args.device.to_string(),
            args.device_name
        );
        for (i, r) in rows.iter().enumerate() {
            let (rate, unit) = r.rate.unwrap_or((f64::NAN, "none"));
            let rate = if rate.is_nan() {
                "null".to_string()
            } else {
                format!("{rate}")
            };
            out.push_str(&format!(
                "    {{\"name\": {:?}, \"median_ms\": {}, \"min_ms\": {}, \"max_ms\": {}, \"rate\": {rate}, \"unit\": {unit:?}}}{}\n",
                r.name,
                r.median_ms,
                r.min_ms,
                r.max_ms,
                if i + 1 < rows.len() { "," } else { "" }
            ));
        }
        out.push_str("  ]\n}\n");
        std::fs::write(path, out).with_context(|| format!("cannot write --json {path}"))?;
        println!("wrote {path}");
    }
    Ok(())
}
