//! Every parameter struct against the kernels it is dispatched to: its size
//! against the spec's `immediate_bytes` (what `KernelCache::dispatch`
//! checks), and its field names and offsets against the WGSL struct as naga
//! lays it out (what the shader reads).

#![cfg(test)]

use std::mem::size_of;

use wgrad_kernels::families::{
    attention, backward, conv, elementwise, matmul, movement, nn, optim, pool, probe, random,
    reduce, sort,
};
use wgrad_kernels::{KernelSpec, families, sources};

use super::*;

/// One parameter struct and the kernels that take it.
struct Case {
    name: &'static str,
    size: usize,
    fields: &'static [(&'static str, usize, &'static str)],
    specs: Vec<&'static KernelSpec>,
}

macro_rules! cases {
    ($($ty:ident => [$($spec:expr),+ $(,)?]),* $(,)?) => {
        vec![$(Case {
            name: stringify!($ty),
            size: size_of::<$ty>(),
            fields: $ty::FIELDS,
            specs: vec![$(&$spec),+],
        }),*]
    };
}

fn cases() -> Vec<Case> {
    cases![
        FillParams => [elementwise::FILL],
        BinaryParams => [
            elementwise::BINARY,
            elementwise::BINARY_VEC4,
            elementwise::BINARY_I32,
            elementwise::BINARY_HALF,
            elementwise::BINARY_HALF_TO_F32,
        ],
        UnaryParams => [
            elementwise::UNARY,
            elementwise::UNARY_VEC4,
            elementwise::UNARY_HALF,
        ],
        ScalarParams => [elementwise::BINARY_SCALAR, elementwise::BINARY_SCALAR_I32],
        CompareParams => [elementwise::COMPARE],
        WhereParams => [elementwise::WHERE_COND],
        CastParams => [elementwise::CAST, elementwise::CAST_HALF],
        CopyParams => [movement::COPY_STRIDED],
        CopyViewParams => [movement::COPY_TO_VIEW, movement::COPY_HALF_TO_VIEW],
        IndexSelectParams => [movement::INDEX_SELECT],
        GatherParams => [movement::GATHER],
        OneHotParams => [movement::ONE_HOT],
        ArangeParams => [movement::ARANGE],
        RandomParams => [random::RAND_UNIFORM, random::RAND_NORMAL],
        ProbeParams => [
            probe::FMA_PEAK,
            probe::FMA_PEAK_SHARED,
            probe::FMA_PEAK_SHARED_NOBAR,
            probe::FMA_PEAK_SHARED_AHEAD,
            probe::FMA_PEAK_STAGE,
            probe::FMA_PEAK_STAGE4,
            probe::FMA_PEAK_K16,
            probe::FMA_PEAK_K16_SWIZZLED,
            probe::FMA_PEAK_SHARED_BCAST,
            probe::FMA_PEAK_SHARED_K4,
            probe::GEMM_L1,
            probe::GEMM_L1_K4,
            probe::GEMM_L1_AHEAD,
            probe::GEMM_L1_NN,
            probe::GEMM_L1_K2,
            probe::GEMM_L1_K8,
            probe::GEMM_L1_K4G,
        ],
        ReduceParams => [reduce::REDUCE_ROWS],
        SumParams => [reduce::SUM_ROWS_I32],
        SoftmaxParams => [reduce::SOFTMAX_ROWS],
        SoftmaxSplitParams => [reduce::SOFTMAX_PARTIAL, reduce::SOFTMAX_WRITE],
        MatmulParams => [
            matmul::MATMUL_32,
            matmul::MATMUL_64,
            matmul::MATMUL_64_LEAN,
            matmul::MATMUL_128X64,
            matmul::MATMUL_128,
            matmul::MATMUL_COOP,
            matmul::MATMUL_SKINNY,
            matmul::MATMUL_THIN,
        ],
        SumSplitsParams => [matmul::SUM_SPLITS, matmul::SUM_SPLITS_TREE],
        UnaryBackwardParams => [
            backward::UNARY_BACKWARD,
            backward::UNARY_BACKWARD_VEC4,
            backward::UNARY_BACKWARD_HALF,
        ],
        SoftmaxBackwardParams => [backward::SOFTMAX_BACKWARD],
        ScatterAddParams => [backward::SCATTER_ADD],
        SgdParams => [optim::SGD],
        SgdMomentumParams => [optim::SGD_MOMENTUM],
        AdamParams => [optim::ADAM],
        AdamAmsgradParams => [optim::ADAM_AMSGRAD],
        AdamForeachParams => [optim::ADAM_FOREACH],
        AdamForeachWideParams => [optim::ADAM_FOREACH_WIDE],
        RmsPropParams => [optim::RMSPROP, optim::RMSPROP_AUX, optim::RMSPROP_FULL],
        AdagradParams => [optim::ADAGRAD],
        CrossEntropyParams => [nn::CROSS_ENTROPY, nn::CROSS_ENTROPY_BACKWARD],
        LossMeanParams => [nn::CROSS_ENTROPY_MEAN],
        CheckParams => [nn::CHECK_UNIT_INTERVAL],
        LayerNormParams => [nn::LAYER_NORM, nn::LAYER_NORM_BACKWARD, nn::LAYER_NORM_PARAM_GRADS],
        Pool2dParams => [
            pool::MAX_POOL2D,
            pool::MAX_POOL2D_BACKWARD,
            pool::MAX_POOL2D_BACKWARD_2X2,
            pool::AVG_POOL2D,
            pool::AVG_POOL2D_BACKWARD,
            pool::ADAPTIVE_AVG_POOL2D,
            pool::ADAPTIVE_AVG_POOL2D_BACKWARD,
        ],
        ConvParams => [
            conv::CONV2D,
            conv::CONV2D_128,
            conv::CONV2D_WEIGHT_GRAD,
            conv::CONV2D_WEIGHT_GRAD_128,
        ],
        ConvInputGradParams => [
            conv::CONV2D_INPUT_GRAD,
            conv::CONV2D_INPUT_GRAD_128,
            conv::CONV2D_INPUT_GRAD_32,
        ],
        WinogradParams => [
            conv::WINOGRAD_WEIGHT,
            conv::WINOGRAD_INPUT,
            conv::WINOGRAD_OUTPUT,
            conv::WINOGRAD_GRAD_OUTPUT,
            conv::WINOGRAD_WEIGHT_GRAD,
        ],
        DepthwiseParams => [
            conv::DEPTHWISE_FORWARD,
            conv::DEPTHWISE_INPUT_GRAD,
            conv::DEPTHWISE_WEIGHT_GRAD,
        ],
        AttentionParams => [
            attention::ATTENTION_FORWARD,
            attention::ATTENTION_BACKWARD_DQ,
            attention::ATTENTION_BACKWARD_DKDV,
            attention::ATTENTION_BACKWARD_DQ_SAVED,
            attention::ATTENTION_BACKWARD_STATS,
        ],
        SortParams => [
            sort::SORT_ROWS,
            sort::SORT_INIT,
            sort::SORT_TILES,
            sort::SORT_STEP,
            sort::SORT_WRITE,
        ],
        ScanParams => [sort::SCAN_BLOCKS, sort::SCAN_CARRY, sort::CUMPROD_BACKWARD],
        RandintParams => [random::RANDINT],
        BernoulliParams => [random::BERNOULLI],
        MultinomialParams => [
            random::MULTINOMIAL_CHECK,
            random::MULTINOMIAL_DRAW,
            random::MULTINOMIAL_KEYS,
        ],
    ]
}

