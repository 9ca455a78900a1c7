"""A registered transformers entry builds its publisher's architecture and no other
(features/architecture.py): a folder whose config differs is refused in one line naming the
field, both values and the folder, before its weights are read; `hf:` of the same folder loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import zarr
from support.one_model_support import cli, one_line_user_error, warehouse_digest
from support.user_encoders_support import make_tiny_db

from crsbench.core import CrsbenchError
from crsbench.features.architecture import check_architecture
from crsbench.features.lookup import get_encoder, list_encoders

ENTRIES = ("clip", "dinov2", "llava-med", "medgemma-4b", "medsiglip", "rad-dino", "siglip")
FIELDS = {"hidden_size", "num_hidden_layers", "patch_size", "image_size"}


def _dinov2_small_like(folder: Path) -> Path:
    """A DINOv2 folder of DINOv2-S's width (hidden_size 384), one layer and 28 px to stay small."""
    import transformers as T

    torch.manual_seed(0)
    config = T.Dinov2Config(
        hidden_size=384, intermediate_size=64, num_hidden_layers=1, num_attention_heads=6, image_size=28, patch_size=14
    )
    T.Dinov2Model(config).save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(
        json.dumps({"size": {"height": 28, "width": 28}, "image_mean": [0.5] * 3, "image_std": [0.5] * 3})
    )
    return folder


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return make_tiny_db(tmp_path_factory), _dinov2_small_like(tmp_path_factory.mktemp("w") / "dino-small")


@pytest.fixture
def db(made, tmp_path):
    shutil.copytree(made[0].parent, tmp_path / "w")
    return tmp_path / "w" / made[0].name


@pytest.mark.slow
@pytest.mark.parametrize("encoder", ["dinov2", "rad-dino"])
def test_a_smaller_dinov2_is_refused_by_the_registered_ids(encoder, made, db):
    folder = made[1]
    before = warehouse_digest(db)
    rc, _, err = cli("extract", "--db", str(db), "-e", encoder, "-d", "aptos", "--weights", str(folder))
    one_line_user_error(rc, err, f"encoder '{encoder}'", "has hidden_size 384", "has hidden_size 768", f"hf:{folder}")
    assert warehouse_digest(db) == before  # no store, no catalog row


@pytest.mark.slow
def test_the_same_folder_loads_as_an_hf_id(made, db):
    folder = made[1]
    rc, _, err = cli("extract", "--db", str(db), "-e", f"hf:{folder}", "-d", "aptos", "--threads", "1")
    assert rc == 0, err[-3000:]
    attrs = zarr.open_group(str(db) + ".features.zarr", mode="r")["aptos/hf:dino-small"].attrs
    assert attrs["complete"] and attrs["dim"] == 384


# -- every entry's declaration, against its publisher's config layout -----------------------------


def _configs():
    """A config folder (no weights) of each entry's published architecture, in the layout its
    publisher ships: a DINOv2 config, CLIP and SigLIP image-text configs (`vision_config`),
    Gemma 3's image-text-to-text config (MedGemma's vision_config as published). Values the
    publishers leave out take transformers' defaults, as they do when the folder is read."""
    import transformers as T

    clip_b16 = {"hidden_size": 768, "patch_size": 16, "image_size": 224, "num_hidden_layers": 12}
    clip_l14_336 = {
        "hidden_size": 1024,
        "patch_size": 14,
        "image_size": 336,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
    }
    so400m = {
        "hidden_size": 1152,
        "patch_size": 14,
        "num_hidden_layers": 27,
        "num_attention_heads": 16,
        "intermediate_size": 4304,
    }
    return {
        "dinov2": T.Dinov2Config(hidden_size=768, num_hidden_layers=12, patch_size=14, image_size=518),
        "rad-dino": T.Dinov2Config(hidden_size=768, num_hidden_layers=12, patch_size=14, image_size=518),
        "clip": T.CLIPConfig(vision_config=clip_b16),
        "llava-med": T.CLIPConfig(vision_config=clip_l14_336),
        "siglip": T.SiglipConfig(),  # siglip-base-patch16-224 is SigLIP's default
        "medsiglip": T.SiglipConfig(vision_config={**so400m, "image_size": 448}),
        "medgemma-4b": T.Gemma3Config(vision_config={**so400m, "image_size": 896, "vision_use_head": False}),
    }


def test_every_registered_transformers_entry_declares_its_architecture():
    built_in = [e for e in list_encoders() if e.loader == "transformers" and e.pretrained and e.origin == "built-in"]
    assert {e.id for e in built_in} == set(ENTRIES)
    for entry in built_in:
        assert set(entry.architecture) == FIELDS, entry.id


@pytest.mark.parametrize("encoder", ENTRIES)
def test_the_published_config_passes_and_one_other_field_is_named(encoder, tmp_path):
    config = _configs()[encoder]
    config.save_pretrained(tmp_path / "ok")
    entry = get_encoder(encoder)
    check_architecture(entry, tmp_path / "ok")

    part = getattr(config, "vision_config", None) or config
    part.num_hidden_layers = part.num_hidden_layers - 1  # one layer fewer
    config.save_pretrained(tmp_path / "short")
    want = entry.architecture["num_hidden_layers"]
    with pytest.raises(CrsbenchError) as info:
        check_architecture(entry, tmp_path / "short")
    text = str(info.value)
    assert f"has num_hidden_layers {want - 1}" in text and f"has num_hidden_layers {want}" in text
    assert str(tmp_path / "short") in text and "\n" not in text


def test_a_config_transformers_cannot_read_is_checked_as_written(tmp_path):
    # The LLaVA-Med model folder (a Mistral with its own model type) is not the vision tower the entry reads.
    (tmp_path / "llava").mkdir()
    (tmp_path / "llava" / "config.json").write_text(
        json.dumps({"model_type": "llava_mistral", "hidden_size": 4096, "num_hidden_layers": 32})
    )
    with pytest.raises(
        CrsbenchError, match=r"config.json has hidden_size 4096, the published LLaVA-Med has hidden_size 1024"
    ):
        check_architecture(get_encoder("llava-med"), tmp_path / "llava")


def test_hf_ids_and_user_entries_declare_none(tmp_path):
    folder = _dinov2_small_like(tmp_path / "dino-small")
    from crsbench.features.by_id import entry_from_id

    entry = entry_from_id(f"hf:{folder}")
    assert dict(entry.architecture) == {}
    check_architecture(entry, folder)  # any architecture
