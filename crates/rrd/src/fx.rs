//! A fast hasher (the FxHash step, 8 bytes at a time) for maps whose keys no client can
//! choose to collide, or where a collision only slows the one who chose it: the store's
//! chunk tables, a daemon connection's own names.

/// FxHash over the bytes written, zero-padded to 8.
#[derive(Default)]
pub struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.0 =
                (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
