//! CRC32C (Castagnoli, reflected polynomial 0x82F63B78).
//!
//! Every checksum in a ringlet store is this CRC: log record frames, the log superblock and
//! checkpoint headers and payloads. It is the same function as iSCSI's, ext4's metadata
//! checksums and Prometheus' WAL records (`crc32c("123456789") == 0xE3069283`).
//!
//! The work is the `crc32c` crate's: the CPU's CRC32 instruction (SSE 4.2 on x86-64, the CRC
//! extension on aarch64) where there is one, found at run time, else its own tables. A
//! byte-at-a-time table did 0.2-0.5 GB/s, about 1.7 s of checksumming to open a store with a
//! 512 MiB log (docs/BENCHMARKS.md, "Creating series, and the CRC"). The table version
//! stays here as the tests' oracle.

/// A running CRC32C: feed bytes with [`Crc32c::update`], read it with [`Crc32c::finish`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Crc32c(u32);

impl Crc32c {
    pub const fn new() -> Self {
        Crc32c(0)
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0 = crc32c::crc32c_append(self.0, bytes);
    }

    pub fn finish(self) -> u32 {
        self.0
    }
}

/// CRC32C of one byte slice.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, a bit at a time: the oracle for the fast one.
    fn slow(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0x82F6_3B78
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn check_value_matches_castagnoli() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
        assert_eq!(slow(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn incremental_equals_one_shot() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut c = Crc32c::new();
        c.update(&data[..333]);
        c.update(&data[333..]);
        assert_eq!(c.finish(), crc32c(&data));
    }

    #[test]
    fn the_fast_crc_is_the_definition_at_every_length_and_alignment() {
        let mut rng = testkit::Rng::new(0x9E37_79B9_7F4A_7C15u64);
        let data: Vec<u8> = (0..5000).map(|_| rng.next_u64() as u8).collect();
        for start in 0..9 {
            for len in [
                0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 1000, 4096, 4990,
            ] {
                let s = &data[start..start + len];
                assert_eq!(crc32c(s), slow(s), "start {start} len {len}");
                let mut c = Crc32c::new();
                c.update(&s[..len / 3]);
                c.update(&s[len / 3..]);
                assert_eq!(c.finish(), slow(s));
            }
        }
    }
}
