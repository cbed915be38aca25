//! When and how CPU ops spread work over cores (rayon's global pool).
//!
//! Only ops over dense slices are split, and only when they are large:
//! handing a task to another thread costs a few microseconds when that
//! thread is awake, and far more (often 50-150 us in a VM) when it has gone
//! to sleep. Two things keep that cost down: a threshold below which ops
//! stay serial, and [`keep_warm`], which keeps one worker spinning for a
//! moment after each parallel op so that the next one, usually a few
//! microseconds later in a training step, finds it awake (what OpenMP's
//! spin-wait gives PyTorch).
//!
//! Every split keeps each element's arithmetic and, for reductions, the
//! order of additions, so results are bit-identical to the serial loops
//! whatever the thread count.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytemuck::Zeroable;
use rayon::prelude::*;

use crate::alloc::{self, AllocError};

/// Work (elements, scaled by a per-element cost where ops differ) below
/// which an op runs on the calling thread. About 100 us of serial work:
/// measured on 2 cores, smaller ops lose more to the hand-off than they
/// gain.
pub(crate) const PAR_MIN_WORK: usize = 1 << 20;

/// Elements per parallel task: large enough to amortise scheduling, small
/// enough to balance the load when the other core is busy.
pub(crate) const TASK_ELEMS: usize = 1 << 15;

/// Per-element cost of ops that call into libm or do several divisions
/// (exp, tanh, Adam, ...) relative to one add, for the work estimates.
pub(crate) const HEAVY: usize = 16;

/// How long the keep-warm task stays on a worker after its last job.
const WARM_FOR: Duration = Duration::from_millis(1);

/// Whether a keep-warm task is running (at most one at a time).
static WARM: AtomicBool = AtomicBool::new(false);

/// Whether `work` (elements times their relative cost) is worth splitting
/// across threads.
pub(crate) fn worth_splitting(work: usize) -> bool {
    work >= PAR_MIN_WORK && rayon::current_num_threads() > 1
}

/// Keeps one worker of the pool busy-waiting for new jobs (running any it
/// finds) until none has come for [`WARM_FOR`], so that back-to-back
/// parallel ops do not each pay for waking a sleeping thread. Called after
/// every parallel op; a no-op while a keep-warm task is already running.
pub(crate) fn keep_warm() {
    // The plain load first keeps the common case (already warm) free of
    // writes to a shared cache line.
    if WARM.load(Ordering::Relaxed) || WARM.swap(true, Ordering::AcqRel) {
        return;
    }
    rayon::spawn(|| {
        let mut last = Instant::now();
        while last.elapsed() < WARM_FOR {
            match rayon::yield_now() {
                Some(rayon::Yield::Executed) => last = Instant::now(),
                Some(rayon::Yield::Idle) => std::hint::spin_loop(),
                None => break,
            }
        }
        WARM.store(false, Ordering::Release);
    });
}

/// `f` applied to every element of `a`, in order; `cost` is the relative
/// per-element cost (1 for an add, [`HEAVY`] for libm calls).
pub(crate) fn map<A, B, F>(a: &[A], cost: usize, f: F) -> Result<Vec<B>, AllocError>
where
    A: Copy + Sync,
    B: Copy + Zeroable + Send + 'static,
    F: Fn(A) -> B + Sync,
{
    if !worth_splitting(a.len() * cost) {
        let mut out = alloc::reserve(a.len())?;
        out.extend(a.iter().map(|&x| f(x)));
        return Ok(out);
    }
    let mut out = alloc::for_overwrite(a.len())?;
    out.par_chunks_mut(TASK_ELEMS)
        .zip(a.par_chunks(TASK_ELEMS))
        .for_each(|(o, a)| {
            for (o, &x) in o.iter_mut().zip(a) {
                *o = f(x);
            }
        });
    keep_warm();
    Ok(out)
}

