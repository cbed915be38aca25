//! Shape functions of `torch` over views: `movedim`, `swapaxes`/`swapdims`
//! (permutes, no copy), `tile` (`repeat`) and `meshgrid` (expanded views).

use wgrad_core::{Error, Result, shape};

use crate::ops::structure::as_isize;
use crate::tensor::Tensor;

/// Rearranging dims: `movedim`, `swapaxes`, `swapdims`, `tile`, `meshgrid`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let cpu = Device::Cpu;
/// let x = Tensor::zeros(&[2, 3, 4], &cpu)?;
/// assert_eq!(x.movedim(&[0], &[-1])?.shape(), [3, 4, 2]);
/// assert_eq!(x.swapaxes(0, 2)?.shape(), [4, 3, 2]);
/// assert_eq!(x.tile(&[2])?.shape(), [2, 3, 8]);
/// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &cpu)?;
/// let b = Tensor::from_vec(vec![3.0f32, 4.0, 5.0], &[3], &cpu)?;
/// let grids = Tensor::meshgrid(&[&a, &b], "ij")?;
/// assert_eq!(grids[0].to_vec_f32()?, [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
/// assert_eq!(grids[1].to_vec_f32()?, [3.0, 4.0, 5.0, 3.0, 4.0, 5.0]);
/// assert_eq!(Tensor::meshgrid(&[&a, &b], "xy")?[0].shape(), [3, 2]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.movedim(x, source, destination)`: moves dim `source[i]` to
    /// position `destination[i]`, the other dims keeping their order (a
    /// view). Both lists have the same length, no repeats; negative dims
    /// count from the end.
    pub fn movedim(&self, source: &[isize], destination: &[isize]) -> Result<Tensor> {
        const OP: &str = "movedim";
        let rank = self.rank();
        if source.len() != destination.len() {
            return Err(Error::invalid(
                OP,
                format!(
                    "movedim: Invalid source or destination dims: source ({source:?} dims) should \
                     contain the same number of dims as destination ({destination:?} dims)"
                ),
            ));
        }
        // A 0-d tensor takes dim 0/-1 as one dim of size 1.
        let norm_rank = rank.max(1);
        let norm = |dims: &[isize]| -> Result<Vec<usize>> {
            dims.iter()
                .map(|&d| shape::normalize_axis(OP, d, norm_rank))
                .collect()
        };
        let (src, dst) = (norm(source)?, norm(destination)?);
        for (name, dims, given) in [("source", &src, source), ("destination", &dst, destination)] {
            for (i, a) in dims.iter().enumerate() {
                if dims[..i].contains(a) {
                    return Err(Error::invalid(
                        OP,
                        format!("movedim: repeated dim in `{name}` ({given:?})"),
                    ));
                }
            }
        }
        if rank == 0 {
            return Ok(self.clone());
        }
        let mut order: Vec<Option<usize>> = vec![None; rank];
        for (&s, &d) in src.iter().zip(&dst) {
            order[d] = Some(s);
        }
        let mut rest = (0..rank).filter(|a| !src.contains(a));
        let perm: Vec<isize> = order
            .into_iter()
            .map(|slot| slot.or_else(|| rest.next()).unwrap_or(0) as isize)
            .collect();
        self.permute(&perm)
    }

    /// `torch.swapaxes(x, axis0, axis1)`: [`transpose`](Self::transpose).
    pub fn swapaxes(&self, axis0: isize, axis1: isize) -> Result<Tensor> {
        self.transpose(axis0, axis1)
    }

    /// `torch.swapdims(x, dim0, dim1)`: [`transpose`](Self::transpose).
    pub fn swapdims(&self, dim0: isize, dim1: isize) -> Result<Tensor> {
        self.transpose(dim0, dim1)
    }

    /// `torch.tile(x, dims)`: [`repeat`](Self::repeat), with `dims` first
    /// padded with leading 1s when shorter than the rank (so `[2, 3]`
    /// tiled by `[2]` is `[2, 6]`).
    pub fn tile(&self, dims: &[usize]) -> Result<Tensor> {
        let rank = self.rank();
        if dims.len() >= rank {
            return self.repeat(dims);
        }
        let mut full = vec![1; rank - dims.len()];
        full.extend_from_slice(dims);
        self.repeat(&full)
    }

    /// `torch.meshgrid(*tensors, indexing=indexing)`: for `n` 0-d or 1-D
    /// tensors of one dtype and device, `n` grids of shape `[len0, len1,
    /// ...]` (`"ij"`), or with the first two dims swapped (`"xy"`,
    /// Cartesian indexing), grid `i` repeating tensor `i` along its own
    /// dim. The grids are expanded views (no copy); differentiable.
    pub fn meshgrid(tensors: &[&Tensor], indexing: &str) -> Result<Vec<Tensor>> {
        const OP: &str = "meshgrid";
        let xy = match indexing {
            "ij" => false,
            "xy" => true,
            other => {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: \
                         {other}"
                    ),
                ));
            }
        };
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid(OP, "meshgrid expects a non-empty TensorList"))?;
        for t in tensors {
            if t.rank() > 1 {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a \
                         tensor of shape {:?}",
                        t.shape()
                    ),
                ));
            }
            if t.dtype() != first.dtype() {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "meshgrid expects all tensors to have the same dtype, got {} and {}",
                        first.dtype(),
                        t.dtype()
                    ),
                ));
            }
            if !t.device().same(&first.device()) {
                return Err(Error::DeviceMismatch {
                    op: OP,
                    lhs: first.device().to_string(),
                    rhs: t.device().to_string(),
                });
            }
        }
        let n = tensors.len();
        shape::check_rank(OP, &vec![1; n])?;
        // Which output dim each tensor runs along.
        let axis_of = |i: usize| -> usize {
            match (xy && n >= 2, i) {
                (true, 0) => 1,
                (true, 1) => 0,
                _ => i,
            }
        };
        let mut grid = vec![0; n];
        for (i, t) in tensors.iter().enumerate() {
            grid[axis_of(i)] = t.numel();
        }
        shape::checked_numel(OP, &grid)?;
        tensors
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut view = vec![1; n];
                view[axis_of(i)] = t.numel();
                t.reshape(&as_isize(&view))?.expand(&grid)
            })
            .collect()
    }
}
