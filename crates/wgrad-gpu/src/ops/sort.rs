//! Stable sorts and prefix sums (and products) along one dim (`kernels/sort/`,
//! `kernels/scan/`), walking the rows in place (`checks::sort::Rows`): no
//! dim is moved, a non-contiguous input is made dense first.
//!
//! Rows of up to `SORT_TILE` elements sort in one dispatch in workgroup
//! memory, one row per workgroup (short rows: `SORT_TILE / padded` rows).
//! Longer rows run the same bitonic network over (key, index) pairs in a
//! scratch buffer: each tile sorted in workgroup memory, then for each later
//! stage its long steps one dispatch each and its short steps again within
//! tiles: `log2(P / T)` stages of at most `log2(P / T) + 1` dispatches for
//! rows padded to `P`.
//!
//! The scan is one dispatch per row block of `SCAN_BLOCK` elements; longer
//! rows scan their block totals the same way (recursively) and add them back.

use wgrad_core::checks::sort::{KeyKind, Rows, ScanKind};
use wgrad_core::{DType, Result};
use wgrad_device::GpuBuffer;
use wgrad_kernels::families::sort::{self as specs, SCAN_BLOCK, SORT_TILE};

use crate::GpuTensor;
use crate::params::{ScanParams, SortParams, to_u32};

impl GpuTensor {
    /// Values sorted along `axis` and their I32 positions in the input
    /// (`torch.sort(stable=True)`): ties keep their order, NaN is the
    /// largest value. F32 or I32.
    pub fn sort(&self, axis: isize, descending: bool) -> Result<(GpuTensor, GpuTensor)> {
        let kind = KeyKind::of("sort", self.dtype())?;
        self.sort_by("sort", axis, descending, kind)
    }

    /// The I32 indices of [`sort`](Self::sort).
    pub fn argsort(&self, axis: isize, descending: bool) -> Result<GpuTensor> {
        let kind = KeyKind::of("argsort", self.dtype())?;
        Ok(self.sort_by("argsort", axis, descending, kind)?.1)
    }

    /// Sorts by the keys `kind` makes of the elements' bits.
    pub(crate) fn sort_by(
        &self,
        op: &'static str,
        axis: isize,
        descending: bool,
        kind: KeyKind,
    ) -> Result<(GpuTensor, GpuTensor)> {
        // The kernels read one element per 32-bit word; 16-bit floats are
        // widened by the caller.
        self.reject_half(op)?;
        let rows = Rows::along(op, self.shape(), axis)?;
        let src = self.contiguous()?;
        let values = self.empty_like_device(op, self.shape(), self.dtype())?;
        let indices = self.empty_like_device(op, self.shape(), DType::I32)?;
        if self.numel() == 0 {
            return Ok((values, indices));
        }
        let padded = rows.n.next_power_of_two();
        let u = |what, v| to_u32(op, what, v);
        let mut p = SortParams {
            rows: u("row count", rows.rows)?,
            n: u("row length", rows.n)?,
            inner: u("stride", rows.inner)?,
            offset: u("offset", src.layout.offset())?,
            padded: u("padded row length", padded)?,
            descending: u32::from(descending),
            k: 0,
            j: 0,
        };
        let constants = [("KIND", f64::from(kind.code()))];
        let kernels = self.kernels();
        if padded <= SORT_TILE {
            // Short rows share a workgroup (the kernel's SORT_TILE / padded).
            let per_group = SORT_TILE / padded;
            kernels.dispatch_groups(
                &specs::SORT_ROWS,
                &constants,
                &[&src.buffer, &values.buffer, &indices.buffer],
                &p,
                rows.rows.div_ceil(per_group) as u64,
            )?;
            return Ok((values, indices));
        }
        // The kernels index pairs with u32 (two words each).
        u("sort scratch size", rows.rows * padded * 2)?;
        let pairs = self.empty_like_device(op, &[rows.rows * padded * 2], DType::U32)?;
        let bufs: [&GpuBuffer; 4] = [&src.buffer, &pairs.buffer, &values.buffer, &indices.buffer];
        let total = (rows.rows * padded) as u64;
        kernels.dispatch_1d(&specs::SORT_INIT, &constants, &bufs, &p, total)?;
        let tiles = total / SORT_TILE as u64;
        kernels.dispatch_groups(&specs::SORT_TILES, &constants, &bufs, &p, tiles)?;
        let mut k = 2 * SORT_TILE;
        while k <= padded {
            let mut j = k / 2;
            while j >= SORT_TILE {
                p.k = k as u32;
                p.j = j as u32;
                kernels.dispatch_1d(&specs::SORT_STEP, &constants, &bufs, &p, total / 2)?;
                j /= 2;
            }
            p.k = k as u32;
            kernels.dispatch_groups(&specs::SORT_TILES, &constants, &bufs, &p, tiles)?;
            k *= 2;
        }
        let written = (rows.rows * rows.n) as u64;
        kernels.dispatch_1d(&specs::SORT_WRITE, &constants, &bufs, &p, written)?;
        Ok((values, indices))
    }