#[test]
fn every_param_struct_has_its_kernels_immediate_size() {
    for case in cases() {
        for spec in &case.specs {
            assert_eq!(
                case.size, spec.immediate_bytes as usize,
                "{} is {} bytes; {}::{} takes {}",
                case.name, case.size, spec.file, spec.entry, spec.immediate_bytes
            );
        }
    }
}

#[test]
fn every_kernel_has_a_param_struct() {
    let all = cases();
    for spec in families::all() {
        assert!(
            all.iter()
                .any(|c| c.specs.iter().any(|s| std::ptr::eq(*s, spec))),
            "{}::{} has no parameter struct in wgrad-gpu's params",
            spec.file,
            spec.entry
        );
    }
}

/// A field's type as Rust spells it (`u32`, `[u32;6]`), from naga's.
fn rust_type(module: &naga::Module, ty: naga::Handle<naga::Type>) -> String {
    match &module.types[ty].inner {
        naga::TypeInner::Scalar(s) => match (s.kind, s.width) {
            (naga::ScalarKind::Uint, 4) => "u32".into(),
            (naga::ScalarKind::Sint, 4) => "i32".into(),
            (naga::ScalarKind::Float, 4) => "f32".into(),
            other => format!("{other:?}"),
        },
        naga::TypeInner::Array {
            base,
            size: naga::ArraySize::Constant(n),
            ..
        } => format!("[{};{n}]", rust_type(module, *base)),
        other => format!("{other:?}"),
    }
}

