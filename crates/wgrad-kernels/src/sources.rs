//! The embedded WGSL sources.

include!(concat!(env!("OUT_DIR"), "/kernel_sources.rs"));

/// Source text of `kernels/<path>`, if it exists.
pub fn source(path: &str) -> Option<&'static str> {
    SOURCES.iter().find(|(p, _)| *p == path).map(|(_, s)| *s)
}
