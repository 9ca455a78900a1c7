"""The written-out MLP training loop gives bit-for-bit the weights of the module version
(nn.Linear + autograd + torch.optim.AdamW, its products on OpenBLAS as the loop's are: inside
`portable_products`), so the probe's run records are those of the textbook training."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from crsbench.core import portable_products
from crsbench.ingest.types import Task
from crsbench.probes.kinds.estimators import MLP_BATCH, MLP_HIDDEN, MLP_LR, MLP_WEIGHT_DECAY, mlp


def module_mlp(x: np.ndarray, y: np.ndarray, task: Task, k: int, seed: int, steps: int) -> np.ndarray:
    """The probe as nn.Sequential + loss.backward() + AdamW.step(): the reference."""
    gen = torch.Generator().manual_seed(seed)
    xt = torch.as_tensor(x, dtype=torch.float32)
    hidden, head = torch.nn.Linear(xt.shape[1], MLP_HIDDEN), torch.nn.Linear(MLP_HIDDEN, k)
    net = torch.nn.Sequential(hidden, torch.nn.ReLU(), head)
    with torch.no_grad():
        for layer in (hidden, head):
            bound = float(1.0 / np.sqrt(layer.in_features))
            layer.weight.uniform_(-bound, bound, generator=gen)
            layer.bias.uniform_(-bound, bound, generator=gen)
    multilabel = task is Task.MULTILABEL
    yt = torch.as_tensor(y, dtype=torch.float32 if multilabel else torch.int64)
    loss_fn = torch.nn.BCEWithLogitsLoss() if multilabel else torch.nn.CrossEntropyLoss()
    opt = torch.optim.AdamW(net.parameters(), lr=MLP_LR, weight_decay=MLP_WEIGHT_DECAY)
    for _ in range(steps):
        idx = torch.randint(0, len(xt), (min(MLP_BATCH, len(xt)),), generator=gen)
        opt.zero_grad()
        loss_fn(net(xt[idx]), yt[idx]).backward()
        opt.step()
    with torch.no_grad():
        logits = net(xt).double()
    return (torch.sigmoid(logits) if multilabel else torch.softmax(logits, dim=1)).numpy()


@pytest.mark.parametrize(
    ("task", "n", "d"), [(Task.MULTICLASS, 40, 24), (Task.MULTILABEL, 300, 17), (Task.ORDINAL, 7, 9)]
)
def test_written_out_loop_matches_autograd_and_adamw_bit_for_bit(task, n, d, monkeypatch):
    monkeypatch.setattr("crsbench.probes.kinds.estimators.MLP_STEPS", 30)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, d))
    y = rng.integers(0, 2, size=(n, 4)) if task is Task.MULTILABEL else rng.integers(0, 4, size=n)
    ours = mlp(x, y, task, 4, seed=5)(x)
    with portable_products():
        reference = module_mlp(x, y, task, 4, seed=5, steps=30)
    assert ours.shape == reference.shape
    np.testing.assert_array_equal(ours, reference)
    with portable_products():
        assert not np.allclose(ours, module_mlp(x, y, task, 4, seed=6, steps=30))  # the seed matters
