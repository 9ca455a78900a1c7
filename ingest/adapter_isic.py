"""ISIC 2019 (multiclass, 8 classes) and APTOS 2019 (ordinal, grades 0-4) adapters."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from crsbench.core import InputError, ProgressFn
from crsbench.ingest.metadata import check_known_images
from crsbench.ingest.registry import AdapterOption, register_adapter
from crsbench.ingest.source import Record, RowLog, Source, csv_line, read_csv, safe_rel_path
from crsbench.ingest.types import Task

ISIC_CLASSES: tuple[str, ...] = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC")
ISIC_ONE_HOT = {"1.0": 1, "1": 1, "0.0": 0, "0": 0}
# Published metadata column -> the key stored in image_metadata.
ISIC_METADATA = {"age_approx": "age", "sex": "sex", "anatom_site_general": "site"}
# The zero-shot ensemble (ingest.prompts): a phrase per class and CLIP_benchmark-style templates.
ISIC_PROMPTS = {
    "classes": {
        "MEL": "melanoma",
        "NV": "melanocytic nevus",
        "BCC": "basal cell carcinoma",
        "AK": "actinic keratosis",
        "BKL": "benign keratosis",
        "DF": "dermatofibroma",
        "VASC": "vascular lesion",
        "SCC": "squamous cell carcinoma",
    },
    "templates": [
        "a dermoscopy image of {}.",
        "a dermatoscopic photo of a {}.",
        "a close-up skin image showing {}.",
    ],
}


def _folder_and_file(path: Path, default_name: str) -> tuple[Path, str]:
    """PATH may be the dataset folder or its label CSV."""
    return (path.parent, path.name) if path.is_file() else (path, default_name)


@register_adapter(
    "isic2019",
    dataset="isic2019",
    task=Task.MULTICLASS,
    domain="derm",
    licence="CC BY-NC 4.0; https://challenge.isic-archive.com/data/",
    citation=(
        "Tschandl P. et al. The HAM10000 dataset. Scientific Data 5, 180161 (2018); Codella N. et "
        "al. arXiv:1710.05006 (2017); Combalia M. et al. BCN20000, arXiv:1908.02288 (2019)"
    ),
    prompts=ISIC_PROMPTS,
    description="ISIC 2019: one-hot ISIC_2019_Training_GroundTruth.csv + ISIC_2019_Training_Input/*.jpg; "
    "lesion_id from the metadata CSV groups images of one lesion",
    options={
        "csv": AdapterOption("ISIC_2019_Training_GroundTruth.csv", "ground-truth CSV inside PATH"),
        "images": AdapterOption("ISIC_2019_Training_Input", "image folder inside PATH"),
        "metadata": AdapterOption(
            "ISIC_2019_Training_Metadata.csv",
            "metadata CSV with lesion_id, age_approx, sex, anatom_site_general (used if present; 'none' to ignore)",
        ),
    },
)
def read_isic2019(path: Path, log: RowLog, options: dict[str, str], progress: ProgressFn) -> Source:
    root, csv_name = _folder_and_file(path, options["csv"])
    frame = read_csv(root / csv_name, ["image", *ISIC_CLASSES])
    extra = [c for c in frame.columns if c not in ("image", *ISIC_CLASSES, "UNK")]
    if extra:
        raise InputError(
            f"{csv_name}: unknown class column {extra[0]!r} (ISIC 2019 classes: {', '.join(ISIC_CLASSES)}, UNK)"
        )
    lesions, meta = _metadata(root, options["metadata"], {str(image).strip() for image in frame["image"]})
    records = []
    values = frame[list(ISIC_CLASSES)].to_numpy()
    unk = frame["UNK"].to_numpy() if "UNK" in frame.columns else np.full(len(frame), "0.0", dtype=object)
    for i, image in enumerate(frame["image"].to_numpy()):
        with log.row(csv_name, csv_line(i)):
            row = [_one_hot_cell(v, c) for v, c in zip(values[i], ISIC_CLASSES, strict=True)]
            if _one_hot_cell(unk[i], "UNK"):
                raise InputError(f"image {image!r} is labelled UNK, which is not one of the 8 ISIC 2019 classes")
            if sum(row) != 1:
                raise InputError(f"malformed one-hot row for {image!r}: {sum(row)} classes set")
            image = image.strip()
            rel = safe_rel_path(root, f"{options['images']}/{image}.jpg")
            rec = Record(image, rel, row.index(1), lesions.get(image) or image, file=csv_name, line=csv_line(i))
            rec.meta = meta.get(image, {})
            records.append(rec)
    return Source(
        root,
        Task.MULTICLASS,
        list(ISIC_CLASSES),
        records,
        notes=[f"grouped by lesion_id for {sum(1 for r in records if r.group_id != r.image_id)} images"],
    )


def _one_hot_cell(value: str, column: str) -> int:
    key = value.strip()
    if key not in ISIC_ONE_HOT:
        raise InputError(f"malformed label value {value!r} in column {column!r} (expected 1.0 or 0.0)")
    return ISIC_ONE_HOT[key]


def _metadata(root: Path, name: str, known: set[str]) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(image -> lesion_id, image -> {key: raw value}) from the metadata CSV, if present. A row of
    an image the ground truth does not name is refused (a trimmed ground truth needs the metadata
    trimmed alike, or --option metadata=none); rows of ground-truth rows skipped as bad are fine."""
    if name == "none" or not (root / name).exists():  # a FIFO or device there is refused by read_csv
        return {}, {}
    meta = read_csv(root / name, ["image", "lesion_id"])
    ids = [img.strip() for img in meta["image"]]
    check_known_images(ids, known, name, [csv_line(i) for i in range(len(ids))])
    columns = {c: key for c, key in ISIC_METADATA.items() if c in meta.columns}
    cells = {key: meta[c].to_numpy() for c, key in columns.items()}
    values = {img: {key: str(v[i]) for key, v in cells.items()} for i, img in enumerate(ids)}
    lesions = {img: les.strip() for img, les in zip(ids, meta["lesion_id"], strict=True) if les.strip()}
    return lesions, values


