//! A CPU allocation that fails is `Error::OutOfMemory`, never an abort.
//!
//! Requests no machine can satisfy (byte counts past the address space, or
//! past `u64`) run in this process. Requests that are merely larger than
//! memory run in a child process (this test binary re-run on the one test)
//! whose address space is capped with `ulimit -v`: that makes them fail on
//! every host, whatever its RAM and overcommit policy, without touching
//! anything large. An abort in the child (the old behaviour: Rust's
//! allocation-failure handler raises SIGABRT) fails the parent test.

use wgrad_cpu::{CpuTensor, DType, Error};

use crate::t;

/// Asserts `r` is `OutOfMemory` on the CPU for `op`, asking for at least
/// `min_bytes`.
#[track_caller]
fn assert_oom<T: std::fmt::Debug>(r: wgrad_cpu::Result<T>, op: &str, min_bytes: u64) {
    match r {
        Err(Error::OutOfMemory {
            op: got,
            device,
            bytes,
        }) => {
            assert_eq!(got, op);
            assert_eq!(device, "CPU");
            assert!(bytes >= min_bytes, "{op}: {bytes} < {min_bytes} bytes");
        }
        other => panic!("{op}: expected OutOfMemory, got {other:?}"),
    }
}

#[test]
fn sizes_past_the_address_space_are_out_of_memory() {
    // 2^61 f32 is 2^63 bytes: more than any allocation may be (isize::MAX).
    assert_oom(CpuTensor::zeros(&[1 << 61], DType::F32), "zeros", 1 << 63);
    // 2^62 f32 is 2^64 bytes, which overflows usize: still a clean error.
    assert_oom(
        CpuTensor::full(&[1 << 62], 1.0, DType::I32),
        "full",
        u64::MAX,
    );
    // Outputs whose element count overflows.
    let col = t(&[1.0], &[1, 1]).expand(&[1 << 31, 1]).unwrap();
    let row = t(&[1.0], &[1, 1]).expand(&[1, 1 << 31]).unwrap();
    assert_oom(col.add(&row), "add", u64::MAX);
    assert_oom(col.matmul(&row), "matmul", u64::MAX);
    let x = t(&[2.0], &[1]).expand(&[1 << 62]).unwrap();
    assert_oom(x.contiguous(), "contiguous", u64::MAX);
    assert_oom(x.exp(), "exp", u64::MAX);
}

/// The tests that need a capped address space (`ulimit -v` sets
/// `RLIMIT_AS`, which Linux enforces).
#[cfg(target_os = "linux")]
mod capped {
    use std::os::unix::process::ExitStatusExt;

    use wgrad_cpu::{CpuTensor, DType, UnaryOp};

    use super::assert_oom;
    use crate::{t, ti};

    /// Set in the child process; its value is the address-space cap in KiB.
    const CHILD_ENV: &str = "WGRAD_CPU_OOM_CHILD";

    /// The child's address-space cap: 2 GB, well above what the test binary
    /// needs and well below every allocation the child tests ask for.
    const LIMIT_KIB: u64 = 2_000_000;

    /// Elements of the tensors the capped tests ask for: 2^30 f32 = 4 GiB,
    /// twice the cap (and a size a large host could actually satisfy, which is
    /// why it only runs capped).
    const BIG: usize = 1 << 30;

