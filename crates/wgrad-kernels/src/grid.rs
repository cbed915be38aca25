//! Dispatch grid sizing.

/// Threads per workgroup of the 1-D elementwise kernels (their
/// `@workgroup_size` must match).
pub const WORKGROUP_SIZE: u32 = 256;

/// Workgroup counts for `workgroups` groups, folding into y (and z) past the
/// per-dimension limit. Kernels recover the linear group index as
/// `wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y` and bounds-check.
pub fn grid_for(workgroups: u64, max_per_dim: u32) -> [u32; 3] {
    let max = u64::from(max_per_dim.max(1));
    if workgroups <= max {
        return [workgroups as u32, 1, 1];
    }
    let y = workgroups.div_ceil(max);
    if y <= max {
        return [max as u32, y as u32, 1];
    }
    let z = y.div_ceil(max);
    [max as u32, max as u32, z.min(max) as u32]
}

#[cfg(test)]
mod tests {
    use super::grid_for;

    #[test]
    fn folds_large_grids() {
        assert_eq!(grid_for(10, 65535), [10, 1, 1]);
        assert_eq!(grid_for(262_144, 65535), [65535, 5, 1]);
        let [x, y, z] = grid_for(5_000_000_000, 65535);
        assert!(u64::from(x) * u64::from(y) * u64::from(z) >= 5_000_000_000);
    }
}
