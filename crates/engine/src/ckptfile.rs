//! Checkpoint files on disk: loading the newest valid one, writing the next generation.
//!
//! Generations alternate between `checkpoint.a` (odd) and `checkpoint.b` (even), so the write
//! of generation `g` only ever overwrites generation `g - 2`: the newest durable checkpoint is
//! never touched. A file that does not exist yet is built under a `.tmp` name and renamed in
//! (then the directory is synced); an existing one is overwritten in place and `fsync`ed.
//! The bytes are codec's ([`codec::checkpoint`]).

use crate::files;
use crate::vfs::Vfs;
use codec::checkpoint::{
    decode_checkpoint_header, decode_checkpoint_payload_of, decode_checkpoint_payload_read,
    read_checkpoint_header_unchecked, CheckpointHeader, CheckpointState, CK_HEADER_LEN,
    CK_VERSION_V4,
};
use std::io;
use std::path::{Path, PathBuf};

/// A checkpoint read back and verified.
pub struct Loaded {
    pub path: PathBuf,
    pub header: CheckpointHeader,
    pub state: CheckpointState,
    /// The segments the other checkpoint file names, when it is valid too (a whole open
    /// only): kept on disk while it is the fallback.
    pub older_segments: Vec<u64>,
}

/// A checkpoint file that failed verification.
#[derive(Debug, Clone)]
pub struct Invalid {
    /// The file and why.
    pub note: String,
    /// Its header: verified (only the payload is damaged) or, with `header_valid` false,
    /// its fields as they stand (the header itself is damaged); `None` without a magic.
    pub header: Option<CheckpointHeader>,
    pub header_valid: bool,
    /// The header is zeros (or missing): a checkpoint overwritten in place whose header was
    /// never written, which no writer completed.
    pub unfinished: bool,
}

/// Read and verify one checkpoint file; `Ok(Err(_))` if it is invalid.
fn load_one(vfs: &dyn Vfs, path: &Path, keep: Keep<'_>) -> io::Result<Result<Loaded, Invalid>> {
    let f = vfs.open(path, false)?;
    let len = f.len()?;
    let mut head = vec![0u8; CK_HEADER_LEN];
    let n = f.read_at(&mut head, 0)?;
    let unfinished = head[..n].iter().all(|&b| b == 0);
    let invalid = |why: String, header: Option<CheckpointHeader>, header_valid: bool| Invalid {
        note: format!("{}: {why}", path.display()),
        header,
        header_valid,
        unfinished,
    };
    let header = match decode_checkpoint_header(&head[..n]) {
        Ok(h) => h,
        Err(e) => {
            let seen = read_checkpoint_header_unchecked(&head[..n]);
            return Ok(Err(invalid(e.to_string(), seen, false)));
        }
    };
    if header.payload_len > len.saturating_sub(CK_HEADER_LEN as u64) {
        let why = format!(
            "payload of {} bytes does not fit a file of {len}",
            header.payload_len
        );
        return Ok(Err(invalid(why, Some(header), true)));
    }
    let decoded = if keep.is_some() || header.version >= CK_VERSION_V4 {
        // A reader of a few series reads only what it needs; a whole open of version 4 a
        // window at a time: never the whole payload in memory (350 MB for a million series).
        let mut read = |off: u64, b: &mut [u8]| -> Result<usize, String> {
            f.read_at(b, CK_HEADER_LEN as u64 + off)
                .map_err(|e| e.to_string())
        };
        decode_checkpoint_payload_read(&header, &mut read, keep)
    } else {
        let mut payload = vec![0u8; header.payload_len as usize];
        let n = f.read_at(&mut payload, CK_HEADER_LEN as u64)?;
        payload.truncate(n);
        decode_checkpoint_payload_of(&header, &payload, keep)
    };
    match decoded {
        Ok(state) => Ok(Ok(Loaded {
            path: path.to_path_buf(),
            header,
            state,
            older_segments: Vec::new(),
        })),
        Err(e) => Ok(Err(invalid(e.to_string(), Some(header), true))),
    }
}

/// The generation a checkpoint file's header claims (0 if the header is not valid).
fn generation_of(vfs: &dyn Vfs, path: &Path) -> io::Result<u64> {
    let f = vfs.open(path, false)?;
    let mut head = vec![0u8; CK_HEADER_LEN];
    let n = f.read_at(&mut head, 0)?;
    Ok(decode_checkpoint_header(&head[..n]).map_or(0, |h| h.generation))
}