    /// Runs `body` in a child process with its address space capped at
    /// [`LIMIT_KIB`], and asserts that the child ran exactly that test and
    /// exited normally. `test` is the test's path in this binary
    /// (`oom::capped::name`).
    #[track_caller]
    fn in_capped_child(test: &str, body: impl FnOnce()) {
        if std::env::var_os(CHILD_ENV).is_some() {
            body();
            return;
        }
        let exe = std::env::current_exe().expect("test binary path");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\""))
            .arg(exe)
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, LIMIT_KIB.to_string())
            .output()
            .expect("spawn sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.signal(),
            None,
            "child killed by a signal (6 = SIGABRT: an allocation aborted)\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        assert!(
            out.status.success(),
            "child failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
        assert!(
            stdout.contains("1 passed"),
            "child did not run {test}\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
    }

    #[test]
    fn zeros_larger_than_memory_is_out_of_memory() {
        in_capped_child(
            "oom::capped::zeros_larger_than_memory_is_out_of_memory",
            || {
                // 25e9 f32 = 100 GB (the public `Tensor::zeros` on Device::Cpu
                // goes through `CpuTensor::full`).
                assert_oom(
                    CpuTensor::full(&[25_000_000_000], 0.0, DType::F32),
                    "full",
                    100_000_000_000,
                );
                assert_oom(
                    CpuTensor::zeros(&[25_000_000_000], DType::F32),
                    "zeros",
                    100_000_000_000,
                );
                let bytes = 4 * BIG as u64;
                assert_oom(CpuTensor::ones(&[BIG], DType::U32), "ones", bytes);
                assert_oom(CpuTensor::rand(&[BIG], 0.0, 1.0, 1), "rand", bytes);
                assert_oom(CpuTensor::randn(&[BIG], 0.0, 1.0, 1), "randn", bytes);
                assert_oom(
                    CpuTensor::arange(0.0, BIG as f64, 1.0, DType::I32),
                    "arange",
                    bytes,
                );
                // The process is still healthy: small tensors work after the failures.
                let z = CpuTensor::zeros(&[3], DType::F32).unwrap();
                assert_eq!(z.to_vec::<f32>().unwrap(), vec![0.0; 3]);
            },
        );
    }

    #[test]
    fn broadcast_outputs_larger_than_memory_are_out_of_memory() {
        in_capped_child(
            "oom::capped::broadcast_outputs_larger_than_memory_are_out_of_memory",
            || {
                // [200000, 1] + [1, 200000]: 4e10 elements, 160 GB.
                let col = CpuTensor::zeros(&[200_000, 1], DType::F32).unwrap();
                let row = CpuTensor::zeros(&[1, 200_000], DType::F32).unwrap();
                let bytes = 160_000_000_000;
                assert_oom(col.add(&row), "add", bytes);
                assert_oom(col.pow(&row), "pow", bytes);
                assert_oom(col.lt(&row), "lt", bytes);
                let mask = CpuTensor::zeros(&[1, 1], DType::U32).unwrap();
                assert_oom(
                    CpuTensor::where_cond(&mask, &col, &row),
                    "where_cond",
                    bytes,
                );
                // A matmul of small operands with a huge output: 1e10 elements.
                let a = CpuTensor::zeros(&[100_000, 1], DType::F32).unwrap();
                let b = CpuTensor::zeros(&[1, 100_000], DType::F32).unwrap();
                assert_oom(a.matmul(&b), "matmul", 40_000_000_000);
                assert_oom(a.matmul_t(&a, false, true), "matmul_t", 40_000_000_000);
            },
        );
    }

    #[test]
    fn ops_on_expanded_views_larger_than_memory_are_out_of_memory() {
        in_capped_child(
            "oom::capped::ops_on_expanded_views_larger_than_memory_are_out_of_memory",
            || {
                // A [2^16, 2^14] view of one element: free to make, 4 GiB to copy.
                let shape = [1 << 16, 1 << 14];
                let x = t(&[0.5], &[1, 1]).expand(&shape).unwrap();
                let bytes = 4 * BIG as u64;
                assert_oom(x.contiguous(), "contiguous", bytes);
                // Flattening stays a view (stride 0, as in PyTorch): free.
                let flat = x.reshape(&[-1]).unwrap();
                assert_eq!(
                    (flat.shape(), flat.strides()),
                    (&[1usize << 30][..], &[0usize][..])
                );
                assert_oom(
                    x.reshape(&[1 << 15, -1]).and_then(|v| v.contiguous()),
                    "contiguous",
                    bytes,
                );
                assert_oom(x.to_vec::<f32>(), "to_vec", bytes);
                assert_oom(x.to_array::<f32>(), "to_array", bytes);
                assert_oom(x.add(&x), "add", bytes);
                assert_oom(x.mul_scalar(2.0), "mul", bytes);
                assert_oom(
                    x.binary_scalar(wgrad_cpu::BinaryOp::Sub, 1.0, true),
                    "sub",
                    bytes,
                );
                assert_oom(x.exp(), "exp", bytes);
                assert_oom(x.relu(), "relu", bytes);
                assert_oom(x.gt_scalar(0.0), "gt", bytes);
                assert_oom(x.cast(DType::I32), "cast", bytes);
                assert_oom(x.sum(&[0], false), "sum", bytes);
                assert_oom(x.mean(&[1], false), "mean", bytes);
                assert_oom(x.max(&[0], false), "max", bytes);
                assert_oom(x.argmax(0, false), "argmax", bytes);
                assert_oom(x.softmax(0), "softmax", bytes);
                assert_oom(x.log_softmax(1), "log_softmax", bytes);
                assert_oom(CpuTensor::concat(&[&x, &x], 0), "concat", 2 * bytes);
                assert_oom(x.unary_backward(&x, UnaryOp::Tanh), "unary_backward", bytes);
                assert_oom(x.softmax_backward(&x, 1, false), "softmax_backward", bytes);
                let labels = ti(&[0], &[1]).expand(&[1 << 16]).unwrap();
                let g = t(&[1.0], &[1]).expand(&[1 << 16]).unwrap();
                assert_oom(
                    x.cross_entropy_backward(&labels, &g, 0.0, -100),
                    "cross_entropy_backward",
                    bytes,
                );
                assert_oom(labels.one_hot(1 << 14, DType::F32), "one_hot", bytes);
                let rows = ti(&[0], &[1]).expand(&[1 << 16]).unwrap();
                let small = t(&[1.0], &[1, 1]).expand(&[1, 1 << 14]).unwrap();
                assert_oom(small.index_select(0, &rows), "index_select", bytes);
                let index = ti(&[0], &[1, 1]).expand(&shape).unwrap();
                assert_oom(x.gather(0, &index), "gather", bytes);
                assert_oom(x.index_add(0, &rows, &x), "index_add", bytes);
                assert_oom(x.scatter_add(0, &index, &x), "scatter_add", bytes);
                assert_oom(
                    x.sgd_step(&x, None, 0.1, 0.9, 0.0, 0.0, false, false),
                    "sgd_step",
                    bytes,
                );
                assert_oom(
                    x.adam_step(
                        &x,
                        &x,
                        &x,
                        None,
                        1,
                        1e-3,
                        (0.9, 0.999),
                        1e-8,
                        0.0,
                        false,
                        false,
                    ),
                    "adam_step",
                    bytes,
                );
            },
        );
    }
}
