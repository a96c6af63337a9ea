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

use std::ffi::{c_char, c_int, c_void, CString};
use std::marker::PhantomData;
use std::panic::Location;

mod ffi {
    use std::ffi::{c_char, c_int, c_void};
    extern "C" {
        pub fn leakgate_api_version() -> c_int;
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
        pub fn leakgate_retain(
            obj: *const c_void,
            holder: *const c_void,
            file: *const c_char,
            line: c_int,
            func: *const c_char,
        ) -> c_int;
        pub fn leakgate_release(
            obj: *const c_void,
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
}

/// The header's `LEAKGATE_API_VERSION` this crate was written against.
pub const API_VERSION: i32 = 1;

/// A failed call: `LEAKGATE_ESESSION` (1), `LEAKGATE_ELOST` (2) or `LEAKGATE_EINVAL` (3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error(pub i32);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.0 {
            1 => "session_begin while one is open, or session_end with none",
            2 => "the connection to leakgate is gone",
            3 => "a bad argument, or tag_pop with no scope open",
            _ => "error",
        };
        write!(f, "leakgate: {what} ({})", self.0)
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

/// A site the ledger keeps (it stores the pointers, not copies): the caller's file as a
/// NUL-terminated string that lives for the program, made once per distinct file and leaked
/// on purpose. The function is not known to `#[track_caller]`; its slot says "rust".
fn site(loc: &'static Location<'static>) -> (*const c_char, c_int, *const c_char) {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static FILES: OnceLock<Mutex<HashMap<&'static str, &'static [u8]>>> = OnceLock::new();
    let mut m = FILES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let f = *m.entry(loc.file()).or_insert_with(|| {
        let mut v = loc.file().as_bytes().to_vec();
        v.push(0);
        Box::leak(v.into_boxed_slice())
    });
    (
        f.as_ptr().cast(),
        loc.line() as c_int,
        b"rust\0".as_ptr().cast(),
    )
}

fn addr<T: ?Sized>(p: &T) -> *const c_void {
    p as *const T as *const c_void
}

/// Enters `obj` (any value with a stable address: the pointee of an `Arc`, a `Box`) in the
/// ledger of shared objects, born holding `holder`'s reference. Alive at its session's end, it is
/// reported with the retains nobody released and where they were taken (the caller's line).
#[track_caller]
pub fn track<T: ?Sized, H: ?Sized>(obj: &T, kind: &str, name: &str, holder: &H) {
    let (f, l, func) = site(Location::caller());
    let k = CString::new(kind).unwrap_or_default();
    let n = CString::new(name).unwrap_or_default();
    unsafe { ffi::leakgate_track(addr(obj), k.as_ptr(), n.as_ptr(), addr(holder), f, l, func) };
}

/// `holder` takes a reference to the tracked `obj`.
#[track_caller]
pub fn retain<T: ?Sized, H: ?Sized>(obj: &T, holder: &H) {
    let (f, l, func) = site(Location::caller());
    unsafe { ffi::leakgate_retain(addr(obj), addr(holder), f, l, func) };
}

/// `holder` drops the reference it took.
#[track_caller]
pub fn release<T: ?Sized, H: ?Sized>(obj: &T, holder: &H) {
    let (f, l, func) = site(Location::caller());
    unsafe { ffi::leakgate_release(addr(obj), addr(holder), f, l, func) };
}

/// `obj` was destroyed.
#[track_caller]
pub fn untrack<T: ?Sized>(obj: &T) {
    let (f, l, func) = site(Location::caller());
    unsafe { ffi::leakgate_untrack(addr(obj), f, l, func) };
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
            track(&*v, "buf", "v", &s);
            retain(&*v, &v);
            release(&*v, &v);
            untrack(&*v);
        }
        note("hello").unwrap();
        s.end().unwrap();
        // a second session right after is fine: nothing is open outside exec
        assert!(try_session().is_ok());
    }

    #[test]
    fn error_display_names_the_code() {
        assert!(Error(1).to_string().contains("session"));
        assert!(Error(2).to_string().contains("gone"));
    }
}
