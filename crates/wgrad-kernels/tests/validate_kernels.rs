//! Validates every instantiation of every WGSL kernel under `kernels/` with
//! naga (no GPU needed): the generated header, resolved includes and element
//! type included, exactly as the pipeline cache compiles it. Checks that
//! every registered `KernelSpec` names a file and entry point that exist and
//! agrees with the entry's bindings, that every file is used, and that every
//! `switch OP` covers every variant of the Rust selector enum it mirrors.

use std::collections::{BTreeSet, HashSet};

use wgrad_kernels::sources::{COMMON_DIR, SOURCES, includes, instantiate};
use wgrad_kernels::{Elem, KernelSpec, Selector, families};

fn parse(path: &str, elem: Elem, text: &str) -> naga::Module {
    naga::front::wgsl::parse_str(text)
        .unwrap_or_else(|e| panic!("kernels/{path} ({elem:?}): {}", e.emit_to_string(text)))
}

fn module_of(path: &str, elem: Elem) -> naga::Module {
    module_and_info(path, elem).0
}

fn module_and_info(path: &str, elem: Elem) -> (naga::Module, naga::valid::ModuleInfo) {
    let text = instantiate(path, elem).unwrap_or_else(|e| panic!("kernels/{path}: {e}"));
    let module = parse(path, elem, &text);
    let caps = naga::valid::Capabilities::IMMEDIATES
        | naga::valid::Capabilities::SUBGROUP
        | naga::valid::Capabilities::SHADER_FLOAT16
        | naga::valid::Capabilities::COOPERATIVE_MATRIX;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("kernels/{path} ({elem:?}): {}", e.emit_to_string(&text)));
    (module, info)
}

/// Every spec's entry point goes through naga's SPIR-V writer, as wgpu does
/// on Vulkan (overrides at their defaults). Validation alone misses writer
/// bugs: naga 30 panics on some cooperative-matrix pointers that validate.
#[test]
fn every_spec_compiles_to_spirv() {
    for spec in families::all() {
        spirv(spec, &Default::default());
    }
}

/// The epilogues the 0/1 overrides switch on (the bias of `linear` and
/// `conv2d`, `HAS_BIAS`; the ones column of the weight gradients that
/// yields the bias gradient, `ONES_COLUMN`; a following ReLU, `ACT_RELU`;
/// the attention's `ROWS_OUTER` and `GRADS_AS_INPUTS` layouts; the
/// Winograd weight transform's `FLIP`)
/// through the SPIR-V writer too,
/// with the other 0/1 overrides set as well: the defaults leave them off.
#[test]
fn epilogue_overrides_compile_to_spirv() {
    let mut checked = Vec::new();
    for spec in families::all() {
        let module = module_of(spec.file, spec.elem);
        let has = |name: &str| {
            module
                .overrides
                .iter()
                .any(|(_, o)| o.name.as_deref() == Some(name))
        };
        if !has("HAS_BIAS") && !has("ONES_COLUMN") && !has("ROWS_OUTER") && !has("FLIP") {
            continue;
        }
        let mut constants = naga::back::PipelineConstants::default();
        for name in [
            "HAS_BIAS",
            "ONES_COLUMN",
            "ACT_RELU",
            "A_M_FAST",
            "B_K_FAST",
            "ALIGNED",
            "SHORT_M",
            "WIDE_FAST",
            "ROWS_OUTER",
            "GRADS_AS_INPUTS",
            "FLIP",
        ] {
            if has(name) {
                constants.insert(name.to_string(), 1.0);
            }
        }
        spirv(spec, &constants);
        checked.push(spec.entry);
    }
    checked.sort_unstable();
    assert_eq!(
        checked,
        [
            "attention_backward_dkdv",
            "attention_backward_dq",
            "attention_backward_dq_saved",
            "attention_backward_stats",
            "attention_forward",
            "conv2d",
            "conv2d_128",
            "conv2d_weight_grad",
            "conv2d_weight_grad_128",
            "depthwise_forward",
            "matmul_128",
            "matmul_128x64",
            "matmul_32",
            "matmul_64",
            "matmul_64_lean",
            "matmul_coop",
            "matmul_skinny",
            "matmul_thin",
            "sum_splits",
            "sum_splits_tree",
            "winograd_output",
            "winograd_weight"
        ]
    );
}

