// marker.rs — a Rust trainer that knows nothing of leakgate: a line per epoch (println!, so
// Rust's own write(2)), and 256 KiB kept per epoch by keep_history.
//
//     exec_rust EPOCHS
use std::hint::black_box;

#[inline(never)]
fn keep_history(kept: &mut Vec<Vec<u8>>, epoch: usize) {
    kept.push(vec![epoch as u8; 256 * 1024]);
}

fn main() {
    let epochs: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(6);
    let mut kept = Vec::new();
    for epoch in 0..epochs {
        keep_history(&mut kept, epoch);
        println!("epoch {} done", epoch);
    }
    black_box(&kept);
}
