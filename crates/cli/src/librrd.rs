//! rrdtool's own renderer, librrd 1.7.2 (Debian's `librrd8`), loaded at run time, with its
//! data fetched from the store through librrd's fetch callback (issue 57: graphs without
//! copies of the series' files).
//!
//! librrd fetches a DEF whose file starts with `cb//` through the function given to
//! `rrd_fetch_cb_register` instead of opening a file: it passes the name, the consolidation
//! function, the window and the step it wants, and takes back the window and step it got,
//! the data sources' names and the rows, in buffers it frees with `free()`. Answering as
//! `rrd_fetch` answers for the file (the archive it would choose, the window aligned as it
//! would align it: [`rrd::fetch::fetch`]) gives the graph rrdtool draws from the file, byte
//! for byte, with no file written or read.
//!
//! Loaded with `dlopen` rather than linked: the binary runs where librrd is not installed
//! (every other command), and a graph there says what to install. Hand-written FFI (no
//! crate binds librrd's graph and fetch callback); the declarations are librrd's public
//! `rrd.h` of 1.7.2.

use std::ffi::{c_char, c_int, c_ulong, c_void, CStr, CString};
use std::sync::Mutex;

/// librrd's consolidation functions, in `enum cf_en`'s order.
const CF_NAMES: [&str; 10] = [
    "AVERAGE",
    "MIN",
    "MAX",
    "LAST",
    "HWPREDICT",
    "SEASONAL",
    "DEVPREDICT",
    "DEVSEASONAL",
    "FAILURES",
    "MHWPREDICT",
];

/// `rrd_fetch_cb_t`: filename, cf, *start, *end, *step, *ds_cnt, *ds_namv, *data.
type FetchCb = unsafe extern "C" fn(
    *const c_char,
    c_int,
    *mut libc::time_t,
    *mut libc::time_t,
    *mut c_ulong,
    *mut c_ulong,
    *mut *mut *mut c_char,
    *mut *mut f64,
) -> c_int;

/// `int rrd_graph(int argc, char **argv, char ***prdata, int *xsize, int *ysize, FILE
/// *stream, double *ymin, double *ymax)`.
type GraphFn = unsafe extern "C" fn(
    c_int,
    *mut *mut c_char,
    *mut *mut *mut c_char,
    *mut c_int,
    *mut c_int,
    *mut libc::FILE,
    *mut f64,
    *mut f64,
) -> c_int;

/// `rrd_info_t *rrd_graph_v(int argc, char **argv)`.
type GraphVFn = unsafe extern "C" fn(c_int, *mut *mut c_char) -> *mut c_void;

/// What a fetch for the graph gives: what `rrd_fetch` gives for the file.
pub use rrd::fetch::FetchResult as Rows;

/// Where the callback's rows come from: (the DEF's name after `cb//`, CF, start, end, step).
pub type Fetcher = dyn FnMut(&str, &str, i64, i64, u64) -> Result<Rows, String> + Send;

/// The fetcher of the graph being drawn (librrd's callback has no user pointer).
static FETCHER: Mutex<Option<Box<Fetcher>>> = Mutex::new(None);

/// librrd, loaded.
pub struct Lib {
    graph: GraphFn,
    graph_v: GraphVFn,
    info_print: unsafe extern "C" fn(*mut c_void),
    info_free: unsafe extern "C" fn(*mut c_void),
    get_error: unsafe extern "C" fn() -> *mut c_char,
    clear_error: unsafe extern "C" fn(),
}

/// What `rrdtool graph` prints besides the image: the `WxH` line (none where the sizes are
/// -1) and PRINT's lines.
pub struct Printed {
    pub xsize: i32,
    pub ysize: i32,
    pub lines: Vec<String>,
}