/// Runs naga's SPIR-V writer on `spec`'s entry point with the override
/// values `constants`, panicking with its error.
fn spirv(spec: &KernelSpec, constants: &naga::back::PipelineConstants) {
    let (module, info) = module_and_info(spec.file, spec.elem);
    let entry = Some((naga::ShaderStage::Compute, spec.entry));
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(&module, &info, entry, constants)
            .unwrap_or_else(|e| panic!("{}::{}: overrides: {e}", spec.file, spec.entry));
    let options = naga::back::spv::Options {
        lang_version: (1, 3),
        ..Default::default()
    };
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: spec.entry.to_string(),
    };
    naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))
        .unwrap_or_else(|e| panic!("{}::{}: SPIR-V: {e}", spec.file, spec.entry));
}

/// Every (file, element type) pair some spec instantiates.
fn instantiations() -> BTreeSet<(&'static str, &'static str, Elem)> {
    families::all()
        .iter()
        .map(|s| (s.file, s.elem.wgsl(), s.elem))
        .collect()
}

#[test]
fn every_instantiation_parses_and_validates() {
    assert!(!SOURCES.is_empty(), "no kernels embedded");
    let all = instantiations();
    assert!(all.len() > 20, "only {} instantiations", all.len());
    for (path, _, elem) in all {
        module_of(path, elem);
    }
}

