// Device-fault reporting. The including kernel declares the fault buffer as
// its last binding (the spec's `uses_fault`):
//   @group(0) @binding(N) var<storage, read_write> fault: array<atomic<u32>, 4>;

// Records a device fault unless one is already recorded: the first fault
// wins (word 0 goes from 0 to the code exactly once, and only the thread
// that set it writes words 1 and 2), so a later kernel (a backward pass)
// cannot overwrite the fault of the op the user called.
fn raise_fault(code: u32, index: u32, size: u32) {
    loop {
        let r = atomicCompareExchangeWeak(&fault[0], 0u, code);
        if r.exchanged {
            atomicStore(&fault[1], index);
            atomicStore(&fault[2], size);
            return;
        }
        if r.old_value != 0u {
            return; // an earlier fault stands (a weak exchange may fail spuriously: retry)
        }
    }
}
