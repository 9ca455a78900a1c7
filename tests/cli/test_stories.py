"""Five user stories, each run as a user runs it: the CLI in a subprocess, one documented command
after another, on scikit-learn's digits written as PNG files (real images, real labels).

Every command is taken from the documentation (README.md, docs/USER_GUIDE.md,
docs/ADDING_AN_ENCODER.md, docs/ANALYST_GUIDE.md), with only its placeholders (paths, encoder
ids, names) replaced, each replacement applied exactly once: a doc change that breaks a story
fails here, naming the doc. Each step must exit 0; each story's end state is then checked
independently of crsbench (duckdb, numpy, scikit-learn, timm, hashlib).

1. Own images: digits in class folders (root/<class>/*.png) and a clinic manifest whose columns are
   named otherwise and whose patients hold images of several classes; a small study's grid, a
   4-member panel, the default (images+seeds) bootstrap, a leaderboard that opens with a verdict.
2. Own encoder: the TOML table of ADDING_AN_ENCODER.md (a timm ViT with overrides.input_size).
3. Analyst: plain duckdb, read-only, from another folder; the duckdb shell where one is installed.
4. Successor check on unlabelled images: the reading says "no more than a random network" exactly
   when the overlap's interval reaches the random-init floor.
5. Subgroups and operating points on attached metadata; `analyze agreement -d X` keeps the other
   datasets' rows.

The prepared warehouse of story 1 is built once (module fixture); stories 2-5 each work on their
own copy of it, so none depends on another's writes.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from PIL import Image
from sklearn.datasets import load_digits
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import NearestNeighbors

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
GUIDE = REPO / "docs" / "USER_GUIDE.md"
ENCODER_DOC = REPO / "docs" / "ADDING_AN_ENCODER.md"
ANALYST_DOC = REPO / "docs" / "ANALYST_GUIDE.md"

SIZE = 32  # px: the digits' 8 x 8 pixels written at a size users' images have
PER_CLASS = 10  # digits 0-9 in class folders: 10 of each (2 reach the test split)
CLINIC_DIGITS = (3, 5, 8, 9)  # the clinic's four diagnoses: digits that look alike
N_PATIENTS = 32  # 3 images each, of 3 different classes
N_UNLABELLED = 40
TINY = ["tiny-resnet18", "tiny-vit", "tiny-convnext", "tiny-efficientnet"]
PANEL = "ref2026"
FOLD = {0: "train", 1: "train", 2: "train", 3: "val", 4: "test", 5: "test"}  # patient k -> FOLD[k % 6]
THRESHOLD = 0.3  # the fixed threshold of story 5 (GUIDE: --threshold 0.3)


# ---------------------------------------------------------------- the docs, as a user copies them


def _doc_commands(doc: Path) -> list[str]:
    """Every command line of the doc's fenced blocks (continuations joined) and inline code spans."""
    text = doc.read_text(encoding="utf-8")
    lines: list[str] = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        lines.extend(re.sub(r"\\\n\s*", "", block).splitlines())
    lines.extend(re.findall(r"`((?:crsbench|duckdb) [^`]+)`", text))
    return [line.strip() for line in lines]


def doc_command(doc: Path, prefix: str, *subs: tuple[str, str], append: str = "") -> str:
    """The first command of `doc` starting with `prefix`, each (old, new) replaced exactly once."""
    found = [line for line in _doc_commands(doc) if line.startswith(prefix)]
    assert found, f"{doc.name} no longer shows a command starting {prefix!r}; update this story with it"
    line = shlex.join(shlex.split(found[0], comments=True))  # the trailing `# comment` dropped
    for old, new in subs:
        assert line.count(old) == 1, f"{doc.name}: {line!r} no longer holds {old!r} once; update this story"
        line = line.replace(old, new)
    return f"{line} {append}".strip()


# ---------------------------------------------------------------- running the CLI as a user does


