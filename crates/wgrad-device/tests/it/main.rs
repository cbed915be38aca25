//! The integration tests of wgrad-device, one binary. Tests that count
//! `DeviceStats` each open their own device (`common::own_gpu`).

mod common;
mod pool_overhead;
mod readback_memory;
mod readme_notes;
