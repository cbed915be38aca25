//! Method lists both tensor types expose with the same names and
//! semantics, generated once here inside each backend's `impl` block.
//!
//! The generated methods only delegate (to the type's `layout` field and
//! `with_layout`, or to its `unary`), so the rules stay in [`Layout`] and
//! [`UnaryOp`]; the lists exist once.
//!
//! [`Layout`]: crate::Layout
//! [`UnaryOp`]: crate::UnaryOp

/// Layout accessors and the view ops (no copy) of a tensor type with a
/// `layout: Layout` field and a `with_layout(&self, Layout) -> Self` method.
/// Use inside the type's `impl` block: `wgrad_core::layout_methods!();`.
#[macro_export]
macro_rules! layout_methods {
    () => {
        /// The dims of the tensor.
        pub fn shape(&self) -> &[usize] {
            self.layout.shape()
        }

        /// Strides of the view, in elements.
        pub fn strides(&self) -> &[usize] {
            self.layout.strides()
        }

        /// The full strided layout (shape, strides, offset) of the view.
        pub fn layout(&self) -> &$crate::Layout {
            &self.layout
        }

        /// Number of dims.
        pub fn rank(&self) -> usize {
            self.layout.rank()
        }

        /// Number of elements.
        pub fn numel(&self) -> usize {
            self.layout.numel()
        }

        /// Swaps axes `a` and `b` (a view).
        pub fn transpose(&self, a: isize, b: isize) -> $crate::Result<Self> {
            Ok(self.with_layout(self.layout.transpose(a, b)?))
        }

        /// Reorders axes: output axis `i` is input axis `dims[i]` (a view).
        pub fn permute(&self, dims: &[isize]) -> $crate::Result<Self> {
            Ok(self.with_layout(self.layout.permute(dims)?))
        }

        /// Keeps `len` elements of `axis` starting at `start` (a view).
        pub fn narrow(&self, axis: isize, start: usize, len: usize) -> $crate::Result<Self> {
            Ok(self.with_layout(self.layout.narrow(axis, start, len)?))
        }

        /// Keeps `len` elements of `axis` from `start` on, every `step`-th
        /// one (a strided view; `Layout::narrow_step`).
        pub fn narrow_step(
            &self,
            axis: isize,
            start: usize,
            len: usize,
            step: usize,
        ) -> $crate::Result<Self> {
            Ok(self.with_layout(self.layout.narrow_step(axis, start, len, step)?))
        }

        /// Broadcasts to `shape`: size-1 and missing leading dims repeat
        /// with stride 0 (a view).
        pub fn expand(&self, shape: &[usize]) -> $crate::Result<Self> {
            Ok(self.with_layout(self.layout.expand(shape)?))
        }

        /// Same as `expand`, PyTorch's other name.
        pub fn broadcast_to(&self, shape: &[usize]) -> $crate::Result<Self> {
            self.expand(shape)
        }

        /// Inserts a size-1 axis at `axis` (in `-(rank+1)..=rank`; a view).
        pub fn unsqueeze(&self, axis: isize) -> $crate::Result<Self> {
            Ok(self.with_layout(self.layout.unsqueeze(axis)?))
        }

        /// Removes the size-1 axis `axis` (a view).
        pub fn squeeze(&self, axis: isize) -> $crate::Result<Self> {
            Ok(self.with_layout(self.layout.squeeze(axis)?))
        }
    };
}

/// The named wrappers of a tensor type's `unary(&self, UnaryOp)`: one
/// method per parameterless [`UnaryOp`](crate::UnaryOp), plus the
/// parameterised `leaky_relu`, `clamp`, `softplus`, `elu`, `hardtanh` and
/// `gelu_with`. Use inside the type's `impl` block:
/// `wgrad_core::unary_methods!();`. A new unary op adds its line here.
#[macro_export]
macro_rules! unary_methods {
    () => {
        $crate::unary_methods! {
            neg => Neg;
            abs => Abs;
            exp => Exp;
            log => Log;
            sqrt => Sqrt;
            rsqrt => Rsqrt;
            sin => Sin;
            cos => Cos;
            tanh => Tanh;
            sigmoid => Sigmoid;
            relu => Relu;
            gelu => Gelu;
            silu => Silu;
            square => Square;
            recip => Recip;
            erf => Erf;
            log1p => Log1p;
            expm1 => Expm1;
            sign => Sign;
            floor => Floor;
            ceil => Ceil;
            round => Round;
            mish => Mish;
            gelu_tanh => GeluTanh;
        }

        /// `x` for `x > 0`, else `slope * x`.
        pub fn leaky_relu(&self, slope: f32) -> $crate::Result<Self> {
            self.unary($crate::UnaryOp::LeakyRelu { slope })
        }

        /// Clamps into `[min, max]`; a `None` bound is open. NaN stays NaN.
        pub fn clamp(&self, min: Option<f32>, max: Option<f32>) -> $crate::Result<Self> {
            self.unary($crate::UnaryOp::Clamp { min, max })
        }

        /// `log(1 + e^(beta x)) / beta`, linear (`x`) where `beta * x >
        /// threshold` (`torch.nn.functional.softplus`; PyTorch's defaults are
        /// `beta = 1`, `threshold = 20`).
        pub fn softplus(&self, beta: f32, threshold: f32) -> $crate::Result<Self> {
            self.unary($crate::UnaryOp::Softplus { beta, threshold })
        }

        /// `x` for `x > 0`, else `alpha (e^x - 1)` (`torch.nn.functional.elu`;
        /// PyTorch's default `alpha` is 1).
        pub fn elu(&self, alpha: f32) -> $crate::Result<Self> {
            self.unary($crate::UnaryOp::Elu { alpha })
        }

        /// `x` limited to `[min, max]` with gradient only strictly inside
        /// (`torch.nn.functional.hardtanh`; PyTorch's defaults are -1, 1).
        /// `min > max` is PyTorch's error.
        pub fn hardtanh(&self, min: f32, max: f32) -> $crate::Result<Self> {
            if min > max {
                return Err($crate::Error::invalid(
                    "hardtanh",
                    format!("min_val ({min}) cannot be greater than max_val ({max})"),
                ));
            }
            self.unary($crate::UnaryOp::Hardtanh { min, max })
        }

        /// GELU with PyTorch's `approximate` argument: `"none"` (exact,
        /// erf-based) or `"tanh"`; anything else is an error.
        pub fn gelu_with(&self, approximate: &str) -> $crate::Result<Self> {
            match approximate {
                "none" => self.unary($crate::UnaryOp::Gelu),
                "tanh" => self.unary($crate::UnaryOp::GeluTanh),
                other => Err($crate::Error::invalid(
                    "gelu",
                    format!("approximate must be 'none' or 'tanh', got {other:?}"),
                )),
            }
        }
    };
    ($($name:ident => $op:ident;)*) => {
        $(
            #[doc = concat!(
                "Elementwise `", stringify!($name), "` (`UnaryOp::", stringify!($op),
                "`, whose doc names the PyTorch equivalent); F32 only."
            )]
            pub fn $name(&self) -> $crate::Result<Self> {
                self.unary($crate::UnaryOp::$op)
            }
        )*
    };
}
