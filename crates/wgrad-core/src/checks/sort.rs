//! Sorting, scans and random sampling (`sort`, `argsort`, `topk`, `cumsum`,
//! `cumprod`, `randint`, `randperm`, `bernoulli`, `multinomial`): operand
//! checks, the row geometry both backends walk, and the sort key both
//! backends order by.
//!
//! Both backends see a tensor sorted (or scanned) along `axis` as `rows`
//! independent rows of `n` elements: row `r` starts at
//! `(r / inner) * n * inner + r % inner` of the contiguous data and steps by
//! `inner` (the axis' contiguous stride), so no dim is ever moved.
//!
//! The sort is stable (`torch.sort(stable=True)`): elements are ordered by
//! the pair (key, original position), where the key is a `u32` whose
//! unsigned order is the value order ([`sort_key`]). NaN is the largest
//! value (last ascending, first descending, as PyTorch), and `-0.0 == 0.0`.
//! With position as the tie-break every pair is distinct, so any correct
//! sorting network (the GPU's bitonic sort) and the CPU's comparison sort
//! produce exactly the same order.

use crate::shape::{is_scalar_axis, normalize_axis};
use crate::{DType, Error, Result};

/// How a sort kernel turns an element's bits into its key (WGSL override `KIND`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// f32 values (NaN largest, `-0.0 == 0.0`).
    F32,
    /// i32 values.
    I32,
    /// The bits as u32 (random keys of `randperm`).
    U32,
}

impl KeyKind {
    /// The code the kernels' `KIND` override takes.
    pub const fn code(self) -> u32 {
        match self {
            KeyKind::F32 => 0,
            KeyKind::I32 => 1,
            KeyKind::U32 => 2,
        }
    }

    /// The kind that orders values of `dtype` (F32 or I32; `op` names the
    /// caller in the error for any other dtype).
    pub fn of(op: &'static str, dtype: DType) -> Result<KeyKind> {
        match dtype {
            // The 16-bit floats are sorted in F32 (exact widening).
            DType::F32 | DType::F16 | DType::BF16 => Ok(KeyKind::F32),
            DType::I32 => Ok(KeyKind::I32),
            got => Err(Error::DTypeMismatch {
                op,
                expected: DType::F32,
                got,
            }),
        }
    }
}

/// The `u32` key of an element with bit pattern `bits`: unsigned key order
/// is value order (inverted when `descending`). `kernels/common/sort_key.wgsl`
/// computes the same function.
pub fn sort_key(bits: u32, kind: KeyKind, descending: bool) -> u32 {
    let key = match kind {
        KeyKind::F32 => {
            if bits & 0x7fff_ffff > 0x7f80_0000 {
                u32::MAX // every NaN, whatever its sign and payload
            } else if bits == 0x8000_0000 {
                0x8000_0000 // -0.0 orders as +0.0
            } else if bits & 0x8000_0000 != 0 {
                !bits
            } else {
                bits | 0x8000_0000
            }
        }
        KeyKind::I32 => bits ^ 0x8000_0000,
        KeyKind::U32 => bits,
    };
    if descending { !key } else { key }
}

/// A tensor seen as rows along one axis (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows {
    /// The axis, normalised (0 for a 0-d tensor).
    pub axis: usize,
    /// Number of rows (product of the other dims).
    pub rows: usize,
    /// Elements per row (the axis' size; 1 for a 0-d tensor).
    pub n: usize,
    /// Distance between neighbours of a row in the contiguous data
    /// (product of the dims after the axis).
    pub inner: usize,
}

impl Rows {
    /// The rows of a contiguous tensor of `shape` along `axis` (negative
    /// counts from the end; a 0-d tensor takes 0 or -1, as in PyTorch).
    pub fn along(op: &'static str, shape: &[usize], axis: isize) -> Result<Rows> {
        if is_scalar_axis(axis, shape.len()) {
            return Ok(Rows {
                axis: 0,
                rows: 1,
                n: 1,
                inner: 1,
            });
        }
        let a = normalize_axis(op, axis, shape.len())?;
        let n = shape[a];
        let inner: usize = shape[a + 1..].iter().product();
        let outer: usize = shape[..a].iter().product();
        Ok(Rows {
            axis: a,
            rows: outer * inner,
            n,
            inner,
        })
    }

    /// Position in the contiguous data of element `j` of row `r`.
    pub fn at(&self, r: usize, j: usize) -> usize {
        (r / self.inner) * self.n * self.inner + r % self.inner + j * self.inner
    }
}

