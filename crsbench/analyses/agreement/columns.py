"""Column descriptions of analysis `agreement`'s tables (METHODS.md §17); see `columns.py`."""

from __future__ import annotations

from collections.abc import Mapping

AGREEMENT: Mapping[str, str] = {
    "dataset_id": "Dataset whose images both encoders' features describe (all images, or the split asked for).",
    "encoder_a": "First encoder of the pair (encoder key: id, or id@regime for an adapted variant); "
    "pairs are unordered, encoder_a < encoder_b.",
    "encoder_b": "Second encoder of the pair (encoder key); pairs are unordered, encoder_a < encoder_b.",
    "classifier_transfer.encoder_b": "Encoder whose stored full-label logreg probe is applied to encoder_a's "
    "mapped test features (encoder key).",
    "classifier_transfer.dataset_id": "Labelled dataset whose training images fit the map and whose test "
    "images score the transferred probe.",
    "neighbour_composition.dataset_id": "Dataset whose images the neighbour lists range over (all images, or "
    "the split asked for).",
    "neighbour_composition.k": "Neighbours per image (cosine similarity of the L2-normalised features, the "
    "image itself excluded, ties to the lower row).",
    "classifier_transfer.encoder_a": "Encoder whose test features are mapped into encoder_b's space (the "
    "current encoder whose probe is reused is encoder_b).",
    "depth": "Relative depth of both encoders' features: 0.25, 0.5, 0.75 or 1.0; clean condition.",
    "k": "Neighbours per image (cosine similarity of the L2-normalised features, the image itself excluded, "
    "ties to the lower row); NULL for CKA.",
    "measure": "mutual_knn (mean over images of |N_A(i) & N_B(i)| / k) or cka (linear CKA of the centred "
    "features, Kornblith et al. 2019).",
    "estimate": "The measure on all images; [0, 1], 1 = the same neighbours (mutual_knn) or the same "
    "representation up to rotation and scale (cka).",
    "encoder_agreement.lo": "2.5th percentile of the mean over bootstrap resamples of the images (the same "
    "resamples for every pair of the dataset); NULL for CKA.",
    "encoder_agreement.hi": "97.5th percentile of the mean over the same image resamples; NULL for CKA.",
    "encoder_agreement.chance": "Mutual k-NN overlap expected of unrelated neighbour lists, k / (n - 1); NULL for CKA.",
    "n_images": "Images the measure was computed on; count.",
    "encoder_id": "Encoder whose neighbour lists are described (encoder key).",
    "field": "What neighbours are compared on: label (the same class, or the same set of labels for a "
    "multilabel image), group (the same patient or lesion id), or a metadata key of the dataset "
    "(image_metadata.key: view, site, sex, age bin, ...; a key named label or group is meta:label, meta:group).",
    "neighbour_composition.estimate": "Mean over the images with a value of the field of the share of its k "
    "neighbours with the image's own value; images without a value for a metadata key are left out of that "
    "key's share, and as neighbours never share it; [0, 1].",
    "neighbour_composition.n_images": "Images the share is averaged over: those with a value of the field "
    "(all images for label and group); count.",
    "neighbour_composition.lo": "2.5th percentile over bootstrap resamples of the images.",
    "neighbour_composition.hi": "97.5th percentile over bootstrap resamples of the images.",
    "neighbour_composition.chance": "Share expected of neighbours drawn at random from the n - 1 other images: "
    "sum_v c_v (c_v - 1) / (n_v (n - 1)) over the field's values v with c_v images, n_v = sum_v c_v the "
    "images with a value (n_v = n for label and group).",
    "seed": "Seed of encoder_b's full-label logreg probe (its label-fraction family, 0..4).",
    "m_images": "Unlabelled training images the ridge map from encoder_a to encoder_b was fitted on; "
    "min(transfer_images, n_train).",
    "auroc_b": "Macro-AUROC of encoder_b's probe on encoder_b's own clean test features.",
    "auroc_mapped": "Macro-AUROC of encoder_b's probe on encoder_a's clean test features mapped by the ridge map.",
    "retention": "auroc_mapped / auroc_b: the share of encoder_b's AUROC kept when its probe reads encoder_a; "
    "1 = nothing lost.",
    "classifier_transfer.lo": "2.5th percentile of the retention over bootstrap resamples of the test images "
    "(both AUROCs on the same resample).",
    "classifier_transfer.hi": "97.5th percentile of the retention over the same test-image resamples.",
    "ece_b": "ECE (15 equal-width bins) of encoder_b's probe on its own clean test features.",
    "ece_mapped": "ECE (15 equal-width bins) of encoder_b's probe on encoder_a's mapped test features.",
    "n_test": "Test images both AUROCs were computed on; count.",
    "summary.mutual_knn": "Mutual k-NN overlap of the pair (= encoder_agreement.estimate).",
    "summary.lo": "2.5th percentile of the mutual k-NN overlap over image resamples.",
    "summary.hi": "97.5th percentile of the mutual k-NN overlap over image resamples.",
    "summary.chance": "Chance level of the mutual k-NN overlap, k / (n - 1).",
    "summary.cka": "Linear CKA of the pair.",
}

AGREEMENT_COLUMNS: Mapping[str, Mapping[str, str]] = {"agreement": AGREEMENT}
