"""BioViL (CXR-BERT) zero-shot fidelity: on a random-weight checkpoint fabricated in hi-ml-multimodal's
layout, crsbench's zero-shot logits equal the upstream computation to 1e-5 relative, first from the
tap's `proj` depth, then end to end through the feature store and the probe grid.

The upstream computation is rebuilt from microsoft/hi-ml (hi-ml-multimodal is not installed beside
crsbench's pins): `ImageModel.forward` (image/model/model.py) gives the projected global embedding
as `torch.mean(projector(patch_x), dim=(2, 3))`, where `patch_x` is the ResNet's last stage and the
projector `modules.MLP(2048, 128, hidden_dim=128, use_1x1_convs=True)`; `CXRBertModel.
get_projected_text_embeddings` (text/model/modelling_cxrbert.py) L2-normalises the projected [CLS]
token; image-text pairs are scored by cosine similarity (`ImageTextInferenceEngine`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from crsbench.features.hooks import DepthTap
from crsbench.features.loaders import build_model
from crsbench.features.store import PROJ
from crsbench.features.text import load_text_tower
from crsbench.features.zeroshot import _unit, class_embeddings
from crsbench.ingest.types import Dataset, Task

WEIGHTS = "biovil_image_resnet50_proj_size_128.pt"
SIZE = 64


def _close(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5 * np.abs(theirs).max())


def _entry():
    from crsbench.features.lookup import get_encoder

    return dataclasses.replace(get_encoder("biovil"), input_size=SIZE, model_kwargs={"layers": (1, 1, 1, 1)})


class Upstream:
    """hi-ml-multimodal's BioViL, rebuilt: ImageModel (torchvision ResNet + 1x1-conv MLP) and
    CXRBertModel (BertForMaskedLM + cls_projection_head), with random weights."""

    def __init__(self, folder: Path, words: list[str]) -> None:
        from torchvision.models.resnet import Bottleneck, ResNet
        from transformers import BertConfig, BertForMaskedLM, BertTokenizer

        torch.manual_seed(0)
        self.resnet = ResNet(Bottleneck, [1, 1, 1, 1]).eval()
        self.projector = nn.Sequential(
            nn.Conv2d(2048, 128, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU(inplace=True), nn.Conv2d(128, 128, 1)
        ).eval()
        with torch.no_grad():  # batch-norm statistics away from their init
            for m in [*self.resnet.modules(), *self.projector.modules()]:
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.1, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
        image = {f"encoder.encoder.{k}": v for k, v in self.resnet.state_dict().items()}
        image.update({f"projector.model.{k}": v for k, v in self.projector.state_dict().items()})
        torch.save(image, folder / WEIGHTS)
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(words)]
        (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
        config = BertConfig(
            vocab_size=len(vocab),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
        )
        self.mlm = BertForMaskedLM(config).eval()
        self.head = nn.ModuleDict(
            {
                "dense_to_hidden": nn.Linear(32, 128),
                "LayerNorm": nn.LayerNorm(128, eps=1e-12),
                "dense_to_output": nn.Linear(128, 128),
            }
        )
        state = {**self.mlm.state_dict(), **{f"cls_projection_head.{k}": v for k, v in self.head.state_dict().items()}}
        torch.save(state, folder / "pytorch_model.bin")
        (folder / "config.json").write_text(
            json.dumps({**config.to_dict(), "projection_size": 128, "model_type": "cxr-bert"})
        )
        self.tokenizer = BertTokenizer(str(folder / "vocab.txt"))

    @torch.no_grad()
    def image(self, x: torch.Tensor) -> np.ndarray:
        m = self.resnet
        patch_x = m.layer4(m.layer3(m.layer2(m.layer1(m.maxpool(m.relu(m.bn1(m.conv1(x))))))))
        projected = torch.mean(self.projector(patch_x), dim=(2, 3))
        return np.asarray(nn.functional.normalize(projected, dim=1).double().numpy())

    @torch.no_grad()
    def text(self, texts: list[str]) -> np.ndarray:
        tokens = self.tokenizer(texts, padding="longest", return_tensors="pt")
        cls = self.mlm(**tokens, output_hidden_states=True).hidden_states[-1][:, 0, :]
        h = self.head
        proj = h["dense_to_output"](h["LayerNorm"](nn.functional.gelu(h["dense_to_hidden"](cls))))
        return np.asarray(nn.functional.normalize(proj, dim=1).double().numpy())

    def class_embeddings(self, per_class: list[list[str]]) -> np.ndarray:
        """CLIP's ensembling (METHODS.md §3.5) on the upstream text embeddings."""
        return np.stack([_unit(self.text(texts).mean(axis=0)) for texts in per_class])


def _words(texts: list[str]) -> list[str]:
    """BERT's basic tokenisation (lower case, split at spaces and punctuation): the vocabulary."""
    import re

    return [w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower())]