/// Error unless `k <= n` (`topk`'s `k` against the size of its dim).
pub fn topk(k: usize, rows: &Rows, shape: &[usize]) -> Result<()> {
    if k > rows.n {
        return Err(Error::invalid(
            "topk",
            format!(
                "k = {k} exceeds the size {} of dim {} of a tensor of shape {shape:?}",
                rows.n, rows.axis
            ),
        ));
    }
    Ok(())
}

/// What a scan kernel folds (WGSL override `KIND` of `kernels/scan/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanKind {
    /// f32 sums (`cumsum`).
    SumF32,
    /// i32 sums, wrapping.
    SumI32,
    /// f32 products (`cumprod`).
    ProdF32,
    /// i32 products, wrapping.
    ProdI32,
}

impl ScanKind {
    /// The code the kernels' `KIND` override takes.
    pub const fn code(self) -> u32 {
        match self {
            ScanKind::SumF32 => 0,
            ScanKind::SumI32 => 1,
            ScanKind::ProdF32 => 2,
            ScanKind::ProdI32 => 3,
        }
    }

    /// The scan of `cumsum` (`product` false) or `cumprod` over `dtype`:
    /// F32 or I32 (I32 results wrap around, as two's complement).
    pub fn of(dtype: DType, product: bool) -> Result<ScanKind> {
        let op = if product { "cumprod" } else { "cumsum" };
        Ok(match (KeyKind::of(op, dtype)?, product) {
            (KeyKind::I32, false) => ScanKind::SumI32,
            (KeyKind::I32, true) => ScanKind::ProdI32,
            (_, false) => ScanKind::SumF32,
            (_, true) => ScanKind::ProdF32,
        })
    }

    /// The op's name.
    pub const fn op(self) -> &'static str {
        match self {
            ScanKind::SumF32 | ScanKind::SumI32 => "cumsum",
            ScanKind::ProdF32 | ScanKind::ProdI32 => "cumprod",
        }
    }
}

/// `high - low` of `randint` as the u32 range the generator maps into;
/// error unless `low < high`.
pub fn randint_range(low: i32, high: i32) -> Result<u32> {
    if low >= high {
        return Err(Error::invalid(
            "randint",
            format!("low = {low} must be less than high = {high}"),
        ));
    }
    // At most 2^32 - 1, so it fits.
    Ok((i64::from(high) - i64::from(low)) as u32)
}

/// `randperm`'s `n` as the u32 the kernels count in (its result is I32).
pub fn randperm_len(n: usize) -> Result<u32> {
    match u32::try_from(n) {
        Ok(v) if v <= i32::MAX as u32 => Ok(v),
        _ => Err(Error::invalid(
            "randperm",
            format!("n = {n} exceeds the I32 index range ({})", i32::MAX),
        )),
    }
}

/// The `[rows, categories]` view of `multinomial`'s weights (1-d or 2-d,
/// F32), checking `num_samples` against the category count: without
/// replacement it may not exceed it.
pub fn multinomial(
    shape: &[usize],
    dtype: DType,
    num_samples: usize,
    replacement: bool,
) -> Result<[usize; 2]> {
    const OP: &str = "multinomial";
    crate::checks::expect_float(OP, dtype)?;
    let [rows, cats] = match *shape {
        [c] => [1, c],
        [r, c] => [r, c],
        _ => {
            return Err(Error::invalid(
                OP,
                format!("weights must be 1-d or 2-d, got shape {shape:?}"),
            ));
        }
    };
    if cats == 0 {
        return Err(Error::invalid(
            OP,
            format!("weights of shape {shape:?} have no categories"),
        ));
    }
    if !replacement && num_samples > cats {
        return Err(Error::invalid(
            OP,
            format!(
                "cannot draw num_samples = {num_samples} > {cats} categories without replacement"
            ),
        ));
    }
    if i32::try_from(cats).is_err() {
        return Err(Error::invalid(
            OP,
            format!("{cats} categories exceed the I32 index range"),
        ));
    }
    Ok([rows, cats])
}

/// Why a `multinomial` row is invalid; the code a device fault carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadWeights {
    /// A negative, infinite or NaN weight.
    NegativeOrNonFinite = 1,
    /// Every weight is zero.
    AllZero = 2,
    /// Fewer non-zero weights than samples drawn without replacement.
    TooFewNonZero = 3,
}

