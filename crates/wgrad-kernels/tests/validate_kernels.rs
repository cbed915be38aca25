//! Validates every WGSL file under `kernels/` with naga (no GPU needed), and
//! checks that every registered `KernelSpec` names a file and entry point
//! that exist and agrees with the entry's bindings.

use wgrad_kernels::families;
use wgrad_kernels::sources::{SOURCES, source};

fn parse(path: &str, text: &str) -> naga::Module {
    naga::front::wgsl::parse_str(text)
        .unwrap_or_else(|e| panic!("kernels/{path}: {}", e.emit_to_string(text)))
}

#[test]
fn every_kernel_file_parses_and_validates() {
    assert!(!SOURCES.is_empty(), "no kernels embedded");
    for (path, text) in SOURCES {
        let module = parse(path, text);
        let caps = naga::valid::Capabilities::IMMEDIATES
            | naga::valid::Capabilities::SUBGROUP
            | naga::valid::Capabilities::SHADER_FLOAT16;
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
            .validate(&module)
            .unwrap_or_else(|e| panic!("kernels/{path}: {}", e.emit_to_string(text)));
    }
}

#[test]
fn every_spec_matches_its_source() {
    for spec in families::all() {
        let text = source(spec.file).unwrap_or_else(|| panic!("{}: file not embedded", spec.file));
        let module = parse(spec.file, text);
        let entry = module
            .entry_points
            .iter()
            .find(|e| e.name == spec.entry)
            .unwrap_or_else(|| panic!("{}: no entry point {}", spec.file, spec.entry));
        assert_eq!(
            entry.stage,
            naga::ShaderStage::Compute,
            "{}::{}",
            spec.file,
            spec.entry
        );
        let storage_bindings = module
            .global_variables
            .iter()
            .filter(|(_, v)| matches!(v.space, naga::AddressSpace::Storage { .. }))
            .filter_map(|(_, v)| v.binding.as_ref().map(|b| b.binding))
            .max()
            .map_or(0, |m| m + 1);
        let expected = spec.bindings.len() as u32 + u32::from(spec.uses_fault);
        assert!(
            storage_bindings <= expected,
            "{}::{}: source declares {storage_bindings} bindings, spec has {expected}",
            spec.file,
            spec.entry
        );
    }
}

#[test]
fn every_file_is_used_by_a_spec() {
    let used: std::collections::HashSet<&str> = families::all().iter().map(|s| s.file).collect();
    for (path, _) in SOURCES {
        assert!(
            used.contains(path),
            "kernels/{path} is not registered in wgrad-kernels/src/families"
        );
    }
}
