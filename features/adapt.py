"""The adaptation regime (METHODS.md §13): LoRA adapters on a registered encoder, trained with a linear head.

    model = adapt(dataset, get_encoder("tiny-vit"), seed=0)          # LoRA + head, train split
    folder = save_adapter(model, adapter_dir(root, "tiny-vit", "isic2019", 0), meta)
    adapted = load_adapted(get_encoder("tiny-vit"), folder)          # base entry + adapter, merged
    extract(dataset, entry, store, regime=regime_name(0), model=adapted)

Adapters (peft LoRA: rank 8, alpha 16, dropout 0.05) go on the modules the registry entry names
in `lora_targets`, and only inside the entry's depth blocks (the attention and MLP projections
of a transformer's blocks, the convolutions of a CNN's stages), so a same-named stem such as a
ViT's `patch_embed.proj` stays frozen. The classifier is a linear head on the full-depth
feature, the same pooled feature the probes read. The base model stays in eval mode during
training: only adapter parameters change (normalisation statistics included), so the adapted
variant differs from the frozen encoder exactly by its adapter. Only the adapter weights are
saved (safetensors); reloading merges them into a freshly built base, which gives a plain
module with the base's structure, so the depth hooks and the one-pass extraction apply as is.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from torch import nn

# regime_name is re-exported: the `lora-s<seed>` naming lives in crsbench.core.
from crsbench.core import CrsbenchError, EncoderKey, ProgressFn, no_progress, portable_products
from crsbench.core import lora_regime as regime_name
from crsbench.features.hooks import DepthTap
from crsbench.features.loaders import build_model, state_dict_hash
from crsbench.features.registry import EncoderEntry
from crsbench.features.transforms import decode_image, model_input
from crsbench.ingest.types import Dataset, Task

if TYPE_CHECKING:
    from peft import PeftModel

META_FILE = "crsbench_adapter.json"
ADAPTER_FILE = "adapter_model.safetensors"


@dataclasses.dataclass(frozen=True)
class LoraSettings:
    """The paper's adaptation recipe (METHODS.md §13); `batch_size` and `max_steps` are practical knobs."""

    rank: int = 8
    alpha: int = 16
    dropout: float = 0.05
    lr: float = 2e-4
    epochs: int = 8
    batch_size: int = 32
    max_steps: int | None = None  # stop early (benchmarks, smoke tests); None = all epochs

    def __post_init__(self) -> None:
        if self.rank < 1 or self.alpha <= 0 or not 0 <= self.dropout < 1 or self.lr <= 0:
            raise CrsbenchError("LoRA needs rank >= 1, alpha > 0, 0 <= dropout < 1 and lr > 0")
        if self.epochs < 1 or self.batch_size < 1:
            raise CrsbenchError("--epochs and --batch-size must be positive")


def adapter_dir(root: Path | str, encoder_id: str, dataset: str, seed: int) -> Path:
    """`{root}/{dataset}/{encoder}@lora-s{seed}`, mirroring the feature store's keys."""
    return Path(root) / dataset / str(EncoderKey(encoder_id, regime_name(seed)))


def _root_prefix(model: nn.Module) -> str:
    root = getattr(model, "hook_root", model)
    for name, module in model.named_modules():
        if module is root:
            return f"{name}." if name else ""
    raise CrsbenchError(f"hook root of {type(model).__name__} is not one of its modules")


def lora_target_modules(model: nn.Module, entry: EncoderEntry) -> list[str]:
    """Full names of the modules that get adapters: named by `entry.lora_targets`, inside its blocks."""
    if not entry.lora_targets:
        raise CrsbenchError(f"encoder {entry.id!r} declares no lora_targets in the registry")
    prefix = _root_prefix(model)
    blocks = (entry.depth_blocks,) if isinstance(entry.depth_blocks, str) else entry.depth_blocks
    inside = tuple(f"{prefix}{b}." for b in blocks)
    names = [
        name
        for name, module in model.named_modules()
        if name.startswith(inside)
        and any(name == f"{prefix}{t}" or name.endswith(f".{t}") for t in entry.lora_targets)
        and isinstance(module, (nn.Linear, nn.Conv2d))
    ]
    if not names:
        raise CrsbenchError(
            f"encoder {entry.id!r}: no Linear/Conv2d module named {list(entry.lora_targets)} inside {list(blocks)}"
        )
    return names