    /// Inclusive prefix sums along `axis` (`torch.cumsum`), from the end of
    /// each row when `reverse` (cumsum's backward). F32 or I32 (wrapping).
    pub fn cumsum(&self, axis: isize, reverse: bool) -> Result<GpuTensor> {
        self.scan(ScanKind::of(self.dtype(), false)?, axis, reverse)
    }

    /// Inclusive prefix products along `axis` (`torch.cumprod`). F32 or
    /// I32 (wrapping).
    pub fn cumprod(&self, axis: isize) -> Result<GpuTensor> {
        self.scan(ScanKind::of(self.dtype(), true)?, axis, false)
    }

    fn scan(&self, kind: ScanKind, axis: isize, reverse: bool) -> Result<GpuTensor> {
        let op = kind.op();
        // The kernels read one element per 32-bit word; 16-bit floats are
        // widened by the caller.
        self.reject_half(op)?;
        let rows = Rows::along(op, self.shape(), axis)?;
        let src = self.contiguous()?;
        let out = self.empty_like_device(op, self.shape(), self.dtype())?;
        if self.numel() == 0 {
            return Ok(out);
        }
        to_u32(op, "element count", self.numel())?;
        let scan = Scan {
            kind,
            rows: rows.rows,
            n: rows.n,
            inner: rows.inner,
            offset: src.layout.offset(),
            reverse,
        };
        scan.run(&src, &out)?;
        Ok(out)
    }

    /// The input gradient of `x.cumprod(axis)`, `self` being the output
    /// gradient: exact where `x` holds zeros (no division). One thread per
    /// row walks it twice.
    pub fn cumprod_backward(&self, x: &GpuTensor, axis: isize) -> Result<GpuTensor> {
        const OP: &str = "cumprod_backward";
        self.same_device(OP, x)?;
        self.expect_dtype(OP, DType::F32)?;
        x.expect_dtype(OP, DType::F32)?;
        wgrad_core::checks::same_shape(OP, x.shape(), self.shape())?;
        let rows = Rows::along(OP, self.shape(), axis)?;
        let (x, g) = (x.contiguous()?, self.contiguous()?);
        let out = self.empty_like_device(OP, self.shape(), DType::F32)?;
        if self.numel() == 0 {
            return Ok(out);
        }
        // contiguous() leaves both dense from element 0 (the kernel has no offsets).
        let u = |what, v| to_u32(OP, what, v);
        let p = ScanParams {
            rows: u("row count", rows.rows)?,
            n: u("row length", rows.n)?,
            inner: u("stride", rows.inner)?,
            offset: 0,
            blocks: 0,
            reverse: 0,
        };
        self.kernels().dispatch_1d(
            &specs::CUMPROD_BACKWARD,
            &[("KIND", f64::from(ScanKind::ProdF32.code()))],
            &[&x.buffer, &g.buffer, &out.buffer],
            &p,
            rows.rows as u64,
        )?;
        Ok(out)
    }
}

/// One scan over rows of a dense source into a dense output.
struct Scan {
    kind: ScanKind,
    rows: usize,
    n: usize,
    inner: usize,
    offset: usize,
    reverse: bool,
}

impl Scan {
    fn run(&self, src: &GpuTensor, out: &GpuTensor) -> Result<()> {
        let op = self.kind.op();
        let u = |what, v| to_u32(op, what, v);
        let blocks = self.n.div_ceil(SCAN_BLOCK);
        let p = ScanParams {
            rows: u("row count", self.rows)?,
            n: u("row length", self.n)?,
            inner: u("stride", self.inner)?,
            offset: u("offset", self.offset)?,
            blocks: u("block count", blocks)?,
            reverse: u32::from(self.reverse),
        };
        let constants = [("KIND", f64::from(self.kind.code()))];
        let totals = src.empty_like_device(op, &[self.rows * blocks], DType::U32)?;
        src.kernels().dispatch_groups(
            &specs::SCAN_BLOCKS,
            &constants,
            &[&src.buffer, &out.buffer, &totals.buffer],
            &p,
            (self.rows * blocks) as u64,
        )?;
        if blocks > 1 {
            // Carries: the inclusive scan of each row's block totals.
            let carries = src.empty_like_device(op, &[self.rows * blocks], DType::U32)?;
            Scan {
                kind: self.kind,
                rows: self.rows,
                n: blocks,
                inner: 1,
                offset: 0,
                reverse: false,
            }
            .run(&totals, &carries)?;
            src.kernels().dispatch_1d(
                &specs::SCAN_CARRY,
                &constants,
                &[&out.buffer, &carries.buffer],
                &p,
                (self.rows * self.n) as u64,
            )?;
        }
        Ok(())
    }
}
