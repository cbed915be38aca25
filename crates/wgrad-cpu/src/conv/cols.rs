//! im2col and col2im over one image and one channel group, for a band of
//! output rows `[y0, y1)`.
//!
//! The column matrix has one row per `(c, i, j)` (input channel of the
//! group, kernel row, kernel column, in that order, so it lines up with a
//! weight row `[c, i, j]`) and one column per output pixel of the band.
//! Both directions work a whole output row at a time: the range of output
//! columns whose input column is in bounds is computed once per kernel tap,
//! so the inner loops are plain copies (stride 1) or strided gathers, and
//! padding is a fill.

use super::Plan;

/// The output positions `t` in `[0, out_len)` with `0 <= t*stride + off <
/// in_len`, as `lo..hi` (empty ranges have `lo == hi`).
pub(super) fn valid(out_len: usize, in_len: usize, stride: usize, off: isize) -> (usize, usize) {
    let lo = if off >= 0 {
        0
    } else {
        off.unsigned_abs().div_ceil(stride)
    };
    let last = in_len as isize - 1 - off;
    let hi = if last < 0 {
        0
    } else {
        last as usize / stride + 1
    };
    let hi = hi.min(out_len);
    (lo.min(hi), hi)
}

/// The output rows of the band `[y0, y1)` that kernel row `i` reads from
/// inside the input.
fn band_rows(p: &Plan, i: usize, y0: usize, y1: usize) -> (usize, usize) {
    let (lo, hi) = valid(p.oh, p.h, p.sh, (i * p.dh) as isize - p.pt);
    let hi = hi.clamp(y0, y1);
    (lo.clamp(y0, hi), hi)
}

/// Fills `col` (`k` rows of `(y1 - y0) * ow` columns) from `x`, the
/// group's `cg` input planes of one image.
pub(super) fn im2col(p: &Plan, x: &[f32], y0: usize, y1: usize, col: &mut [f32]) {
    let width = (y1 - y0) * p.ow;
    let mut rows = col.chunks_exact_mut(width.max(1));
    for plane in x.chunks_exact(p.h * p.w).take(p.cg) {
        for i in 0..p.kh {
            let (ylo, yhi) = band_rows(p, i, y0, y1);
            for j in 0..p.kw {
                let Some(row) = rows.next() else { return };
                let xoff = (j * p.dw) as isize - p.pl;
                let (xlo, xhi) = valid(p.ow, p.w, p.sw, xoff);
                row[..(ylo - y0) * p.ow].fill(0.0);
                row[(yhi - y0) * p.ow..].fill(0.0);
                if xlo == xhi {
                    row[(ylo - y0) * p.ow..(yhi - y0) * p.ow].fill(0.0);
                    continue;
                }
                let start = (xlo as isize * p.sw as isize + xoff) as usize;
                for y in ylo..yhi {
                    let iy = (y * p.sh) as isize + (i * p.dh) as isize - p.pt;
                    let src = &plane[iy as usize * p.w..][..p.w];
                    let dst = &mut row[(y - y0) * p.ow..][..p.ow];
                    dst[..xlo].fill(0.0);
                    dst[xhi..].fill(0.0);
                    let dst = &mut dst[xlo..xhi];
                    if p.sw == 1 {
                        dst.copy_from_slice(&src[start..start + dst.len()]);
                    } else {
                        for (d, &s) in dst.iter_mut().zip(src[start..].iter().step_by(p.sw)) {
                            *d = s;
                        }
                    }
                }
            }
        }
    }
}

/// Adds every entry of `col` (laid out as for [`im2col`]) into the input
/// position it was read from, in `dx`, the group's `cg` input-gradient
/// planes of one image. Rows are added in order, so each element's sum has
/// a fixed order.
pub(super) fn col2im(p: &Plan, col: &[f32], y0: usize, y1: usize, dx: &mut [f32]) {
    let width = (y1 - y0) * p.ow;
    let mut rows = col.chunks_exact(width.max(1));
    for plane in dx.chunks_exact_mut(p.h * p.w).take(p.cg) {
        for i in 0..p.kh {
            let (ylo, yhi) = band_rows(p, i, y0, y1);
            for j in 0..p.kw {
                let Some(row) = rows.next() else { return };
                let xoff = (j * p.dw) as isize - p.pl;
                let (xlo, xhi) = valid(p.ow, p.w, p.sw, xoff);
                if xlo == xhi {
                    continue;
                }
                let start = (xlo as isize * p.sw as isize + xoff) as usize;
                for y in ylo..yhi {
                    let iy = (y * p.sh) as isize + (i * p.dh) as isize - p.pt;
                    let dst = &mut plane[iy as usize * p.w..][..p.w];
                    let src = &row[(y - y0) * p.ow..][xlo..xhi];
                    if p.sw == 1 {
                        for (d, &s) in dst[start..start + src.len()].iter_mut().zip(src) {
                            *d += s;
                        }
                    } else {
                        for (d, &s) in dst[start..].iter_mut().step_by(p.sw).zip(src) {
                            *d += s;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn valid_ranges_match_a_scan() {
        for out_len in 0..7 {
            for in_len in 0..7 {
                for stride in 1..4 {
                    for off in -6isize..6 {
                        let want: Vec<usize> = (0..out_len)
                            .filter(|&t| {
                                let p = (t * stride) as isize + off;
                                p >= 0 && p < in_len as isize
                            })
                            .collect();
                        let (lo, hi) = valid(out_len, in_len, stride, off);
                        assert_eq!((lo..hi).collect::<Vec<_>>(), want);
                    }
                }
            }
        }
    }
}