def test_biovil_logits_from_the_proj_depth(tmp_path: Path) -> None:
    texts = ["a chest x-ray showing effusion", "a chest x-ray with no pneumothorax", "no finding"]
    upstream = Upstream(tmp_path, _words(texts))
    entry = _entry()
    x = torch.randn(3, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
    tap = DepthTap(build_model(entry, weights=tmp_path / WEIGHTS), entry)
    feats = tap(x)
    tap.close()
    assert feats[PROJ].shape == (3, 128) and feats[1.0].shape == (3, 2048)
    assert tap.depths[-1] == PROJ
    tower = load_text_tower(entry, tmp_path / WEIGHTS)
    assert tower.logit_scale == 1.0 and tower.logit_bias == 0.0
    ours = tower.logit_scale * (_unit(feats[PROJ].double().numpy()) @ _unit(tower.encode(texts)).T)
    _close(ours, upstream.image(x) @ upstream.text(texts).T)


def test_biovil_checkpoint_without_its_projector_is_refused(tmp_path: Path) -> None:
    from crsbench.core import CrsbenchError

    Upstream(tmp_path, ["effusion"])
    state = torch.load(tmp_path / WEIGHTS)
    torch.save({k: v for k, v in state.items() if not k.startswith("projector.")}, tmp_path / WEIGHTS)
    with pytest.raises(CrsbenchError, match=r"no key starts with 'projector.model.'"):
        build_model(_entry(), weights=tmp_path / WEIGHTS)


def test_biovil_zero_shot_end_to_end(tmp_path: Path, suite_datasets: dict[str, Dataset]) -> None:
    """Extract (depth `proj` stored beside the four depths), embed the prompts, run the zero-shot
    fit through the grid: its stored probabilities on the clean test split equal the upstream
    model's sigmoid(cos(image, positive) - cos(image, negative)) per label (chexpert, multilabel)."""
    from crsbench.features.extraction import extract
    from crsbench.features.store import FeatureSetRef, FeatureStore
    from crsbench.features.transforms import decode_image, model_input
    from crsbench.features.zeroshot import store_text_embeddings
    from crsbench.ingest.prompts import prompts_for
    from crsbench.probes.grid import GridContext, run_grid
    from crsbench.probes.identity import identify
    from crsbench.probes.records import FitKey

    ds = suite_datasets["chexpert"]
    full = prompts_for(ds)  # one template per side keeps the text work small
    prompts = dataclasses.replace(full, templates=full.templates[:1], negative_templates=full.negative_templates[:1])
    pos, neg = prompts.texts(prompts.templates), prompts.texts(prompts.negative_templates)
    upstream = Upstream(tmp_path, _words([t for group in pos + neg for t in group]))
    entry = _entry()
    store = FeatureStore(str(tmp_path / "features.zarr"))
    attrs = extract(
        ds, entry, store, weights=str(tmp_path / WEIGHTS), dtype="float32", workers=2, pixel_processes=False
    )
    assert attrs.stored.depths == ("d025", "d050", "d075", "d100", PROJ) and attrs.stored.raw["dims"][PROJ] == 128
    ref = FeatureSetRef(ds.name, entry.id)
    assert store.has_proj(ref) and store.array(ref, PROJ, "gaussian_blur-s1").shape == (ds.n_images, 128)
    tower = load_text_tower(entry, tmp_path / WEIGHTS)
    digest = store_text_embeddings(store, ref, prompts, Task.MULTILABEL, tower, entry)
    np.testing.assert_allclose(
        np.asarray(store.attrs(ref)["zeroshot"][digest]["embeddings"]),
        class_embeddings(tower, prompts, Task.MULTILABEL),
    )
    frames: list[tuple[object, object]] = []
    fit = FitKey(entry.id, ds.name, 1.0, "zeroshot", 0.0, 0)
    run_grid([fit], GridContext({ds.name: ds}, store, lambda r, p: frames.append((r, p))))
    runs, preds = frames[0]
    assert set(runs["depth"]) == {1.0} and set(runs["n_train"]) == {0}
    (fit_id,) = {f.fit_id for f in identify([fit], {ds.name: ds}, {}, store)}
    clean = preds[(preds["condition"] == "clean") & (preds["fit_id"] == fit_id)].sort_values("row_index")
    rows = clean["row_index"].to_numpy()
    assert np.array_equal(rows, ds.split_rows("test"))
    images = [decode_image(ds.root, ds.images["rel_path"].iloc[r]) for r in rows]
    x = model_input(torch.from_numpy(np.stack(images)), entry, torch.float32)
    image = upstream.image(x)
    diff = image @ upstream.class_embeddings(pos).T - image @ upstream.class_embeddings(neg).T
    _close(np.stack(clean["probs"].to_numpy()).astype(np.float64), 1.0 / (1.0 + np.exp(-diff)))
