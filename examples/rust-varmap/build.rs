// The binary finds libleakgate.so where the leakgate crate linked it (an rpath), so it runs
// without LD_LIBRARY_PATH, under leakgate exec or not.
fn main() {
    if let Ok(d) = std::env::var("DEP_LEAKGATE_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
    }
}