def attach_lora(model: nn.Module, entry: EncoderEntry, settings: LoraSettings, seed: int) -> PeftModel:
    """Wrap `model` in a peft LoRA model (adapter init seeded); the base parameters are frozen."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=lora_target_modules(model, entry),
        bias="none",
    )
    torch.manual_seed(seed)
    return cast("PeftModel", get_peft_model(model, config))  # not mixed=True, so never a PeftMixedModel


def _labels(dataset: Dataset, rows: np.ndarray) -> torch.Tensor:
    y = np.asarray(dataset.labels)[rows]
    if dataset.task is Task.MULTILABEL:
        return torch.as_tensor(y, dtype=torch.float32)
    return torch.as_tensor(y, dtype=torch.long)


def _batch(dataset: Dataset, entry: EncoderEntry, rows: Sequence[int] | np.ndarray) -> torch.Tensor:
    paths = dataset.images["rel_path"].astype(str).to_numpy()
    images = [torch.tensor(decode_image(dataset.root, str(paths[r])))[None] for r in rows]
    return torch.cat([model_input(im, entry, torch.float32) for im in images])


def _train_mode(model: nn.Module) -> None:
    # Base modules stay in eval mode (batch-norm statistics and dropout of the frozen encoder
    # unchanged); only the adapters' own dropout is active.
    model.eval()
    for name, module in model.named_modules():
        if "lora_dropout" in name:
            module.train()


@dataclasses.dataclass
class AdaptResult:
    model: PeftModel  # the peft model (base + adapters), eval mode
    head: nn.Linear
    losses: list[float]  # mean training loss per epoch
    steps: int
    seconds: float
    base_weights_hash: str

    @property
    def adapter_norm(self) -> float:
        """Frobenius norm of every lora_B (zero at init): 0 means the adapters never moved, as
        behind a zero-initialised normalisation (timm's random-init ResNet blocks)."""
        norms = [float(p.detach().float().norm()) for n, p in self.model.named_parameters() if "lora_B" in n]
        return float(np.sqrt(np.sum(np.square(norms))))


def adapt(
    dataset: Dataset,
    entry: EncoderEntry,
    *,
    seed: int = 0,
    settings: LoraSettings = LoraSettings(),
    device: str = "cpu",
    weights: str | None = None,
    model: nn.Module | None = None,
    progress: ProgressFn | None = None,
) -> AdaptResult:
    """Train LoRA adapters and a linear head on the dataset's train split (one seed)."""
    progress = progress or no_progress
    train = dataset.split_rows("train")
    if len(train) == 0:
        raise CrsbenchError(f"dataset {dataset.name!r} has no train split to adapt on")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise CrsbenchError("--device cuda requested but no CUDA device is available")
    base = model if model is not None else build_model(entry, weights)
    base_hash = state_dict_hash(base)
    peft_model = attach_lora(base, entry, settings, seed).to(dev)
    wrapped = peft_model.base_model.model  # the base model, its layers now holding the adapters
    assert isinstance(wrapped, nn.Module)
    tap = DepthTap(wrapped, entry)
    try:
        with torch.no_grad():
            probe = torch.zeros((1, 3, entry.input_size, entry.input_size), device=dev)
            dim = int(tap(probe)[1.0].shape[1])
        torch.manual_seed(seed)
        head = nn.Linear(dim, len(dataset.label_names)).to(dev)
        params = [p for p in peft_model.parameters() if p.requires_grad] + list(head.parameters())
        optimiser = torch.optim.AdamW(params, lr=settings.lr)
        loss_fn: nn.Module = nn.BCEWithLogitsLoss() if dataset.task is Task.MULTILABEL else nn.CrossEntropyLoss()
        label = f"LoRA {entry.id} on {dataset.name} (seed {seed})"
        started = time.perf_counter()
        # The steps' products, backward included, on OpenBLAS on the CPU (crsbench.core.portable_products).
        with portable_products(dev):
            losses, steps = _train(
                _Training(peft_model, head, tap, loss_fn, optimiser, dev),
                dataset,
                entry,
                train,
                settings,
                seed,
                label,
                progress,
            )
        peft_model.eval()
        return AdaptResult(peft_model, head.eval(), losses, steps, time.perf_counter() - started, base_hash)
    finally:
        tap.close()


@dataclasses.dataclass(frozen=True)
class _Training:
    """What one seed's training steps update."""

    peft_model: nn.Module
    head: nn.Module
    tap: DepthTap
    loss_fn: nn.Module
    optimiser: torch.optim.Optimizer
    device: torch.device


def _train(
    run: _Training,
    dataset: Dataset,
    entry: EncoderEntry,
    train: np.ndarray,
    settings: LoraSettings,
    seed: int,
    label: str,
    progress: ProgressFn,
) -> tuple[list[float], int]:
    """The epochs of AdamW steps over shuffled train batches; the mean loss per epoch and the step count."""
    order_rng = np.random.default_rng(seed)
    n_batches = -(-len(train) // settings.batch_size)
    total = settings.epochs * n_batches
    if settings.max_steps is not None:
        total = min(total, settings.max_steps)
    losses: list[float] = []
    steps = 0
    progress(label, 0, total)
    _train_mode(run.peft_model)
    for _ in range(settings.epochs):
        order = order_rng.permutation(train)
        epoch_loss = []
        for b in range(n_batches):
            if steps >= total:
                break
            rows = order[b * settings.batch_size : (b + 1) * settings.batch_size]
            x = _batch(dataset, entry, rows).to(run.device)
            y = _labels(dataset, rows).to(run.device)
            loss = run.loss_fn(run.head(run.tap.forward_depths(x)[1.0]), y)
            run.optimiser.zero_grad(set_to_none=True)
            loss.backward()
            run.optimiser.step()
            epoch_loss.append(float(loss.detach()))
            steps += 1
            progress(label, steps, total)
        if epoch_loss:
            losses.append(float(np.mean(epoch_loss)))
    return losses, steps


def save_adapter(result: AdaptResult, folder: Path | str, meta: dict[str, Any]) -> Path:
    """Write the adapter weights (safetensors) and a JSON record of how they were made; atomic."""
    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".partial")
    if tmp.exists():
        import shutil

        shutil.rmtree(tmp)
    result.model.save_pretrained(str(tmp), safe_serialization=True)
    if not (tmp / ADAPTER_FILE).exists():
        raise CrsbenchError(f"peft wrote no {ADAPTER_FILE} into {tmp}")
    record = {
        **meta,
        "steps": result.steps,
        "losses": result.losses,
        "seconds": result.seconds,
        "base_weights_hash": result.base_weights_hash,
        "adapter_norm": result.adapter_norm,
    }
    (tmp / META_FILE).write_text(json.dumps(record, indent=2, sort_keys=True, default=str))
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(folder)
    return folder


def adapter_meta(folder: Path | str) -> dict[str, Any]:
    path = Path(folder) / META_FILE
    if not path.exists():
        raise CrsbenchError(f"no saved adapter in {folder} (missing {META_FILE})")
    meta: dict[str, Any] = json.loads(path.read_text())
    return meta


def load_adapted(
    entry: EncoderEntry, folder: Path | str, *, weights: str | None = None, merge: bool = True
) -> nn.Module:
    """Base entry + saved adapter. Merged (default): a plain module shaped like the base."""
    from peft import PeftModel

    folder = Path(folder)
    meta = adapter_meta(folder)
    if meta.get("encoder_id") not in (None, entry.id):
        raise CrsbenchError(f"adapter in {folder} belongs to encoder {meta['encoder_id']!r}, not {entry.id!r}")
    base = build_model(entry, weights)
    if meta.get("base_weights_hash") and state_dict_hash(base) != meta["base_weights_hash"]:
        raise CrsbenchError(
            f"adapter in {folder} was trained on other base weights of {entry.id!r} (weights hash differs)"
        )
    from crsbench.features.hub import library_calls

    with library_calls():  # a local folder: offline, peft's and transformers' output captured
        model = PeftModel.from_pretrained(base, str(folder), is_trainable=False)
    return (model.merge_and_unload() if merge else model).eval()
