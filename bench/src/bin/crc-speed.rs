//! crc-speed: CRC32C throughput over a 512 MiB buffer, the store's checksum
//! (`codec::crc32c`, the `crc32c` crate: the CPU's CRC32 instruction where there is one)
//! against the byte-at-a-time table it replaced (kept here for the comparison). Prints GB/s
//! and the seconds each takes for 512 MiB (the checksumming of a full 512 MiB log at open).

use std::time::Instant;

const POLY: u32 = 0x82F6_3B78;

fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    for (i, e) in t.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
        }
        *e = c;
    }
    t
}

fn by_table(t: &[u32; 256], bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc = t[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

fn main() {
    let n = 512usize << 20;
    let mut rng = testkit::Rng::new(0x2545_F491_4F6C_DD1D);
    let buf: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
    let t = table();
    for _ in 0..2 {
        let s = Instant::now();
        let a = by_table(&t, &buf);
        let ta = s.elapsed().as_secs_f64();
        let s = Instant::now();
        let b = codec::crc32c::crc32c(&buf);
        let tb = s.elapsed().as_secs_f64();
        assert_eq!(a, b, "the two CRCs agree");
        println!(
            "512 MiB: table {ta:.3} s ({:.2} GB/s), codec::crc32c {tb:.3} s ({:.2} GB/s)",
            n as f64 / ta / 1e9,
            n as f64 / tb / 1e9
        );
    }
}
