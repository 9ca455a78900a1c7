"""E5 prompting: the parser on real answer formats, prompts, coverage over stored answers, and the
generation plumbing with a tiny randomly initialised LLaVA built from a local config (no download)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from crsbench.analyses import run_analysis
from crsbench.analyses.experiments.e5_prompting import ANSWERS_TABLE
from crsbench.analyses.experiments.prompting import STYLES, build_prompt, display_name, parse_answer
from crsbench.core import CrsbenchError
from crsbench.ingest.adapter_cxr import CXR_LABELS
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import read_dataset

torch.set_num_threads(1)
ISIC = ["MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC"]
DR = ["No DR", "Mild", "Moderate", "Severe", "Proliferative DR"]
CXR = list(CXR_LABELS)

# (answer as models write it, labels, task, lettered options?, expected label index or None)
PARSER_TABLE = [
    ("Answer: (A) Melanoma", ISIC, "multiclass", True, 0),
    ("Answer: (C) Melanoma", ISIC, "multiclass", True, None),  # letter and name disagree
    ("(c)", ISIC, "multiclass", True, 2),
    ("B.", ISIC, "multiclass", True, 1),
    ("A melanoma is visible.", ISIC, "multiclass", True, 0),  # the article is not option A
    ("MELANOMA!!", ISIC, "multiclass", False, 0),
    ("  basal-cell   carcinoma ", ISIC, "multiclass", False, 2),
    ("Dermatofibroma", ISIC, "multiclass", False, 5),
    ("melanoma or nevus", ISIC, "multiclass", False, None),  # two labels
    ("not melanoma; a benign nevus", ISIC, "multiclass", False, 1),  # negated mention dropped
    ("I cannot determine the diagnosis from this image.", ISIC, "multiclass", False, None),
    ("", ISIC, "multiclass", False, None),
    (
        "Irregular network and regression structures suggest melanoma over a nevus.\nAnswer: Melanoma",
        ISIC,
        "multiclass",
        False,
        0,
    ),
    ("grade 3", DR, "ordinal", False, 3),
    ("Grade 7", DR, "ordinal", False, None),  # out of range
    ("4", DR, "ordinal", False, 4),
    ("Moderate", DR, "ordinal", False, 2),
    ("Proliferative diabetic retinopathy", DR, "ordinal", False, 4),
    ("No DR", DR, "ordinal", False, 0),
    ("no finding", CXR, "multilabel", False, 0),
    ("No Finding.", CXR, "multilabel", False, 0),
    ("Pleural effusion", CXR, "multilabel", False, 10),
    ("no pneumothorax", CXR, "multilabel", False, None),
    ("Cardiomegaly with pleural effusion", CXR, "multilabel", False, None),
]


@pytest.mark.parametrize("answer,labels,task,letters,expected", PARSER_TABLE)
def test_parser_table(answer, labels, task, letters, expected):
    assert parse_answer(answer, labels, task, letters=letters) == expected


def test_letters_only_count_for_lettered_prompts():
    assert parse_answer("(B)", ISIC, "multiclass", letters=True) == 1
    assert parse_answer("(B)", ISIC, "multiclass", letters=False) is None


def test_prompts_name_every_label_in_each_style():
    for style in STYLES:
        prompt = build_prompt(style, ISIC, "multiclass", "derm", shots=[(3, 0), (9, 1)])
        assert all(display_name(x) in prompt.text for x in ISIC), style
        assert prompt.letters == (style == "multiple_choice")
        assert prompt.shots == (((3, "Melanoma"), (9, "Melanocytic nevus")) if style == "few_shot" else ())
    assert "(H) Squamous cell carcinoma" in build_prompt("multiple_choice", ISIC, "multiclass").text
    with pytest.raises(ValueError):
        build_prompt("socratic", ISIC, "multiclass")


def _answers(ds, style_answers: dict[str, list[str]]) -> pd.DataFrame:
    rows = []
    test = ds.split_rows("test")
    for style, answers in style_answers.items():
        for r, a in zip(test, answers, strict=True):
            rows.append(
                {
                    "model_id": "m",
                    "dataset_id": ds.name,
                    "style": style,
                    "row_index": int(r),
                    "image_id": str(ds.images.image_id.iloc[r]),
                    "prompt": "p",
                    "answer": a,
                    "option_probs": None,
                }
            )
    return pd.DataFrame(rows)


def test_coverage_and_accuracy_over_stored_answers(ingested_db):
    with Warehouse.open(ingested_db) as wh:
        ds = read_dataset(wh, "aptos2019")
        test = ds.split_rows("test")
        y = np.asarray(ds.labels)[test]
        # simple: the true grade for the first 6, a wrong grade for the next 4, no label for the rest
        simple = [f"grade {k}" for k in y[:6]] + [f"grade {(k + 1) % 5}" for k in y[6:10]]
        simple += ["unclear image"] * (len(test) - 10)
        refined = [DR[k] for k in y]  # all correct, by name
        frame = _answers(ds, {"simple": simple, "refined": refined})
        wh.con.register("answers_df", frame)
        wh.con.execute(f"create table {ANSWERS_TABLE} as select * from answers_df")
        result = run_analysis(wh, "e5", {"generate": False})
    got = result.summary.set_index("style")
    n = len(test)
    assert got.loc["simple", "n"] == n and got.loc["simple", "n_parsed"] == 10
    assert got.loc["simple", "coverage"] == pytest.approx(10 / n)
    assert got.loc["simple", "accuracy"] == pytest.approx(6 / n)
    assert got.loc["simple", "accuracy_parsed"] == pytest.approx(6 / 10)
    assert got.loc["refined", "coverage"] == 1 and got.loc["refined", "accuracy"] == 1
    assert np.isnan(got.loc["simple", "macro_auroc"])  # no probabilities for free text
    parsed = result.tables["parsed"]
    assert (parsed[parsed["style"] == "simple"]["parsed_label"] == "unparsed").sum() == n - 10


def test_nothing_to_parse_is_a_user_error(ingested_db):
    with Warehouse.open(ingested_db) as wh:
        with pytest.raises(CrsbenchError, match="no stored E5 answers"):
            run_analysis(wh, "e5", {"generate": False})
        with pytest.raises(CrsbenchError, match="needs"):
            run_analysis(wh, "e5", {})


# -- the generation plumbing with a tiny random LLaVA ------------------------------------------


def build_tiny_llava(folder) -> None:
    """A 1-layer CLIP tower + 1-layer Llama with a word-level tokenizer, saved as a local model."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    words = [
        "<unk>",
        "<pad>",
        "<s>",
        "</s>",
        "<image>",
        "user",
        "assistant",
        ":",
        "(",
        ")",
        ".",
        *"ABCDEFGH",
        "answer",
        "grade",
        "no",
        "finding",
        "melanoma",
        "nevus",
        "dermatofibroma",
        *map(str, range(5)),
    ]
    tok = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        extra_special_tokens={"image_token": "<image>"},
    )
    template = (
        "{% for m in messages %}{{ m['role'] }} : {% for c in m['content'] %}"
        "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} {% endif %}"
        "{% endfor %}{% endfor %}{% if add_generation_prompt %}assistant : {% endif %}"
    )
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16}),
        tokenizer=tokenizer,
        patch_size=8,
        vision_feature_select_strategy="default",
        chat_template=template,
        num_additional_image_tokens=1,
    )
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=16,
            patch_size=8,
        ),
        text_config=LlamaConfig(
            vocab_size=len(words),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=512,
            pad_token_id=1,
            bos_token_id=2,
            eos_token_id=3,
        ),
        image_token_id=4,
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)


