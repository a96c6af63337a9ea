//! The seed's leak, in Rust: a `TemporalFusionTransformer` owns its parameters through an
//! `Arc<VarMap>`; the `TFTTrainer` keeps a duplicate `Arc<VarMap>` of its own, and the trainers
//! are kept after their session (the run's history), so every session's whole VarMap — and the
//! trainer's AdamW moments over it — outlives the session. `--fixed`: the trainer holds no map; it
//! borrows it through `model.get_varmap()` when it needs it, and it dies with its session: the run
//! keeps only each session's loss, in a history sized before the first session. (Keeping the
//! trainers' boxes, even emptied, is a leak of its own: 176 B a session, which leakgate exec's
//! census counts exactly.)
//!
//! ```sh
//! leakgate exec -- target/release/rust-varmap                    # LEAK, the function named
//! leakgate exec -- target/release/rust-varmap --fixed            # PASS
//! leakgate exec -- target/release/rust-varmap --params-mb 815    # the seed's 815 MB
//! ```
//!
//! Not a forecaster: the model is the TFT's parameter set (names and shapes after spec/TFT.md's
//! blocks, the bulk in a static-covariate embedding sized by --params-mb) with an AdamW loop over
//! it, which is what the leak is about.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Named parameters, shared by reference count (candle's VarMap).
pub struct VarMap {
    vars: Mutex<BTreeMap<String, Vec<f32>>>,
}

impl VarMap {
    fn new() -> Self {
        VarMap {
            vars: Mutex::new(BTreeMap::new()),
        }
    }

    /// Creates the parameter `name` with `n` values (a deterministic init).
    #[inline(never)]
    fn init_var(&self, name: &str, n: usize, seed: u32) {
        let mut v = vec![0f32; n];
        let mut x = seed.wrapping_mul(2654435761).max(1);
        for w in v.iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *w = (x as f32 / u32::MAX as f32 - 0.5) * 0.02;
        }
        self.vars.lock().unwrap().insert(name.to_owned(), v);
    }

    fn total_bytes(&self) -> usize {
        self.vars
            .lock()
            .unwrap()
            .values()
            .map(|v| v.len() * 4)
            .sum()
    }
}

pub struct TemporalFusionTransformer {
    varmap: Arc<VarMap>,
    hidden: usize,
}

impl TemporalFusionTransformer {
    #[inline(never)]
    pub fn new(hidden: usize, n_series: usize) -> Self {
        let varmap = Arc::new(VarMap::new());
        let h = hidden;
        let blocks: [(&str, usize); 9] = [
            ("static_embedding.weight", n_series * h),
            ("vsn.grn.fc1.weight", 4 * h),
            ("vsn.grn.fc2.weight", h * h),
            ("vsn.grn.gate.weight", 2 * h * h),
            ("encoder.lstm.weight_ih", 4 * h * h),
            ("encoder.lstm.weight_hh", 4 * h * h),
            ("attention.qkv.weight", 3 * h * h),
            ("post.grn.fc1.weight", h * h),
            ("head.weight", 6 * h),
        ];
        for (i, (name, n)) in blocks.iter().enumerate() {
            varmap.init_var(name, *n, i as u32 + 1);
        }
        TemporalFusionTransformer { varmap, hidden }
    }

    pub fn get_varmap(&self) -> &Arc<VarMap> {
        &self.varmap
    }

    /// A stand-in forward pass: a weighted sum over every parameter (so each is read).
    fn forward(&self, x: f32) -> f32 {
        let vars = self.varmap.vars.lock().unwrap();
        vars.values()
            .map(|v| v.iter().step_by(self.hidden.max(1)).sum::<f32>())
            .sum::<f32>()
            * x
    }
}

/// AdamW's moments, one pair per parameter.
struct AdamW {
    m: BTreeMap<String, Vec<f32>>,
    v: BTreeMap<String, Vec<f32>>,
    lr: f32,
    t: i32,
}

impl AdamW {
    #[inline(never)]
    fn new(varmap: &VarMap, lr: f32) -> Self {
        let vars = varmap.vars.lock().unwrap();
        let zeros = |v: &Vec<f32>| vec![0f32; v.len()];
        AdamW {
            m: vars.iter().map(|(k, v)| (k.clone(), zeros(v))).collect(),
            v: vars.iter().map(|(k, v)| (k.clone(), zeros(v))).collect(),
            lr,
            t: 0,
        }
    }

