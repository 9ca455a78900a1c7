"""The MLP probe's training loop, written out: the forward and backward ATen calls that
autograd makes for Linear + ReLU + Linear and the loss, and torch's single-tensor AdamW
update, in the same order on the same tensors, so the weights are bit-for-bit those of
`nn.Sequential` + `loss.backward()` + `torch.optim.AdamW.step()` (tests/probes/test_mlp.py
checks this against the module version). What it saves is the per-step machinery around
those calls (autograd graph, optimizer hooks and bookkeeping): at the demo's sizes a step
is ~25 small kernels, and the machinery cost more than the arithmetic.
"""

from __future__ import annotations

import dataclasses

import torch

from crsbench.core.products import addmm, matmul

_MEAN = 1  # at::Reduction::Mean
_NO_IGNORE = -100  # CrossEntropyLoss's default ignore_index


@dataclasses.dataclass
class AdamW:
    """torch.optim.AdamW's defaults (betas 0.9, 0.999; eps 1e-8; no amsgrad), one tensor at a time."""

    lr: float
    weight_decay: float
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def __post_init__(self) -> None:
        self.step_count = torch.tensor(0.0)  # a float32 tensor, as torch keeps it
        self.moments: list[tuple[torch.Tensor, torch.Tensor]] = []

    def step(self, params: list[torch.Tensor], grads: list[torch.Tensor]) -> None:
        if not self.moments:
            self.moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
        self.step_count += 1
        step = self.step_count.item()
        step_size = self.lr / (1 - self.beta1**step)
        bias_correction2_sqrt = (1 - self.beta2**step) ** 0.5
        for param, grad, (exp_avg, exp_avg_sq) in zip(params, grads, self.moments, strict=True):
            param.mul_(1 - self.lr * self.weight_decay)
            exp_avg.lerp_(grad, 1 - self.beta1)
            exp_avg_sq.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)


def forward(params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    w1, b1, w2, b2 = params
    return addmm(b2, torch.relu(addmm(b1, x, w1.t())), w2.t())


def gradients(params: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor, multilabel: bool) -> list[torch.Tensor]:
    """d loss / d (w1, b1, w2, b2) for one minibatch, by autograd's own backward kernels."""
    w1, b1, w2, b2 = params
    hidden = torch.relu(addmm(b1, x, w1.t()))  # the products on OpenBLAS: crsbench.core.products
    logits = addmm(b2, hidden, w2.t())
    if multilabel:
        # autograd's formula (FunctionsManual.cpp): (sigmoid(x) - y) * grad / numel, grad = 1
        d_logits = (logits.sigmoid() - y).div_(logits.numel())
    else:
        one = torch.ones((), dtype=logits.dtype)
        logp = torch.log_softmax(logits, dim=1)
        _, total_weight = torch.ops.aten.nll_loss_forward(logp, y, None, _MEAN, _NO_IGNORE)
        d_logp = torch.ops.aten.nll_loss_backward(one, logp, y, None, _MEAN, _NO_IGNORE, total_weight)
        d_logits = torch._log_softmax_backward_data(d_logp, logp, 1, logits.dtype)
    d_w2 = matmul(d_logits.t(), hidden)
    d_b2 = d_logits.sum(0)
    d_hidden = torch.ops.aten.threshold_backward(matmul(d_logits, w2), hidden, 0)
    d_w1 = matmul(d_hidden.t(), x)
    d_b1 = d_hidden.sum(0)
    return [d_w1, d_b1, d_w2, d_b2]
