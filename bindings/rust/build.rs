//! Links libleakgate.so. Where it is: LEAKGATE_LIB_DIR, else `pkg-config --libs-only-L leakgate`
//! (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig for an install), else the linker's default search.
//! The directory is passed on to dependents as DEP_LEAKGATE_LIB_DIR (for an rpath).
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=LEAKGATE_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let dir = env::var("LEAKGATE_LIB_DIR")
        .ok()
        .filter(|d| !d.is_empty())
        .or_else(|| {
            let out = Command::new("pkg-config")
                .args(["--libs-only-L", "leakgate"])
                .output()
                .ok()?;
            if !out.status.success() {
                return None;
            }
            String::from_utf8(out.stdout)
                .ok()?
                .split_whitespace()
                .find_map(|w| w.strip_prefix("-L").map(str::to_owned))
        });
    if let Some(d) = &dir {
        println!("cargo:rustc-link-search=native={d}");
        println!("cargo:lib_dir={d}");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{d}"); // this crate's own tests
    }
    println!("cargo:rustc-link-lib=dylib=leakgate");
}