@dataclass
class Story:
    """A working folder with `export CRSBENCH_DB=bench.duckdb`, and the steps run so far."""

    folder: Path
    steps: list[tuple[str, subprocess.CompletedProcess]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def db(self) -> Path:
        return self.folder / "bench.duckdb"

    def run(self, line: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """One shell line of the docs: `crsbench ...` runs `python -m crsbench.cli ...`; exit 0 asserted."""
        argv = shlex.split(line, comments=True)
        assert argv[0] == "crsbench", line
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("CRSBENCH_") and k not in ("HF_HUB_OFFLINE", "HF_HOME", "HUGGINGFACE_HUB_CACHE")
        }
        env |= {"CRSBENCH_DB": "bench.duckdb", "HF_HUB_OFFLINE": "1", "HF_HOME": str(self.folder / "hf")}
        env["CRSBENCH_WEIGHTS"] = str(self.folder / "no-weights")
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "crsbench.cli", *argv[1:]],
            cwd=cwd or self.folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        self.steps.append((line, proc))
        self.seconds.append(time.perf_counter() - started)
        if os.environ.get("STORY_TIMES"):
            print(f"{self.seconds[-1]:6.1f} s  {line[:110]}", file=sys.stderr)
        assert proc.returncode == 0, f"step failed: {line}\n(exit {proc.returncode})\n{proc.stderr[-3000:]}"
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-3000:]
        return proc

    def copy(self, folder: Path) -> Story:
        """The warehouse, its run parts and feature store, in a fresh working folder."""
        folder.mkdir(parents=True)
        for name in ("bench.duckdb", "bench.duckdb.parts", "bench.duckdb.features.zarr"):
            source = self.folder / name
            if source.is_dir():
                shutil.copytree(source, folder / name)
            elif source.exists():
                shutil.copy2(source, folder / name)
        return Story(folder)

    def sql(self, query: str, params: list | None = None) -> pd.DataFrame:
        con = duckdb.connect(str(self.db), read_only=True)
        try:
            return con.execute(query, params or []).df()
        finally:
            con.close()


