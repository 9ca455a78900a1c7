"""The canonical names of public image datasets, the vocabulary of pretraining overlap.

An encoder declares what it was pretrained on (`features.registry.Pretraining`) and an
ingested dataset declares what it is (its adapter's canonical name or `--source`), both in
these names, so the two can be matched (view `encoder_dataset_overlap`). A name outside the
vocabulary is kept, with a warning naming the closest known ones: a typo must not silently
read as "no overlap".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# canonical name -> what it is (one line, with where it is published)
KNOWN_DATASETS: dict[str, str] = {
    "mimic-cxr": "MIMIC-CXR chest radiographs and reports (PhysioNet)",
    "chexpert": "CheXpert chest radiographs (Stanford AIMI)",
    "isic2019": "ISIC 2019 dermoscopy challenge images (ISIC Archive)",
    "aptos2019": "APTOS 2019 blindness detection fundus photographs (Kaggle)",
    "imagenet-1k": "ImageNet ILSVRC-2012, 1.28M images in 1,000 classes",
    "imagenet-21k": "ImageNet-21k (ImageNet full release), 14M images",
    "wit-400m": "OpenAI's WebImageText, 400M web image-text pairs behind CLIP (never released)",
    "webli": "Google's WebLI, multilingual web image-text pairs behind PaLI/SigLIP (not released)",
    "laion-2b": "LAION-2B-en, 2.3B English web image-text pairs (LAION)",
    "lvd-142m": "Meta's LVD-142M, 142M web images curated by retrieval for DINOv2 (not released)",
    "pmc-15m": "PMC-15M, 15M figure-caption pairs from PubMed Central articles (BiomedCLIP)",
    "nih-chestxray14": "NIH ChestX-ray14, 112,120 frontal chest radiographs (NIH Clinical Center)",
    "padchest": "PadChest chest radiographs, Hospital San Juan, Alicante (BIMCV)",
    "brax": "BRAX, Brazilian labelled chest radiographs, Hospital Israelita Albert Einstein (PhysioNet)",
    "eyepacs": "EyePACS diabetic retinopathy fundus photographs (Kaggle DR detection 2015)",
    "meh-midas": "Moorfields Eye Hospital MEH-MIDAS retinal images behind RETFound (not released)",
}


def closest_known(name: str, n: int = 3) -> list[str]:
    """The known names nearest `name` (difflib's ratio), best first."""
    return difflib.get_close_matches(name.lower(), list(KNOWN_DATASETS), n=n, cutoff=0.4)


def unknown_names_message(names: Iterable[str], where: str) -> str | None:
    """A warning for the names outside the vocabulary, with the closest known ones; None when all are known."""
    parts = []
    for name in names:
        if name not in KNOWN_DATASETS:
            near = closest_known(name)
            hint = f" (closest known: {', '.join(near)})" if near else ""
            parts.append(f"{name!r}{hint}")
    if not parts:
        return None
    return f"{where} declares unknown dataset name(s) {'; '.join(parts)}; known names: {', '.join(KNOWN_DATASETS)}"