def test_generation_plumbing_with_a_tiny_vlm(ingested_db, tmp_path):
    folder = tmp_path / "tiny-llava"
    build_tiny_llava(folder)
    params = {"model": str(folder), "dataset": "isic2019", "n_images": 3, "max_new_tokens": 4}
    with Warehouse.open(ingested_db) as wh:
        first = run_analysis(wh, "e5", params)
        answers = wh.sql(f"select * from {ANSWERS_TABLE}")
        again = run_analysis(wh, "e5", params)  # everything is stored: nothing is generated
        reparsed = run_analysis(wh, "e5", {"generate": False})
    assert len(answers) == 3 * len(STYLES) and set(answers["style"]) == set(STYLES)
    assert answers.groupby("style")["row_index"].nunique().eq(3).all()
    assert "generated 0 answers (15 already stored)" in again.notes
    mc = answers[answers["style"] == "multiple_choice"]
    for probs in mc["option_probs"]:
        assert len(probs) == len(ISIC) and sum(probs) == pytest.approx(1.0, abs=1e-6)
    assert answers[answers["style"] != "multiple_choice"]["option_probs"].isna().all()
    summary = first.summary.set_index("style")
    assert set(summary.index) == set(STYLES) and (summary["n"] == 3).all()
    parsed = first.tables["parsed"]
    cover = parsed.groupby("style")["parsed_idx"].apply(lambda s: s.notna().mean())
    pd.testing.assert_series_equal(summary["coverage"].sort_index(), cover.sort_index(), check_names=False)
    pd.testing.assert_frame_equal(reparsed.summary, first.summary)
    with Warehouse.open(ingested_db) as wh, pytest.raises(CrsbenchError, match="offline"):
        run_analysis(wh, "e5", {**params, "model": str(tmp_path / "absent"), "regenerate": True})


def test_analyze_e5_command(ingested_db, tmp_path):
    from crsbench.cli import main
    from crsbench.cli.output import console

    folder = tmp_path / "tiny-llava"
    build_tiny_llava(folder)
    console.configure(json_mode=True)
    try:
        code = main(
            [
                "--json",
                "analyze",
                "e5",
                "--db",
                str(ingested_db),
                "--model",
                str(folder),
                "--dataset",
                "aptos2019",
                "--set",
                "n_images=2",
                "--set",
                "styles=simple,refined",
                "--set",
                "max_new_tokens=3",
            ]
        )
    finally:
        console.configure(json_mode=False)
    assert code == 0
    with Warehouse.open(ingested_db, read_only=True) as wh:
        summary = wh.sql("select style, n from analysis_e5_summary order by style")
    assert summary.to_dict("list") == {"style": ["refined", "simple"], "n": [2, 2]}