def _png(pixels: np.ndarray, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray((pixels * 255 / 16).astype(np.uint8))
    image.resize((SIZE, SIZE), Image.Resampling.BILINEAR).save(path)


@dataclass(frozen=True)
class Data:
    root: Path
    folder_targets: dict[str, str]  # rel path under digits/ -> class folder
    clinic: pd.DataFrame  # the manifest as written: file, diagnosis, patient, fold
    meta: pd.DataFrame  # image_id, sex, age


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Data:
    """The digits as a user holds them: class folders, a clinic manifest with patients, a folder
    of unlabelled images, and a metadata CSV for the clinic."""
    root = tmp_path_factory.mktemp("data")
    digits = load_digits()
    folder_targets = {}
    chosen = [i for c in range(10) for i in np.flatnonzero(digits.target == c)[:PER_CLASS]]
    for i in sorted(chosen):
        rel = f"{digits.target[i]}/{i:04d}.png"
        _png(digits.images[i], root / "digits" / rel)
        folder_targets[rel] = str(digits.target[i])
    # The clinic: patient k holds one image of each of the classes k, k+1, k+2 (mod 4), so every
    # patient has images of several classes and every class is spread over several patients.
    rest = sorted(set(range(len(digits.target))) - set(chosen))
    pool = {c: [i for i in rest if digits.target[i] == c] for c in CLINIC_DIGITS}
    rows = []
    for k in range(N_PATIENTS):
        for c in (CLINIC_DIGITS[k % 4], CLINIC_DIGITS[(k + 1) % 4], CLINIC_DIGITS[(k + 2) % 4]):
            i = pool[c].pop(0)
            _png(digits.images[i], root / "clinic" / "scans" / f"{i:04d}.png")
            rows.append({"file": f"scans/{i:04d}.png", "diagnosis": f"digit-{c}", "patient": f"P{k:03d}"})
    clinic = pd.DataFrame(rows)
    clinic["fold"] = [FOLD[int(p[1:]) % 6] for p in clinic["patient"]]
    clinic.to_csv(root / "clinic" / "clinic.csv", index=False)
    meta = pd.DataFrame(
        {
            "image_id": clinic["file"],  # a manifest without an image_id column: the path is the id
            "sex": ["F" if int(p[1:]) % 2 else "M" for p in clinic["patient"]],
            "age": [25 + (int(p[1:]) * 7) % 60 for p in clinic["patient"]],
        }
    )
    meta.to_csv(root / "meta.csv", index=False)
    unused = sorted(set(rest) - {int(f[6:10]) for f in clinic["file"]})
    for j, i in enumerate(unused[-N_UNLABELLED:]):
        _png(digits.images[i], root / "new-images" / f"batch{j % 3}" / f"{i:04d}.png")
    return Data(root, folder_targets, clinic, meta)


@pytest.fixture(scope="module")
def prepared(data, tmp_path_factory) -> Story:
    """Story 1 up to the leaderboard, as README's "Use it on your data" runs it."""
    story = Story(tmp_path_factory.mktemp("own-images"))
    story.run(doc_command(GUIDE, "crsbench ingest folder /data/digits", ("/data/digits", str(data.root / "digits"))))
    story.run(
        doc_command(GUIDE, "crsbench ingest manifest", ("/data/clinic.csv", str(data.root / "clinic" / "clinic.csv")))
    )
    # New images without labels, for story 4; a bare restrict, probe and panel leave them out.
    story.run(doc_command(README, "crsbench ingest folder", ("/data/new-images", str(data.root / "new-images"))))
    story.run(doc_command(GUIDE, "crsbench grid restrict --probe"))
    story.run(
        doc_command(
            README,
            "crsbench extract",
            ("-e rad-dino -e dinov2 -e biomedclip -e timm:convnext_small", " ".join(f"-e {e}" for e in TINY)),
            ("--device cuda", "--device cpu"),
        )
    )
    story.run(doc_command(README, "crsbench probe"))
    story.run(
        doc_command(README, "crsbench panel freeze", ("rad-dino,dinov2,biomedclip,timm:convnext_small", ",".join(TINY)))
    )
    story.run(doc_command(README, "crsbench analyze bootstrap", append="--replicates 100"))
    story.run(doc_command(README, "crsbench leaderboard --panel"))
    return story


# ---------------------------------------------------------------- 1. own images


def test_own_images_class_folders_and_a_manifest_reach_a_ranked_verdict(data, prepared):
    story = prepared
    steps = dict(story.steps)
    images = story.sql(
        "select dataset_id, image_id, rel_path, group_id, split from images order by dataset_id, row_index"
    )
    labels = story.sql(
        "select l.dataset_id, l.image_id, l.label_idx, d.label_names[l.label_idx + 1] as label from labels l "
        "join datasets d using (dataset_id) where l.value = 1"
    )
    got = dict(labels[labels.dataset_id == "digits"][["image_id", "label"]].itertuples(index=False))
    folder = images[images.dataset_id == "digits"]
    assert {p: got[i] for i, p in folder[["image_id", "rel_path"]].itertuples(index=False)} == data.folder_targets

    # The manifest's own columns, read through the options: paths, labels, patients, folds.
    clinic = images[images.dataset_id == "clinic"].merge(data.clinic, left_on="rel_path", right_on="file")
    assert len(clinic) == len(data.clinic) == 3 * N_PATIENTS
    got = dict(labels[labels.dataset_id == "clinic"][["image_id", "label"]].itertuples(index=False))
    assert [got[i] for i in clinic.image_id] == clinic.diagnosis.tolist()
    assert (clinic.group_id == clinic.patient).all()
    assert (clinic.split == clinic.fold.replace({"val": "calib"})).all()
    test = clinic[clinic.split == "test"]
    assert (test.groupby("patient").diagnosis.nunique() == 3).all()  # multi-class patients in test
    for line, proc in story.steps[:2]:  # neither labelled split leaves a class to a single test group
        assert "ingest" in line and "cannot support the image-level bootstrap" not in proc.stderr, proc.stderr

    # The small study's grid: 2 fractions x 2 seeds of logreg at full depth, each cell complete.
    runs = story.sql("select encoder_id, dataset_id, count(distinct fit_id) n from runs group by all order by all")
    assert set(zip(runs.encoder_id, runs.dataset_id, runs.n, strict=True)) == {
        (e, d, 4) for e in TINY for d in ("clinic", "digits")
    }
    # One run's AUROC against scikit-learn on its stored predictions.
    run = story.sql(
        "select run_id, auroc from runs where encoder_id = 'tiny-vit' and dataset_id = 'clinic' "
        "and condition = 'clean' and label_fraction = 1.0 and seed = 0"
    )
    probs = story.sql("select image_id, probs from predictions where run_id = ?", [run.run_id[0]])
    truth = probs.image_id.map(labels[labels.dataset_id == "clinic"].set_index("image_id").label_idx)
    expected = roc_auc_score(truth, np.stack(probs.probs), multi_class="ovr", average="macro")
    assert run.auroc[0] == pytest.approx(expected, abs=1e-6)

    # The default bootstrap reached its end on both datasets, and its intervals vary.
    boot = story.sql(
        "select dataset_id, encoder_id, estimate, lo, hi, note from bootstrap_intervals where panel = ? "
        "and resample = 'images+seeds' and metric = 'discrimination' and dataset_id is not null",
        [PANEL],
    )
    assert set(zip(boot.dataset_id, boot.encoder_id, strict=True)) == {
        (d, e) for d in ("clinic", "digits") for e in TINY
    }
    varies = boot.hi > boot.lo
    # An AUROC of 1 in every replicate (a perfectly separated dataset) is n/a with its reason.
    pinned = boot[~varies]
    assert (pinned.lo.isna() & pinned.hi.isna() & pinned.note.notna() & (pinned.estimate == 1.0)).all(), boot
    assert varies[boot.dataset_id == "clinic"].sum() >= 2, boot

    # The leaderboard opens with one sentence naming the leader by CRS (read here from plain duckdb).
    board = story.sql("select encoder_id, crs, crs_rank from crs_encoder where panel = ? order by crs desc", [PANEL])
    assert sorted(board.encoder_id) == sorted(TINY) and board.crs_rank.tolist()[0] == 1
    final = steps[doc_command(README, "crsbench leaderboard --panel")].stdout
    first = final.splitlines()[0]
    assert first.startswith(f"{board.encoder_id[0]} leads on CRS (panel {PANEL});"), first
    assert "mean CRS interval width" in first


# ---------------------------------------------------------------- 2. own encoder


def test_own_encoder_from_the_documented_toml_table(data, prepared, tmp_path):
    import timm
    import torch
    import zarr

    story = prepared.copy(tmp_path / "encoder")
    blocks = re.findall(r"```toml\n(.*?)```", ENCODER_DOC.read_text(encoding="utf-8"), flags=re.S)
    table = next(b for b in blocks if "[encoder.derm-vit]" in b)
    # The one change a user with 32 px images makes; 384 px would cost minutes on a CPU.
    assert table.count("input_size = 384") == 1, "ADDING_AN_ENCODER.md's table changed; update this story"
    (story.folder / "encoders.toml").write_text(table.replace("input_size = 384", f"input_size = {SIZE}"))
    weights = story.folder / "weights" / "derm_vit.pth"  # `weights = "weights/derm_vit.pth"`, beside the file
    weights.parent.mkdir()
    torch.manual_seed(0)
    published = timm.create_model("vit_small_patch16_224", pretrained=False)  # 224 px, with its classifier
    torch.save(published.state_dict(), weights)

    listed = story.run("crsbench encoders --encoders encoders.toml").stdout
    assert re.search(r"^│ derm-vit\s", listed, flags=re.M), listed
    rows = json.loads(story.run("crsbench --json encoders --encoders encoders.toml").stdout)["encoders"]
    assert next(r for r in rows if r["id"] == "derm-vit")["origin"].startswith("toml:"), rows
    extract = doc_command(ENCODER_DOC, "crsbench extract -e <id> -d all", ("<id>", "derm-vit"), ("-d all", "-d digits"))
    story.run(f"{extract} --encoders encoders.toml")
    story.run(doc_command(ENCODER_DOC, "crsbench probe -e <id>", ("<id>", "derm-vit")))
    board = story.run(doc_command(ENCODER_DOC, "crsbench leaderboard --panel <panel>", ("<panel>", PANEL))).stdout
    # Probed on one of the panel's two datasets: shown, as the doc says, partial and unranked.
    row = story.sql("select coverage, crs_rank, missing_datasets from crs_encoder where encoder_id = 'derm-vit'")
    assert row.coverage[0] == "partial" and pd.isna(row.crs_rank[0]) and list(row.missing_datasets[0]) == ["clinic"]
    assert re.search(r"derm-vit\s.*1/2", board), board

    spec = story.sql("select origin, weights_hash, pretrained from encoders where encoder_id = 'derm-vit'")
    assert spec.origin[0] == f"toml:{story.folder / 'encoders.toml'}"
    assert spec.pretrained[0] and re.fullmatch(r"[0-9a-f]{64}", spec.weights_hash[0])  # weights, not random init
    # Independent: timm's model built for 32 px, the checkpoint's position embedding resampled by
    # timm, the documented preprocessing (32 px images: no resize), mean over patch tokens.
    from timm.models.vision_transformer import checkpoint_filter_fn

    reference = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=0, img_size=SIZE).eval()
    state = {k: v for k, v in published.state_dict().items() if not k.startswith("head.")}
    reference.load_state_dict(checkpoint_filter_fn(state, reference))
    paths = story.sql("select rel_path from images where dataset_id = 'digits' order by row_index limit 6").rel_path
    pixels = np.stack([np.asarray(Image.open(data.root / "digits" / p).convert("RGB")) for p in paths])
    x = torch.tensor(pixels, dtype=torch.float32).permute(0, 3, 1, 2) / 255
    x = (x - torch.tensor([0.6, 0.5, 0.4])[:, None, None]) / torch.tensor([0.2, 0.2, 0.2])[:, None, None]
    with torch.no_grad():
        want = reference.forward_features(x)[:, reference.num_prefix_tokens :].mean(dim=1).numpy()
    store = zarr.open_group(str(story.db) + ".features.zarr", mode="r")
    got = np.asarray(store["digits/derm-vit/d100/clean"][: len(paths)], dtype=np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3 * np.abs(want).max())  # stored as float16


