// The integer arithmetic of wgrad_core::BinaryOp (BinaryOp::apply_i32),
// shared by elementwise/binary_int.wgsl and elementwise/scalar_int.wgsl.
// Written against `elem` (instantiated for i32): WGSL integer + - * wrap
// in two's complement like PyTorch's int32. The including kernel declares
// `override OP: u32` and the fault buffer.

//! include common/fault.wgsl

// Fault code of an integer division by zero (wgrad_device's fault table).
const FAULT_ZERO_DIVISION: u32 = 10u;

// Floor division / remainder by zero: WGSL gives a defined value (the
// dividend for `/`, 0 for `%`) rather than trapping, so the kernel reports
// the device fault (PyTorch's ZeroDivisionError on the next readback) and
// writes 0. `at` is the output element, reported in the error.
fn apply_int(lhs: elem, rhs: elem, at: u32) -> elem {
    switch OP {
        case BINARY_ADD: { return lhs + rhs; }
        case BINARY_SUB: { return lhs - rhs; }
        case BINARY_MUL: { return lhs * rhs; }
        case BINARY_MAXIMUM: { return max(lhs, rhs); }
        case BINARY_MINIMUM: { return min(lhs, rhs); }
        case BINARY_FLOOR_DIVIDE: {
            if rhs == elem(0) { raise_fault(FAULT_ZERO_DIVISION, at, OP); return elem(0); }
            // i32 MIN / -1 overflows: wrap to MIN as the CPU's wrapping_div does.
            if rhs == elem(-1) { return elem(0) - lhs; }
            let q = lhs / rhs;
            let r = lhs - q * rhs;
            if r != elem(0) && ((r < elem(0)) != (rhs < elem(0))) { return q - elem(1); }
            return q;
        }
        case BINARY_REMAINDER: {
            if rhs == elem(0) { raise_fault(FAULT_ZERO_DIVISION, at, OP); return elem(0); }
            if rhs == elem(-1) { return elem(0); }
            let r = lhs - (lhs / rhs) * rhs;
            if r != elem(0) && ((r < elem(0)) != (rhs < elem(0))) { return r + rhs; }
            return r;
        }
        case BINARY_POW: {
            // PyTorch's powi: by squaring, wrapping; a negative exponent
            // gives 0 but for a base of 1 (1) or -1 (-1 when odd, else 1).
            if rhs < elem(0) {
                if lhs == elem(1) { return elem(1); }
                if lhs == elem(-1) { return select(elem(1), elem(-1), (rhs & elem(1)) != elem(0)); }
                return elem(0);
            }
            var base = lhs;
            var e = u32(rhs);
            var r = elem(1);
            loop {
                if e == 0u { break; }
                if (e & 1u) != 0u { r = r * base; }
                base = base * base;
                e = e >> 1u;
            }
            return r;
        }
        // True division never reaches the integer kernels (the host
        // promotes it); 0 like any code that is not an op.
        case BINARY_DIV: { return elem(0); }
        default: { return elem(0); }
    }
}