#[test]
fn every_spec_matches_its_source() {
    for spec in families::all() {
        let module = module_of(spec.file, spec.elem);
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

/// The type of the module's `var<immediate>` global, if it declares one
/// (a kernel may declare at most one).
fn immediate_type(module: &naga::Module, what: &str) -> Option<naga::Handle<naga::Type>> {
    let mut found = module
        .global_variables
        .iter()
        .filter(|(_, v)| v.space == naga::AddressSpace::Immediate)
        .map(|(_, v)| v.ty);
    let ty = found.next();
    assert!(
        found.next().is_none(),
        "{what}: more than one var<immediate>"
    );
    ty
}

/// Each spec's `immediate_bytes` is naga's size of its kernel's
/// `var<immediate>` type (0 when it has none), so the size the dispatch path
/// checks the Rust parameter structs against is the size the shader reads.
#[test]
fn every_spec_immediate_size_matches_its_source() {
    for spec in families::all() {
        let what = format!("{}::{}", spec.file, spec.entry);
        let module = module_of(spec.file, spec.elem);
        let size = immediate_type(&module, &what)
            .map_or(0, |ty| module.types[ty].inner.size(module.to_ctx()));
        assert_eq!(
            spec.immediate_bytes, size,
            "{what}: spec says {} bytes of immediates, the WGSL struct is {size}",
            spec.immediate_bytes
        );
        assert_eq!(
            size % 4,
            0,
            "{what}: immediate size {size} is not whole words"
        );
    }
}

#[test]
fn every_file_is_used() {
    let used: HashSet<&str> = families::all().iter().map(|s| s.file).collect();
    let included: HashSet<&str> = SOURCES.iter().flat_map(|(p, _)| includes(p)).collect();
    for (path, _) in SOURCES {
        if path.starts_with(COMMON_DIR) {
            assert!(
                included.contains(path),
                "kernels/{path} is not included by any kernel"
            );
        } else {
            assert!(
                used.contains(path),
                "kernels/{path} is not registered in wgrad-kernels/src/families"
            );
        }
    }
}

/// Case values of every `switch` on the override named `name`, one set per
/// switch, over all functions of `module`.
fn switches_on(module: &naga::Module, name: &str) -> Vec<(String, Vec<naga::SwitchValue>)> {
    fn walk(
        block: &naga::Block,
        f: &naga::Function,
        module: &naga::Module,
        name: &str,
        fname: &str,
        out: &mut Vec<(String, Vec<naga::SwitchValue>)>,
    ) {
        for stmt in block.iter() {
            match stmt {
                naga::Statement::Switch { selector, cases } => {
                    if let naga::Expression::Override(h) = f.expressions[*selector]
                        && module.overrides[h].name.as_deref() == Some(name)
                    {
                        out.push((fname.to_string(), cases.iter().map(|c| c.value).collect()));
                    }
                    for c in cases {
                        walk(&c.body, f, module, name, fname, out);
                    }
                }
                naga::Statement::Block(b) => walk(b, f, module, name, fname, out),
                naga::Statement::If { accept, reject, .. } => {
                    walk(accept, f, module, name, fname, out);
                    walk(reject, f, module, name, fname, out);
                }
                naga::Statement::Loop {
                    body, continuing, ..
                } => {
                    walk(body, f, module, name, fname, out);
                    walk(continuing, f, module, name, fname, out);
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for (_, f) in module.functions.iter() {
        let fname = f.name.clone().unwrap_or_default();
        walk(&f.body, f, module, name, &fname, &mut out);
    }
    for e in &module.entry_points {
        walk(
            &e.function.body,
            &e.function,
            module,
            name,
            &e.name,
            &mut out,
        );
    }
    out
}

fn check_selector(spec: &KernelSpec, selector: Selector) {
    let module = module_of(spec.file, spec.elem);
    let switches = switches_on(&module, Selector::OVERRIDE);
    assert!(
        !switches.is_empty(),
        "{}: spec says it selects on {selector:?} but no `switch {}`",
        spec.file,
        Selector::OVERRIDE
    );
    for (function, cases) in switches {
        for (name, code) in selector.variants() {
            assert!(
                cases.contains(&naga::SwitchValue::U32(code)),
                "kernels/{} fn {function}: `switch {}` has no case for {} ({}, code {code}); \
                 add `case {}:`",
                spec.file,
                Selector::OVERRIDE,
                name,
                selector.prefix(),
                selector.constant(name)
            );
        }
        assert!(
            cases.contains(&naga::SwitchValue::Default),
            "kernels/{} fn {function}: no default arm",
            spec.file
        );
    }
}

#[test]
fn every_selector_switch_covers_every_variant() {
    let mut checked = HashSet::new();
    for spec in families::all() {
        match spec.selector {
            Some(selector) => {
                check_selector(spec, selector);
                checked.insert(selector);
            }
            None => {
                // A kernel that switches on OP must say which enum OP is.
                let module = module_of(spec.file, spec.elem);
                assert!(
                    !module
                        .overrides
                        .iter()
                        .any(|(_, o)| o.name.as_deref() == Some(Selector::OVERRIDE)),
                    "{}::{} has `override {}` but its spec names no selector",
                    spec.file,
                    spec.entry,
                    Selector::OVERRIDE
                );
            }
        }
    }
    for selector in Selector::ALL {
        assert!(
            checked.contains(&selector),
            "no kernel selects on {selector:?}"
        );
    }
}

#[test]
fn generated_constants_come_from_the_enums() {
    use wgrad_core::ops::{BinaryOp, UnaryOp};
    let header = wgrad_kernels::sources::header(Elem::F32);
    assert!(header.contains("alias elem = f32;"));
    assert!(header.contains(&format!(
        "const UNARY_RELU: u32 = {}u;",
        UnaryOp::Relu.code()
    )));
    assert!(header.contains(&format!(
        "const UNARY_LEAKY_RELU: u32 = {}u;",
        UnaryOp::LeakyRelu { slope: 0.0 }.code()
    )));
    assert!(header.contains(&format!(
        "const BINARY_MINIMUM: u32 = {}u;",
        BinaryOp::Minimum.code()
    )));
    assert!(wgrad_kernels::sources::header(Elem::F16).starts_with("enable f16;\n"));
}

/// Sources written against `elem` instantiate for every element type.
#[test]
fn generic_kernels_instantiate_for_every_element_type() {
    for elem in Elem::ALL {
        module_of("elementwise/where.wgsl", elem);
    }
}
