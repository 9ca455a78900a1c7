"""ExtractOptions: the one place extraction's defaults live, taken whole by features.extract."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from crsbench.cli.commands.features import extract_command
from crsbench.features.extract_options import ExtractOptions, with_environment
from crsbench.features.extraction import extract
from crsbench.pipeline.extract import ExtractConfig

FLAGS = ("force", "repair", "allow_download", "trust_pickle", "pixel_processes")


def test_extract_repeats_no_default_and_flags_are_booleans():
    fields = {f.name: f for f in dataclasses.fields(ExtractOptions)}
    params = inspect.signature(extract).parameters
    assert set(fields) & set(params) == set()  # every option reaches extract through ExtractOptions
    assert params["options"].default is None
    for name in FLAGS:
        assert isinstance(fields[name].default, bool), name
    assert ExtractConfig().options == ExtractOptions()
    assert [f.name for f in dataclasses.fields(ExtractConfig)] == [
        "options",
        "encoder_files",
        "allow_code",
        "scheduler",
    ]


def test_the_cli_defaults_are_the_options_defaults():
    defaults = ExtractOptions()
    cli = inspect.signature(extract_command).parameters
    for name in ("device", "batch_size", "dtype", "compute_dtype", "chunk_rows", "force", "repair", "allow_download"):
        assert cli[name].default == getattr(defaults, name), name


@pytest.mark.parametrize(("env", "flag", "want"), [(None, False, False), ("1", False, True), (None, True, True)])
def test_the_download_environment_is_folded_in_at_the_edge(monkeypatch, env, flag, want):
    if env is None:
        monkeypatch.delenv("CRSBENCH_ALLOW_DOWNLOAD", raising=False)
    else:
        monkeypatch.setenv("CRSBENCH_ALLOW_DOWNLOAD", env)
    folded = with_environment(ExtractOptions(allow_download=flag))
    assert folded.allow_download is want


def test_an_unknown_override_is_refused_before_anything_runs(tmp_path):
    from crsbench.features.lookup import get_encoder

    with pytest.raises(TypeError, match="batch_sise"):  # a typo never silently falls back to a default
        extract(None, get_encoder("tiny-vit"), str(tmp_path / "f.zarr"), batch_sise=8)  # type: ignore[arg-type]
    assert not (tmp_path / "f.zarr").exists()