impl BadWeights {
    /// The reason for a fault code, if it is one.
    pub fn from_code(code: u32) -> Option<BadWeights> {
        Some(match code {
            1 => BadWeights::NegativeOrNonFinite,
            2 => BadWeights::AllZero,
            3 => BadWeights::TooFewNonZero,
            _ => return None,
        })
    }

    /// The error for row `row`.
    pub fn error(self, row: usize) -> Error {
        let why = match self {
            BadWeights::NegativeOrNonFinite => "has a negative, infinite or NaN weight",
            BadWeights::AllZero => "has only zero weights",
            BadWeights::TooFewNonZero => {
                "has fewer non-zero weights than num_samples (without replacement)"
            }
        };
        Error::invalid("multinomial", format!("row {row} of the weights {why}"))
    }
}

/// The first bad row of `[rows, cats]` weights `w` (row-major), if any.
pub fn check_weights(w: &[f32], cats: usize, num_samples: usize, replacement: bool) -> Result<()> {
    for (r, row) in w.chunks(cats.max(1)).enumerate() {
        let bad = if row
            .iter()
            .any(|&x| x.is_nan() || x < 0.0 || x.is_infinite())
        {
            Some(BadWeights::NegativeOrNonFinite)
        } else if row.iter().all(|&x| x == 0.0) {
            Some(BadWeights::AllZero)
        } else if !replacement && row.iter().filter(|&&x| x > 0.0).count() < num_samples {
            Some(BadWeights::TooFewNonZero)
        } else {
            None
        };
        if let Some(b) = bad {
            return Err(b.error(r));
        }
    }
    Ok(())
}

/// The error for a `bernoulli` probability outside `[0, 1]` (or NaN) at
/// flat element `index`.
pub fn bad_probability(index: usize) -> Error {
    Error::invalid(
        "bernoulli",
        format!("probability at element {index} is outside [0, 1] (or NaN)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_keys_order_like_values_with_nan_largest() {
        let xs = [
            f32::NEG_INFINITY,
            -2.5,
            -1e-30,
            -0.0,
            0.0,
            1e-30,
            3.0,
            f32::INFINITY,
            f32::NAN,
        ];
        let keys: Vec<u32> = xs
            .iter()
            .map(|x| sort_key(x.to_bits(), KeyKind::F32, false))
            .collect();
        for w in keys.windows(2) {
            assert!(w[0] <= w[1], "{keys:?}");
        }
        assert_eq!(keys[3], keys[4], "-0 == +0");
        let neg_nan = sort_key((-f32::NAN).to_bits(), KeyKind::F32, false);
        assert_eq!(neg_nan, u32::MAX);
        assert_eq!(sort_key(0, KeyKind::F32, true), !keys[4]);
        assert!(sort_key((-5i32) as u32, KeyKind::I32, false) < sort_key(3, KeyKind::I32, false));
    }

    #[test]
    fn rows_walk_any_axis() {
        let r = Rows::along("sort", &[2, 3, 4], 1).unwrap();
        assert_eq!((r.rows, r.n, r.inner), (8, 3, 4));
        assert_eq!(r.at(5, 2), 12 + 1 + 8);
        assert_eq!(Rows::along("sort", &[], -1).unwrap().n, 1);
        assert!(Rows::along("sort", &[2], 1).is_err());
    }

    #[test]
    fn bad_arguments_name_the_op_and_values() {
        let r = Rows::along("topk", &[2, 3], -1).unwrap();
        let e = topk(4, &r, &[2, 3]).unwrap_err().to_string();
        assert!(
            e.contains("topk") && e.contains("k = 4") && e.contains("size 3"),
            "{e}"
        );
        assert!(randint_range(3, 3).is_err());
        assert_eq!(randint_range(i32::MIN, i32::MAX).unwrap(), u32::MAX);
        let e = multinomial(&[2, 3], DType::F32, 4, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("multinomial") && e.contains("4"), "{e}");
        assert!(multinomial(&[2, 3, 4], DType::F32, 1, true).is_err());
        assert!(check_weights(&[1.0, -1.0], 2, 1, true).is_err());
        assert!(check_weights(&[0.0, 0.0], 2, 1, true).is_err());
        assert!(check_weights(&[0.0, 1.0], 2, 2, false).is_err());
        assert!(check_weights(&[0.0, 1.0], 2, 2, true).is_ok());
    }
}
