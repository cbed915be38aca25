//! `cargo xtask`: the project's check and benchmark runner (std and
//! anyhow, for errors that carry their context).
//!
//! ```text
//! cargo xtask ci              # fmt, tidy, clippy, kernel validation, GPU probe, tests, examples
//! cargo xtask tidy            # source invariants (see tidy.rs)
//! cargo xtask kernels-check   # naga validation of every .wgsl kernel
//! cargo xtask examples        # GPU probe, then the example smoke runs of `ci`
//! cargo xtask bench [ARGS..]  # cargo run --release -p wgrad-bench -- ARGS..
//! ```
//!
//! Environment:
//! - `WGRAD_REQUIRE_GPU=1`: fail CI when no GPU adapter is usable instead of
//!   skipping the GPU tests (passed through to the test binaries).
//! - `WGRAD_SKIP_GPU=1` is set by `ci` for the test and example steps when the
//!   GPU probe fails and a GPU is not required.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, anyhow, bail};

mod tidy;

/// An example run by the smoke-test step of `cargo xtask ci`.
struct Example {
    /// `cargo run --release --example <name>`.
    name: &'static str,
    /// Arguments passed after `--`; `{out}` stands for a scratch directory
    /// shared by the run's examples (so one can read what another wrote).
    args: &'static [&'static str],
    /// The example accepts `--device`: `gpu` is passed when the probe found
    /// an adapter, `cpu` when the GPU is skipped.
    takes_device: bool,
    /// The example cannot do anything useful without a GPU: skipped (not
    /// failed) when the GPU is skipped.
    needs_gpu: bool,
    /// Files (under `{out}`) the run must have written.
    writes: &'static [&'static str],
}

/// Examples smoke-run by `cargo xtask ci`, in order. Keep the arguments small:
/// on lavapipe (software Vulkan) every GPU dispatch is slow.
const EXAMPLES: &[Example] = &[
    // Lists the adapters and the one wgrad picks; meaningless without a GPU.
    Example {
        name: "device_info",
        args: &[],
        takes_device: false,
        needs_gpu: true,
        writes: &[],
    },
    // A tour of the op set on CPU and (when available) GPU.
    Example {
        name: "ops_tour",
        args: &[],
        takes_device: false,
        needs_gpu: false,
        writes: &[],
    },
    // The training examples, shortened: CI checks they run end to end on the
    // device and write their metrics (CSV, PNG) and checkpoints; their
    // defaults reach the accuracy targets (see README).
    Example {
        name: "xor",
        args: &["--epochs", "5", "--out", "{out}/xor"],
        takes_device: true,
        needs_gpu: false,
        writes: &["xor/metrics.csv", "xor/metrics.png"],
    },
    Example {
        name: "spirals",
        // Under autocast(float16) with a GradScaler: mixed precision end to end.
        args: &["--epochs", "5", "--amp", "f16", "--out", "{out}/spirals"],
        takes_device: true,
        needs_gpu: false,
        writes: &["spirals/metrics.csv", "spirals/metrics.png"],
    },
    Example {
        name: "mnist",
        args: &[
            "--epochs",
            "1",
            "--out",
            "{out}/mnist",
            "--save",
            "{out}/mnist.safetensors",
        ],
        takes_device: true,
        needs_gpu: false,
        writes: &[
            "mnist/metrics.csv",
            "mnist/metrics.png",
            "mnist.safetensors",
            "mnist.best.safetensors",
        ],
    },
    // Classifies digits with the checkpoint mnist just saved.
    Example {
        name: "infer",
        args: &["--checkpoint", "{out}/mnist.safetensors", "--count", "200"],
        takes_device: true,
        needs_gpu: false,
        writes: &[],
    },
    Example {
        name: "cnn",
        args: &[
            "--epochs",
            "1",
            "--train-size",
            "256",
            "--out",
            "{out}/cnn",
            "--save",
            "{out}/cnn.safetensors",
        ],
        takes_device: true,
        needs_gpu: false,
        writes: &["cnn/metrics.csv", "cnn/metrics.png", "cnn.best.safetensors"],
    },
    // ... and with the cnn's best weights (a plain state_dict).
    Example {
        name: "infer",
        args: &[
            "--checkpoint",
            "{out}/cnn.best.safetensors",
            "--count",
            "64",
        ],
        takes_device: true,
        needs_gpu: false,
        writes: &[],
    },
    Example {
        name: "resnet",
        args: &[
            "--epochs",
            "1",
            "--train-size",
            "128",
            "--out",
            "{out}/resnet",
        ],
        takes_device: true,
        needs_gpu: false,
        writes: &["resnet/metrics.csv", "resnet/metrics.png"],
    },
    Example {
        name: "gpt",
        args: &[
            "--steps",
            "20",
            "--block-size",
            "16",
            "--n-layer",
            "1",
            "--n-head",
            "2",
            "--n-embd",
            "32",
            "--batch-size",
            "8",
            "--eval-interval",
            "10",
            "--sample-len",
            "40",
            "--out",
            "{out}/gpt",
        ],
        takes_device: true,
        needs_gpu: false,
        writes: &["gpt/metrics.csv", "gpt/metrics.png"],
    },
];

