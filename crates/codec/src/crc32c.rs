//! CRC32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven, std only.
//!
//! Every checksum in a ringlet store is this CRC: log record frames, the log superblock and
//! checkpoint headers and payloads. It is the same function as iSCSI's, ext4's metadata
//! checksums and Prometheus' WAL records (`crc32c("123456789") == 0xE3069283`).

const POLY: u32 = 0x82F6_3B78;

const TABLE: [u32; 256] = make_table();

const fn make_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

/// A running CRC32C: feed bytes with [`Crc32c::update`], read it with [`Crc32c::finish`].
#[derive(Debug, Clone, Copy)]
pub struct Crc32c(u32);

impl Default for Crc32c {
    fn default() -> Self {
        Crc32c::new()
    }
}

impl Crc32c {
    pub const fn new() -> Self {
        Crc32c(!0)
    }

    pub fn update(&mut self, bytes: &[u8]) {
        let mut crc = self.0;
        for &b in bytes {
            crc = TABLE[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
        }
        self.0 = crc;
    }

    pub fn finish(self) -> u32 {
        !self.0
    }
}

/// CRC32C of one byte slice.
pub fn crc32c(bytes: &[u8]) -> u32 {
    let mut c = Crc32c::new();
    c.update(bytes);
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value_matches_castagnoli() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn incremental_equals_one_shot() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut c = Crc32c::new();
        c.update(&data[..333]);
        c.update(&data[333..]);
        assert_eq!(c.finish(), crc32c(&data));
    }
}
