//! leakgate for Rust: RAII guards over libleakgate's C API (`include/leakgate.h`).
//!
//! ```no_run
//! for epoch in 0..20 {
//!     let _s = leakgate::session();          // ends (measured, judged) when dropped
//!     let map = {
//!         let _t = leakgate::tag("varmap");  // this thread's allocations are tagged "varmap"
//!         vec![0f32; 1 << 20]
//!     };
//!     drop(map);
//! }
//! ```
//!
//! Run it as `leakgate exec -- ./trainer`. Outside exec every call is a no-op (one branch in
//! libleakgate) and the program runs unchanged. No dependencies; links `libleakgate.so`
//! (`build.rs` says where it looks).
#![forbid(unsafe_op_in_unsafe_fn)]

use std::ffi::{c_void, CString};
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int};
use std::panic::Location;

mod ffi {
    use std::ffi::c_void;
    use std::os::raw::{c_char, c_int};
    extern "C" {
        pub fn leakgate_api_version() -> c_int;
        pub fn leakgate_strerror(status: c_int) -> *const c_char;
        pub fn leakgate_active() -> c_int;
        pub fn leakgate_session_begin() -> c_int;
        pub fn leakgate_session_end() -> c_int;
        pub fn leakgate_tag_push(name: *const c_char) -> c_int;
        pub fn leakgate_tag_pop() -> c_int;
        pub fn leakgate_track(
            obj: *const c_void,
            kind: *const c_char,
            name: *const c_char,
            holder: *const c_void,
            file: *const c_char,
            line: c_int,
            func: *const c_char,
        ) -> c_int;
        pub fn leakgate_untrack(
            obj: *const c_void,
            file: *const c_char,
            line: c_int,
            func: *const c_char,
        ) -> c_int;
        pub fn leakgate_session_note(text: *const c_char) -> c_int;
    }

    /// retain and release take the same arguments (the object, its holder, the call site):
    /// their declarations are written once.
    macro_rules! ref_calls {
        ($($name:ident),*) => {
            extern "C" {
                $(pub fn $name(
                    obj: *const c_void,
                    holder: *const c_void,
                    file: *const c_char,
                    line: c_int,
                    func: *const c_char,
                ) -> c_int;)*
            }
        };
    }
    ref_calls!(leakgate_retain, leakgate_release);
}

/// The header's `LEAKGATE_API_VERSION` this crate was written against.
pub const API_VERSION: i32 = 1;

/// A failed call: `LEAKGATE_ESESSION` (1), `LEAKGATE_ELOST` (2) or `LEAKGATE_EINVAL` (3);
/// its words come from the library (`leakgate_strerror`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error(pub i32);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // the words are the header's LEAKGATE_STATUS_MAP, in static storage
        let what = unsafe { std::ffi::CStr::from_ptr(ffi::leakgate_strerror(self.0)) };
        write!(f, "leakgate: {} ({})", what.to_string_lossy(), self.0)
    }
}
impl std::error::Error for Error {}

fn check(rc: c_int) -> Result<(), Error> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Error(rc))
    }
}

/// The library's API version.
pub fn api_version() -> i32 {
    unsafe { ffi::leakgate_api_version() }
}

/// True under `leakgate exec` (the agent is loaded and connected).
pub fn active() -> bool {
    unsafe { ffi::leakgate_active() != 0 }
}

/// A session: begun by [`session`], ended (measured, reported, judged) when dropped.
#[must_use = "the session ends when this guard is dropped"]
pub struct Session {
    _not_send: PhantomData<*const ()>,
}

/// Begins a session; panics if one is already open (use [`try_session`] to handle it).
pub fn session() -> Session {
    try_session().expect("leakgate::session")
}

/// Begins a session, or says why not.
pub fn try_session() -> Result<Session, Error> {
    check(unsafe { ffi::leakgate_session_begin() })?;
    Ok(Session {
        _not_send: PhantomData,
    })
}

impl Session {
    /// Ends the session now, with its status (dropping it ends it too, ignoring the status).
    pub fn end(self) -> Result<(), Error> {
        let rc = unsafe { ffi::leakgate_session_end() };
        std::mem::forget(self);
        check(rc)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        unsafe { ffi::leakgate_session_end() };
    }
}

/// A tag scope on this thread: its allocations are tagged until the guard is dropped. Not
/// `Send`: a tag scope belongs to the thread that opened it.
#[must_use = "the tag scope closes when this guard is dropped"]
pub struct Tag {
    _not_send: PhantomData<*const ()>,
}

/// Opens a tag scope named `name` (copied; truncated past 95 bytes).
pub fn tag(name: &str) -> Tag {
    let c = CString::new(name.replace('\0', " ")).unwrap_or_default();
    unsafe { ffi::leakgate_tag_push(c.as_ptr()) };
    Tag {
        _not_send: PhantomData,
    }
}

impl Drop for Tag {
    fn drop(&mut self) {
        unsafe { ffi::leakgate_tag_pop() };
    }
}

/// Attaches a line of text to the session the next session end reports (results, printout).
pub fn note(text: &str) -> Result<(), Error> {
    let c = CString::new(text.replace('\0', " ")).unwrap_or_default();
    check(unsafe { ffi::leakgate_session_note(c.as_ptr()) })
}

