"""The embedded demo suite: four small toy datasets in the real published layouts (METHODS.md §1).

`make_suite(DIR)` writes

    DIR/isic2019/   ISIC_2019_Training_GroundTruth.csv, ISIC_2019_Training_Metadata.csv,
                    ISIC_2019_Training_Input/ISIC_xxxxxxx.jpg
    DIR/aptos2019/  train.csv, train_images/<id_code>.png
    DIR/chexpert/   CheXpert-v1.0-small/{train,valid}.csv, .../{train,valid}/patientN/studyM/viewK_*.jpg
    DIR/mimic-cxr/  mimic-cxr-2.0.0-{chexpert,metadata,split}.csv, files/pXX/pSUBJECT/sSTUDY/DICOM.jpg

Output is byte-identical for the same arguments: every random draw comes from a
generator seeded by (seed, dataset, item), and nothing time-dependent is written.
Class sizes scale with `scale`, but never drop below the floors that keep every
class/label present in every split (>= 2 positives in test) and in each 1 % subset.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import shutil
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from crsbench.core import CrsbenchError, ProgressFn, no_progress
from crsbench.ingest import synth, synth_cxr
from crsbench.ingest.adapter_cxr import CXR_LABELS
from crsbench.ingest.splits import stratified_group_split

ISIC_CLASSES: tuple[str, ...] = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC")
# Softened ISIC 2019 imbalance (NV dominant, DF/VASC rare) at scale 1.0.
ISIC_BASE: dict[str, int] = dict(MEL=36, NV=60, BCC=28, AK=14, BKL=26, DF=12, VASC=12, SCC=14)
APTOS_BASE: tuple[int, ...] = (80, 24, 52, 14, 22)  # grades 0..4, APTOS-like imbalance
MIN_PER_CLASS = 10  # with the 60/20/20 split this leaves >= 2 of every class in test
CXR_PREVALENCE: dict[str, float] = {
    "Enlarged Cardiomediastinum": 0.10,
    "Cardiomegaly": 0.18,
    "Lung Opacity": 0.35,
    "Lung Lesion": 0.10,
    "Edema": 0.22,
    "Consolidation": 0.12,
    "Pneumonia": 0.09,
    "Atelectasis": 0.18,
    "Pneumothorax": 0.12,
    "Pleural Effusion": 0.30,
    "Pleural Other": 0.07,
    "Fracture": 0.08,
    "Support Devices": 0.40,
}
PATHOLOGIES = tuple(CXR_PREVALENCE)
# Study label states; -2 is a blank cell in the CSV.
PRESENT, ABSENT, UNCERTAIN, BLANK = 1, 0, -1, -2

SuiteBuilder = Callable[[Path, float, int, int, ProgressFn], None]
_BUILDERS: dict[str, tuple[str, SuiteBuilder]] = {}


def _suite_dataset(name: str, folder: str) -> Callable[[SuiteBuilder], SuiteBuilder]:
    def register(fn: SuiteBuilder) -> SuiteBuilder:
        _BUILDERS[name] = (folder, fn)
        return fn

    return register


def make_suite(
    out_dir: Path,
    *,
    scale: float = 1.0,
    image_size: int = 128,
    seed: int = 0,
    progress: ProgressFn | None = None,
    png_class: str | None = None,
) -> dict[str, Path]:
    """Write the four toy datasets under `out_dir`; returns {adapter name: path to ingest}.

    Each dataset folder is built beside its final place and renamed over it, so a
    rerun replaces an older suite and an interrupted run leaves no half dataset.
    `png_class` (an ISIC class) plants a file-format shortcut: that class's images are
    written as PNG (under their .jpg names, the layout's), every other image as JPEG.
    """
    if not scale > 0:
        raise CrsbenchError(f"--scale must be positive, got {scale}")
    if png_class is not None and png_class not in ISIC_CLASSES:
        raise CrsbenchError(f"png_class must be an ISIC class ({', '.join(ISIC_CLASSES)}), got {png_class!r}")
    if not 32 <= image_size <= 1024:
        raise CrsbenchError(f"--image-size must be between 32 and 1024, got {image_size}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = progress or no_progress
    paths: dict[str, Path] = {}
    for name, (folder, build) in _BUILDERS.items():
        final = out_dir / folder
        tmp = out_dir / f".{folder}.tmp-{uuid.uuid4().hex[:8]}"
        try:
            if name == "isic2019" and png_class is not None:
                _write_isic(tmp, scale, image_size, seed, report, png_class)
            else:
                build(tmp, scale, image_size, seed, report)
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        paths[name] = final
    return paths


# ------------------------------------------------------------------------------ helpers


def _rng(*parts: object) -> np.random.Generator:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _hex(*parts: object, n: int = 12) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:n]


def _counts(base: dict[str, int] | tuple[int, ...], scale: float) -> list[int]:
    values = base.values() if isinstance(base, dict) else base
    return [max(MIN_PER_CLASS, round(v * scale)) for v in values]


def _save(pixels: np.ndarray, path: Path, fmt: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    if fmt == "JPEG":
        Image.fromarray(pixels).save(buf, format="JPEG", quality=92)
    else:
        Image.fromarray(pixels).save(buf, format="PNG")
    path.write_bytes(buf.getvalue())


def _write_csv(path: Path, header: list[str], rows: Sequence[Sequence[object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def _cell(state: int) -> str:
    return {PRESENT: "1.0", ABSENT: "0.0", UNCERTAIN: "-1.0", BLANK: ""}[int(state)]


# --------------------------------------------------------------------------------- ISIC


@_suite_dataset("isic2019", "isic2019")
def _build_isic(root: Path, scale: float, size: int, seed: int, report: ProgressFn) -> None:
    _write_isic(root, scale, size, seed, report, None)


def _write_isic(root: Path, scale: float, size: int, seed: int, report: ProgressFn, png_class: str | None) -> None:
    rng = _rng(seed, "isic2019")
    lesions: list[tuple[str, int]] = []  # (class, number of images of that lesion)
    for cls, n in zip(ISIC_CLASSES, _counts(ISIC_BASE, scale), strict=True):
        # Frequent classes get some lesions photographed twice (a grouping the splits
        # must respect); rare classes keep single images so each split gets its share.
        pairs = n // 6 if n >= 20 else 0
        lesions += [(cls, 2)] * pairs + [(cls, 1)] * (n - 2 * pairs)
    lesions = [lesions[i] for i in rng.permutation(len(lesions))]
    n_images = sum(k for _, k in lesions)
    numbers = np.sort(rng.choice(9_000_000, size=n_images, replace=False)) + 24_000
    id_order = rng.permutation(n_images)
    truth, meta, done = [], [], 0
    for li, (cls, k) in enumerate(lesions):
        lesion_id = f"BCN_{li:07d}" if k == 2 or rng.random() < 0.5 else ""
        age, site, sex = (
            int(rng.integers(3, 18) * 5),
            str(rng.choice(["anterior torso", "posterior torso", "lower extremity", "upper extremity", "head/neck"])),
            str(rng.choice(["male", "female"])),
        )
        for view in range(k):
            image_id = f"ISIC_{numbers[id_order[done]]:07d}"
            # Both photos of one lesion share its drawing; the second is turned and relit.
            pixels = synth.render_derm(_rng(seed, "isic2019", "lesion", li), cls, size)
            if view:
                pixels = np.rot90(pixels, k=1 + li % 3).copy()
                pixels = np.clip(pixels.astype(np.int16) + int(rng.integers(-12, 12)), 0, 255).astype(np.uint8)
            fmt = "PNG" if cls == png_class else "JPEG"
            _save(pixels, root / "ISIC_2019_Training_Input" / f"{image_id}.jpg", fmt)
            truth.append([image_id] + ["1.0" if c == cls else "0.0" for c in ISIC_CLASSES] + ["0.0"])
            meta.append([image_id, age, site, lesion_id, sex])
            done += 1
            report("generating isic2019", done, n_images)
    truth.sort()
    meta.sort()
    _write_csv(root / "ISIC_2019_Training_GroundTruth.csv", ["image", *ISIC_CLASSES, "UNK"], truth)
    _write_csv(
        root / "ISIC_2019_Training_Metadata.csv",
        ["image", "age_approx", "anatom_site_general", "lesion_id", "sex"],
        meta,
    )


# -------------------------------------------------------------------------------- APTOS


@_suite_dataset("aptos2019", "aptos2019")
def _build_aptos(root: Path, scale: float, size: int, seed: int, report: ProgressFn) -> None:
    rng = _rng(seed, "aptos2019")
    grades = np.concatenate([np.full(n, g) for g, n in enumerate(_counts(APTOS_BASE, scale))])
    grades = grades[rng.permutation(len(grades))]
    rows = []
    for i, grade in enumerate(grades):
        id_code = _hex(seed, "aptos2019", i)
        pixels = synth.render_fundus(_rng(seed, "aptos2019", "image", i), int(grade), size)
        _save(pixels, root / "train_images" / f"{id_code}.png", "PNG")
        rows.append([id_code, int(grade)])
        report("generating aptos2019", i + 1, len(grades))
    rows.sort()
    _write_csv(root / "train.csv", ["id_code", "diagnosis"], rows)


# ---------------------------------------------------------------------------- chest X-ray


def sample_study_states(rng: np.random.Generator, n: int, min_pos: int, min_normal: int, expert: bool) -> np.ndarray:
    """Label states (n studies x 14 labels, CheXpert order) with guaranteed positives.

    Each pathology is present in >= min_pos studies and >= min_normal studies are
    normal (No Finding = 1). `expert` labels (CheXpert valid.csv) are all 0/1; report-
    mined ones carry -1 (uncertain) and blanks.
    """
    k = len(PATHOLOGIES)
    prevalence = np.array([CXR_PREVALENCE[p] for p in PATHOLOGIES])
    present = rng.random((n, k)) < prevalence
    normal = np.zeros(n, dtype=bool)
    normal[rng.choice(n, size=min(min_normal, n), replace=False)] = True
    present[normal] = False
    for j in range(k):
        short = min_pos - int(present[:, j].sum())
        if short > 0:
            free = np.flatnonzero(~present[:, j] & ~normal)
            present[rng.choice(free, size=min(short, len(free)), replace=False), j] = True
    states = np.where(present, PRESENT, ABSENT)
    if not expert:
        uncertain = (rng.random((n, k)) < 0.07) & ~present & ~normal[:, None]
        blank = (rng.random((n, k)) < 0.75) & ~present & ~uncertain
        states = np.where(uncertain, UNCERTAIN, np.where(blank, BLANK, states))
    no_finding = ~((states == PRESENT) | (states == UNCERTAIN)).any(axis=1)
    first = np.where(no_finding, PRESENT, ABSENT if expert else BLANK)
    return np.concatenate([first[:, None], states], axis=1).astype(np.int8)


def _strengths(states: np.ndarray) -> dict[str, float]:
    # Uncertain findings are drawn faintly: the image shows something the label hedges on.
    return {
        name: (1.0 if s == PRESENT else 0.5 if s == UNCERTAIN else 0.0)
        for name, s in zip(CXR_LABELS, states, strict=True)
    }


@_suite_dataset("chexpert", "chexpert")
def _build_chexpert(root: Path, scale: float, size: int, seed: int, report: ProgressFn) -> None:
    base = root / "CheXpert-v1.0-small"
    header = ["Path", "Sex", "Age", "Frontal/Lateral", "AP/PA", *CXR_LABELS]
    plan = [
        ("train", 1, max(40, round(75 * scale)), 8, 6, False),
        ("valid", 64541, max(20, round(30 * scale)), 3, 3, True),
    ]
    images: list[tuple[str, str, np.ndarray, Path, int]] = []
    rows: dict[str, list[list[object]]] = {"train": [], "valid": []}
    for split, first_pid, n_patients, min_pos, min_normal, expert in plan:
        rng = _rng(seed, "chexpert", split)
        n_studies = [1] * n_patients if expert else list(rng.choice([1, 2, 3], size=n_patients, p=[0.55, 0.3, 0.15]))
        states = sample_study_states(rng, sum(n_studies), min_pos, min_normal, expert)
        study = 0
        for p, k in enumerate(n_studies):
            pid = first_pid + p
            sex, age = str(rng.choice(["Male", "Female"])), int(rng.integers(18, 91))
            for j in range(1, k + 1):
                views = ["frontal"] + (["lateral"] if rng.random() < 0.35 else [])
                for v, view in enumerate(views, start=1):
                    rel = f"{split}/patient{pid:05d}/study{j}/view{v}_{view}.jpg"
                    appa = str(rng.choice(["AP", "PA"])) if view == "frontal" else ""
                    rows[split].append(
                        [
                            f"CheXpert-v1.0-small/{rel}",
                            sex,
                            age,
                            view.capitalize(),
                            appa,
                            *[_cell(s) for s in states[study]],
                        ]
                    )
                    images.append((view, split, states[study], base / rel, len(images)))
                study += 1
    for done, (view, _split, st, path, i) in enumerate(images, start=1):
        pixels = synth_cxr.render_cxr(_rng(seed, "chexpert", "image", i), _strengths(st), view, "chexpert", size)
        _save(pixels, path, "JPEG")
        report("generating chexpert", done, len(images))
    for split in rows:
        _write_csv(base / f"{split}.csv", header, rows[split])


MIMIC_LABEL_ORDER = tuple(sorted(CXR_LABELS))  # the MIMIC CSVs list labels alphabetically
MIMIC_METADATA_HEADER = [
    "dicom_id",
    "subject_id",
    "study_id",
    "PerformedProcedureStepDescription",
    "ViewPosition",
    "Rows",
    "Columns",
    "StudyDate",
    "StudyTime",
    "ProcedureCodeSequence_CodeMeaning",
    "ViewCodeSequence_CodeMeaning",
    "PatientOrientationCodeSequence_CodeMeaning",
]


@dataclasses.dataclass
class _MimicRows:
    """The three CSVs' rows and the images to draw: (rel path, view, study index)."""

    labels: list[list[int | str]] = dataclasses.field(default_factory=list)
    meta: list[list[int | str]] = dataclasses.field(default_factory=list)
    images: list[tuple[str, str, int]] = dataclasses.field(default_factory=list)


@_suite_dataset("mimic-cxr", "mimic-cxr")
def _build_mimic(root: Path, scale: float, size: int, seed: int, report: ProgressFn) -> None:
    rng = _rng(seed, "mimic-cxr")
    n_subjects = max(60, round(100 * scale))
    subjects = np.sort(rng.choice(9_999_999, size=n_subjects, replace=False)) + 10_000_000
    per_subject = rng.choice([1, 2, 3], size=n_subjects, p=[0.5, 0.3, 0.2])
    studies = np.sort(rng.choice(9_999_999, size=int(per_subject.sum()), replace=False)) + 50_000_000
    states = sample_study_states(rng, len(studies), 12, 12, expert=False)
    rows = _MimicRows()
    st = 0
    for subject, k in zip(subjects, per_subject, strict=True):
        for _ in range(k):
            _add_mimic_study(rows, rng, int(subject), int(studies[st]), st, states[st], seed, size)
            st += 1
    for done, (rel, view, s) in enumerate(rows.images, start=1):
        pixels = synth_cxr.render_cxr(_rng(seed, "mimic-cxr", rel), _strengths(states[s]), view, "mimic", size)
        _save(pixels, root / rel, "JPEG")
        report("generating mimic-cxr", done, len(rows.images))
    _write_csv(root / "mimic-cxr-2.0.0-chexpert.csv", ["subject_id", "study_id", *MIMIC_LABEL_ORDER], rows.labels)
    _write_csv(root / "mimic-cxr-2.0.0-metadata.csv", MIMIC_METADATA_HEADER, rows.meta)
    _write_csv(
        root / "mimic-cxr-2.0.0-split.csv",
        ["dicom_id", "study_id", "subject_id", "split"],
        _mimic_split_rows(states, rows, seed),
    )


def _add_mimic_study(
    rows: _MimicRows,
    rng: np.random.Generator,
    subject: int,
    study: int,
    st: int,
    states: np.ndarray,
    seed: int,
    size: int,
) -> None:
    """One study: its label row, and a metadata row and an image per view (draws from `rng` in order)."""
    views = [str(rng.choice(["PA", "AP"], p=[0.6, 0.4]))]
    views += ["AP"] if rng.random() < 0.08 else []
    views += [str(rng.choice(["LATERAL", "LL"], p=[0.85, 0.15]))] if rng.random() < 0.35 else []
    rows.labels.append([subject, study, *_mimic_label_cells(states)])
    for v, pos in enumerate(views):
        dicom = "-".join(_hex(seed, "mimic", study, v, part, n=8) for part in range(5))
        rows.meta.append(_mimic_metadata_row(rng, dicom, subject, study, pos, size))
        rel = f"files/p{str(subject)[:2]}/p{subject}/s{study}/{dicom}.jpg"
        rows.images.append((rel, "frontal" if pos in ("PA", "AP") else "lateral", st))


def _mimic_label_cells(states: np.ndarray) -> list[str]:
    """A study's label cells in MIMIC's (alphabetical) column order; `states` is in CheXpert order."""
    order = [MIMIC_LABEL_ORDER.index(n) for n in CXR_LABELS]
    cells = [""] * len(order)
    for src, dst in enumerate(order):
        cells[dst] = _cell(states[src])
    return cells


def _mimic_metadata_row(
    rng: np.random.Generator, dicom: str, subject: int, study: int, pos: str, size: int
) -> list[int | str]:
    meaning = {"PA": "postero-anterior", "AP": "antero-posterior"}.get(pos, "lateral")
    date = 21800000 + int(rng.integers(1, 13)) * 100 + int(rng.integers(1, 29))
    time = f"{int(rng.integers(0, 24)):02d}{int(rng.integers(0, 60)):02d}{int(rng.integers(0, 60)):02d}.000"
    procedure = "CHEST (PA AND LAT)"
    return [dicom, subject, study, procedure, pos, size, size, date, time, procedure, meaning, "Erect"]


def _mimic_split_rows(states: np.ndarray, rows: _MimicRows, seed: int) -> list[list[object]]:
    """The publisher's split: by subject, stratified on the (U-zeros) study labels."""
    study_index = {int(r[1]): i for i, r in enumerate(rows.labels)}
    y = (states == PRESENT).astype(np.int64)
    y_rows = np.array([y[study_index[int(m[2])]] for m in rows.meta])
    parts = stratified_group_split(y_rows, [str(m[1]) for m in rows.meta], (0.6, 0.2, 0.2), seed=f"mimic-{seed}")
    return [[m[0], m[2], m[1], ("train", "validate", "test")[p]] for m, p in zip(rows.meta, parts, strict=True)]
