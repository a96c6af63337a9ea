// keep.rs — who keeps a leak, in Rust (issue 41): every epoch a model is shared by an Arc held
// twice, by the epoch's trainer (dropped at its end) and by a registry slot that is never
// cleared. Sessions end at its "epoch N done" lines (--session-marker); it knows nothing of
// leakgate. `leakgate exec` must name the static REGISTRY as the root.
//
//   exec_keep_rust EPOCHS [clean]
use std::sync::{Arc, Mutex};

struct Model {
    weights: Vec<f32>,
}

static REGISTRY: Mutex<[Option<Arc<Model>>; 1024]> = Mutex::new([const { None }; 1024]);

#[inline(never)]
fn train(epoch: usize, keep: bool) -> f32 {
    let model = Arc::new(Model { weights: vec![epoch as f32; 64] });
    let trainer = Arc::clone(&model); // the second holder
    if keep {
        REGISTRY.lock().unwrap()[epoch] = Some(trainer);
    } else {
        drop(trainer);
    }
    model.weights.iter().sum()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let epochs: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let keep = args.get(2).map(|s| s != "clean").unwrap_or(true);
    let mut total = 0.0;
    for epoch in 0..epochs.min(1024) {
        total += train(epoch, keep);
        println!("epoch {epoch} done");
    }
    println!("total {total}");
}
