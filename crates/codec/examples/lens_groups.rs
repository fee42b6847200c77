//! What a store's sample blocks would take if their lengths were coded in groups of G series
//! that a reader could decode alone (each group's contexts starting empty, its code ended
//! on a byte, and its place given in an index: `--index` bytes a group), against what they
//! take: the write load a reader of one series after a crash would pay for decoding one
//! group a block instead of every series before its own (docs/BENCHMARKS.md, one-shot
//! commands after a kill).
//!
//!     cargo run --release -p codec --example lens_groups -- STORE_DIR [--index N] G...
//!
//! Reads the store's log (read-only) from its start, every record of the ring's first lap
//! (a store whose ring has not wrapped: all its records); re-encodes each block whole (the
//! baseline, equal to what was written) and in groups of each G.

use codec::block::{Block, BlockWriter, Row};
use codec::frame::{framed_len, scan_header, HeaderScan, PAGE, REC_HEADER_LEN, RING_START};
use codec::record::{decode_record, Entry};

enum Item {
    Stream(u64, Vec<u8>, u64),
    Row(Row),
}

fn items(b: &Block) -> Vec<(u64, Item)> {
    let mut out = Vec::new();
    for s in b.series() {
        let s = s.expect("a block that decodes");
        if let Some(row) = s.span.read_row() {
            out.push((s.id, Item::Row(row.expect("a row that decodes"))));
            continue;
        }
        let mut r = s.span.reader();
        let mut w = bitio::msb::BitWriter::new();
        let mut bits = 0u64;
        while let Ok(b) = r.bit() {
            w.bit(b);
            bits += 1;
        }
        out.push((s.id, Item::Stream(s.count, w.into_bytes(), bits)));
    }
    out
}

/// Bytes of a block of `items` (head, lens and body, as written).
fn encoded(version: u8, items: &[(u64, Item)]) -> u64 {
    let mut w = BlockWriter::with_version(version);
    for (id, it) in items {
        match it {
            Item::Stream(count, chunk, bits) => w.push(*id, *count, chunk, *bits),
            Item::Row(row) => w.push_row(*id, row),
        }
    }
    let (_, _, head, lens, body) = w.finish();
    (head.len() + lens.len() + body.len()) as u64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: lens_groups STORE_DIR [--index N] G...");
        std::process::exit(2);
    };
    let mut index = 4u64;
    let mut groups = Vec::new();
    while let Some(a) = args.next() {
        if a == "--index" {
            index = args.next().and_then(|v| v.parse().ok()).expect("--index N");
        } else {
            groups.push(a.parse::<usize>().expect("a group size"));
        }
    }
    let log = std::fs::read(std::path::Path::new(&dir).join("log")).expect("the store's log");
    let (mut records, mut payload_bytes, mut blocks, mut series) = (0u64, 0u64, 0u64, 0u64);
    let mut block_bytes = 0u64;
    let mut whole = 0u64;
    let mut grouped = vec![0u64; groups.len()];
    let mut lsn = 0u64;
    loop {
        let at = (RING_START + lsn) as usize;
        let Some(h) = log.get(at..at + REC_HEADER_LEN) else {
            break;
        };
        let HeaderScan::Header(hd) = scan_header(h.try_into().expect("a header")) else {
            break;
        };
        let len = hd.payload_len as usize;
        let payload = &log[at + REC_HEADER_LEN..at + REC_HEADER_LEN + len];
        records += 1;
        payload_bytes += len as u64;
        for e in decode_record(payload).expect("a record that decodes") {
            let Entry::Block(b) = e else { continue };
            blocks += 1;
            block_bytes += (b.head.len() + b.lens.len() + b.body.len()) as u64;
            let its = items(&b);
            series += its.len() as u64;
            whole += encoded(b.version, &its);
            for (k, &g) in groups.iter().enumerate() {
                for part in its.chunks(g) {
                    grouped[k] += encoded(b.version, part) + index;
                }
            }
        }
        lsn += framed_len(len, PAGE);
    }
    println!(
        "{records} records, {payload_bytes} bytes of payload; {blocks} blocks of {series} series, \
         {block_bytes} bytes (re-encoded whole: {whole})"
    );
    for (k, g) in groups.iter().enumerate() {
        let extra = grouped[k] as f64 - whole as f64;
        println!(
            "groups of {g:>5}: {:>10} bytes, +{:.2} % of the blocks, +{:.2} % of the payload",
            grouped[k],
            100.0 * extra / whole as f64,
            100.0 * extra / payload_bytes as f64
        );
    }
}
