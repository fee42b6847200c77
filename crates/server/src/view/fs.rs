//! The FUSE calls of the `.rrd` view ([`View`]): each answers from the tree, a snapshot, a
//! loose file or the plain file beneath, as the module above describes.

use super::*;

impl Filesystem for View {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match child(self, parent, name) {
            Ok(path) => self.entry(&path, reply),
            Err(_) => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let Some(n) = self.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        match self.attr(u64::from(ino), &n) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let Some(n) = self.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        if let Node::Plain(p) = &n {
            let set = PlainSet {
                mode,
                uid,
                gid,
                size,
                atime,
                mtime,
            };
            if let Err(e) = self.plain_setattr(p, fh, &set) {
                return reply.error(e);
            }
        } else if let Some(size) = size {
            // Of the view's own files only a length is taken (owners, modes and times are
            // the view's).
            match &n {
                Node::Loose(p) => {
                    {
                        let mut l = lock(&self.loose);
                        let (files, total) = &mut *l;
                        if let Some(f) = files.get_mut(p) {
                            let grow = (size as usize).saturating_sub(f.bytes.len());
                            if *total + grow > LOOSE_MAX {
                                return reply.error(Errno::ENOSPC);
                            }
                            *total = *total + grow - f.bytes.len().saturating_sub(size as usize);
                            f.bytes.resize(size as usize, 0);
                            f.mtime = SystemTime::now();
                        }
                    }
                    // Locked after the loose files are let go: `open` comes first everywhere
                    // both are held (write, read).
                    if let Some(fh) = fh {
                        if let Some(Handle::Loose { dirty, .. }) =
                            lock(&self.open).get_mut(&u64::from(fh))
                        {
                            *dirty = true;
                        }
                    }
                }
                // A series' file cut to nothing is written whole again: it becomes loose.
                Node::File(p) if size == 0 => self.new_loose(p),
                Node::File(p) => {
                    let same = self
                        .d
                        .lock()
                        .schema(p)
                        .is_some_and(|s| rrd::rrdfile::file_len(s) == size);
                    if !same {
                        return reply.error(Errno::EPERM);
                    }
                }
                Node::Blob(p) => {
                    if let Err(e) = self.feed_set_len(p, size) {
                        return reply.error(e);
                    }
                }
                Node::Dir(_) => return reply.error(Errno::EISDIR),
                Node::Plain(_) => {}
            }
        }
        match self.node(ino).and_then(|n| self.attr(u64::from(ino), &n)) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let path = match child(self, parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        if self.resolve(&path).is_some() {
            return reply.error(Errno::EEXIST);
        }
        // Over -b the directory is made beneath (CREATE checks there, as rrdcached does);
        // else it lives in the view until the daemon stops.
        match self.below(&path) {
            Some(p) => {
                if let Err(e) = std::fs::create_dir(&p) {
                    return reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)));
                }
            }
            None => {
                lock(&self.dirs).insert(path.clone());
            }
        }
        self.entry(&path, reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let path = match child(self, parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        match self.resolve(&path) {
            Some(Node::Dir(_)) => {}
            Some(_) => return reply.error(Errno::ENOTDIR),
            None => return reply.error(Errno::ENOENT),
        }
        if !self.children(&path).is_empty() {
            return reply.error(Errno::ENOTEMPTY);
        }
        lock(&self.dirs).remove(&path);
        if let Some(p) = self.below(&path) {
            // Beneath, only placeholders of series no longer there can be left: an
            // unimported file keeps the directory.
            if let Err(e) = std::fs::remove_dir(&p) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    return reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)));
                }
            }
        }
        reply.ok();
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let path = match child(self, parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        match self.resolve(&path) {
            Some(Node::Loose(p)) => {
                self.take_loose(&p);
                lock(&self.inodes).unlink(&p);
                reply.ok();
            }
            Some(Node::Blob(p)) => match self.feed_remove(&p) {
                Ok(()) => {
                    lock(&self.inodes).unlink(&p);
                    reply.ok()
                }
                Err(e) => reply.error(e),
            },
            Some(Node::File(p)) => match view_remove(&self.d, &p) {
                Ok(true) => {
                    lock(&self.inodes).unlink(&p);
                    reply.ok()
                }
                Ok(false) => reply.error(Errno::ENOENT),
                Err(e) => {
                    crate::log::line(&format!("view: {p}: not removed: {e}"));
                    reply.error(Errno::EIO)
                }
            },
            Some(Node::Plain(p)) => match self.below(&p).map(std::fs::remove_file) {
                Some(Ok(())) => {
                    lock(&self.inodes).unlink(&p);
                    reply.ok()
                }
                Some(Err(e)) => reply.error(errno(&e)),
                None => reply.error(Errno::ENOENT),
            },
            Some(Node::Dir(_)) => reply.error(Errno::EISDIR),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let (from, to) = match (child(self, parent, name), child(self, newparent, newname)) {
            (Ok(f), Ok(t)) => (f, t),
            (Err(e), _) | (_, Err(e)) => return reply.error(e),
        };
        if !flags.is_empty() && flags != RenameFlags::RENAME_NOREPLACE {
            return reply.error(Errno::EINVAL);
        }
        let target = self.resolve(&to);
        if flags.contains(RenameFlags::RENAME_NOREPLACE) && target.is_some() {
            return reply.error(Errno::EEXIST);
        }
        if matches!(target, Some(Node::Dir(_))) {
            return reply.error(Errno::EISDIR);
        }
        match self.resolve(&from) {
            Some(Node::Blob(f)) => match self.feed_rename(&f, &to) {
                Ok(()) => {
                    lock(&self.inodes).rename(&f, &to);
                    reply.ok()
                }
                Err(e) => reply.error(e),
            },
            // Over -b, a loose file given a name that is not the view's is written beneath.
            Some(Node::Loose(p)) if !self.own(&to) && self.beneath.is_some() => {
                let Some(dst) = self.below(&to) else {
                    return reply.error(Errno::ENOENT);
                };
                let bytes = lock(&self.loose)
                    .0
                    .get(&p)
                    .map(|f| f.bytes.clone())
                    .unwrap_or_default();
                if let Err(e) = write_plain(&dst, &bytes) {
                    return reply.error(errno(&e));
                }
                self.take_loose(&p);
                lock(&self.inodes).rename(&p, &to);
                reply.ok()
            }
            Some(Node::Plain(p)) => match self.rename_plain(&p, &to, target.as_ref()) {
                Ok(()) => {
                    lock(&self.inodes).rename(&p, &to);
                    reply.ok()
                }
                Err(e) => reply.error(e),
            },
            Some(Node::Loose(p)) => {
                let Some(bytes) = self.take_loose(&p) else {
                    return reply.error(Errno::ENOENT);
                };
                // A loose file given a series' name becomes it (rrdtool create's last step);
                // one at the new name is replaced.
                self.put_loose(&to, bytes);
                lock(&self.inodes).rename(&p, &to);
                match self.settle_loose(&to) {
                    Ok(()) => reply.ok(),
                    Err(e) => reply.error(e),
                }
            }
            Some(Node::File(f)) => {
                if let Some(Node::Loose(t)) = &target {
                    self.take_loose(t);
                }
                match view_rename(&self.d, &f, &to) {
                    Ok(true) => {
                        lock(&self.inodes).rename(&f, &to);
                        reply.ok()
                    }
                    Ok(false) => reply.error(Errno::ENOENT),
                    Err(e) => {
                        crate::log::line(&format!("view: {f}: not renamed to {to}: {e}"));
                        reply.error(Errno::EIO)
                    }
                }
            }
            // A directory: only an empty one made here moves; `mv` copies the others (EXDEV),
            // which the view takes file by file.
            Some(Node::Dir(d)) => {
                if self.children(&d).is_empty() && lock(&self.dirs).remove(&d) {
                    lock(&self.inodes).rename(&d, &to);
                    lock(&self.dirs).insert(to);
                    reply.ok()
                } else if self.only_plain_beneath(&d) {
                    // Over -b, a directory of plain files alone moves beneath.
                    match (self.below(&d), self.below(&to)) {
                        (Some(a), Some(b)) => match std::fs::rename(a, b) {
                            Ok(()) => {
                                lock(&self.inodes).rename_tree(&d, &to);
                                reply.ok()
                            }
                            Err(e) => reply.error(errno(&e)),
                        },
                        _ => reply.error(Errno::EXDEV),
                    }
                } else {
                    reply.error(Errno::EXDEV)
                }
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let Some(n) = self.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let write = flags.0 & libc::O_ACCMODE != libc::O_RDONLY;
        let h = match n {
            Node::Dir(_) => return reply.error(Errno::EISDIR),
            Node::Blob(p) => {
                // Opened to read and write without a write (PyFina's "rb+") changes nothing.
                if write && flags.0 & libc::O_TRUNC != 0 {
                    if let Err(e) = self.feed_set_len(&p, 0) {
                        return reply.error(e);
                    }
                }
                Handle::Blob(p)
            }
            Node::Plain(p) => {
                let Some(path) = self.below(&p) else {
                    return reply.error(Errno::ENOENT);
                };
                match plain_options(flags.0).open(path) {
                    Ok(f) => Handle::Plain(Arc::new(f)),
                    Err(e) => return reply.error(errno(&e)),
                }
            }
            Node::Loose(p) => {
                if flags.0 & libc::O_TRUNC != 0 {
                    self.new_loose(&p);
                }
                if write {
                    Handle::Loose {
                        path: p,
                        dirty: flags.0 & libc::O_TRUNC != 0,
                    }
                } else {
                    let l = lock(&self.loose);
                    let bytes = l.0.get(&p).map(|f| f.bytes.clone()).unwrap_or_default();
                    Handle::Read(Arc::new(bytes))
                }
            }
            Node::File(name)
                if write
                    && flags.0 & libc::O_APPEND == 0
                    && (flags.0 & libc::O_TRUNC != 0
                        || flags.0 & libc::O_ACCMODE == libc::O_WRONLY) =>
            {
                // Written whole again, by a writer that does not read it (cp truncates;
                // restore -f writes the new file from its start): loose until closed.
                self.new_loose(&name);
                Handle::Loose {
                    path: name,
                    dirty: true,
                }
            }
            Node::File(name) => match self.snapshot(&name) {
                Ok(bytes) if write => {
                    let header = rrd::rrdfile::peek_len(&bytes).min(bytes.len());
                    Handle::Edit {
                        name,
                        buf: bytes.clone(),
                        orig: Arc::new(bytes),
                        header,
                        dirty: false,
                    }
                }
                Ok(bytes) => Handle::Read(Arc::new(bytes)),
                Err(e) => return reply.error(e),
            },
        };
        let fh = self.add_handle(h);
        reply.opened(FileHandle(fh), FopenFlags::empty());
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let path = match child(self, parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let now = self.resolve(&path);
        if matches!(now, Some(Node::Dir(_))) {
            return reply.error(Errno::EISDIR);
        }
        if self.kind != Kind::Rrd && self.own(&path) {
            if let Err(e) = self.feed_create(&path, flags & libc::O_TRUNC != 0) {
                return reply.error(e);
            }
            let ino = self.ino(&path);
            let size = self.feed_len(&path).unwrap_or(0);
            let attr = self.file_attr(ino, &path, size, SystemTime::now());
            let fh = self.add_handle(Handle::Blob(path));
            return reply.created(
                &TTL,
                &attr,
                Generation(0),
                FileHandle(fh),
                FopenFlags::empty(),
            );
        }
        // Over -b, a name that is not the view's is a plain file made beneath.
        if let (false, Some(dst), false) = (
            self.own(&path),
            self.below(&path),
            matches!(now, Some(Node::File(_))),
        ) {
            use std::os::unix::fs::OpenOptionsExt;
            let made = plain_options(flags)
                .create(true)
                .mode(mode & !umask & 0o7777)
                .open(dst)
                .and_then(|f| f.metadata().map(|m| (f, m)));
            return match made {
                Ok((f, m)) => {
                    let ino = self.ino(&path);
                    let fh = self.add_handle(Handle::Plain(Arc::new(f)));
                    reply.created(
                        &TTL,
                        &plain_attr(ino, &m),
                        Generation(0),
                        FileHandle(fh),
                        FopenFlags::empty(),
                    );
                }
                Err(e) => reply.error(errno(&e)),
            };
        }
        self.new_loose(&path);
        let ino = self.ino(&path);
        let fh = self.add_handle(Handle::Loose {
            path: path.clone(),
            dirty: true,
        });
        let attr = self.file_attr(ino, &path, 0, SystemTime::now());
        reply.created(
            &TTL,
            &attr,
            Generation(0),
            FileHandle(fh),
            FopenFlags::empty(),
        );
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let slice = |b: &[u8]| {
            let start = (offset as usize).min(b.len());
            let end = start.saturating_add(size as usize).min(b.len());
            b[start..end].to_vec()
        };
        let data = {
            let open = lock(&self.open);
            match open.get(&u64::from(fh)) {
                Some(Handle::Plain(f)) => {
                    let f = f.clone();
                    drop(open);
                    return match read_plain(&f, offset, size as usize) {
                        Ok(d) => reply.data(&d),
                        Err(e) => reply.error(errno(&e)),
                    };
                }
                Some(Handle::Read(b)) => slice(b),
                Some(Handle::Blob(p)) => {
                    let p = p.clone();
                    drop(open);
                    return match self.feed_read(&p, offset, size) {
                        Ok(d) => reply.data(&d),
                        Err(e) => reply.error(e),
                    };
                }
                Some(Handle::Edit { buf, .. }) => slice(buf),
                Some(Handle::Loose { path, .. }) => {
                    let l = lock(&self.loose);
                    l.0.get(path).map(|f| slice(&f.bytes)).unwrap_or_default()
                }
                None => return reply.error(Errno::EBADF),
            }
        };
        reply.data(&data);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut open = lock(&self.open);
        if let Some(Handle::Blob(p)) = open.get(&u64::from(fh)) {
            let p = p.clone();
            drop(open);
            return match self.feed_write(&p, offset, data) {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(e),
            };
        }
        if let Some(Handle::Plain(f)) = open.get(&u64::from(fh)) {
            use std::os::unix::fs::FileExt;
            let f = f.clone();
            drop(open);
            return match f.write_all_at(data, offset) {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(errno(&e)),
            };
        }
        let offset = offset as usize;
        match open.get_mut(&u64::from(fh)) {
            Some(Handle::Plain(_) | Handle::Blob(_)) => reply.error(Errno::EBADF),
            Some(Handle::Read(_)) => reply.error(Errno::EBADF),
            Some(Handle::Loose { path, dirty }) => {
                let mut l = lock(&self.loose);
                let (files, total) = &mut *l;
                let Some(f) = files.get_mut(path.as_str()) else {
                    // Removed or renamed while open: the write goes nowhere.
                    return reply.error(Errno::ENOENT);
                };
                let grow = (offset + data.len()).saturating_sub(f.bytes.len());
                if *total + grow > LOOSE_MAX {
                    return reply.error(Errno::ENOSPC);
                }
                write_at(&mut f.bytes, offset, data);
                f.mtime = SystemTime::now();
                *total += grow;
                *dirty = true;
                reply.written(data.len() as u32);
            }
            Some(Handle::Edit {
                name,
                orig,
                buf,
                header,
                dirty,
            }) => {
                let end = offset + data.len();
                // The header may change (tune); rows may not (they are the daemon's to write),
                // nor the length. Pages written back whole carry rows unchanged: allowed.
                let rows_changed = end > buf.len()
                    || (end > *header && {
                        let from = offset.max(*header);
                        data[from - offset..] != orig[from..end]
                    });
                if rows_changed {
                    let e = self.refuse_rows(name);
                    return reply.error(e);
                }
                write_at(buf, offset, data);
                *dirty = true;
                reply.written(data.len() as u32);
            }
            None => reply.error(Errno::EBADF),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        self.reply_settled(fh, reply);
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let (plain, blob) = match lock(&self.open).get(&u64::from(fh)) {
            Some(Handle::Plain(f)) => (Some(f.clone()), None),
            Some(Handle::Blob(p)) => (None, Some(p.clone())),
            _ => (None, None),
        };
        if let Some(p) = blob {
            return match self.feed_sync(&p) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            };
        }
        if let Some(f) = plain {
            let r = if datasync {
                f.sync_data()
            } else {
                f.sync_all()
            };
            return match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(&e)),
            };
        }
        self.reply_settled(fh, reply);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        // Pages of a shared mapping written back after the last flush.
        let _ = self.settle(u64::from(fh));
        lock(&self.open).remove(&u64::from(fh));
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let Some(Node::Dir(dir)) = self.node(ino) else {
            return reply.error(Errno::ENOTDIR);
        };
        let parent = match dir.rsplit_once('/') {
            Some((p, _)) => p.to_string(),
            None => String::new(),
        };
        let dots = [
            (u64::from(ino), FileType::Directory, ".".to_string()),
            (self.ino(&parent), FileType::Directory, "..".to_string()),
        ];
        let kids = self.children(&dir).into_iter().map(|(p, is_dir)| {
            let kind = if is_dir {
                FileType::Directory
            } else {
                FileType::RegularFile
            };
            let name = p
                .rsplit_once('/')
                .map_or(p.as_str(), |(_, n)| n)
                .to_string();
            (self.ino(&p), kind, name)
        });
        for (i, (ino, kind, name)) in dots
            .into_iter()
            .chain(kids)
            .enumerate()
            .skip(offset as usize)
        {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, &name) {
                break;
            }
        }
        reply.ok();
    }
}
