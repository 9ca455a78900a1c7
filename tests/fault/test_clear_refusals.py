"""Mistakes that used to end in an internal error (exit 2), a hang or a riddle are one line naming
the file, the entry or the value and the way out, exit 1 (issue 40 points 8 and 9). Each case
runs the CLI in a subprocess, offline, with an empty Hugging Face cache; where a warehouse is
named, its file is byte-identical afterwards. Every input is a small file made here: a model
folder's config.json as its publisher ships it, a FIFO (`os.mkfifo`), a NumPy .npz, a checkpoint in
hi-ml's BioViL-T layout with a small ResNet.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from support.fault_support import env, one_line_user_error, synthetic_warehouse

pytestmark = pytest.mark.slow  # each case starts the CLI (torch, timm) in a subprocess
RUN_CLI = "import sys\nfrom crsbench.cli import main\nsys.exit(main())\n"
TIMEOUT = 240  # a hang fails the test instead of hanging the suite
LLAVA_MED_CONFIG = {  # microsoft/llava-med-v1.5-mistral-7b's config.json (abridged)
    "_name_or_path": "microsoft/llava-med-v1.5-mistral-7b",
    "architectures": ["LlavaMistralForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "mm_hidden_size": 1024,
    "mm_vision_select_layer": -2,
    "mm_vision_tower": "openai/clip-vit-large-patch14-336",
    "model_type": "llava_mistral",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "torch_dtype": "bfloat16",
    "vocab_size": 32000,
}
# The BioViL encoder with a small ResNet (one bottleneck per stage), registered beside the real one
# (not chest-only, so the synthetic dermatology dataset will do).
SMALL_BIOVIL = """import dataclasses
from crsbench.features.lookup import get_encoder
from crsbench.features.registry import add_entry
add_entry(dataclasses.replace(get_encoder("biovil"), id="biovil-small", chest_only=False, model_kwargs={"layers": (1, 1, 1, 1)}))
"""


def _cli(args: list[str], tmp: Path, prelude: str = "") -> tuple[int, str]:
    """The CLI in a subprocess, offline, with an empty Hugging Face cache of its own."""
    drop = ("CRSBENCH_DEBUG", "CRSBENCH_ALLOW_DOWNLOAD", "CRSBENCH_WEIGHTS", "CRSBENCH_ENCODERS", "HF_HUB_CACHE")
    child = {k: v for k, v in env().items() if k not in drop}
    child.update(HF_HOME=str(tmp / "hf-home"), HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-c", prelude + RUN_CLI, *args],
        env=child,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    return proc.returncode, proc.stderr


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return synthetic_warehouse(tmp_path_factory.mktemp("refusals"))


@pytest.fixture
def db(template, tmp_path) -> Path:
    shutil.copytree(template.parent, tmp_path / "w")
    return tmp_path / "w" / template.name


def _extract_refused(db: Path, tmp: Path, args: list[str], *names: str, prelude: str = "") -> None:
    before = _digest(db)
    rc, err = _cli(["extract", *args, "-d", "derm", "--db", str(db)], tmp, prelude)
    one_line_user_error(rc, err, *names)
    assert _digest(db) == before


# -- point 8: internal errors that were user mistakes -------------------------------------------


def test_a_timm_hub_id_that_is_not_on_this_machine(db, tmp_path):
    _extract_refused(
        db,
        tmp_path,
        ["-e", "timm:hf-hub:org/name"],
        "timm model 'hf-hub:org/name' is not on this machine",
        "repo org/name",
        "--allow-download",
        "--weights PATH",
    )


def test_a_toml_entry_passing_pretrained_in_model_kwargs(db, tmp_path):
    toml = tmp_path / "mine.toml"
    toml.write_text(
        '[encoder.myvit]\nsource = "timm"\nmodel = "vit_tiny_patch16_224"\nweights = "w.safetensors"\n'
        "[encoder.myvit.model_kwargs]\npretrained = true\n"
    )
    _extract_refused(
        db,
        tmp_path,
        ["-e", "myvit", "--encoders", str(toml)],
        str(toml),
        "[encoder.myvit] model_kwargs.pretrained",
        "weights are given by `weights = ",
    )


def test_biomedclips_weights_file_where_its_folder_is_expected(db, tmp_path):
    folder = tmp_path / "BiomedCLIP"
    folder.mkdir()
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": {}}))
    (folder / "open_clip_pytorch_model.bin").write_bytes(b"PK\x03\x04not read")
    given = folder / "open_clip_pytorch_model.bin"
    _extract_refused(
        db,
        tmp_path,
        ["-e", "biomedclip", "--weights", str(given)],
        f"not the file {given}",
        "the folder holding open_clip_config.json and the weights",
        f"its folder {folder} holds open_clip_config.json: pass that",
    )


def test_the_llava_med_model_folder_given_to_llava_med(db, tmp_path):
    folder = tmp_path / "llava-med-v1.5-mistral-7b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAVA_MED_CONFIG))
    (folder / "model.safetensors").write_bytes(b"never read")
    _extract_refused(
        db,
        tmp_path,
        ["-e", "llava-med", "--weights", str(folder)],
        # The registered entry's declared architecture (its CLIP-L/14-336 tower) is checked first.
        f"weights {folder} do not fit encoder 'llava-med'",
        "the config.json has hidden_size 4096, the published LLaVA-Med has hidden_size 1024",
    )


def test_a_vision_config_transformers_rejects_is_one_line(db, tmp_path):
    folder = tmp_path / "clip-tower"
    folder.mkdir()
    config = {"model_type": "clip_vision_model", "hidden_size": 64, "num_attention_heads": 5}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes(b"never read")
    _extract_refused(  # an hf: id declares no architecture, so transformers' own validation speaks
        db,
        tmp_path,
        ["-e", f"hf:{folder}"],
        f"cannot read hf model {folder}",
        "The hidden size (64) is not a multiple of the number of attention heads (5)",
    )


def _manifest_with_a_fifo(folder: Path) -> Path:
    (folder / "img").mkdir(parents=True)
    for i in range(12):
        Image.fromarray(np.full((8, 8), 20 * i, dtype=np.uint8)).save(folder / "img" / f"{i}.png")
    os.mkfifo(folder / "img" / "pipe.png")  # nothing ever writes to it: opening it blocks forever
    with open(folder / "manifest.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["path", "label"])
        writer.writerows([f"img/{i}.png", "ab"[i % 2]] for i in range(6))
        writer.writerow(["img/pipe.png", "a"])  # line 8
        writer.writerows([f"img/{i}.png", "ab"[i % 2]] for i in range(6, 12))
    return folder / "manifest.csv"


@pytest.mark.parametrize(
    ("layout", "names"),
    [
        ("manifest", ["manifest.csv: line 8: image img/pipe.png is a FIFO (named pipe), not a regular file"]),
        ("folder", ["pipe.png: image pipe.png is a FIFO (named pipe), not a regular file"]),
        ("fifo-manifest", ["fifo.csv is a FIFO (named pipe), not a regular file"]),
    ],
)
def test_a_fifo_in_a_dataset_is_refused_at_ingest_without_blocking(db, tmp_path, layout, names):
    manifest = _manifest_with_a_fifo(tmp_path / "ds")
    if layout == "manifest":
        args = ["manifest", str(manifest), "-o", "task=multiclass"]
    elif layout == "folder":
        args = ["folder", str(manifest.parent / "img"), "--unlabeled"]
    else:
        os.mkfifo(tmp_path / "fifo.csv")
        args = ["manifest", str(tmp_path / "fifo.csv"), "-o", "task=multiclass"]
    before = _digest(db)
    rc, err = _cli(["ingest", *args, "--name", "piped", "--db", str(db)], tmp_path)  # a hang: TimeoutExpired
    one_line_user_error(rc, err, *names)
    assert _digest(db) == before


# -- point 9: refusals the user could not act on --------------------------------------------------


def test_a_jax_npz_given_as_weights(db, tmp_path):
    npz = tmp_path / "ViT-B_16.npz"  # Google's original ViT release: flax parameter paths as .npy members
    np.savez(npz, **{"Transformer/encoder_norm/scale": np.ones(4, np.float32), "embedding/kernel": np.ones((2, 2))})
    _extract_refused(
        db,
        tmp_path,
        ["-e", "tiny-vit", "--weights", str(npz)],
        f"weights {npz} are a NumPy .npz/.npy file (a JAX/Flax checkpoint",
        f"model.load_pretrained('{npz}')",
    )


def test_a_biovil_t_checkpoint_is_refused_naming_its_own_keys(db, tmp_path):
    from torchvision.models.resnet import Bottleneck, ResNet

    resnet = ResNet(Bottleneck, [1, 1, 1, 1]).state_dict()
    # hi-ml's BioViL-T ImageModel: the ResNet, a ViT pooler on 256-d features, and the projector on them.
    state = {f"encoder.encoder.{k}": v.half() if v.is_floating_point() else v for k, v in resnet.items()}
    state["encoder.backbone_to_vit.weight"] = torch.zeros(256, 2048, 1, 1, dtype=torch.half)
    state["projector.model.0.weight"] = torch.zeros(128, 256, 1, 1)
    for name in ("weight", "bias", "running_mean", "running_var"):
        state[f"projector.model.1.{name}"] = torch.zeros(128)
    state["projector.model.1.num_batches_tracked"] = torch.zeros((), dtype=torch.long)
    state["projector.model.3.weight"], state["projector.model.3.bias"] = torch.zeros(128, 128, 1, 1), torch.zeros(128)
    weights = tmp_path / "biovil_t_image_model_proj_size_128.pt"
    torch.save(state, weights)
    _extract_refused(
        db,
        tmp_path,
        ["-e", "biovil-small", "--weights", str(weights)],
        "1 shape mismatches (projector.model.0.weight (128, 256, 1, 1) vs model (128, 2048, 1, 1))",
        prelude=SMALL_BIOVIL,
    )


def test_clip_given_a_file_is_told_it_reads_a_model_folder(db, tmp_path):
    from safetensors.torch import save_file

    weights = tmp_path / "clip.safetensors"
    save_file({"x": torch.zeros(2)}, str(weights))
    _extract_refused(
        db,
        tmp_path,
        ["-e", "clip", "--weights", str(weights)],
        "encoder 'clip' expects a Hugging Face model folder, the folder holding config.json and the weights",
        f"not the file {weights}",
    )


def test_metadata_spellings_differing_in_case_are_one_group_and_said_once(tmp_path):
    folder = tmp_path / "ds"
    (folder / "img").mkdir(parents=True)
    sexes = ["Male", "male", "Female", "female", "Male", "Female"] * 4
    with open(folder / "manifest.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["path", "label", "meta:sex", "meta:site"])
        for i, sex in enumerate(sexes):
            Image.fromarray(np.full((8, 8), 10 * i, dtype=np.uint8)).save(folder / "img" / f"{i}.png")
            writer.writerow([f"img/{i}.png", "ab"[i % 2], sex, "Head/Neck"])
    db = tmp_path / "m.duckdb"
    args = ["ingest", "manifest", str(folder / "manifest.csv"), "-o", "task=multiclass", "--name", "m"]
    rc, err = _cli([*args, "--db", str(db)], tmp_path)
    assert rc == 0, err
    warned = [line for line in err.splitlines() if line.startswith("warning: metadata key")]
    assert len(warned) == 1 and "'sex'" in warned[0] and "site" not in warned[0], err
    assert "'Female' + 'female' -> 'Female'" in warned[0] and "'Male' + 'male' -> 'Male'" in warned[0]
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        values = dict(con.execute("select value, count(*) from image_metadata group by value").fetchall())
    finally:
        con.close()
    assert values == {"Male": 12, "Female": 12, "Head/Neck": 24}  # as spelled, never lower-cased
