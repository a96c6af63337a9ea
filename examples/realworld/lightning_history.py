"""A Lightning fit whose LightningModule keeps every step's loss tensor (leak) or its float
(clean): `self.history.append(loss)` keeps each step's autograd graph, and with it the step's
activations, alive for the whole fit. Sessions are epochs: the module prints "epoch N done" at
on_train_epoch_end, for `leakgate exec --session-marker '^epoch [0-9]+ done'`.

    python lightning_history.py leak|clean [EPOCHS]
"""
import sys
import time
import warnings

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

MODE = sys.argv[1] if len(sys.argv) > 1 else "leak"
EPOCHS = int(sys.argv[2]) if len(sys.argv) > 2 else 12
assert MODE in ("leak", "clean"), "usage: lightning_history.py leak|clean [EPOCHS]"
warnings.filterwarnings("ignore")  # Lightning's advice on workers and logging: not ours


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                 nn.Linear(256, 1))
        self.history = []

    def training_step(self, batch, _):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        # the leak: the tensor keeps its graph (and the step's activations); .item() does not
        self.history.append(loss if MODE == "leak" else loss.item())
        return loss

    def on_train_epoch_end(self):
        print("epoch %d done %.2f s" % (self.current_epoch, time.monotonic() - START), flush=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=1e-3)


START = time.monotonic()  # the markers say the seconds since (imports excluded)
torch.manual_seed(0)
x = torch.randn(2048, 64)
data = DataLoader(TensorDataset(x, x[:, :1] * 2.0), batch_size=128)
trainer = L.Trainer(max_epochs=EPOCHS, accelerator="cpu", devices=1, logger=False,
                    enable_checkpointing=False, enable_progress_bar=False,
                    enable_model_summary=False)
trainer.fit(Regressor(), data)
