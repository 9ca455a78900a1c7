"""The model libraries on crsbench's terms (features/hub.py): a refused checkpoint is one line
(transformers' load report captured, shown with CRSBENCH_DEBUG=1), a checkpoint's own code never
runs and no prompt asks for it, and nothing opens a socket unless downloads are allowed."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import pty
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support.fidelity_support import offline_hub
from support.user_encoders_support import cli, isolate_registry, make_tiny_db

from crsbench.core import CrsbenchError
from crsbench.features.loaders import build_model
from crsbench.features.lookup import get_encoder


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch, tmp_path):
    yield from isolate_registry(monkeypatch, tmp_path)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _vit_folder(path: Path) -> Path:
    import transformers as T

    torch.manual_seed(0)
    config = T.ViTConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=16
    )
    T.ViTModel(config).save_pretrained(path)
    return path


@pytest.mark.parametrize("debug", [False, True])
def test_a_refused_hf_checkpoint_prints_one_line(debug, tmp_path, monkeypatch, capfd):
    folder = _vit_folder(tmp_path / "vit")  # a ViT folder given to the DINOv2 entry
    capfd.readouterr()
    if debug:
        monkeypatch.setenv("CRSBENCH_DEBUG", "1")
    else:
        monkeypatch.delenv("CRSBENCH_DEBUG", raising=False)
    records = _Records()
    logging.getLogger("transformers").addHandler(records)
    try:
        with pytest.raises(CrsbenchError) as info:
            # no published architecture: the weights reach transformers, whose report is at stake
            build_model(dataclasses.replace(get_encoder("dinov2"), architecture={}), folder)
    finally:
        logging.getLogger("transformers").removeHandler(records)
    assert "do not fit encoder 'dinov2'" in str(info.value) and "\n" not in str(info.value)
    printed = capfd.readouterr()
    reported = any("LOAD REPORT" in m for m in records.messages)
    if debug:  # everything shows
        assert reported
    else:  # nothing but crsbench's own line
        assert not reported and printed.out == "" and printed.err == "", printed


def test_cli_refusal_of_an_hf_checkpoint_is_exactly_one_line(tmp_path_factory, tmp_path, monkeypatch, capfd):
    monkeypatch.delenv("CRSBENCH_DEBUG", raising=False)
    db = make_tiny_db(tmp_path_factory)
    folder = _vit_folder(tmp_path / "vit")
    capfd.readouterr()
    assert cli("extract", "--db", str(db), "-e", "dinov2", "-d", "aptos", "--weights", str(folder)) == 1
    err = capfd.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "do not fit encoder 'dinov2'" in err, err
    assert not Path(str(db) + ".features.zarr").exists()


# -- remote code -------------------------------------------------------------------------------------


def _auto_map_folder(path: Path, model_type: str, marker: Path) -> Path:
    """A transformers folder whose config names custom code that would write `marker` on import."""
    path.mkdir(parents=True)
    code = f"open({str(marker)!r}, 'w').write('the checkpoint ran its code')\n"
    code += "from transformers import PretrainedConfig, PreTrainedModel\n"
    code += "class XConfig(PretrainedConfig):\n    model_type = 'xvision'\n"
    code += "class XModel(PreTrainedModel):\n    config_class = XConfig\n"
    (path / "modeling_x.py").write_text(code)
    config = {
        "model_type": model_type,
        "auto_map": {"AutoConfig": "modeling_x.XConfig", "AutoModel": "modeling_x.XModel"},
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": 32,
        "patch_size": 16,
    }
    (path / "config.json").write_text(json.dumps(config))
    (path / "preprocessor_config.json").write_text(json.dumps({"size": {"height": 32, "width": 32}}))
    return path


def test_auto_map_code_never_runs_even_when_a_terminal_answers_yes(tmp_path):
    marker = tmp_path / "MARKER"
    folder = _auto_map_folder(tmp_path / "custom", "xvision", marker)
    toml = tmp_path / "enc.toml"
    toml.write_text(f'[encoder.custom]\nsource = "hf"\nmodel = "{folder}"\n')
    master, slave = pty.openpty()  # a terminal on stdin, already answering "y" to any prompt
    os.write(master, b"y\ny\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "CRSBENCH_WEIGHTS": str(tmp_path / "none")}
    env.pop("CRSBENCH_DEBUG", None)
    done = subprocess.run(
        [sys.executable, "-m", "crsbench.cli", "encoders", "--encoders", str(toml), "--db", str(tmp_path / "w.duckdb")],
        stdin=slave,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    os.close(master)
    os.close(slave)
    assert not marker.exists()
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "never runs a checkpoint's code" in done.stderr, done.stderr
    assert "[y/N]" not in done.stdout + done.stderr


def test_auto_map_of_a_known_architecture_loads_the_library_class(tmp_path):
    marker = tmp_path / "MARKER"
    folder = _auto_map_folder(tmp_path / "vit-with-code", "vit", marker)
    import transformers as T

    torch.manual_seed(0)
    T.ViTModel(T.ViTConfig.from_pretrained(folder)).save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    assert "auto_map" in config  # save_pretrained kept it
    entry = get_encoder(f"hf:{folder}")
    model = build_model(entry)
    assert type(model.model).__name__ == "ViTModel" and not marker.exists()


# -- no network unless asked ---------------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch):
    """Every socket connection or name lookup is recorded and refused."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # as for a user without HF_HUB_OFFLINE
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    attempts: list[str] = []

    def refuse(name):
        def blocked(*args, **kwargs):
            attempts.append(f"{name}{args[:2]!r}")
            raise OSError(f"network blocked by the test ({name})")

        return blocked

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    return attempts


def test_open_clip_hub_id_opens_no_socket(no_network, tmp_path, monkeypatch):
    with pytest.raises(CrsbenchError) as info:
        get_encoder("open_clip:hf-hub:org/name")
    assert "not in the Hugging Face cache" in str(info.value) and "--allow-download" in str(info.value)
    assert no_network == []


def test_open_clip_hub_id_from_the_cache_opens_no_socket(no_network, tmp_path, monkeypatch):
    from open_clip.model import _build_vision_tower

    from crsbench.features.hub import library_calls

    put = offline_hub(tmp_path, monkeypatch)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # offline_hub set it; a user may not have
    cfg = {
        "embed_dim": 16,
        "vision_cfg": {"image_size": 32, "patch_size": 16, "width": 32, "layers": 2, "head_width": 16},
    }
    (tmp_path / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg}))
    torch.manual_seed(0)
    visual = _build_vision_tower(16, cfg["vision_cfg"])
    torch.save({f"visual.{k}": v for k, v in visual.state_dict().items()}, tmp_path / "open_clip_pytorch_model.bin")
    put(
        "org/name",
        {n: tmp_path / n for n in ("open_clip_config.json", "open_clip_pytorch_model.bin")},
    )
    entry = get_encoder("open_clip:hf-hub:org/name")
    model = build_model(entry)
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(model(x), visual.eval()(x), atol=1e-6)
    assert no_network == []
    with library_calls():  # offline inside, back to the caller's setting after
        assert constants.HF_HUB_OFFLINE is True
    assert constants.HF_HUB_OFFLINE is False
