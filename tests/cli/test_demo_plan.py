"""`Bench.demo_plan`: what `crsbench demo` runs, read through the facade (crsbench/pipeline/demo.py)."""

from crsbench import Bench
from crsbench.core import CONDITIONS
from crsbench.features.lookup import get_encoder, list_encoders


def test_the_default_plan_is_the_tiny_random_init_encoders_and_the_suite(tmp_path) -> None:
    plan = Bench(tmp_path / "w.duckdb").demo_plan()
    built_in_tiny = [e for e in list_encoders(pretrained=False) if e.origin == "built-in"]
    # every built-in random-init image encoder is probed; the image-text ones are classified zero-shot
    assert set(plan.encoders) == {e.id for e in built_in_tiny if e.text_tower is None}
    assert set(plan.image_text) == {e.id for e in built_in_tiny if e.text_tower is not None}
    assert plan.datasets == ("isic2019", "aptos2019", "mimic-cxr", "chexpert")
    assert plan.shift == ("chexpert", "mimic-cxr")
    assert plan.n_conditions == len(CONDITIONS) == 16  # clean + 5 perturbations x 3 severities


def test_given_encoders_are_run_and_those_with_a_text_tower_go_zero_shot(tmp_path) -> None:
    plan = Bench(tmp_path / "w.duckdb").demo_plan(["tiny-vit", "tiny-clip"])
    assert plan.encoders == ("tiny-vit", "tiny-clip")
    assert plan.image_text == ("tiny-clip",)
    assert get_encoder("tiny-clip").text_tower is not None and get_encoder("tiny-vit").text_tower is None