impl Lib {
    /// Load librrd (`librrd.so.8`, else `librrd.so`) and register the fetch callback.
    pub fn load() -> Result<Lib, String> {
        let mut handle = std::ptr::null_mut();
        for name in [c"librrd.so.8", c"librrd.so"] {
            // SAFETY: dlopen with a valid C string; the handle is kept for the process's life.
            handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if !handle.is_null() {
                break;
            }
        }
        if handle.is_null() {
            return Err(
                "graphs are drawn by librrd, rrdtool's library, which is not installed \
                 (Debian: apt install librrd8)"
                    .into(),
            );
        }
        let sym = |name: &CStr| -> Result<*mut c_void, String> {
            // SAFETY: dlsym on the handle opened above, with a valid C string.
            let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
            if p.is_null() {
                Err(format!(
                    "librrd has no {} (rrdtool 1.5 or later is needed)",
                    name.to_string_lossy()
                ))
            } else {
                Ok(p)
            }
        };
        // SAFETY: each symbol is librrd's function of that name, with the type rrd.h gives.
        let lib = unsafe {
            Lib {
                graph: std::mem::transmute::<*mut c_void, GraphFn>(sym(c"rrd_graph")?),
                graph_v: std::mem::transmute::<*mut c_void, GraphVFn>(sym(c"rrd_graph_v")?),
                info_print: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void)>(
                    sym(c"rrd_info_print")?,
                ),
                info_free: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void)>(
                    sym(c"rrd_info_free")?,
                ),
                get_error: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> *mut c_char>(
                    sym(c"rrd_get_error")?,
                ),
                clear_error: std::mem::transmute::<*mut c_void, unsafe extern "C" fn()>(sym(
                    c"rrd_clear_error",
                )?),
            }
        };
        let register = sym(c"rrd_fetch_cb_register")?;
        // SAFETY: rrd_fetch_cb_register takes an rrd_fetch_cb_t; `fetch_cb` is one.
        unsafe {
            let register: unsafe extern "C" fn(FetchCb) -> c_int = std::mem::transmute(register);
            register(fetch_cb);
        }
        // The callback reports its errors through rrd_set_error.
        SET_ERROR.set(sym(c"rrd_set_error")? as usize).unwrap_or(());
        Ok(lib)
    }

    /// Fontconfig loaded (librrd loads it too, with the libraries it needs), and its
    /// `FcInit`: reading its configuration and font cache (5-8 ms), which the first graph
    /// would otherwise do. Run on a thread of its own while librrd loads, it takes that
    /// part of a graph off the way; it makes no cairo surface (an SVG numbers its surfaces
    /// after the process's count), so the images are the same. None where fontconfig is
    /// not there (librrd's load then says why).
    pub fn font_init() -> Option<impl FnOnce() + Send> {
        // SAFETY: dlopen with a valid C string (fontconfig, which librrd loads too: the
        // handle stays for the process's life), dlsym with a valid C string.
        let init = unsafe {
            let h = libc::dlopen(
                c"libfontconfig.so.1".as_ptr(),
                libc::RTLD_NOW | libc::RTLD_LOCAL,
            );
            if h.is_null() {
                return None;
            }
            let init = libc::dlsym(h, c"FcInit".as_ptr());
            if init.is_null() {
                return None;
            }
            std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(init)
        };
        // SAFETY: FcInit takes no arguments; fontconfig is loaded for good.
        Some(move || unsafe {
            init();
        })
    }

    /// The error librrd set, cleared.
    fn take_error(&self) -> String {
        // SAFETY: rrd_get_error returns librrd's own NUL-terminated buffer (or null).
        let e = unsafe {
            let p = (self.get_error)();
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        // SAFETY: no arguments, librrd's own state.
        unsafe { (self.clear_error)() };
        e
    }

    /// `rrd_graph` on `args` (after `graph`), DEFs fetched through `fetch`: the image is
    /// written where the arguments say (`-`: standard output); returns what rrdtool prints
    /// beside it.
    pub fn graph(&self, args: &[String], fetch: Box<Fetcher>) -> Result<Printed, String> {
        let argv = Argv::new("graph", args)?;
        *FETCHER.lock().unwrap_or_else(|p| p.into_inner()) = Some(fetch);
        let mut calcpr: *mut *mut c_char = std::ptr::null_mut();
        let (mut x, mut y, mut ymin, mut ymax) = (0, 0, 0.0, 0.0);
        // SAFETY: argv is a NULL-terminated array of C strings that outlives the call; the
        // out-pointers are ours.
        let r = unsafe {
            (self.graph)(
                argv.len(),
                argv.ptr(),
                &mut calcpr,
                &mut x,
                &mut y,
                std::ptr::null_mut(),
                &mut ymin,
                &mut ymax,
            )
        };
        FETCHER.lock().unwrap_or_else(|p| p.into_inner()).take();
        // An image to `-` went through C's stdout buffer: out before anything printed here.
        // SAFETY: fflush(NULL) flushes every C stream.
        unsafe { libc::fflush(std::ptr::null_mut()) };
        let mut lines = Vec::new();
        if !calcpr.is_null() {
            // SAFETY: librrd's NULL-terminated array of malloc'd strings, freed here as
            // rrdtool frees them.
            unsafe {
                let mut i = 0;
                while !(*calcpr.add(i)).is_null() {
                    let s = *calcpr.add(i);
                    lines.push(CStr::from_ptr(s).to_string_lossy().into_owned());
                    libc::free(s as *mut c_void);
                    i += 1;
                }
                libc::free(calcpr as *mut c_void);
            }
        }
        if r == -1 {
            let e = self.take_error();
            if !e.is_empty() {
                return Err(e);
            }
            // Failed without a word (nothing to draw): rrdtool prints nothing, not even
            // the size.
            return Ok(Printed {
                xsize: -1,
                ysize: -1,
                lines,
            });
        }
        Ok(Printed {
            xsize: x,
            ysize: y,
            lines,
        })
    }

    /// `rrd_graph_v` on `args` (after `graphv`), printed to standard output as rrdtool's
    /// `graphv` prints it (`rrd_info_print`).
    pub fn graph_v(&self, args: &[String], fetch: Box<Fetcher>) -> Result<(), String> {
        let argv = Argv::new("graphv", args)?;
        *FETCHER.lock().unwrap_or_else(|p| p.into_inner()) = Some(fetch);
        // SAFETY: as for `graph`.
        let info = unsafe { (self.graph_v)(argv.len(), argv.ptr()) };
        FETCHER.lock().unwrap_or_else(|p| p.into_inner()).take();
        if info.is_null() {
            // Null without a word: rrdtool prints nothing.
            let e = self.take_error();
            return if e.is_empty() { Ok(()) } else { Err(e) };
        }
        // SAFETY: librrd's info list, printed then freed by librrd; C's stdout flushed.
        unsafe {
            (self.info_print)(info);
            (self.info_free)(info);
            libc::fflush(std::ptr::null_mut());
        }
        Ok(())
    }
}