/// `f(a[i], b[i])` for every `i`; `a` and `b` have the same length;
/// `cost` as for [`map`].
pub(crate) fn zip_map<A, B, C, F>(a: &[A], b: &[B], cost: usize, f: F) -> Result<Vec<C>, AllocError>
where
    A: Copy + Sync,
    B: Copy + Sync,
    C: Copy + Zeroable + Send + 'static,
    F: Fn(A, B) -> C + Sync,
{
    debug_assert_eq!(a.len(), b.len());
    if !worth_splitting(a.len() * cost) {
        let mut out = alloc::reserve(a.len())?;
        out.extend(a.iter().zip(b).map(|(&x, &y)| f(x, y)));
        return Ok(out);
    }
    let mut out = alloc::for_overwrite(a.len())?;
    out.par_chunks_mut(TASK_ELEMS)
        .zip(a.par_chunks(TASK_ELEMS))
        .zip(b.par_chunks(TASK_ELEMS))
        .for_each(|((o, a), b)| {
            for ((o, &x), &y) in o.iter_mut().zip(a).zip(b) {
                *o = f(x, y);
            }
        });
    keep_warm();
    Ok(out)
}

/// Calls `f(row_index, row)` for every `row_len`-element row of `out`,
/// splitting the rows across threads when `work` (elements read and
/// written in total) is large. `row_len` must be nonzero.
pub(crate) fn for_each_row<T, F>(out: &mut [T], row_len: usize, work: usize, f: F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync,
{
    let rows = out.len() / row_len.max(1);
    if rows < 2 || !worth_splitting(work) {
        out.chunks_mut(row_len.max(1))
            .enumerate()
            .for_each(|(i, row)| f(i, row));
        return;
    }
    // Enough rows per task for TASK_ELEMS of work, and at least one.
    let rows_per_task = (TASK_ELEMS * rows / work.max(1)).max(1);
    out.par_chunks_mut(row_len)
        .enumerate()
        .with_min_len(rows_per_task)
        .for_each(|(i, row)| f(i, row));
    keep_warm();
}

/// Maps every `row_len`-element row of `data` to one value, splitting the
/// rows across threads when there is enough work (`cost` as for [`map`]).
/// `row_len` must be nonzero.
pub(crate) fn map_rows<T, F>(
    data: &[f32],
    row_len: usize,
    cost: usize,
    f: F,
) -> Result<Vec<T>, AllocError>
where
    T: Send + 'static,
    F: Fn(&[f32]) -> T + Sync,
{
    let rows = data.len() / row_len.max(1);
    let mut out = alloc::reserve(rows)?;
    if rows < 2 || !worth_splitting(data.len() * cost) {
        out.extend(data.chunks_exact(row_len.max(1)).map(f));
        return Ok(out);
    }
    let rows_per_task = (TASK_ELEMS / row_len).max(1);
    // `collect_into_vec` only reserves what is missing, which is nothing.
    data.par_chunks_exact(row_len)
        .with_min_len(rows_per_task)
        .map(&f)
        .collect_into_vec(&mut out);
    keep_warm();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_paths_match_serial() {
        let n = PAR_MIN_WORK * 2 + 17;
        let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
        let b: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
        let serial: Vec<f32> = a.iter().map(|x| x * 3.0).collect();
        assert_eq!(map(&a, 1, |x| x * 3.0).unwrap(), serial);
        let serial: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
        assert_eq!(zip_map(&a, &b, 1, |x, y| x - y).unwrap(), serial);

        let row = 1000;
        let len = (n / row) * row;
        let mut out = vec![0.0f32; len];
        for_each_row(&mut out, row, len, |i, r| {
            r.iter_mut().for_each(|x| *x = i as f32)
        });
        assert!(
            out.chunks(row)
                .enumerate()
                .all(|(i, r)| r.iter().all(|&x| x == i as f32))
        );
        let sums = map_rows(&a[..len], row, 1, |r| r[0] + r[row - 1]).unwrap();
        let serial: Vec<f32> = a[..len].chunks(row).map(|r| r[0] + r[row - 1]).collect();
        assert_eq!(sums, serial);
    }
}
