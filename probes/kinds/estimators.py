"""The three probes of METHODS.md §3: logistic regression (primary), a two-layer MLP and k-NN."""

from __future__ import annotations

import numpy as np
import torch

from crsbench.core.products import addmm
from crsbench.ingest.types import Task
from crsbench.probes import knn as knn_search
from crsbench.probes import mlp as mlp_train
from crsbench.probes.checks import check_fit_inputs
from crsbench.probes.lbfgs import output_weights
from crsbench.probes.newton import solve_logreg
from crsbench.probes.registry import Predictor, register_probe


class LinearPredictor:
    """A fitted linear probe: p = softmax or sigmoid(x W + b) on standardised features.

    Its `weights` (D, K) and `bias` (K,) are what the warehouse keeps (table coefficients), so
    a later analysis applies the probe without refitting it.
    """

    def __init__(self, weights: torch.Tensor, bias: torch.Tensor, softmax: bool) -> None:
        self.weights, self.bias, self.softmax = weights, bias, softmax

    def __call__(self, x_eval: np.ndarray) -> np.ndarray:
        logits = addmm(self.bias, torch.as_tensor(x_eval, dtype=torch.float64), self.weights)
        return (torch.softmax(logits, dim=1) if self.softmax else torch.sigmoid(logits)).numpy()


# MLP budget, fixed so every encoder gets the same one; sized so the demo grid
# (375 MLP fits) stays within a couple of minutes on 2 CPU cores.
MLP_HIDDEN = 128
MLP_STEPS = 200
MLP_BATCH = 256
MLP_LR = 1e-3
MLP_WEIGHT_DECAY = 1e-4
KNN_K = 5


def _targets(y: np.ndarray, task: Task, n_outputs: int) -> torch.Tensor:
    if task is Task.MULTILABEL:
        return torch.as_tensor(y, dtype=torch.float64)
    return torch.nn.functional.one_hot(torch.as_tensor(y, dtype=torch.int64), n_outputs)


@register_probe(
    "logreg",
    seeded=False,
    description="l2 logistic regression, lambda = 1/N_train on the mean loss (sklearn C=1), "
    "exact Newton on small training sets, else L-BFGS; multinomial for multiclass/ordinal, one-vs-rest per label for multilabel",
)
def logreg(x: np.ndarray, y: np.ndarray, task: Task, n_outputs: int, seed: int) -> Predictor:
    check_fit_inputs(x, y, task, n_outputs)
    softmax = task is not Task.MULTILABEL
    sol = solve_logreg(torch.as_tensor(x), _targets(y, task, n_outputs), softmax)
    weights, bias = output_weights(sol.coef, sol.intercept, softmax)
    return LinearPredictor(weights, bias, softmax)


@register_probe(
    "mlp",
    seeded=True,
    description=f"Linear({MLP_HIDDEN}) + ReLU + Linear; AdamW lr {MLP_LR}, weight decay "
    f"{MLP_WEIGHT_DECAY}, {MLP_STEPS} steps of {MLP_BATCH}-sample minibatches "
    f"drawn with the fit seed; softmax (multiclass/ordinal) or sigmoid (multilabel)",
)
def mlp(x: np.ndarray, y: np.ndarray, task: Task, n_outputs: int, seed: int) -> Predictor:
    check_fit_inputs(x, y, task, n_outputs)
    gen = torch.Generator().manual_seed(int(seed))
    xt = torch.as_tensor(x, dtype=torch.float32)
    params = []
    for fan_in, fan_out in ((xt.shape[1], MLP_HIDDEN), (MLP_HIDDEN, n_outputs)):
        # nn.Linear's shapes, initialised from the fit's own generator, not the global one
        bound = float(1.0 / np.sqrt(fan_in))
        params.append(torch.empty(fan_out, fan_in).uniform_(-bound, bound, generator=gen))
        params.append(torch.empty(fan_out).uniform_(-bound, bound, generator=gen))
    multilabel = task is Task.MULTILABEL
    yt = torch.as_tensor(y, dtype=torch.float32 if multilabel else torch.int64)
    opt = mlp_train.AdamW(lr=MLP_LR, weight_decay=MLP_WEIGHT_DECAY)
    n = xt.shape[0]
    with torch.no_grad():
        for _ in range(MLP_STEPS):
            idx = torch.randint(0, n, (min(MLP_BATCH, n),), generator=gen)
            opt.step(params, mlp_train.gradients(params, xt[idx], yt[idx], multilabel))

    def predict(x_eval: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            logits = mlp_train.forward(params, torch.as_tensor(x_eval, dtype=torch.float32)).double()
        return (torch.sigmoid(logits) if multilabel else torch.softmax(logits, dim=1)).numpy()

    return predict


@register_probe(
    "knn",
    seeded=False,
    deferred=True,
    description=f"k-nearest neighbours, k = {KNN_K} (fewer if the training set is smaller), "
    "Euclidean on standardised features; probability = fraction of the k "
    "neighbours in each class (multiclass/ordinal) or with the label (multilabel); "
    "neighbours exactly those of a float64 search, ties to the lower training row",
)
def knn(x: np.ndarray, y: np.ndarray, task: Task, n_outputs: int, seed: int) -> Predictor:
    check_fit_inputs(x, y, task, n_outputs)
    index = knn_search.prepare(torch.as_tensor(x))
    votes = _targets(y, task, n_outputs).to(torch.float64)
    k = min(KNN_K, index.x64.shape[0])

    def predict(x_eval: np.ndarray) -> np.ndarray:
        order = knn_search.neighbours(index, torch.as_tensor(x_eval), k)
        return votes[order].mean(dim=1).numpy()

    return predict
