//! `Display` for [`Tensor`]: PyTorch's `print(tensor)` layout.
//!
//! `tensor([[ 0.1000, -2.0000], ...])` with one format for every element
//! (as `torch._tensor_str`): integral floats as `1.`, fixed point with 4
//! decimals (or the formatter's precision, `{:.2}`), scientific when the
//! magnitudes span more than 1000x or leave `[1e-4, 1e8]`; elements right
//! aligned to the widest (a float tensor's width counts only its nonzero
//! finite values, as PyTorch's `_Formatter`); rows wrapped at 80 columns;
//! more than 1000 elements summarised with `...` (the first and last 3
//! along each dim); U32 masks as `True`/`False` (PyTorch's bool);
//! suffixes for a non-CPU device, a non-F32 dtype, `grad_fn` and
//! `requires_grad`. Printing a GPU tensor reads it back (like PyTorch's
//! print of a CUDA tensor).

use std::fmt;

use wgrad_core::DType;

use crate::Tensor;

/// Elements above which the printout is summarised.
const THRESHOLD: usize = 1000;
/// Elements kept at each end of a summarised dim.
const EDGE_ITEMS: usize = 3;
/// Line width rows are wrapped at.
const LINE_WIDTH: usize = 80;
/// Decimals when the formatter gives no precision.
const DEFAULT_PRECISION: usize = 4;

/// How every element of one printout is formatted.
enum Style {
    /// Integral floats: `1.`, `-20.`.
    IntegralFloat,
    /// `{:.p}`.
    Fixed(usize),
    /// `{:.pe}` with a signed two-digit exponent, as Python's `%.4e`.
    Scientific(usize),
    /// Integers.
    Int,
    /// `True` / `False`: a U32 mask (PyTorch's `bool`) whose values are all
    /// 0 or 1.
    Bool,
}

fn python_sci(v: f64, precision: usize) -> String {
    let s = format!("{v:.precision$e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

impl Style {
    fn choose(values: &[f64], dtype: DType, precision: usize) -> Style {
        if is_mask(dtype, values) {
            return Style::Bool;
        }
        if !dtype.is_float() {
            return Style::Int;
        }
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if finite.is_empty() {
            return Style::Fixed(precision);
        }
        let abs: Vec<f64> = finite.iter().map(|v| v.abs()).collect();
        let nonzero: Vec<f64> = abs.iter().copied().filter(|&v| v != 0.0).collect();
        let max = nonzero.iter().copied().fold(0.0f64, f64::max);
        let min = nonzero.iter().copied().fold(f64::INFINITY, f64::min);
        let spread = !nonzero.is_empty() && max / min > 1000.0;
        if finite.iter().all(|v| v.fract() == 0.0) {
            return if spread || max > 1e8 {
                Style::Scientific(precision)
            } else {
                Style::IntegralFloat
            };
        }
        if !nonzero.is_empty() && (spread || max > 1e8 || min < 1e-4) {
            Style::Scientific(precision)
        } else {
            Style::Fixed(precision)
        }
    }

    fn format(&self, v: f64) -> String {
        if v.is_nan() {
            return "nan".into();
        }
        if v.is_infinite() {
            return if v > 0.0 { "inf".into() } else { "-inf".into() };
        }
        match self {
            Style::IntegralFloat => format!("{v:.0}."),
            Style::Fixed(p) => format!("{v:.p$}", p = *p),
            Style::Scientific(p) => python_sci(v, *p),
            Style::Int => format!("{v}"),
            Style::Bool => if v != 0.0 { "True" } else { "False" }.into(),
        }
    }

    /// The width elements are right-aligned to, as `torch._tensor_str`'s
    /// `_Formatter` measures it: every value of an integer or bool tensor,
    /// but only the nonzero finite values of a float one (at least 1), so
    /// `nan`, `inf` and zeros that are wider than the rest stick out
    /// rather than widening every column: `tensor([nan, 1.])`.
    fn width(&self, values: &[f64]) -> usize {
        let counted = |v: &&f64| match self {
            Style::Int | Style::Bool => true,
            _ => v.is_finite() && **v != 0.0,
        };
        values
            .iter()
            .filter(counted)
            .map(|&v| self.format(v).len())
            .max()
            .unwrap_or(1)
            .max(1)
    }
}

/// Whether a tensor prints as `bool`: U32 (wgrad's comparison masks) with
/// every value 0 or 1; other U32 data prints as numbers with its dtype.
fn is_mask(dtype: DType, values: &[f64]) -> bool {
    dtype == DType::U32 && values.iter().all(|&v| v == 0.0 || v == 1.0)
}

/// Indices kept along a dim of `size` (all, or the edges with a gap).
fn kept(size: usize, summarize: bool) -> Vec<Option<usize>> {
    if summarize && size > 2 * EDGE_ITEMS {
        let mut v: Vec<Option<usize>> = (0..EDGE_ITEMS).map(Some).collect();
        v.push(None);
        v.extend((size - EDGE_ITEMS..size).map(Some));
        v
    } else {
        (0..size).map(Some).collect()
    }
}

/// Writes the nested brackets of `shape[depth..]` starting at flat
/// element `offset`; `indent` is the column of this level's bracket.
struct Printer<'a> {
    values: &'a [f64],
    shape: &'a [usize],
    strides: Vec<usize>,
    style: Style,
    width: usize,
    summarize: bool,
}

impl Printer<'_> {
    fn write(&self, out: &mut String, depth: usize, offset: usize, indent: usize) {
        let rank = self.shape.len();
        out.push('[');
        let items = kept(self.shape[depth], self.summarize);
        if depth + 1 == rank {
            // PyTorch's `_vector_str`: (linewidth - indent) / (width + 2),
            // its indent being this bracket's column.
            let per_line = (LINE_WIDTH.saturating_sub(indent) / (self.width + 2)).max(1);
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                    if n % per_line == 0 {
                        out.push('\n');
                        out.push_str(&" ".repeat(indent + 1));
                    } else {
                        out.push(' ');
                    }
                }
                match item {
                    Some(i) => {
                        let text = self
                            .style
                            .format(self.values[offset + i * self.strides[depth]]);
                        out.push_str(&format!("{text:>w$}", w = self.width));
                    }
                    // PyTorch's element ellipsis is ' ...', not padded.
                    None => out.push_str(" ..."),
                }
            }
        } else {
            let breaks = "\n".repeat(rank - depth - 1);
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                    out.push_str(&breaks);
                    out.push_str(&" ".repeat(indent + 1));
                }
                match item {
                    Some(i) => {
                        self.write(out, depth + 1, offset + i * self.strides[depth], indent + 1)
                    }
                    None => out.push_str("..."),
                }
            }
        }
        out.push(']');
    }
}