/// The `var<immediate>` struct of `spec`'s module as naga lays it out:
/// (member name, byte offset, type) in order, and its size.
fn wgsl_layout(spec: &KernelSpec) -> (Vec<(String, usize, String)>, usize) {
    let text = sources::instantiate(spec.file, spec.elem)
        .unwrap_or_else(|e| panic!("kernels/{}: {e}", spec.file));
    let module = naga::front::wgsl::parse_str(&text)
        .unwrap_or_else(|e| panic!("kernels/{}: {}", spec.file, e.emit_to_string(&text)));
    let globals: Vec<_> = module
        .global_variables
        .iter()
        .filter(|(_, v)| v.space == naga::AddressSpace::Immediate)
        .collect();
    assert_eq!(globals.len(), 1, "{}: one var<immediate>", spec.file);
    let ty = &module.types[globals[0].1.ty];
    let naga::TypeInner::Struct { members, .. } = &ty.inner else {
        panic!("{}: the var<immediate> is not a struct", spec.file);
    };
    let fields = members
        .iter()
        .map(|m| {
            let name = m.name.clone().unwrap_or_default();
            (name, m.offset as usize, rust_type(&module, m.ty))
        })
        .collect();
    (fields, ty.inner.size(module.to_ctx()) as usize)
}

#[test]
fn param_structs_mirror_the_wgsl_structs_field_for_field() {
    for case in cases() {
        let rust: Vec<(String, usize, String)> = case
            .fields
            .iter()
            .map(|&(name, offset, ty)| {
                let ty = ty.replace("MAX_RANK", &MAX_RANK.to_string());
                (name.to_string(), offset, ty.replace(' ', ""))
            })
            .collect();
        for spec in &case.specs {
            let (wgsl, size) = wgsl_layout(spec);
            assert_eq!(
                rust, wgsl,
                "{} vs the immediate struct of {}::{} (name, offset, type)",
                case.name, spec.file, spec.entry
            );
            assert_eq!(case.size, size, "{} vs {}", case.name, spec.file);
        }
    }
}

#[test]
fn strided_pads_and_checks_ranges() {
    let l = Layout::from_parts("t", vec![2, 3], vec![1, 2], 5).unwrap();
    let s = Strided::new("t", &[2, 3], [&l]).unwrap();
    assert_eq!((s.numel, s.rank, s.offsets), (6, 2, [5]));
    assert_eq!(s.shape, [2, 3, 0, 0, 0, 0]);
    assert_eq!(s.strides, [[1, 2, 0, 0, 0, 0]]);
    assert!(to_u32("t", "offset", usize::MAX).is_err());
    assert!(padded("t", &[1; MAX_RANK + 1]).is_err());
}

#[test]
fn sizes_past_two_to_the_31_are_refused_so_kernel_loops_cannot_wrap() {
    assert_eq!(to_u32("sum", "size", MAX_INDEX).unwrap(), i32::MAX as u32);
    let err = to_u32("sum", "size", MAX_INDEX + 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("sum") && err.contains("2147483648"), "{err}");
    assert!(to_u32("sum", "size", u32::MAX as usize).is_err());
}
