"""CheXpert and MIMIC-CXR-JPG adapters (multilabel, the same 14 findings in CheXpert order).

Label cells are 1 / 0 / -1 (uncertain) / blank. The uncertainty policy maps them to
0/1: U-zeros (default; -1 and blank -> 0) or U-ones (-1 -> 1, blank -> 0).

CheXpert: the official valid.csv (expert-labelled, distinct patients) is the test
split when present; train.csv is carved group-safely by patient into train / calib
(75 / 25, i.e. the 60 / 20 ratio of the default split). MIMIC-CXR: the official
mimic-cxr-2.0.0-split.csv is used when present (validate -> calib); otherwise a
stratified split by subject. Frontal views (PA/AP) only by default.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import numpy as np

from crsbench.core import InputError, ProgressFn
from crsbench.ingest.registry import AdapterOption, register_adapter
from crsbench.ingest.source import Record, RowLog, Source, csv_line, find_file, parse_binary, read_csv, safe_rel_path
from crsbench.ingest.types import Task

CXR_LABELS: tuple[str, ...] = (
    "No Finding",
    "Enlarged Cardiomediastinum",
    "Cardiomegaly",
    "Lung Opacity",
    "Lung Lesion",
    "Edema",
    "Consolidation",
    "Pneumonia",
    "Atelectasis",
    "Pneumothorax",
    "Pleural Effusion",
    "Pleural Other",
    "Fracture",
    "Support Devices",
)
UNCERTAINTY: dict[str, dict[str, int]] = {
    "zeros": {"1.0": 1, "1": 1, "0.0": 0, "0": 0, "-1.0": 0, "-1": 0, "": 0},
    "ones": {"1.0": 1, "1": 1, "0.0": 0, "0": 0, "-1.0": 1, "-1": 1, "": 0},
}
CXR_OPTIONS = {
    "uncertainty": AdapterOption(
        "zeros", "uncertain (-1) labels: 'zeros' (U-zeros) or 'ones' (U-ones)", ("zeros", "ones")
    ),
}
PATIENT = re.compile(r"(patient\d+)")
# Published metadata column -> the key stored in image_metadata.
CHEXPERT_METADATA = {"Sex": "sex", "Age": "age", "Frontal/Lateral": "view", "AP/PA": "projection"}
MIMIC_METADATA = {"ViewPosition": "projection"}
FRONTAL_POSITIONS = ("PA", "AP")
# The zero-shot ensemble of both adapters (ingest.prompts): each finding's positive templates
# are scored against its negative ones.
CXR_PROMPTS = {
    "classes": {
        "No Finding": "no finding",
        "Enlarged Cardiomediastinum": "enlarged cardiomediastinum",
        "Cardiomegaly": "cardiomegaly",
        "Lung Opacity": "lung opacity",
        "Lung Lesion": "a lung lesion",
        "Edema": "pulmonary edema",
        "Consolidation": "consolidation",
        "Pneumonia": "pneumonia",
        "Atelectasis": "atelectasis",
        "Pneumothorax": "pneumothorax",
        "Pleural Effusion": "pleural effusion",
        "Pleural Other": "other pleural abnormality",
        "Fracture": "a fracture",
        "Support Devices": "support devices",
    },
    "templates": ["a chest x-ray showing {}.", "chest radiograph with {}.", "findings consistent with {}."],
    "negative_templates": ["a chest x-ray with no {}.", "chest radiograph without {}.", "no evidence of {}."],
}


def _labels(cells: np.ndarray, policy: dict[str, int]) -> np.ndarray:
    return np.array([parse_binary(v, c, policy) for v, c in zip(cells, CXR_LABELS, strict=True)], dtype=np.int8)


def _chexpert_root(path: Path) -> Path:
    if path.is_file():
        return path.parent
    for candidate in (path, path / "CheXpert-v1.0-small", path / "CheXpert-v1.0"):
        if (candidate / "train.csv").is_file():
            return candidate
    raise InputError(f"{path}: train.csv not found (looked in it and in CheXpert-v1.0-small/, CheXpert-v1.0/)")


@register_adapter(
    "chexpert",
    dataset="chexpert",
    task=Task.MULTILABEL,
    domain="rad",
    licence=(
        "Stanford University School of Medicine CheXpert Dataset Research Use Agreement (non-"
        "commercial research); https://stanfordmlgroup.github.io/competitions/chexpert/"
    ),
    citation=(
        "Irvin J. et al. CheXpert: A Large Chest Radiograph Dataset with Uncertainty Labels and "
        "Expert Comparison. AAAI 2019; arXiv:1901.07031"
    ),
    prompts=CXR_PROMPTS,
    description="CheXpert: train.csv/valid.csv (Path + 14 findings, 1/0/-1/blank); patient id from the path; "
    "valid.csv is the test split",
    options={
        **CXR_OPTIONS,
        "views": AdapterOption("all", "'all' views or 'frontal' only", ("all", "frontal")),
        "valid_as_test": AdapterOption(
            "true", "use valid.csv as the test split ('false': ignore it)", ("true", "false")
        ),
    },
)
def read_chexpert(path: Path, log: RowLog, options: dict[str, str], progress: ProgressFn) -> Source:
    root = _chexpert_root(path)
    policy = UNCERTAINTY[options["uncertainty"]]
    files: list[tuple[str, str | None]] = [("train.csv", None)]
    if options["valid_as_test"] == "true" and (root / "valid.csv").is_file():
        files.append(("valid.csv", "test"))
    records = []
    for name, split in files:
        frame = read_csv(root / name, ["Path", *CXR_LABELS])
        cells = frame[list(CXR_LABELS)].to_numpy()
        views = frame["Frontal/Lateral"].to_numpy() if "Frontal/Lateral" in frame.columns else None
        meta = {key: frame[c].to_numpy() for c, key in CHEXPERT_METADATA.items() if c in frame.columns}
        for i, value in enumerate(frame["Path"].to_numpy()):
            with log.row(name, csv_line(i)):
                rel = _strip_prefix(root, value)
                view = (
                    views[i]
                    if views is not None
                    else ("Lateral" if "lateral" in PurePosixPath(rel).name.lower() else "Frontal")
                )
                if options["views"] == "frontal" and view.strip().lower() != "frontal":
                    continue
                patient = PATIENT.search(rel)
                if patient is None:
                    raise InputError(f"no patient id (patientNNNNN) in path {value!r}")
                image_id = str(PurePosixPath(rel).with_suffix(""))
                rec = Record(
                    image_id, rel, _labels(cells[i], policy), patient.group(1), split, file=name, line=csv_line(i)
                )
                rec.meta = {key: str(values[i]) for key, values in meta.items()}
                records.append(rec)
    return Source(root, Task.MULTILABEL, list(CXR_LABELS), records)


def _strip_prefix(root: Path, value: str) -> str:
    """CheXpert paths start with the dataset folder's own name; make them root-relative."""
    parts = value.strip().replace("\\", "/").split("/", 1)
    if len(parts) == 2 and parts[0] in (root.name, "CheXpert-v1.0-small", "CheXpert-v1.0"):
        return safe_rel_path(root, parts[1])
    return safe_rel_path(root, value)


