//! The skinny kernel's side of a product (`matmul_skinny.wgsl`): which
//! output side is short and how its threads walk the long one, and the
//! row sums of a matrix as a product whose only column is the ones column.

use wgrad_core::checks::matmul::MatmulShape;
use wgrad_core::{Error, Layout, Result};

use super::plan::{self, Kernel};
use super::{Extras, flag};
use crate::GpuTensor;

impl GpuTensor {
    /// The row sums of `a` (a matrix layout of `self`'s buffer): `[m]`. One
    /// skinny product whose only column is B's ones column where it suits K
    /// (no B is read), else `sum`.
    pub(super) fn row_sums(&self, a: &Layout) -> Result<GpuTensor> {
        const OP: &str = "matmul_t_with_row_sums";
        let (m, k) = (a.shape()[0], a.shape()[1]);
        if !plan::skinny_suits(1, k) {
            let view = self.with_layout(a.clone());
            return view.sum(&[1], false);
        }
        let shapes = MatmulShape {
            batch: Vec::new(),
            m,
            k,
            n: 0,
            out: vec![m, 0],
        };
        let extras = Extras {
            row_sums: true,
            force: Some((Some(Kernel::Skinny), 0)),
            ..Extras::default()
        };
        // B's layout: K rows of no columns (the ones column is virtual).
        self.product(a, self, &Layout::contiguous(&[k, 0]), &shapes, OP, extras)
    }
}

/// How the skinny kernel walks a product: which side is short and whether
/// the long side's index is unit-stride in its operand.
#[derive(Clone, Copy, Debug)]
pub(super) struct SkinnyLayout {
    /// The rows (M) are the short side (else the columns, N).
    short_m: bool,
    /// The long side's index is unit-stride in its operand (else K is).
    wide_fast: bool,
}

impl SkinnyLayout {
    /// Long-side indices per workgroup: 8 (one 32-byte sector of a row)
    /// where they are unit-stride, else 4, each over 64 unit-stride k's.
    const WIDE_FAST_LANES: usize = 8;
    const K_FAST_LANES: usize = 4;

    /// The walk of `a` (`[.., m, k]`) times `b` (`[.., k, n]`), or an error
    /// where neither output side is short enough.
    pub(super) fn of(op: &'static str, a: &Layout, b: &Layout, m: usize, n: usize) -> Result<Self> {
        if m.min(n) > plan::SKINNY_SHORT {
            return Err(Error::invalid(
                op,
                format!(
                    "kernel \"skinny\" needs at most {} rows or columns, got a [{m}, {n}] output",
                    plan::SKINNY_SHORT
                ),
            ));
        }
        let short_m = n > plan::SKINNY_SHORT;
        let r = a.rank();
        let wide_fast = if short_m {
            b.strides()[r - 1] == 1 && b.strides()[r - 2] != 1
        } else {
            a.strides()[r - 2] == 1 && a.strides()[r - 1] != 1
        };
        Ok(SkinnyLayout { short_m, wide_fast })
    }

    fn lanes(self) -> usize {
        if self.wide_fast {
            Self::WIDE_FAST_LANES
        } else {
            Self::K_FAST_LANES
        }
    }

    /// The output tile (rows, columns) one workgroup covers.
    pub(super) fn tile(self) -> (usize, usize) {
        if self.short_m {
            (plan::SKINNY_SHORT, self.lanes())
        } else {
            (self.lanes(), plan::SKINNY_SHORT)
        }
    }

    pub(super) fn constants(self) -> [(&'static str, f64); 3] {
        [
            ("SHORT_M", flag(self.short_m)),
            ("WIDE_FAST", flag(self.wide_fast)),
            ("WIDE_LANES", self.lanes() as f64),
        ]
    }
}