/// A string the ledger may keep (it stores the pointers, not copies): one NUL-terminated copy
/// per distinct string, made once and kept for the program's life.
fn intern(s: &'static str) -> *const c_char {
    use std::collections::HashMap;
    use std::sync::Mutex;
    type Seen = Option<HashMap<&'static str, &'static [u8]>>;
    static SEEN: Mutex<Seen> = Mutex::new(None);
    let mut g = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let b = *g
        .get_or_insert_with(HashMap::new)
        .entry(s)
        .or_insert_with(|| {
            let mut v = s.replace('\0', " ").into_bytes();
            v.push(0);
            Box::leak(v.into_boxed_slice())
        });
    b.as_ptr().cast()
}

fn addr<T: ?Sized>(p: &T) -> *const c_void {
    p as *const T as *const c_void
}

/// The path of the function a macro expands in (`crate::module::Type::method`).
#[doc(hidden)]
#[macro_export]
macro_rules! __function {
    () => {{
        fn __f() {}
        fn __name<T>(_: T) -> &'static str {
            ::std::any::type_name::<T>()
        }
        let n = __name(__f);
        n.strip_suffix("::__f").unwrap_or(n)
    }};
}

/// Where a ledger call was made: file, line and function (the macros fill it in).
#[derive(Clone, Copy, Debug)]
pub struct Site {
    pub file: &'static str,
    pub line: u32,
    pub func: &'static str,
}

impl Site {
    /// The caller's file and line; the function is not known (`?`). The macros know it.
    #[track_caller]
    pub fn caller() -> Site {
        let l = Location::caller();
        Site {
            file: l.file(),
            line: l.line(),
            func: "?",
        }
    }
    fn c(&self) -> (*const c_char, c_int, *const c_char) {
        (intern(self.file), self.line as c_int, intern(self.func))
    }
}

/// The site of the macro's caller, with its function.
#[macro_export]
macro_rules! site {
    () => {
        $crate::Site {
            file: file!(),
            line: line!(),
            func: $crate::__function!(),
        }
    };
}

/// Enters `obj` (any value with a stable address: the pointee of an `Arc`, a `Box`) in the
/// ledger of shared objects, born holding `holder`'s reference. Alive at its session's end, it is
/// reported with the retains nobody released and where they were taken.
/// `leakgate::track!(obj, kind, name, holder)` fills the site in.
pub fn track_at<T: ?Sized, H: ?Sized>(obj: &T, kind: &str, name: &str, holder: &H, at: Site) {
    let (f, l, func) = at.c();
    let k = CString::new(kind.replace('\0', " ")).unwrap_or_default();
    let n = CString::new(name.replace('\0', " ")).unwrap_or_default();
    unsafe { ffi::leakgate_track(addr(obj), k.as_ptr(), n.as_ptr(), addr(holder), f, l, func) };
}

/// `holder` takes a reference to the tracked `obj` (`leakgate::retain!(obj, holder)`).
pub fn retain_at<T: ?Sized, H: ?Sized>(obj: &T, holder: &H, at: Site) {
    let (f, l, func) = at.c();
    unsafe { ffi::leakgate_retain(addr(obj), addr(holder), f, l, func) };
}

/// `holder` drops the reference it took (`leakgate::release!(obj, holder)`).
pub fn release_at<T: ?Sized, H: ?Sized>(obj: &T, holder: &H, at: Site) {
    let (f, l, func) = at.c();
    unsafe { ffi::leakgate_release(addr(obj), addr(holder), f, l, func) };
}

/// `obj` was destroyed (`leakgate::untrack!(obj)`).
pub fn untrack_at<T: ?Sized>(obj: &T, at: Site) {
    let (f, l, func) = at.c();
    unsafe { ffi::leakgate_untrack(addr(obj), f, l, func) };
}

/// `track_at` with the caller's file, line and function.
#[macro_export]
macro_rules! track {
    ($obj:expr, $kind:expr, $name:expr, $holder:expr) => {
        $crate::track_at($obj, $kind, $name, $holder, $crate::site!())
    };
}
/// `retain_at` with the caller's file, line and function.
#[macro_export]
macro_rules! retain {
    ($obj:expr, $holder:expr) => {
        $crate::retain_at($obj, $holder, $crate::site!())
    };
}
/// `release_at` with the caller's file, line and function.
#[macro_export]
macro_rules! release {
    ($obj:expr, $holder:expr) => {
        $crate::release_at($obj, $holder, $crate::site!())
    };
}
/// `untrack_at` with the caller's file, line and function.
#[macro_export]
macro_rules! untrack {
    ($obj:expr) => {
        $crate::untrack_at($obj, $crate::site!())
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    // Outside exec every call is a no-op that succeeds: the program runs unchanged.
    #[test]
    fn outside_exec_everything_is_a_noop() {
        assert_eq!(api_version(), API_VERSION);
        assert!(!active());
        let s = session();
        {
            let _t = tag("varmap");
            let v = vec![1u8; 4096];
            track!(&*v, "buf", "v", &s);
            retain!(&*v, &v);
            release!(&*v, &v);
            untrack!(&*v);
        }
        note("hello").unwrap();
        s.end().unwrap();
        // a second session right after is fine: nothing is open outside exec
        assert!(try_session().is_ok());
    }

    #[test]
    fn sites_name_the_function() {
        let s = crate::site!();
        assert!(
            s.func.ends_with("tests::sites_name_the_function"),
            "{}",
            s.func
        );
        assert_eq!(s.file, file!());
        assert_eq!(Site::caller().func, "?");
    }

    #[test]
    fn error_display_names_the_code() {
        assert!(Error(1).to_string().contains("session"));
        assert!(Error(2).to_string().contains("gone"));
    }
}