    fn step(&mut self, varmap: &VarMap, grad: f32) {
        self.t += 1;
        let (b1, b2, eps, wd) = (0.9f32, 0.999f32, 1e-8f32, 0.01f32);
        let (c1, c2) = (1.0 - b1.powi(self.t), 1.0 - b2.powi(self.t));
        let mut vars = varmap.vars.lock().unwrap();
        for (k, w) in vars.iter_mut() {
            let (m, v) = (self.m.get_mut(k).unwrap(), self.v.get_mut(k).unwrap());
            for i in 0..w.len() {
                let g = grad * w[i].signum();
                m[i] = b1 * m[i] + (1.0 - b1) * g;
                v[i] = b2 * v[i] + (1.0 - b2) * g * g;
                w[i] -= self.lr * ((m[i] / c1) / ((v[i] / c2).sqrt() + eps) + wd * w[i]);
            }
        }
    }
}

pub struct TFTTrainer {
    varmap: Option<Arc<VarMap>>, // the bug: the trainer's own reference to the model's map
    optimizer: Option<AdamW>,
    losses: Vec<f32>,
}

impl TFTTrainer {
    #[inline(never)]
    pub fn new(model: &TemporalFusionTransformer, fixed: bool) -> Box<Self> {
        let varmap = if fixed {
            None
        } else {
            Some(Arc::clone(model.get_varmap()))
        };
        let t = Box::new(TFTTrainer {
            optimizer: Some(AdamW::new(model.get_varmap(), 1e-3)),
            varmap,
            losses: Vec::new(),
        });
        if let Some(v) = &t.varmap {
            leakgate::retain!(&**v, &*t); // the duplicate reference, named in the ledger
        }
        t
    }

    pub fn train(&mut self, model: &TemporalFusionTransformer, steps: usize) {
        for s in 0..steps {
            let loss = model.forward(1.0 / (s + 1) as f32).abs();
            if let Some(opt) = self.optimizer.as_mut() {
                opt.step(model.get_varmap(), loss.min(1.0)); // borrowed through the model
            }
            self.losses.push(loss);
        }
    }

    /// The session is over: the optimizer state goes; the losses stay for the history.
    pub fn finish(&mut self) {
        self.optimizer = None;
    }
}

struct Args {
    fixed: bool,
    sessions: usize,
    steps: usize,
    params_mb: f64,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        fixed: false,
        sessions: 8,
        steps: 2,
        params_mb: 1.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut num = |what: &str| -> Result<f64, String> {
            it.next()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| *v >= 0.0)
                .ok_or(format!("{what} needs a non-negative number"))
        };
        match arg.as_str() {
            "--fixed" => a.fixed = true,
            "--sessions" => a.sessions = num("--sessions")? as usize,
            "--steps" => a.steps = num("--steps")? as usize,
            "--params-mb" => a.params_mb = num("--params-mb")?,
            "-h" | "--help" => {
                println!(
                    "usage: rust-varmap [--fixed] [--sessions N] [--steps K] [--params-mb MB]"
                );
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument '{arg}'")),
        }
    }
    if a.params_mb > 815.0 {
        return Err("--params-mb: at most 815 (the seed's size)".into());
    }
    Ok(a)
}

fn main() {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rust-varmap: {e}");
            std::process::exit(2);
        }
    };
    let hidden = 64;
    let n_series = ((a.params_mb * 1e6) / (4.0 * hidden as f64)).max(1.0) as usize;
    let mut history: Vec<Box<TFTTrainer>> = Vec::new(); // the bug: the run's trainers, kept
    let mut losses: Vec<f32> = Vec::with_capacity(a.sessions); // the fix keeps only the losses
    for i in 0..a.sessions {
        let s = leakgate::session();
        let model = {
            let _t = leakgate::tag("varmap");
            TemporalFusionTransformer::new(hidden, n_series)
        };
        leakgate::track!(&**model.get_varmap(), "varmap", "tft.varmap", &model);
        let bytes = model.get_varmap().total_bytes();
        let mut trainer = TFTTrainer::new(&model, a.fixed);
        trainer.train(&model, a.steps);
        trainer.finish();
        let loss = trainer.losses.last().copied().unwrap_or(0.0);
        losses.push(loss);
        if !a.fixed {
            history.push(trainer); // kept past its session (the bug's reference structure)
        }
        let map = Arc::clone(model.get_varmap());
        drop(model);
        if Arc::strong_count(&map) == 1 {
            leakgate::untrack!(&*map); // the map dies with this last reference
        }
        drop(map);
        drop(s);
        println!(
            "session {i} done: VarMap {:.1} MB, loss {loss:.4}, {} trainer(s) kept",
            bytes as f64 / 1e6,
            history.len()
        );
    }
}
