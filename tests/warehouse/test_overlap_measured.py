"""`crsbench overlap --manifest FILE` (warehouse/overlap.py): the share of each split found in a
list of pretraining image hashes, stored for the named encoder; a malformed line is one error."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from crsbench.cli import main
from crsbench.core import InputError
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.overlap import read_hash_manifest


def _split(db) -> tuple[str, str, list[str]]:
    """A (dataset, split) whose image count is a multiple of 10, with its SHA-256s."""
    with Warehouse.open(db, read_only=True) as wh:
        images = wh.sql("select dataset_id, split, sha256 from images order by dataset_id, split, row_index")
    for (dataset, split), group in images.groupby(["dataset_id", "split"]):
        if len(group) % 10 == 0:
            return str(dataset), str(split), list(group["sha256"])
    pytest.skip("no split of the suite has a multiple of 10 images")


def test_a_manifest_of_ten_percent_of_a_split_reports_ten_percent(ingested_db, tmp_path, capsys):
    dataset, split, hashes = _split(ingested_db)
    chosen = hashes[: len(hashes) // 10]
    manifest = tmp_path / "pretraining.sha256"
    lines = ["# hashes of the toy encoder's pretraining set", ""]
    lines += [h.upper() if i % 2 else f"{h}  # image {i}" for i, h in enumerate(chosen)]
    lines += ["0" * 64]  # a hash of no ingested image
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")

    code = main(
        ["--json", "overlap", "--manifest", str(manifest), "-e", "toy", "-d", dataset, "--db", str(ingested_db)]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    shares = pd.DataFrame(out["shares"]).set_index("split")
    assert out["n_hashes"] == len(chosen) + 1 and out["stored_for"] == "toy"
    assert shares.loc[split, "share"] == pytest.approx(0.10) and shares.loc[split, "n_found"] == len(chosen)
    assert (shares.drop(index=split)["n_found"] == 0).all()
    # stored for (toy, dataset): the view's measured share is over the whole dataset
    with Warehouse.open(ingested_db, read_only=True) as wh:
        stored = wh.sql("select * from dataset_overlap")
        view = wh.sql("select * from encoder_dataset_overlap where encoder_id = 'toy'").set_index("dataset_id")
        n_total = wh.sql("select count(*) as n from images where dataset_id = ?", [dataset])["n"][0]
    assert set(stored["dataset_id"]) == {dataset} and set(stored["split"]) == set(shares.index)
    assert view.loc[dataset, "measured_share"] == pytest.approx(len(chosen) / n_total)
    assert view.loc[dataset, "status"] == "measured" and bool(view.loc[dataset, "overlap"])
    assert view.drop(index=dataset)["measured_share"].isna().all()
    assert (view.drop(index=dataset)["status"] == "unknown").all()  # toy declares nothing: unknown


def test_without_an_encoder_the_shares_are_reported_not_stored(ingested_db, tmp_path, capsys):
    _, _, hashes = _split(ingested_db)
    manifest = tmp_path / "m.txt"
    manifest.write_text(hashes[0] + "\n", encoding="utf-8")
    assert main(["overlap", "--manifest", str(manifest), "--db", str(ingested_db)]) == 0
    assert "not stored" in capsys.readouterr().out
    with Warehouse.open(ingested_db, read_only=True) as wh:
        assert len(wh.sql("select * from dataset_overlap")) == 0


def test_a_malformed_hash_is_one_line_naming_its_line_number(ingested_db, tmp_path, capsys):
    manifest = tmp_path / "bad.txt"
    manifest.write_text("# header\n" + "a" * 64 + "\nnot-a-hash\n" + "b" * 64 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 3: 'not-a-hash'"):
        read_hash_manifest(manifest)
    assert main(["overlap", "--manifest", str(manifest), "-e", "toy", "--db", str(ingested_db)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "line 3" in err and "SHA-256" in err
    with Warehouse.open(ingested_db, read_only=True) as wh:
        assert len(wh.sql("select * from dataset_overlap")) == 0


def test_a_hash_one_digit_short_is_malformed(tmp_path):
    manifest = tmp_path / "short.txt"
    manifest.write_text("c" * 63 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 1"):
        read_hash_manifest(manifest)


def _pictures(db, dataset: str) -> pd.DataFrame:
    """The dataset's images in store order, each with its dHash computed here (independently of
    warehouse.overlap), as (split, rel_path, sha256, root, dhash)."""
    from crsbench.features.transforms import decode_image
    from crsbench.ingest.perceptual import dhash

    with Warehouse.open(db, read_only=True) as wh:
        rows = wh.sql(
            "select i.split, i.rel_path, i.sha256, d.root from images i join datasets d using (dataset_id) "
            "where dataset_id = ? order by row_index",
            [dataset],
        )
    return rows.assign(dhash=[dhash(decode_image(r.root, r.rel_path, r.sha256)) for r in rows.itertuples()])


def test_perceptual_hashes_of_ten_percent_of_a_split_report_ten_percent(ingested_db, tmp_path, capsys):
    dataset, split, _ = _split(ingested_db)
    every = _pictures(ingested_db, dataset)
    rows = every[every["split"] == split]
    chosen = rows.iloc[: len(rows) // 10]
    listed = set(chosen["dhash"])
    manifest = tmp_path / "pretraining.dhash"
    manifest.write_text("\n".join(sorted(listed)) + "\n", encoding="utf-8")
    assert main(["--json", "overlap", "--manifest", str(manifest), "-d", dataset, "--db", str(ingested_db)]) == 0
    shares = pd.DataFrame(json.loads(capsys.readouterr().out)["shares"]).set_index("split")
    # found = the listed images, plus any other image whose picture hashes the same (brute force)
    expected = every.assign(found=every["dhash"].isin(listed)).groupby("split")["found"].sum()
    assert (shares["n_found"] == expected.reindex(shares.index)).all()
    assert shares.loc[split, "n_found"] >= len(chosen)
    # the suite's pictures are distinct under dHash, so the share is exactly the listed tenth
    assert len(listed) == len(chosen) and shares.loc[split, "share"] == pytest.approx(0.10)


def test_a_resized_reencoded_copy_is_found_within_a_few_bits(ingested_db, tmp_path, capsys):
    import io

    from PIL import Image

    from crsbench.features.transforms import decode_image
    from crsbench.ingest.perceptual import dhash

    dataset, split, _ = _split(ingested_db)
    every = _pictures(ingested_db, dataset)
    row = every[every["split"] == split].iloc[0]
    pixels = decode_image(row.root, row.rel_path, row.sha256)
    copy = Image.fromarray(pixels.squeeze()).resize((pixels.shape[1] * 2, pixels.shape[0] * 2))
    buffer = io.BytesIO()
    copy.save(buffer, format="JPEG", quality=85)
    buffer.seek(0)
    copied = dhash(np.asarray(Image.open(buffer)))
    own = row["dhash"]
    distance = bin(int(copied, 16) ^ int(own, 16)).count("1")
    manifest = tmp_path / "copy.dhash"
    manifest.write_text(copied + "\n", encoding="utf-8")
    assert (
        main(
            [
                "--json",
                "overlap",
                "--manifest",
                str(manifest),
                "-d",
                dataset,
                "--max-distance",
                str(distance),
                "--db",
                str(ingested_db),
            ]
        )
        == 0
    )
    shares = pd.DataFrame(json.loads(capsys.readouterr().out)["shares"]).set_index("split")
    assert shares.loc[split, "n_found"] >= 1
    assert distance <= 10  # a resized, re-compressed copy stays near its original