/// librrd's `rrd_set_error`, for the callback (which has no `Lib`).
static SET_ERROR: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

fn set_error(msg: &str) {
    let Some(&f) = SET_ERROR.get() else { return };
    let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: `f` is rrd_set_error (printf-like); the message goes as a `%s` argument.
    unsafe {
        let f: unsafe extern "C" fn(*const c_char, ...) = std::mem::transmute(f);
        f(c"%s".as_ptr(), msg.as_ptr());
    }
}

/// A C argument vector: argv[0] the command, then `args`, NULL-terminated.
struct Argv {
    _owned: Vec<CString>,
    ptrs: Vec<*mut c_char>,
}

impl Argv {
    fn new(cmd: &str, args: &[String]) -> Result<Argv, String> {
        let mut owned = Vec::with_capacity(args.len() + 1);
        for a in std::iter::once(cmd).chain(args.iter().map(String::as_str)) {
            owned.push(CString::new(a).map_err(|_| "an argument holds a NUL byte".to_string())?);
        }
        let mut ptrs: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr() as *mut c_char).collect();
        ptrs.push(std::ptr::null_mut());
        Ok(Argv {
            _owned: owned,
            ptrs,
        })
    }

    fn len(&self) -> c_int {
        (self.ptrs.len() - 1) as c_int
    }

    fn ptr(&self) -> *mut *mut c_char {
        self.ptrs.as_ptr() as *mut *mut c_char
    }
}

/// librrd's fetch callback: the rows of the DEF's series from [`FETCHER`], in buffers
/// librrd frees with `free()`.
unsafe extern "C" fn fetch_cb(
    filename: *const c_char,
    cf: c_int,
    start: *mut libc::time_t,
    end: *mut libc::time_t,
    step: *mut c_ulong,
    ds_cnt: *mut c_ulong,
    ds_namv: *mut *mut *mut c_char,
    data: *mut *mut f64,
) -> c_int {
    // SAFETY (whole body): librrd passes a valid C string and valid out-pointers.
    let name = CStr::from_ptr(filename).to_string_lossy().into_owned();
    let name = name.strip_prefix("cb//").unwrap_or(&name).to_string();
    let Some(cf) = CF_NAMES.get(cf as usize) else {
        set_error("unknown consolidation function");
        return -1;
    };
    let got = {
        let mut f = FETCHER.lock().unwrap_or_else(|p| p.into_inner());
        match f.as_mut() {
            Some(f) => f(&name, cf, *start, *end, *step),
            None => Err("no graph is being drawn".into()),
        }
    };
    let rows = match got {
        Ok(r) => r,
        Err(e) => {
            set_error(&e);
            return -1;
        }
    };
    let n = rows.ds_names.len();
    let names = libc::malloc(n.max(1) * std::mem::size_of::<*mut c_char>()) as *mut *mut c_char;
    let vals = libc::malloc(rows.values.len().max(1) * std::mem::size_of::<f64>()) as *mut f64;
    if names.is_null() || vals.is_null() {
        libc::free(names as *mut c_void);
        libc::free(vals as *mut c_void);
        set_error("out of memory");
        return -1;
    }
    for (i, d) in rows.ds_names.iter().enumerate() {
        let c = CString::new(d.as_str()).unwrap_or_default();
        *names.add(i) = libc::strdup(c.as_ptr());
    }
    std::ptr::copy_nonoverlapping(rows.values.as_ptr(), vals, rows.values.len());
    *start = rows.start;
    *end = rows.end;
    *step = rows.step;
    *ds_cnt = n as u64;
    *ds_namv = names;
    *data = vals;
    0
}