/// Whether any checkpoint file exists (a store was initialised here).
pub fn any_exists(vfs: &dyn Vfs, dir: &Path) -> io::Result<bool> {
    for p in files::checkpoints(dir) {
        if vfs.exists(&p)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The valid checkpoint with the highest generation, and each invalid file.
pub fn load_newest(vfs: &dyn Vfs, dir: &Path) -> io::Result<(Option<Loaded>, Vec<Invalid>)> {
    load_newest_of(vfs, dir, None)
}

/// Which series a checkpoint is read for, by name (`None`: all).
pub type Keep<'a> = Option<&'a [String]>;

/// [`load_newest`] decoding only the series `keep` names.
pub fn load_newest_of(
    vfs: &dyn Vfs,
    dir: &Path,
    keep: Keep<'_>,
) -> io::Result<(Option<Loaded>, Vec<Invalid>)> {
    let mut best: Option<Loaded> = None;
    let mut notes = Vec::new();
    let mut paths = Vec::new();
    for p in files::checkpoints(dir) {
        if vfs.exists(&p)? {
            paths.push((generation_of(vfs, &p)?, p));
        }
    }
    // Newest first: the first valid file is the one. A whole open checks the older ones
    // too, to report a damaged one, but only their header and meta (decoding a million
    // series' images to drop them was a tenth of the open).
    paths.sort_by_key(|p| std::cmp::Reverse(p.0));
    for (_, p) in paths {
        let check_only: &[String] = &[];
        let keep_here = match (&best, keep) {
            (Some(_), Some(_)) => break,
            (Some(_), None) => Some(check_only),
            (None, k) => k,
        };
        match load_one(vfs, &p, keep_here)? {
            Ok(l) if best.is_none() => best = Some(l),
            Ok(l) => {
                if let Some(b) = best.as_mut() {
                    b.older_segments = l.state.segments;
                }
            }
            Err(bad) => notes.push(bad),
        }
    }
    Ok((best, notes))
}

/// A checkpoint file being written as it is built ([`codec::checkpoint::CheckpointWriter::take_written`]):
/// in place over the file of its slot (two generations back) when there is one, else a
/// temporary file renamed at the end, as [`write`] does. It is valid only once
/// [`Writing::finish`] has written its header and synced it.
pub struct Writing {
    file: Box<dyn crate::vfs::VFile>,
    path: PathBuf,
    tmp: Option<PathBuf>,
    dir: PathBuf,
}

impl Writing {
    pub fn begin(vfs: &dyn Vfs, dir: &Path, generation: u64) -> io::Result<Writing> {
        let path = files::checkpoint(dir, generation);
        if vfs.exists(&path)? {
            let file = vfs.open(&path, false)?;
            return Ok(Writing {
                file,
                path,
                tmp: None,
                dir: dir.to_path_buf(),
            });
        }
        let tmp = files::tmp(&path);
        let mut file = vfs.open(&tmp, true)?;
        file.set_len(0)?;
        Ok(Writing {
            file,
            path,
            tmp: Some(tmp),
            dir: dir.to_path_buf(),
        })
    }

    pub fn write_at(&mut self, at: u64, bytes: &[u8]) -> io::Result<()> {
        self.file.write_at(bytes, at)
    }

    /// Write the header, make the file durable and give it its name.
    pub fn finish(mut self, vfs: &dyn Vfs, header: &[u8]) -> io::Result<()> {
        self.file.write_at(header, 0)?;
        self.file.sync_all()?;
        drop(self.file);
        if let Some(tmp) = &self.tmp {
            vfs.rename(tmp, &self.path)?;
            vfs.sync_dir(&self.dir)?;
        }
        Ok(())
    }
}

/// Write a complete checkpoint (codec bytes) of generation `generation` and make it durable.
pub fn write(vfs: &dyn Vfs, dir: &Path, generation: u64, bytes: &[u8]) -> io::Result<()> {
    let path = files::checkpoint(dir, generation);
    if vfs.exists(&path)? {
        let mut f = vfs.open(&path, false)?;
        f.write_at(bytes, 0)?;
        return f.sync_all();
    }
    let tmp = files::tmp(&path);
    let mut f = vfs.open(&tmp, true)?;
    f.set_len(0)?;
    f.write_at(bytes, 0)?;
    f.sync_all()?;
    drop(f);
    vfs.rename(&tmp, &path)?;
    vfs.sync_dir(dir)
}