const USAGE: &str = "\
usage: cargo xtask <command> [args...]

commands:
  ci              run all checks: fmt, tidy, clippy, kernel validation, GPU probe,
                  unit tests (default profile), tests (release), example smoke runs
  kernels-check   naga validation of every .wgsl kernel (no GPU needed)
  examples        the GPU probe, then the example smoke runs of `ci` alone
  tidy            source invariants: submit/poll/map_async only in wgrad-device,
                  no wgpu in core/cpu/autograd, no unwrap/expect/panic in
                  library code, no library file over 600 lines
  bench [args..]  cargo run --release -p wgrad-bench -- args..
  help            print this message

environment:
  WGRAD_REQUIRE_GPU=1   fail instead of skipping GPU tests when no GPU is usable";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match cmd.as_str() {
        "ci" => ci(),
        "kernels-check" => kernels_check(&mut Ctx::new()),
        "examples" => examples_only(),
        "tidy" => tidy(&mut Ctx::new()),
        "bench" => bench(&args[1..]),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => {
            eprintln!("xtask: unknown command `{other}`\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}`: the message and its causes on one line.
            eprintln!("\nxtask: FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

type Result<T = ()> = anyhow::Result<T>;

/// The workspace root (parent of this crate's manifest directory).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The cargo that runs us (`$CARGO` at run time, then at build time), else `cargo`.
fn cargo_bin() -> OsString {
    std::env::var_os("CARGO")
        .or_else(|| option_env!("CARGO").map(OsString::from))
        .unwrap_or_else(|| OsString::from("cargo"))
}

/// Shared state of one xtask invocation: extra env for child processes and
/// per-step timings.
struct Ctx {
    env: Vec<(&'static str, String)>,
    timings: Vec<(String, f64, &'static str)>,
}

impl Ctx {
    fn new() -> Self {
        Ctx {
            env: Vec::new(),
            timings: Vec::new(),
        }
    }

    fn cargo<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut cmd = Command::new(cargo_bin());
        cmd.args(args).current_dir(workspace_root());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs `f` as a named step: header before, elapsed time after.
    fn step(&mut self, name: &str, f: impl FnOnce(&mut Self) -> Result<&'static str>) -> Result {
        println!("\n==> {name}");
        flush();
        let start = Instant::now();
        let res = f(self);
        let secs = start.elapsed().as_secs_f64();
        let outcome = match &res {
            Ok(o) => *o,
            Err(_) => "FAILED",
        };
        println!("<== {name}: {outcome} ({secs:.1}s)");
        self.timings.push((name.to_string(), secs, outcome));
        res.map(|_| ()).with_context(|| name.to_string())
    }

    fn print_timings(&self) {
        println!("\nsteps:");
        for (name, secs, outcome) in &self.timings {
            println!("  {outcome:<8} {secs:>7.1}s  {name}");
        }
    }
}

fn flush() {
    let _ = std::io::stdout().flush();
}

fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs `cmd` with inherited stdio; error on spawn failure or non-zero exit.
fn run(mut cmd: Command) -> Result {
    println!("$ {}", show(&cmd));
    flush();
    let status = cmd
        .status()
        .with_context(|| format!("cannot run `{}`", show(&cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(anyhow!("`{}` exited with {status}", show(&cmd)))
    }
}

fn env_is_1(key: &str) -> bool {
    std::env::var(key).is_ok_and(|v| v.trim() == "1")
}

// ---------------------------------------------------------------- commands

fn ci() -> Result {
    let mut ctx = Ctx::new();
    // CI builds once from scratch: incremental caches only cost time there
    // (a developer's own `CARGO_INCREMENTAL` setting is kept).
    if std::env::var_os("CARGO_INCREMENTAL").is_none() {
        ctx.env.push(("CARGO_INCREMENTAL", "0".to_string()));
    }
    let start = Instant::now();
    let res = ci_steps(&mut ctx);
    ctx.print_timings();
    let total = start.elapsed().as_secs_f64();
    match &res {
        Ok(()) => println!("\nci: all checks passed ({total:.1}s)"),
        Err(_) => println!("\nci: FAILED after {total:.1}s"),
    }
    res
}

fn ci_steps(ctx: &mut Ctx) -> Result {
    ctx.step("fmt", |c| {
        run(c.cargo(["fmt", "--all", "--", "--check"])).map(|()| "ok")
    })?;
    tidy(ctx)?;
    ctx.step("clippy", |c| {
        run(c.cargo([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]))
        .map(|()| "ok")
    })?;
    kernels_check(ctx)?;

    let mut adapter: Option<String> = None;
    ctx.step("gpu probe", |c| {
        adapter = gpu_probe(c)?;
        Ok(if adapter.is_some() { "ok" } else { "skipped" })
    })?;

    // The unit tests once more in the default (unoptimised) test profile,
    // the one `cargo test` gives a user: results must not depend on the
    // optimisation level (a test once passed only in release).
    ctx.step("unit tests (default profile)", |c| {
        let totals = run_tests(c, &["test", "--workspace", "--lib", "--no-fail-fast"])?;
        println!(
            "\nunit tests (default profile): {} passed, {} failed, {} ignored",
            totals.passed, totals.failed, totals.ignored
        );
        if totals.failed > 0 {
            bail!("{} test(s) failed", totals.failed);
        }
        match totals.error {
            Some(e) => Err(anyhow!(e)),
            None => Ok("ok"),
        }
    })?;

    ctx.step("tests", |c| {
        let totals = run_tests(c, &["test", "--workspace", "--release", "--no-fail-fast"])?;
        println!(
            "\ntests: {} passed, {} failed, {} ignored",
            totals.passed, totals.failed, totals.ignored
        );
        match &adapter {
            Some(a) => println!("GPU tests ran on {a}"),
            None => println!("GPU tests were SKIPPED (no usable GPU adapter)"),
        }
        if totals.failed > 0 {
            bail!("{} test(s) failed", totals.failed);
        }
        match totals.error {
            Some(e) => Err(anyhow!(e)),
            None => Ok("ok"),
        }
    })?;

    let gpu = adapter.is_some();
    ctx.step("examples", |c| run_examples(c, gpu).map(|()| "ok"))?;
    Ok(())
}

/// `cargo xtask examples`: the GPU probe and the example smoke runs.
fn examples_only() -> Result {
    let mut ctx = Ctx::new();
    let mut adapter: Option<String> = None;
    ctx.step("gpu probe", |c| {
        adapter = gpu_probe(c)?;
        Ok(if adapter.is_some() { "ok" } else { "skipped" })
    })?;
    let gpu = adapter.is_some();
    let res = ctx.step("examples", |c| run_examples(c, gpu).map(|()| "ok"));
    ctx.print_timings();
    res
}

/// The source invariants `xtask/src/tidy.rs` checks.
fn tidy(ctx: &mut Ctx) -> Result {
    ctx.step("tidy", |_| {
        let findings = tidy::check(&workspace_root());
        for f in &findings {
            println!("{}:{}: {}", f.path.display(), f.line, f.what);
        }
        match findings.len() {
            0 => Ok("ok"),
            n => Err(anyhow!("{n} finding(s)")),
        }
    })
}

fn kernels_check(ctx: &mut Ctx) -> Result {
    ctx.step("kernel validation (naga)", |c| {
        run(c.cargo(["test", "-p", "wgrad-kernels", "--test", "validate_kernels"])).map(|()| "ok")
    })
}

/// Runs the `device_info` example. `Ok(Some(adapter))` if a GPU is usable,
/// `Ok(None)` if not (and `WGRAD_SKIP_GPU=1` is now set for later steps),
/// `Err` if not and `WGRAD_REQUIRE_GPU=1`, or if the example does not compile.
fn gpu_probe(ctx: &mut Ctx) -> Result<Option<String>> {
    let mut cmd = ctx.cargo(["run", "--quiet", "--release", "--example", "device_info"]);
    println!("$ {}  (output captured)", show(&cmd));
    flush();
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `{}`", show(&cmd)))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);

    if out.status.success() {
        print!("{stdout}");
        let adapter = stdout
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("adapter:"))
            .map(|a| a.trim().to_string())
            .unwrap_or_else(|| "<device_info printed no `adapter:` line>".to_string());
        println!("GPU tests will run on: {adapter}");
        return Ok(Some(adapter));
    }

    // A compile error is a bug in the code, not a missing GPU.
    if stderr.contains("could not compile") {
        eprint!("{stderr}");
        bail!("the device_info example does not compile");
    }
    if env_is_1("WGRAD_REQUIRE_GPU") {
        print!("{stdout}");
        eprint!("{stderr}");
        bail!(
            "no usable GPU and WGRAD_REQUIRE_GPU=1 (device_info exited with {})",
            out.status
        );
    }
    let reason = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("device_info exited with {}", out.status));
    let bar = "#".repeat(72);
    println!(
        "{bar}\n#  GPU tests SKIPPED: {reason}\n#  (set WGRAD_REQUIRE_GPU=1 to fail instead)\n{bar}"
    );
    ctx.env.push(("WGRAD_SKIP_GPU", "1".to_string()));
    Ok(None)
}

#[derive(Default)]
struct TestTotals {
    passed: u64,
    failed: u64,
    ignored: u64,
    /// Set when `cargo test` exits non-zero (it can fail without a failed
    /// test, e.g. on a compile error or a crashed test binary).
    error: Option<String>,
}

/// `cargo <args>` (a `cargo test` command), echoing its stdout and summing
/// the libtest `test result:` lines.
fn run_tests(ctx: &Ctx, args: &[&str]) -> Result<TestTotals> {
    let mut cmd = ctx.cargo(args);
    println!("$ {}", show(&cmd));
    flush();
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run `{}`", show(&cmd)))?;
    let mut totals = TestTotals::default();
    if let Some(stdout) = child.stdout.take() {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        let mut out = std::io::stdout();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(e).context("reading test output"),
            }
            let _ = out.write_all(&buf);
            let _ = out.flush();
            if let Some((p, f, i)) = parse_test_result(&String::from_utf8_lossy(&buf)) {
                totals.passed += p;
                totals.failed += f;
                totals.ignored += i;
            }
        }
    }
    let status = child.wait().context("waiting for cargo test")?;
    if !status.success() {
        totals.error = Some(format!("`{}` exited with {status}", show(&cmd)));
    }
    Ok(totals)
}

/// Parses `test result: ok. 3 passed; 1 failed; 2 ignored; 0 measured; ...`
/// into `(passed, failed, ignored)`.
fn parse_test_result(line: &str) -> Option<(u64, u64, u64)> {
    let rest = line.trim().strip_prefix("test result:")?;
    let (_status, counts) = rest.split_once('.')?;
    let (mut passed, mut failed, mut ignored) = (None, None, None);
    for part in counts.split(';') {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        match what {
            "passed" => passed = Some(n),
            "failed" => failed = Some(n),
            "ignored" => ignored = Some(n),
            _ => {}
        }
    }
    Some((passed?, failed?, ignored?))
}

fn run_examples(ctx: &Ctx, gpu: bool) -> Result {
    let out = std::env::temp_dir().join(format!("wgrad-ci-examples-{}", std::process::id()));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    println!("(example outputs go to {})", out.display());
    let out_text = out.to_string_lossy().into_owned();
    for ex in EXAMPLES {
        if ex.needs_gpu && !gpu {
            println!("-- example {}: SKIPPED (no GPU)", ex.name);
            continue;
        }
        let mut args: Vec<String> = ["run", "--release", "--example", ex.name, "--"]
            .map(String::from)
            .to_vec();
        // Name the device: `auto` would pick the CPU over a software GPU
        // (lavapipe in CI), and CI must run the examples on the GPU it has.
        if ex.takes_device {
            args.extend([
                "--device".to_string(),
                if gpu { "gpu" } else { "cpu" }.to_string(),
            ]);
        }
        args.extend(ex.args.iter().map(|a| a.replace("{out}", &out_text)));
        println!("-- example {}", ex.name);
        let start = Instant::now();
        let mut cmd = ctx.cargo(&args);
        cmd.stdin(Stdio::null());
        run(cmd).with_context(|| format!("example {}", ex.name))?;
        for file in ex.writes {
            let path = out.join(file);
            let len = std::fs::metadata(&path).map_or(0, |m| m.len());
            if len == 0 {
                bail!("example {}: did not write {}", ex.name, path.display());
            }
        }
        println!(
            "-- example {}: ok ({:.1}s)",
            ex.name,
            start.elapsed().as_secs_f64()
        );
    }
    // Kept when a step failed, to look at.
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

fn bench(args: &[String]) -> Result {
    let ctx = Ctx::new();
    let meta = ctx
        .cargo(["metadata", "--no-deps", "--format-version", "1"])
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run cargo metadata")?;
    if !meta.status.success() {
        bail!("cargo metadata exited with {}", meta.status);
    }
    if !String::from_utf8_lossy(&meta.stdout).contains("\"name\":\"wgrad-bench\"") {
        bail!(
            "the `wgrad-bench` package is not in the workspace yet (expected crates/wgrad-bench); \
             nothing to benchmark"
        );
    }
    let mut cmd = ctx.cargo(["run", "--release", "-p", "wgrad-bench", "--"]);
    cmd.args(args);
    run(cmd)
}

#[cfg(test)]
mod tests {
    use super::parse_test_result;

    #[test]
    fn parses_libtest_summary() {
        assert_eq!(
            parse_test_result(
                "test result: ok. 12 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out; finished in 0.01s"
            ),
            Some((12, 0, 3))
        );
        assert_eq!(
            parse_test_result(
                "test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 5 filtered out; finished in 1.50s\n"
            ),
            Some((1, 2, 0))
        );
        assert_eq!(parse_test_result("running 3 tests"), None);
    }
}