/// The flat values that are printed (all, or those a summary keeps).
fn printed_values(values: &[f64], shape: &[usize], summarize: bool) -> Vec<f64> {
    if !summarize {
        return values.to_vec();
    }
    let strides = wgrad_core::shape::contiguous_strides(shape);
    let mut offsets = vec![0usize];
    for (&size, &stride) in shape.iter().zip(&strides) {
        offsets = offsets
            .iter()
            .flat_map(|&o| {
                kept(size, true)
                    .into_iter()
                    .flatten()
                    .map(move |i| o + i * stride)
            })
            .collect();
    }
    offsets.iter().map(|&o| values[o]).collect()
}

/// PyTorch's `grad_fn` class name for an op name: `add` -> `AddBackward0`.
fn backward_name(op: &str) -> String {
    let camel: String = op
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    format!("{camel}Backward0")
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dtype = self.dtype();
        let values: Vec<f64> = match dtype {
            DType::F32 => self
                .to_vec::<f32>()
                .map(|v| v.into_iter().map(f64::from).collect()),
            DType::I32 => self
                .to_vec::<i32>()
                .map(|v| v.into_iter().map(f64::from).collect()),
            DType::U32 => self
                .to_vec::<u32>()
                .map(|v| v.into_iter().map(f64::from).collect()),
            DType::F16 => self
                .to_vec::<half::f16>()
                .map(|v| v.into_iter().map(f64::from).collect()),
            DType::BF16 => self
                .to_vec::<half::bf16>()
                .map(|v| v.into_iter().map(f64::from).collect()),
        }
        .map_err(|_| fmt::Error)?;
        let shape = self.shape().to_vec();
        let precision = f.precision().unwrap_or(DEFAULT_PRECISION);
        let summarize = values.len() > THRESHOLD;
        let printed = printed_values(&values, &shape, summarize);
        let style = Style::choose(&printed, dtype, precision);
        let width = style.width(&printed);
        let mask = matches!(style, Style::Bool) || (values.is_empty() && dtype == DType::U32);
        let mut out = String::from("tensor(");
        if shape.is_empty() {
            out.push_str(&style.format(values.first().copied().unwrap_or(0.0)));
        } else if values.is_empty() {
            out.push_str("[]");
        } else {
            let printer = Printer {
                values: &values,
                strides: wgrad_core::shape::contiguous_strides(&shape),
                shape: &shape,
                style,
                width,
                summarize,
            };
            printer.write(&mut out, 0, 0, "tensor(".len());
        }
        if values.is_empty() && shape.len() != 1 {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            out.push_str(&format!(", size=({})", dims.join(", ")));
        }
        let device = self.device();
        if !matches!(device, crate::Device::Cpu) {
            out.push_str(&format!(", device='{device}'"));
        }
        match dtype {
            DType::F32 => {}
            DType::I32 => out.push_str(", dtype=int32"),
            // PyTorch names bool only for an empty tensor.
            DType::U32 if mask && values.is_empty() => out.push_str(", dtype=bool"),
            DType::U32 if mask => {}
            DType::U32 => out.push_str(", dtype=uint32"),
            DType::F16 => out.push_str(", dtype=float16"),
            DType::BF16 => out.push_str(", dtype=bfloat16"),
        }
        if let Some(name) = self.grad_fn_name() {
            out.push_str(&format!(", grad_fn=<{}>", backward_name(name)));
        } else if self.requires_grad() {
            out.push_str(", requires_grad=True");
        }
        out.push(')');
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Device, Tensor};

    fn t(data: Vec<f32>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(data, shape, &Device::Cpu).unwrap()
    }

    #[test]
    fn prints_like_pytorch() {
        assert_eq!(
            t(vec![1.0, 2.0, 3.0], &[3]).to_string(),
            "tensor([1., 2., 3.])"
        );
        assert_eq!(
            t(vec![0.1, -2.0, 3.25, 4.0], &[2, 2]).to_string(),
            "tensor([[ 0.1000, -2.0000],\n        [ 3.2500,  4.0000]])"
        );
        assert_eq!(t(vec![3.5], &[]).to_string(), "tensor(3.5000)");
        assert_eq!(
            t(vec![1e-5, 1.0], &[2]).to_string(),
            "tensor([1.0000e-05, 1.0000e+00])"
        );
        assert_eq!(
            t(vec![f32::NAN, 1.5], &[2]).to_string(),
            "tensor([   nan, 1.5000])"
        );
        assert_eq!(
            format!("{:.2}", t(vec![0.123, 1.0], &[2])),
            "tensor([0.12, 1.00])"
        );
        assert_eq!(t(vec![], &[0, 3]).to_string(), "tensor([], size=(0, 3))");
        assert_eq!(t(vec![], &[0]).to_string(), "tensor([])");
        let ints = Tensor::from_vec(vec![1i32, -20, 3], &[3], &Device::Cpu).unwrap();
        assert_eq!(ints.to_string(), "tensor([  1, -20,   3], dtype=int32)");
        let rank3 = t((0..8).map(|x| x as f32).collect(), &[2, 2, 2]);
        assert_eq!(
            rank3.to_string(),
            "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])"
        );
    }

    #[test]
    fn large_tensors_are_summarised_and_rows_wrapped() {
        let big = t((0..2000).map(|x| x as f32).collect(), &[2000]);
        assert_eq!(
            big.to_string(),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"
        );
        let wide = t((0..1600).map(|x| (x % 7) as f32 - 3.5).collect(), &[40, 40]);
        let s = wide.to_string();
        assert!(
            s.starts_with("tensor([[-3.5000, -2.5000, -1.5000,  ...,"),
            "{s}"
        );
        assert!(s.contains("],\n        ...,\n        ["), "{s}");
        let long = t((0..30).map(|x| x as f32 + 0.5).collect(), &[30]);
        let s = long.to_string();
        assert!(s.starts_with("tensor([ 0.5000,  1.5000,"), "{s}");
        assert!(s.contains(" 7.5000,\n         8.5000,"), "{s}");
        assert!(s.lines().all(|l| l.len() <= 80), "{s}");
    }

    #[test]
    fn grad_suffixes() {
        let x = t(vec![1.0, 2.0], &[2]).with_requires_grad(true).unwrap();
        assert_eq!(x.to_string(), "tensor([1., 2.], requires_grad=True)");
        let y = x.add(&x).unwrap();
        assert_eq!(y.to_string(), "tensor([2., 4.], grad_fn=<AddBackward0>)");
    }
}