# ---------------------------------------------------------------- 3. analyst


def _analyst_queries() -> list[str]:
    return re.findall(r"```sql\n(.*?)```", ANALYST_DOC.read_text(encoding="utf-8"), flags=re.S)


def _duckdb_shell() -> Path | None:
    """The `duckdb` shell of duckdb-cli: in this venv, else the copy tests/warehouse/test_duckdb_cli.py caches."""
    beside = Path(sys.executable).parent / "duckdb"
    if beside.exists():
        return beside
    cached = sorted(
        glob.glob(f"{tempfile.gettempdir()}/crsbench-duckdb-cli-*/lib/python*/site-packages/duckdb_cli/duckdb")
    )
    return Path(cached[-1]) if cached else None


def test_analyst_reads_the_warehouse_read_only_from_another_folder(prepared, tmp_path):
    elsewhere = tmp_path / "notebooks"
    elsewhere.mkdir()
    before = prepared.db.read_bytes()
    cwd = os.getcwd()
    os.chdir(elsewhere)
    try:
        con = duckdb.connect(str(prepared.db), read_only=True)
        try:
            board = con.execute("select * from crs_encoder").df()
            answers = [con.execute(q).df() for q in _analyst_queries()]
        finally:
            con.close()
    finally:
        os.chdir(cwd)
    numbered = re.findall(r"^## \d+\. ", ANALYST_DOC.read_text(encoding="utf-8"), flags=re.M)
    assert len(answers) == len(numbered) >= 11  # one query per numbered question, each answered
    members = board[board.panel == PANEL].sort_values("crs", ascending=False)
    assert sorted(members.encoder_id) == sorted(TINY)
    # crs_rank is 1 + the number of members with a higher CRS (METHODS.md §8.5), checked by hand.
    crs = members.set_index("encoder_id").crs
    assert {e: 1 + int((crs > c).sum()) for e, c in crs.items()} == members.set_index("encoder_id").crs_rank.to_dict()
    q1 = answers[0]  # the leaderboard question: the same encoders, best first
    assert q1.encoder_id.tolist() == members.encoder_id.tolist()
    assert q1.crs.tolist() == pytest.approx(members.crs.tolist(), abs=6e-4)
    assert prepared.db.read_bytes() == before  # read-only for real

    shell = _duckdb_shell()
    if shell is None:
        pytest.skip("no duckdb shell here (pip install duckdb-cli); plain duckdb from Python checked above")
    line = doc_command(README, "duckdb bench.duckdb", ("bench.duckdb", str(prepared.db)))
    argv = shlex.split(line, comments=True)
    shown = subprocess.run([str(shell), *argv[1:]], cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and not shown.stderr.strip(), shown.stderr
    assert all(e in shown.stdout for e in TINY), shown.stdout
    as_csv = subprocess.run(
        [
            str(shell),
            "-readonly",
            "-csv",
            str(prepared.db),
            f"select encoder_id, crs from crs_encoder where panel = '{PANEL}'",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert as_csv.returncode == 0, as_csv.stderr
    rows = dict(line.split(",") for line in as_csv.stdout.strip().splitlines()[1:])
    assert {e: float(v) for e, v in rows.items()} == pytest.approx(crs.to_dict())


# ---------------------------------------------------------------- 4. successor


def _overlap(x: np.ndarray, y: np.ndarray, k: int) -> float:
    """Mean over images of |N_x(i) & N_y(i)| / k, cosine neighbours, the image itself left out."""

    def neighbours(f: np.ndarray) -> np.ndarray:
        found = NearestNeighbors(n_neighbors=k + 1, metric="cosine", algorithm="brute").fit(f).kneighbors(f)[1]
        return np.array([[j for j in row if j != i][:k] for i, row in enumerate(found)])

    a, b = neighbours(x), neighbours(y)
    return float(np.mean([len(set(a[i]) & set(b[i])) / k for i in range(len(x))]))


READING = re.compile(
    r"^(?P<dataset>\S+): (?P<cand>\S+) returns (?P<est>[\d.]+) of (?P<cur>\S+)'s (?P<k>\d+) nearest neighbours "
    r"\(95 % CI (?P<lo>[\d.]+)-(?P<hi>[\d.]+); chance (?P<chance>[\d.]+); random-init (?P<floor>[\d.]+)\)(?P<rest>.*)$",
    flags=re.M,
)


def test_successor_on_unlabelled_images_says_when_it_is_no_better_than_random(data, prepared, tmp_path):
    import zarr

    story = prepared.copy(tmp_path / "successor")  # the unlabelled folder was extracted with `-d all`
    out = story.run(doc_command(README, "crsbench successor")).stdout
    readings = [m for m in READING.finditer(out)]
    assert [m["dataset"] for m in readings] == ["clinic", "digits", "unlabelled"], out
    # tiny-vit as the successor: tiny-resnet18's neighbours agree more with tiny-convnext (its floor here).
    out = story.run(
        doc_command(README, "crsbench successor", ("tiny-convnext", "tiny-vit"), append="-d unlabelled")
    ).stdout
    readings.extend(READING.finditer(out))
    assert readings[-1]["dataset"] == "unlabelled", out
    assert "agrees with tiny-resnet18 no more than a random network does" in readings[-1]["rest"], out

    store = zarr.open_group(str(story.db) + ".features.zarr", mode="r")
    for m in readings:
        dataset, candidate = m["dataset"], m["cand"]
        assert (m["cur"], m["k"]) == ("tiny-resnet18", "10")

        def feats(encoder: str, dataset: str = dataset) -> np.ndarray:
            return np.asarray(store[f"{dataset}/{encoder}/d100/clean"][:], dtype=np.float64)

        current = feats("tiny-resnet18")
        n = len(current)
        assert float(m["est"]) == pytest.approx(_overlap(current, feats(candidate), 10), abs=6e-4)
        assert float(m["chance"]) == pytest.approx(10 / (n - 1), abs=6e-4)
        floors = sorted(set(store[dataset].group_keys()) - {"tiny-resnet18", candidate})  # all random-init
        assert len(floors) == 2
        floor = np.mean([_overlap(current, feats(e), 10) for e in floors])
        assert float(m["floor"]) == pytest.approx(floor, abs=6e-4)
        random_like = float(m["lo"]) <= float(m["floor"])
        assert ("agrees with tiny-resnet18 no more than a random network does" in m["rest"]) == random_like, m[0]
        assert ("a linear map keeps" in m["rest"]) == (dataset != "unlabelled"), m[0]
        kept = re.search(r"a linear map keeps ([\d.]+)", m["rest"])
        if kept and float(kept[1]) > 1:  # a retention above 1 is explained, never left bare
            assert "above 1" in m["rest"], m[0]


# ---------------------------------------------------------------- 5. subgroups, operating points, agreement


def test_subgroups_operating_points_and_agreement_restricted_to_one_dataset(data, prepared, tmp_path):
    story = prepared.copy(tmp_path / "subgroups")
    story.run(
        doc_command(
            GUIDE,
            "crsbench dataset metadata aptos2019",
            ("aptos2019", "clinic"),
            ("meta.csv", str(data.root / "meta.csv")),
        )
    )
    stored = story.sql("select image_id, key, value from image_metadata where dataset_id = 'clinic'")
    sex = dict(stored[stored.key == "sex"][["image_id", "value"]].itertuples(index=False))
    assert sex == dict(data.meta[["image_id", "sex"]].itertuples(index=False))

    out = story.run(doc_command(GUIDE, "crsbench analyze subgroups --key sex --key age")).stdout
    labels = (
        story.sql("select l.image_id, l.label_idx from labels l where l.dataset_id = 'clinic' and l.value = 1")
        .set_index("image_id")
        .label_idx
    )
    primary = story.sql(
        "select run_id, encoder_id, seed from runs where dataset_id = 'clinic' and condition = 'clean' "
        "and probe = 'logreg' and depth = 1.0 and label_fraction = 1.0 order by encoder_id, seed"
    )
    summary = story.sql("select * from analysis_subgroups_summary where key = 'sex' and metric = 'auroc'")
    for encoder, runs in primary.groupby("encoder_id"):
        per_seed = []
        for run_id in runs.run_id:
            p = story.sql("select image_id, probs from predictions where run_id = ?", [run_id])
            y, probs, group = labels[p.image_id].to_numpy(), np.stack(p.probs), p.image_id.map(sex).to_numpy()
            per_seed.append({g: _macro_auroc(y[group == g], probs[group == g]) for g in ("F", "M")})
        worst_by_seed = Counter(min(s, key=s.get) for s in per_seed).most_common()
        (named,) = summary[summary.encoder_id == encoder].worst_group
        assert named in [g for g, n in worst_by_seed if n == worst_by_seed[0][1]]  # the group worst in most seeds
        assert re.search(rf"{re.escape(encoder)}\s.*clinic\s.*sex\s.*auroc\s.*\b{named}\b", out), out

    out = story.run(doc_command(GUIDE, "crsbench analyze operating_points --threshold 0.3")).stdout
    encoder = "tiny-convnext"
    runs = primary[primary.encoder_id == encoder].run_id
    (names,) = story.sql("select label_names from datasets where dataset_id = 'clinic'").label_names
    assert sorted(names) == [f"digit-{c}" for c in CLINIC_DIGITS]
    for c, name in enumerate(names):
        rates = {}
        for g in ("F", "M"):
            sens, spec = [], []
            for run_id in runs:
                p = story.sql("select image_id, probs from predictions where run_id = ?", [run_id])
                y, probs, group = labels[p.image_id].to_numpy(), np.stack(p.probs), p.image_id.map(sex).to_numpy()
                called, positive = probs[group == g, c] >= THRESHOLD, y[group == g] == c
                sens.append(called[positive].mean())
                spec.append((~called[~positive]).mean())
            rates[g] = f"{g} sens {np.mean(sens):.3f} spec {np.mean(spec):.3f}"
        line = f"{encoder} on clinic, {name} at p >= 0.3, by sex: {rates['F']}; {rates['M']}"
        assert line in out, (line, out)

    # Agreement for every dataset, then for the new images alone with another k (the issue's
    # `-d unlabelled`): only their rows change, the other datasets' rows stay as they were.
    story.run(doc_command(README, "crsbench analyze agreement"))
    query = "select dataset_id, encoder_a, encoder_b, measure, k, estimate from encoder_agreement order by all"
    before = story.sql(query)
    counts = before.groupby("dataset_id").size()
    assert set(counts.index) == {"clinic", "digits", "unlabelled"} and (before.k.dropna() == 10).all()
    story.run("crsbench analyze agreement -d unlabelled --set k=5")
    after = story.sql(query)
    others = ["clinic", "digits"]
    pd.testing.assert_frame_equal(
        after[after.dataset_id.isin(others)].reset_index(drop=True),
        before[before.dataset_id.isin(others)].reset_index(drop=True),
    )
    assert after.groupby("dataset_id").size().to_dict() == counts.to_dict()
    redone = after[(after.dataset_id == "unlabelled") & (after.measure == "mutual_knn")]
    assert len(redone) == 6 and (redone.k == 5).all()  # every pair of the 4 encoders, at the new k


def _macro_auroc(y: np.ndarray, probs: np.ndarray, minimum: int = 3) -> float:
    """Macro one-vs-rest AUROC over the classes with at least `minimum` positives and negatives."""
    scores = [
        roc_auc_score(y == c, probs[:, c])
        for c in range(probs.shape[1])
        if (y == c).sum() >= minimum and (y != c).sum() >= minimum
    ]
    return float(np.mean(scores))
