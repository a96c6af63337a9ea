"""A DataLoader iterator kept after its epoch (issue 41, item 2): every epoch trains on one batch
of a new iterator of a DataLoader with worker processes (`it = iter(loader)`, `next(it)`: a
step budget, say) and keeps the iterator to resume from (`ITERS.append(it)`). Each kept one
keeps its workers alive, and the batches they prefetched (prefetch_factor each) that came back
before the one taken: the first row is slow to read (a cold cache), so the second worker's come
back first. `fixed` deletes the iterator, which stops its workers. Sessions are epochs: printed
("epoch N done") for marker mode, or each inside `leakgate.session()` with `api`:

    leakgate exec --session-marker '^epoch [0-9]+ done' -- \\
        python3 -m leakgate loader_iters.py [fixed] [EPOCHS]
    leakgate exec -- python3 loader_iters.py api [fixed] [EPOCHS]

tests/bindings/python/test_torch_keep.py names who keeps them, and runs the fixed twin.
"""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
torch.set_num_threads(1)
ROWS, FEATURES, BATCH, WORKERS, PREFETCH = 1024, 32, 64, 2, 2
model = nn.Linear(FEATURES, 1)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
ITERS = []


class Rows(Dataset):
    """FEATURES features and a target a row; the first row is slow to read."""

    def __len__(self):
        return ROWS

    def __getitem__(self, i):
        if i == 0:
            time.sleep(0.3)
        return torch.full((FEATURES,), i / ROWS), torch.full((1,), float(i % 2))


loader = DataLoader(Rows(), batch_size=BATCH, num_workers=WORKERS, prefetch_factor=PREFETCH)


def epoch_session(epoch, fixed=False):
    it = iter(loader)
    xb, yb = next(it)
    loss = nn.functional.mse_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if fixed:
        del it  # its workers are stopped
    else:
        ITERS.append(it)  # the leak: its workers and prefetched batches stay with it


if __name__ == "__main__":
    import sessions

    sessions.run(epoch_session, "epoch")
