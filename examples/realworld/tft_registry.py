"""A small hyper-parameter sweep of pytorch-forecasting's TemporalFusionTransformer on a
synthetic TimeSeriesDataSet: each trial builds a TFT and a Lightning Trainer, fits one epoch and
records the trial. The leak records the trainer itself in a module-level registry (the trainer
holds the model, its optimizer state and its callbacks: issue 41's "registry holds the
trainer"); the clean twin records the trial's loss as a float. Sessions are trials: each ends
with "trial N done".

Both forms call gc.collect() before the marker line. A Lightning Trainer and its LightningModule
point at each other (trainer.lightning_module, module.trainer), so a dropped trainer is cyclic
garbage that only a generation-2 collection frees, and with torch, pandas and Lightning loaded
that collection did not run once in 12 trials: without the collect the clean twin is judged a
leak with the same figures as the leak (docs/realworld.md).

    python tft_registry.py leak|clean [TRIALS]
"""
import gc
import logging
import sys
import time
import warnings

import lightning as L
import numpy as np
import pandas as pd
import torch
from pytorch_forecasting import TemporalFusionTransformer, TimeSeriesDataSet

MODE = sys.argv[1] if len(sys.argv) > 1 else "leak"
TRIALS = int(sys.argv[2]) if len(sys.argv) > 2 else 12
assert MODE in ("leak", "clean"), "usage: tft_registry.py leak|clean [TRIALS]"
warnings.filterwarnings("ignore")
logging.getLogger("lightning").setLevel(logging.ERROR)
logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)

_TRIALS = []  # every trial of the sweep


def series(n_series=8, length=60, seed=0):
    """n_series noisy sines of `length` steps, one row a step."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    rows = [pd.DataFrame({"series": str(s), "time_idx": t,
                          "value": np.sin(t / (4 + s)) + 0.1 * rng.standard_normal(length)})
            for s in range(n_series)]
    return pd.concat(rows, ignore_index=True)


START = time.monotonic()  # the markers say the seconds since (imports excluded)
data = TimeSeriesDataSet(series(), time_idx="time_idx", target="value", group_ids=["series"],
                         max_encoder_length=12, max_prediction_length=4,
                         time_varying_unknown_reals=["value"], static_categoricals=["series"])
loader = data.to_dataloader(train=True, batch_size=32, num_workers=0)

for trial in range(TRIALS):
    torch.manual_seed(trial)
    # the sweep varies the learning rate only: a new hidden size is a new set of shapes, whose
    # first use costs PyTorch one-time memory in the trial that meets it
    tft = TemporalFusionTransformer.from_dataset(data, hidden_size=8, attention_head_size=1,
                                                 hidden_continuous_size=4,
                                                 learning_rate=0.01 * (1 + trial % 3),
                                                 log_interval=-1)
    trainer = L.Trainer(max_epochs=1, limit_train_batches=6, accelerator="cpu", devices=1,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(tft, train_dataloaders=loader)
    loss = trainer.callback_metrics["train_loss_epoch"].item() \
        if "train_loss_epoch" in trainer.callback_metrics else float("nan")
    _TRIALS.append(trainer if MODE == "leak" else loss)
    del tft, trainer
    gc.collect()  # the dropped trainer's cycle, freed before the session is measured
    print("trial %d done loss %.4f %.2f s" % (trial, loss, time.monotonic() - START), flush=True)
