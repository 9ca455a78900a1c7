"""E5: prompting generative vision-language models vs feature probing (METHODS.md §12).

    crsbench analyze e5 --model /models/llava-med --dataset isic2019 [--set n_images=200]

For each test image of the dataset and each prompt style (`prompting.STYLES`), the model
(transformers image-text-to-text, loaded offline: a local folder or the HF cache, never a
download, no remote code) answers greedily. Answers are stored in `analysis_e5_answers`
(accumulated over models and datasets; a rerun generates only what is missing), so
`--set generate=false` re-parses them without any model. Outputs:
  answers  model_id, dataset_id, style, row_index, image_id, prompt, answer, option_probs
  parsed   answers + parsed_idx, parsed_label ('unparsed' when none), correct
  summary  per (model, dataset, style): n, n_parsed, coverage, accuracy (unparsed counts as
           wrong), accuracy_parsed, macro_auroc (multiple-choice only: the softmax of the first
           generated token's logits over the option letters), next to the frozen probe's best
           clean full-label AUROC / accuracy on the same dataset (logreg, full depth).
A multilabel answer is correct when the label it names is one of the image's positives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.common import seed_metrics
from crsbench.analyses.experiments.prompting import STYLES, UNPARSED, Prompt, build_prompt, parse_answer
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis
from crsbench.core import CLEAN, CrsbenchError
from crsbench.ingest.types import Dataset, Task
from crsbench.warehouse.connection import Warehouse

ANSWERS_TABLE = "analysis_e5_answers"
ANSWER_COLUMNS = ["model_id", "dataset_id", "style", "row_index", "image_id", "prompt", "answer", "option_probs"]
KEY = ["model_id", "dataset_id", "style", "row_index"]


@dataclasses.dataclass
class PromptItem:
    image: np.ndarray  # uint8 H x W x 3
    prompt: Prompt
    shots: list[tuple[np.ndarray, str]]  # few-shot (image, answer) turns before the question
    n_options: int


# (items) -> [(answer text, option probabilities or None)], one per item.
GenerateFn = Callable[[Sequence[PromptItem]], list[tuple[str, list[float] | None]]]


def _rgb(pixels: np.ndarray) -> np.ndarray:
    return np.repeat(pixels, 3, axis=2) if pixels.shape[2] == 1 else pixels


def _image(ds: Dataset, row: int) -> np.ndarray:
    from crsbench.features.transforms import decode_image

    return _rgb(decode_image(ds.root, str(ds.images["rel_path"].iloc[row])))


def _correct(ds: Dataset, row: int, idx: int | None) -> bool:
    if idx is None:
        return False
    y = np.asarray(ds.labels)[row]
    return bool(y[idx] == 1) if ds.task is Task.MULTILABEL else int(y) == idx


def _shots(ds: Dataset, k: int, seed: int) -> list[tuple[int, int]]:
    """Up to k examples per label from the train split (seeded), in label order."""
    rng = np.random.default_rng(seed)
    train = ds.split_rows("train")
    y = np.asarray(ds.labels)[train]
    out = []
    for label in range(len(ds.label_names)):
        hits = train[(y[:, label] == 1) if ds.task is Task.MULTILABEL else (y == label)]
        out += [(int(r), label) for r in rng.permutation(hits)[:k]]
    return out


def _test_rows(ds: Dataset, n_images: int, seed: int) -> np.ndarray:
    rows = ds.split_rows("test")
    if n_images and n_images < len(rows):
        rows = np.sort(np.random.default_rng(seed).choice(rows, n_images, replace=False))
    return rows


def _stored_answers(wh: Warehouse) -> pd.DataFrame:
    count = wh.con.execute(
        "select count(*) from information_schema.tables where table_name = ?", [ANSWERS_TABLE]
    ).fetchone()
    assert count is not None  # count(*) always returns a row
    exists = count[0]
    if not exists:
        return pd.DataFrame(columns=ANSWER_COLUMNS)
    return wh.sql(f"select {', '.join(ANSWER_COLUMNS)} from {ANSWERS_TABLE}")


def generate_answers(
    ds: Dataset,
    model_id: str,
    styles: Sequence[str],
    rows: np.ndarray,
    generate: GenerateFn,
    shots_per_label: int,
    seed: int,
    done: AbstractSet[tuple[Any, ...]] = frozenset(),
) -> pd.DataFrame:
    """Answer every (style, row) not in `done`; returns rows shaped like ANSWER_COLUMNS."""
    shots = _shots(ds, shots_per_label, seed)
    shot_images = {r: _image(ds, r) for r, _ in shots} if "few_shot" in styles else {}
    out = []
    for style in styles:
        prompt = build_prompt(style, ds.label_names, ds.task, ds.domain, shots if style == "few_shot" else ())
        todo = [int(r) for r in rows if (model_id, ds.name, style, int(r)) not in done]
        items = [
            PromptItem(_image(ds, r), prompt, [(shot_images[s], a) for s, a in prompt.shots], len(ds.label_names))
            for r in todo
        ]
        for r, (answer, probs) in zip(todo, generate(items) if items else [], strict=False):
            out.append(
                {
                    "model_id": model_id,
                    "dataset_id": ds.name,
                    "style": style,
                    "row_index": r,
                    "image_id": str(ds.images["image_id"].iloc[r]),
                    "prompt": prompt.text,
                    "answer": answer,
                    "option_probs": probs,
                }
            )
    return pd.DataFrame(out, columns=ANSWER_COLUMNS)


def parse_answers(answers: pd.DataFrame, datasets: Mapping[str, Dataset]) -> pd.DataFrame:
    """Stored answers + parsed_idx / parsed_label / correct (no model involved)."""
    rows = []
    for rec in answers.itertuples(index=False):
        ds = datasets[rec.dataset_id]
        idx = parse_answer(rec.answer, ds.label_names, ds.task, letters=rec.style == "multiple_choice")
        rows.append(
            {
                **rec._asdict(),
                "parsed_idx": idx,
                "parsed_label": ds.label_names[idx] if idx is not None else UNPARSED,
                "correct": _correct(ds, int(rec.row_index), idx),
            }
        )
    frame = pd.DataFrame(rows, columns=[*ANSWER_COLUMNS, "parsed_idx", "parsed_label", "correct"])
    frame["parsed_idx"] = frame["parsed_idx"].astype("Int64")
    return frame


def _macro_auroc(ds: Dataset, group: pd.DataFrame) -> float:
    from crsbench.probes.metrics import macro_auroc

    probs = group["option_probs"]
    if probs.isna().any() or len(group) == 0:
        return float("nan")
    p = np.array([np.asarray(v, dtype=float) for v in probs])
    y = np.asarray(ds.labels)[group["row_index"].to_numpy(int)]
    try:
        return float(macro_auroc(y, p, ds.task))
    except (CrsbenchError, ValueError):  # a class absent from the answered rows
        return float("nan")


def style_summary(parsed: pd.DataFrame, datasets: Mapping[str, Dataset], probe: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (model_id, dataset_id, style), g in parsed.groupby(["model_id", "dataset_id", "style"], sort=True):
        n, n_parsed = len(g), int(g["parsed_idx"].notna().sum())
        ref = probe[probe["dataset_id"] == dataset_id]
        best = ref.sort_values(["auroc", "encoder_id"], ascending=[False, True]).head(1)
        rows.append(
            {
                "model_id": model_id,
                "dataset_id": dataset_id,
                "style": style,
                "n": n,
                "n_parsed": n_parsed,
                "coverage": n_parsed / n,
                "accuracy": float(g["correct"].mean()),
                "accuracy_parsed": float(g.loc[g["parsed_idx"].notna(), "correct"].mean())
                if n_parsed
                else float("nan"),
                "macro_auroc": _macro_auroc(datasets[dataset_id], g),
                "probe_encoder": best["encoder_id"].iloc[0] if len(best) else None,
                "probe_auroc": float(best["auroc"].iloc[0]) if len(best) else float("nan"),
                "probe_accuracy": float(best["accuracy"].iloc[0]) if len(best) else float("nan"),
            }
        )
    out = pd.DataFrame(rows)
    if len(out):
        out["style"] = pd.Categorical(out["style"], categories=list(STYLES), ordered=True)
        out = out.sort_values(["model_id", "dataset_id", "style"]).reset_index(drop=True)
        out["style"] = out["style"].astype(str)
    return out


def frozen_probe(wh: Warehouse) -> pd.DataFrame:
    """Clean, full-label, full-depth logreg seed means on each dataset itself (frozen regime)."""
    means = seed_metrics(wh, ("auroc", "accuracy"), depth=1.0, fraction=1.0, conditions=[CLEAN])
    return means[means["eval_dataset_id"] == means["dataset_id"]].reset_index(drop=True)


def _styles(value: Any) -> list[str]:
    styles = value.split(",") if isinstance(value, str) else list(value)
    styles = [s.strip() for s in styles if s.strip()]
    bad = [s for s in styles if s not in STYLES]
    if bad or not styles:
        raise CrsbenchError(f"unknown prompt style(s) {bad}; expected some of {list(STYLES)}")
    return styles


def run_e5(wh: Warehouse, params: Mapping[str, Any], generate: GenerateFn | None = None) -> AnalysisResult:
    """E5 with an optional injected generator (default: the transformers model named by `model`)."""
    from crsbench.warehouse.datasets import list_datasets, read_dataset

    stored = _stored_answers(wh)
    notes: list[str] = []
    if params["generate"]:
        model_id, name = params["model"], params["dataset"]
        if not model_id or not name:
            raise CrsbenchError(
                "e5 needs --set model=<local folder or cached hub id> and "
                "--set dataset=<name> (or --set generate=false to re-parse)"
            )
        if name not in list_datasets(wh):
            raise CrsbenchError(f"no dataset {name!r} in the warehouse")
        ds = read_dataset(wh, name)
        if params["regenerate"]:
            keep = ~((stored["model_id"] == model_id) & (stored["dataset_id"] == name))
            stored = stored[keep]
        done = set(map(tuple, stored[KEY].itertuples(index=False, name=None)))
        if generate is None:
            from crsbench.features.vlm import HFGenerator

            generate = HFGenerator(model_id, device=params["device"], max_new_tokens=int(params["max_new_tokens"]))
        rows = _test_rows(ds, int(params["n_images"]), int(params["seed"]))
        new = generate_answers(
            ds, model_id, _styles(params["styles"]), rows, generate, int(params["shots"]), int(params["seed"]), done
        )
        notes.append(f"generated {len(new)} answers ({len(done)} already stored)")
        stored = new if stored.empty else pd.concat([stored, new], ignore_index=True)
    if stored.empty:
        raise CrsbenchError(f"no stored E5 answers ({ANSWERS_TABLE}); run with a model first")
    stored = stored.sort_values(KEY).reset_index(drop=True)
    datasets = {n: read_dataset(wh, n) for n in stored["dataset_id"].unique()}
    parsed = parse_answers(stored, datasets)
    summary = style_summary(parsed, datasets, frozen_probe(wh))
    if summary["probe_encoder"].isna().any():
        notes.append("no frozen probe runs for some datasets: run 'crsbench probe' for the comparison")
    return AnalysisResult({"answers": stored, "parsed": parsed}, summary, notes)


DOCS = {
    "model_id": "Generative vision-language model that answered: a local folder or a cached Hugging Face hub id.",
    "dataset_id": "Dataset whose test images the model was asked about.",
    "style": "Prompt style: simple, multiple_choice, chain_of_thought, refined or few_shot.",
    "prompt": "The question sent with the image (few-shot examples go before it as separate turns).",
    "answer": "The model's answer text (greedy decoding).",
    "option_probs": "Softmax of the first generated token's logits over the option letters (multiple_choice); "
    "NULL for the other styles.",
    "parsed_idx": "Label index the parser read from the answer; NULL when unparsed.",
    "parsed_label": "Label name of parsed_idx, or 'unparsed'.",
    "correct": "True when the parsed label is the image's class (multilabel: one of its positive labels); an "
    "unparsed answer is false.",
    "n": "Answers of this model, dataset and style; count.",
    "n_parsed": "Answers the parser mapped to a label; count.",
    "coverage": "n_parsed / n; [0, 1].",
    "accuracy": "Share of answers correct, an unparsed one counting as wrong; [0, 1], higher is better.",
    "accuracy_parsed": "Share correct among the parsed answers; [0, 1]; NaN when none parsed.",
    "macro_auroc": "Macro one-vs-rest AUROC of option_probs (multiple_choice only); [0, 1]; NaN otherwise or when a "
    "class is absent.",
    "probe_encoder": "Encoder whose frozen probe has the best seed-mean clean full-label AUROC on this dataset.",
    "probe_auroc": "That probe's seed-mean clean AUROC (logreg, depth 1.0, full labels); [0, 1].",
    "probe_accuracy": "That probe's seed-mean clean accuracy (argmax; multilabel: per label at 0.5); [0, 1].",
}


@register_analysis(
    "e5",
    columns=DOCS,
    section="§12",
    params={
        "model": Param(None, "Generative VLM: local folder or cached hub id.", str),
        "dataset": Param(None, "Dataset whose test images are asked about.", str, short="-d"),
        "styles": Param(list(STYLES), "Prompt style (repeatable): " + ", ".join(STYLES) + ".", list[str], "--style"),
        "n_images": Param(0, "Test images asked about, drawn at random (0 = all)."),
        "shots": Param(1, "Examples per label, from the train split, in the few_shot prompt."),
        "max_new_tokens": Param(64, "Longest answer generated, in tokens."),
        "device": Param("cpu", "Torch device the model runs on."),
        "seed": Param(0, "Random seed of the image draw and the few-shot examples."),
        "generate": Param(True, "Ask the model (false: re-parse the stored answers only)."),
        "regenerate": Param(False, "Ask again for this model and dataset, replacing the stored answers."),
    },
    outputs={
        "answers": ANSWER_COLUMNS,
        "parsed": (*ANSWER_COLUMNS, "parsed_idx", "parsed_label", "correct"),
        "summary": (
            "model_id",
            "dataset_id",
            "style",
            "n",
            "n_parsed",
            "coverage",
            "accuracy",
            "accuracy_parsed",
            "macro_auroc",
            "probe_encoder",
            "probe_auroc",
            "probe_accuracy",
        ),
    },
)
def e5(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Prompting generative VLMs: parse coverage and accuracy per prompt style vs the frozen probe."""
    return run_e5(wh, params)