APTOS_GRADES: tuple[str, ...] = ("No DR", "Mild", "Moderate", "Severe", "Proliferative DR")
APTOS_PROMPTS = {
    "classes": {
        "No DR": "no",
        "Mild": "mild",
        "Moderate": "moderate",
        "Severe": "severe",
        "Proliferative DR": "proliferative",
    },
    "templates": [
        "a fundus photograph showing {} diabetic retinopathy.",
        "a retinal image with {} diabetic retinopathy.",
        "a colour fundus image of {} diabetic retinopathy.",
    ],
}


@register_adapter(
    "aptos2019",
    dataset="aptos2019",
    task=Task.ORDINAL,
    domain="eye",
    licence=(
        "Kaggle competition rules of APTOS 2019 Blindness Detection (non-commercial use); "
        "https://www.kaggle.com/competitions/aptos2019-blindness-detection/rules"
    ),
    citation="Asia Pacific Tele-Ophthalmology Society (APTOS). APTOS 2019 Blindness Detection, Kaggle (2019)",
    prompts=APTOS_PROMPTS,
    description="APTOS 2019 blindness detection: train.csv (id_code,diagnosis 0-4) + train_images/*.png",
    options={
        "csv": AdapterOption("train.csv", "label CSV inside PATH"),
        "images": AdapterOption("train_images", "image folder inside PATH"),
        "ext": AdapterOption(".png", "image file extension"),
    },
)
def read_aptos2019(path: Path, log: RowLog, options: dict[str, str], progress: ProgressFn) -> Source:
    root, csv_name = _folder_and_file(path, options["csv"])
    frame = read_csv(root / csv_name, ["id_code", "diagnosis"])
    records = []
    for i, (code, diagnosis) in enumerate(zip(frame["id_code"], frame["diagnosis"], strict=True)):
        with log.row(csv_name, csv_line(i)):
            text = diagnosis.strip()
            if not text.lstrip("-").isdigit():
                raise InputError(f"malformed label value {diagnosis!r} in column 'diagnosis' (expected 0-4)")
            grade = int(text)
            if not 0 <= grade < len(APTOS_GRADES):
                raise InputError(f"unknown class: grade {grade} (expected 0-4)")
            code = code.strip()
            rel = safe_rel_path(root, f"{options['images']}/{code}{options['ext']}")
            # APTOS publishes no patient ids, so each image is its own group.
            records.append(Record(code, rel, grade, code, file=csv_name, line=csv_line(i)))
    return Source(root, Task.ORDINAL, list(APTOS_GRADES), records)
