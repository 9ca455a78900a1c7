"""LoRA adaptation (METHODS.md §13): only adapters train, the adapter round-trips, targets come
from the registry."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from crsbench.core import CrsbenchError
from crsbench.features import get_encoder
from crsbench.features.adapt import (
    ADAPTER_FILE,
    LoraSettings,
    adapt,
    adapter_dir,
    adapter_meta,
    load_adapted,
    lora_target_modules,
    regime_name,
    save_adapter,
)
from crsbench.features.hooks import DepthTap
from crsbench.features.loaders import build_model

torch.set_num_threads(1)
FAST = LoraSettings(epochs=1, batch_size=34)  # two steps on the suite's 68 training images


def _base_view(peft_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The base model's state inside a peft model, under the base's own names."""
    out = {}
    for name, value in peft_state.items():
        if "lora_" in name:
            continue
        out[name.removeprefix("base_model.model.").replace(".base_layer.", ".")] = value
    return out


@pytest.fixture(scope="module")
def trained(suite_datasets):
    entry = get_encoder("tiny-vit")
    base = build_model(entry)
    before = {k: v.detach().clone() for k, v in base.state_dict().items()}
    result = adapt(suite_datasets["isic2019"], entry, seed=0, settings=FAST, model=base)
    return entry, before, result


def test_targets_are_the_registry_modules_inside_the_blocks():
    vit = get_encoder("tiny-vit")
    names = lora_target_modules(build_model(vit), vit)
    # timm ViT-Ti: 12 blocks x (attn.qkv, attn.proj, mlp.fc1, mlp.fc2); patch_embed.proj is not a block
    assert len(names) == 12 * 4 and "patch_embed.proj" not in names
    assert {n.split(".", 2)[2] for n in names} == {"attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2"}
    res = get_encoder("tiny-resnet18")
    names = lora_target_modules(build_model(res), res)
    # ResNet-18: 4 stages x 2 BasicBlocks x (conv1, conv2); the stem conv1 stays frozen
    assert len(names) == 16 and "conv1" not in names and all(n.startswith("layer") for n in names)


def test_lora_changes_only_adapter_parameters(trained):
    _, before, result = trained
    state = result.model.state_dict()
    after = _base_view(state)
    assert after.keys() == before.keys()
    for name, value in before.items():
        assert torch.equal(after[name], value), name  # bit-identical, buffers included
    trainable = {n for n, p in result.model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    # lora_B starts at zero; after training the adapters have moved
    assert result.adapter_norm > 0
    assert result.steps == 2 and len(result.losses) == 1 and np.isfinite(result.losses[0])


def test_adapter_round_trips(trained, suite_datasets, tmp_path):
    entry, _, result = trained
    folder = save_adapter(result, adapter_dir(tmp_path, entry.id, "isic2019", 0), {"encoder_id": entry.id, "seed": 0})
    assert folder.name == "tiny-vit@lora-s0" and adapter_meta(folder)["seed"] == 0
    saved = load_file(folder / ADAPTER_FILE)
    assert saved and all("lora_" in k for k in saved)  # adapter weights only
    x = torch.randn(3, 3, entry.input_size, entry.input_size, generator=torch.Generator().manual_seed(1))
    tap = DepthTap(result.model.base_model.model, entry)
    want = tap(x)
    tap.close()
    unmerged = load_adapted(entry, folder, merge=False)
    tap = DepthTap(unmerged.base_model.model, entry)
    got = tap(x)
    tap.close()
    merged = load_adapted(entry, folder)
    assert type(merged) is type(build_model(entry))  # a plain module: the depth hooks apply as is
    got_merged = DepthTap(merged, entry)(x)
    frozen = DepthTap(build_model(entry), entry)(x)
    for depth in want:
        assert torch.equal(got[depth], want[depth])
        torch.testing.assert_close(got_merged[depth], want[depth], atol=1e-4, rtol=1e-4)
    assert not torch.allclose(frozen[1.0], want[1.0], atol=1e-4)


def test_seeds_are_deterministic_and_distinct(suite_datasets):
    entry = get_encoder("tiny-dinov2")
    ds = suite_datasets["isic2019"]
    one = LoraSettings(epochs=1, batch_size=34, max_steps=1)
    a = adapt(ds, entry, seed=0, settings=one).model.state_dict()
    b = adapt(ds, entry, seed=0, settings=one).model.state_dict()
    c = adapt(ds, entry, seed=1, settings=one).model.state_dict()
    lora = [k for k in a if "lora_" in k]
    assert all(torch.equal(a[k], b[k]) for k in lora)
    assert not all(torch.equal(a[k], c[k]) for k in lora)


def test_errors_name_the_problem(trained, tmp_path):
    entry, _, result = trained
    folder = save_adapter(result, tmp_path / "a", {"encoder_id": entry.id})
    with pytest.raises(CrsbenchError, match="belongs to encoder"):
        load_adapted(get_encoder("tiny-dinov2"), folder)
    with pytest.raises(CrsbenchError, match="no saved adapter"):
        load_adapted(entry, tmp_path / "missing")
    with pytest.raises(CrsbenchError):
        LoraSettings(rank=0)
    assert regime_name(2) == "lora-s2"