MIMIC_FILES = {
    "labels": ("mimic-cxr-2.0.0-chexpert.csv", "mimic-cxr-2.0.0-chexpert.csv.gz"),
    "metadata": ("mimic-cxr-2.0.0-metadata.csv", "mimic-cxr-2.0.0-metadata.csv.gz"),
    "split": ("mimic-cxr-2.0.0-split.csv", "mimic-cxr-2.0.0-split.csv.gz"),
}
MIMIC_SPLITS = {"train": "train", "validate": "calib", "test": "test"}


@register_adapter(
    "mimic-cxr",
    dataset="mimic-cxr",
    task=Task.MULTILABEL,
    domain="rad",
    licence=(
        "PhysioNet Credentialed Health Data License 1.5.0 (credentialed access, data use "
        "agreement); https://physionet.org/content/mimic-cxr-jpg/"
    ),
    citation=(
        "Johnson A.E.W. et al. MIMIC-CXR, a de-identified publicly available database of chest "
        "radiographs with free-text reports. Scientific Data 6, 317 (2019)"
    ),
    prompts=CXR_PROMPTS,
    description="MIMIC-CXR-JPG: mimic-cxr-2.0.0-{chexpert,metadata}.csv(.gz) + files/pXX/pSUBJECT/sSTUDY/DICOM.jpg; "
    "frontal views by default; grouped by subject; official split CSV used when present",
    options={
        **CXR_OPTIONS,
        "views": AdapterOption("frontal", "'frontal' (PA/AP) views only, or 'all'", ("frontal", "all")),
        "official_split": AdapterOption("true", "use mimic-cxr-2.0.0-split.csv when present", ("true", "false")),
    },
)
def read_mimic(path: Path, log: RowLog, options: dict[str, str], progress: ProgressFn) -> Source:
    root = path.parent if path.is_file() else path
    policy = UNCERTAINTY[options["uncertainty"]]
    label_file = find_file(root, MIMIC_FILES["labels"], "MIMIC-CXR CheXpert label CSV")
    meta_file = find_file(root, MIMIC_FILES["metadata"], "MIMIC-CXR metadata CSV")
    labels = read_csv(label_file, ["subject_id", "study_id", *CXR_LABELS])
    study_labels: dict[str, np.ndarray] = {}
    cells = labels[list(CXR_LABELS)].to_numpy()
    for i, study in enumerate(labels["study_id"].str.strip()):
        with log.row(label_file.name, csv_line(i)):
            study_labels[study] = _labels(cells[i], policy)
    splits = _official_split(root, options["official_split"] == "true")
    meta = read_csv(meta_file, ["dicom_id", "subject_id", "study_id", "ViewPosition"])
    records = []
    for i, (dicom, subject, study, position) in enumerate(
        meta[["dicom_id", "subject_id", "study_id", "ViewPosition"]].to_numpy()
    ):
        if options["views"] == "frontal" and position.strip().upper() not in FRONTAL_POSITIONS:
            continue
        with log.row(meta_file.name, csv_line(i)):
            dicom, subject, study = dicom.strip(), subject.strip(), study.strip()
            if not subject.isdigit() or len(subject) < 2:
                raise InputError(f"malformed subject_id {subject!r}")
            if study not in study_labels:
                raise InputError(f"study {study} has no row in {label_file.name}")
            rel = safe_rel_path(root, f"files/p{subject[:2]}/p{subject}/s{study}/{dicom}.jpg")
            rec = Record(
                dicom,
                rel,
                study_labels[study],
                f"p{subject}",
                splits.get(dicom),
                file=meta_file.name,
                line=csv_line(i),
            )
            rec.meta = {MIMIC_METADATA["ViewPosition"]: position}
            records.append(rec)
    return Source(root, Task.MULTILABEL, list(CXR_LABELS), records)


def _official_split(root: Path, use: bool) -> dict[str, str]:
    if not use or not any((root / n).is_file() for n in MIMIC_FILES["split"]):
        return {}
    split_file = find_file(root, MIMIC_FILES["split"], "MIMIC-CXR split CSV")
    frame = read_csv(split_file, ["dicom_id", "split"])
    out = {}
    for i, (dicom, split) in enumerate(zip(frame["dicom_id"], frame["split"], strict=True)):
        if split.strip() not in MIMIC_SPLITS:
            raise InputError(
                f"{split_file.name}: line {csv_line(i)}: unknown split {split!r} (expected train, validate or test)"
            )
        out[dicom.strip()] = MIMIC_SPLITS[split.strip()]
    return out
