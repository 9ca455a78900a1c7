"""The built-in encoders: the paper's 15 families (the tiny random-init architectures are in
`encoders_tiny`).

Checkpoint ids, input sizes and normalisation are the ones each publisher released
(hub model cards / preprocessor configs, or the authors' inference code where the weights
live outside the hub, noted in `source`); timm entries write out what timm's pretrained_cfg
says, so listing them needs no timm (tests/features/test_registry.py compares the two).
Checkpoints written `name:file` are published outside the Hugging Face Hub and must be placed
under `$CRSBENCH_WEIGHTS/<id>/`. Where a published checkpoint's keys differ from the library
model, the entry declares the conversion (`KeyConversion`); loading is strict, so anything the
conversion does not account for is an error. Any other library model needs no entry
(`timm:`/`hf:`/`open_clip:` ids, `by_id`), and a user's own models come from TOML files or
plugins (`user`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from crsbench.features.registry import EncoderEntry, KeyConversion, Pretraining, register_encoder

if TYPE_CHECKING:
    from torch import nn

IMAGENET = {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}
HALF = {"mean": (0.5, 0.5, 0.5), "std": (0.5, 0.5, 0.5)}
OPENAI_CLIP = {"mean": (0.48145466, 0.4578275, 0.40821073), "std": (0.26862954, 0.26130258, 0.27577711)}
RESNET_STAGES = ("layer1", "layer2", "layer3", "layer4")
TIMM_VIT = {"depth_blocks": "blocks", "final_norm": "norm"}
# Relative to the hook root, which is the `vision_model` wrapper where a class has one.
HF_CLIP_LIKE = {"depth_blocks": "encoder.layers", "final_norm": "post_layernorm"}
NO_CLS = {"prefix_tokens": 0}  # SigLIP-family towers have no CLS token
HF_DINOV2 = {"depth_blocks": "encoder.layer", "final_norm": "layernorm"}


# The publishers' configs (config.json, or its vision_config): a registered transformers entry
# builds that architecture and no other (features.architecture); `hf:` ids take any.
def arch(hidden: int, layers: int, patch: int, image: int) -> dict[str, dict[str, int]]:
    return {
        "architecture": {"hidden_size": hidden, "num_hidden_layers": layers, "patch_size": patch, "image_size": image}
    }


VIT_LORA = ("qkv", "proj", "fc1", "fc2")
HF_LORA = ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2")
DINOV2_LORA = ("q_proj", "k_proj", "v_proj", "o_proj", "fc1", "fc2")
# Dual-encoder hub checkpoints hold a text tower crsbench never runs.
HF_TEXT_TOWER = KeyConversion(drop_prefixes=("text_model.", "logit_scale", "logit_bias"))
OPEN_CLIP_IMAGE_TOWER = KeyConversion(keep_prefix="visual.")


# The entries are data: listing them (`crsbench encoders`) imports no torch. The loaders (torch,
# timm, transformers, open_clip) are imported when a constructor runs.
def timm_model(entry: EncoderEntry, weights: Path | None, arch: str | None = None, **kwargs: Any) -> nn.Module:
    from crsbench.features import loaders

    return loaders.timm_model(entry, weights, arch, **kwargs)


def hf_vision_model(
    entry: EncoderEntry, weights: Path | None, model_class: str = "AutoModel", vision_submodule: tuple[str, ...] = ()
) -> nn.Module:
    from crsbench.features import loaders

    return loaders.hf_vision_model(entry, weights, model_class, vision_submodule)


def open_clip_model(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    from crsbench.features import loaders

    return loaders.open_clip_model(entry, weights)


# -- general-purpose ----------------------------------------------------------------------------


@register_encoder(
    "resnet50",
    family="ResNet-50",
    pretraining=Pretraining(datasets=("imagenet-1k",), source="https://huggingface.co/timm/resnet50.a1_in1k"),
    scope="general",
    domain="none",
    loader="timm",
    checkpoint="resnet50.a1_in1k",
    input_size=224,
    **IMAGENET,
    pooling="avgpool",
    depth_blocks=RESNET_STAGES,
    lora_targets=("conv1", "conv2", "conv3"),
)
def resnet50(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return timm_model(entry, weights)


@register_encoder(
    "vit-b16",
    family="ViT-B/16",
    pretraining=Pretraining(
        datasets=("imagenet-21k", "imagenet-1k"),
        source="https://huggingface.co/timm/vit_base_patch16_224.augreg2_in21k_ft_in1k",
    ),
    scope="general",
    domain="none",
    loader="timm",
    checkpoint="vit_base_patch16_224.augreg2_in21k_ft_in1k",
    input_size=224,
    **HALF,
    pooling="cls",
    **TIMM_VIT,
    lora_targets=VIT_LORA,
)
def vit_b16(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return timm_model(entry, weights)


# OpenAI's card: a private crawl of 400M image-text pairs (WIT), never released.
@register_encoder(
    "clip",
    text_tower="clip",
    family="CLIP",
    pretraining=Pretraining(datasets=("wit-400m",), source="https://huggingface.co/openai/clip-vit-base-patch16"),
    scope="general",
    domain="none",
    loader="transformers",
    checkpoint="openai/clip-vit-base-patch16",
    **arch(768, 12, 16, 224),
    input_size=224,
    **OPENAI_CLIP,
    pooling="projection",
    token_pool="cls",
    **HF_CLIP_LIKE,
    lora_targets=HF_LORA,
    convert=KeyConversion(drop_prefixes=("text_model.", "text_projection", "logit_scale")),
)
def clip(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return hf_vision_model(entry, weights, "CLIPVisionModelWithProjection")


@register_encoder(
    "siglip",
    text_tower="siglip",
    family="SigLIP",
    pretraining=Pretraining(datasets=("webli",), source="https://huggingface.co/google/siglip-base-patch16-224"),
    scope="general",
    domain="none",
    loader="transformers",
    checkpoint="google/siglip-base-patch16-224",
    **arch(768, 12, 16, 224),
    input_size=224,
    **HALF,
    pooling="projection",
    token_pool="mean",
    **HF_CLIP_LIKE,
    **NO_CLS,
    lora_targets=HF_LORA,
    convert=HF_TEXT_TOWER,
)
def siglip(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return hf_vision_model(entry, weights, "SiglipVisionModel")


# The hub card defers to the paper, whose LVD-142M is curated by retrieval around ImageNet and others.
@register_encoder(
    "dinov2",
    family="DINOv2",
    pretraining=Pretraining(datasets=("lvd-142m",), source="https://arxiv.org/abs/2304.07193"),
    scope="general",
    domain="none",
    loader="transformers",
    checkpoint="facebook/dinov2-base",
    **arch(768, 12, 14, 518),
    input_size=224,
    **IMAGENET,
    pooling="cls",
    **HF_DINOV2,
    lora_targets=DINOV2_LORA,
    convert=KeyConversion(drop_prefixes=("mask_token",)),
)
def dinov2(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return hf_vision_model(entry, weights, "Dinov2Model")


@register_encoder(
    "mae",
    family="MAE",
    pretraining=Pretraining(datasets=("imagenet-1k",), source="https://huggingface.co/timm/vit_base_patch16_224.mae"),
    scope="general",
    domain="none",
    loader="timm",
    checkpoint="vit_base_patch16_224.mae",
    input_size=224,
    **IMAGENET,
    pooling="mean",
    **TIMM_VIT,
    lora_targets=VIT_LORA,
)
def mae(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return timm_model(entry, weights, global_pool="token")


# -- broad medical ------------------------------------------------------------------------------


# Only the image tower is built, from the repo's open_clip_config.json: the PubMedBERT text
# config that open_clip would fetch from a second repo is never needed.
@register_encoder(
    "biomedclip",
    text_tower="open_clip",
    family="BiomedCLIP",
    pretraining=Pretraining(
        datasets=("pmc-15m",), source="https://huggingface.co/microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224"
    ),
    scope="broad_medical",
    domain="none",
    loader="open_clip",
    checkpoint="hf-hub:microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224",
    input_size=224,
    **OPENAI_CLIP,
    pooling="projection",
    token_pool="cls",
    depth_blocks="trunk.blocks",
    final_norm="trunk.norm",
    lora_targets=VIT_LORA,
    convert=OPEN_CLIP_IMAGE_TOWER,
)
def biomedclip(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return open_clip_model(entry, weights)


# LLaVA(-Med) feeds its language model the penultimate layer of the frozen CLIP tower
# (`mm_vision_select_layer = -2`, patch tokens, no post-layernorm); the probe reads that same
# representation, so the 100 % depth is layer 23 of 24, mean over patch tokens, unnormalised.
# The paper keeps the CLIP vision encoder frozen in both training stages: only the projector and
# the language model see PMC-15M, so the weights read here (OpenAI's, `hub_repo`) saw only WIT-400M.
@register_encoder(
    "llava-med",
    family="LLaVA-Med",
    pretraining=Pretraining(datasets=("wit-400m",), source="https://arxiv.org/abs/2306.00890"),
    scope="broad_medical",
    domain="none",
    loader="transformers",
    checkpoint="microsoft/llava-med-v1.5-mistral-7b",
    **arch(1024, 24, 14, 336),  # its vision tower, openai/clip-vit-large-patch14-336
    input_size=336,
    **OPENAI_CLIP,
    pooling="mean",
    depth_blocks="encoder.layers",
    skip_last_blocks=1,
    lora_targets=HF_LORA,
    convert=KeyConversion(drop_prefixes=("text_model.", "text_projection", "logit_scale", "visual_projection")),
    source="vision tower of LLaVA-Med v1.5 (frozen CLIP ViT-L/14-336, penultimate layer as LLaVA selects it)",
    model_kwargs={"hub_repo": "openai/clip-vit-large-patch14-336"},
)
def llava_med(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return hf_vision_model(entry, weights, "CLIPVisionModel")


# Unknown: the card names medical modalities (CXR, derm, fundus, pathology, CT/MRI) and natural
# image-text pairs but no dataset list we could check against its text, so it is not guessed.
@register_encoder(
    "medsiglip",
    text_tower="siglip",
    family="MedSigLIP",
    pretraining=Pretraining(datasets=None, source="https://huggingface.co/google/medsiglip-448"),
    scope="broad_medical",
    domain="none",
    loader="transformers",
    checkpoint="google/medsiglip-448",
    **arch(1152, 27, 14, 448),
    input_size=448,
    **HALF,
    pooling="projection",
    token_pool="mean",
    **HF_CLIP_LIKE,
    **NO_CLS,
    lora_targets=HF_LORA,
    convert=HF_TEXT_TOWER,
)
def medsiglip(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return hf_vision_model(entry, weights, "SiglipVisionModel")


# Unknown: its card says its SigLIP encoder was pretrained on de-identified CXR, derm, ophthalmology
# and pathology data (as MedSigLIP, above), without a dataset list we could check.
@register_encoder(
    "medgemma-4b",
    family="MedGemma-4B",
    pretraining=Pretraining(datasets=None, source="https://huggingface.co/google/medgemma-4b-it"),
    scope="broad_medical",
    domain="none",
    loader="transformers",
    checkpoint="google/medgemma-4b-it",
    **arch(1152, 27, 14, 896),  # its SigLIP vision_config
    input_size=896,
    **HALF,
    pooling="mean",
    token_pool="mean",
    **HF_CLIP_LIKE,
    **NO_CLS,
    lora_targets=HF_LORA,
    source="SigLIP-400M vision stack of MedGemma 4B (no pooling head)",
)
def medgemma_4b(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return hf_vision_model(
        entry, weights, "AutoModelForImageTextToText", vision_submodule=("model.vision_tower", "vision_tower")
    )


# -- specialty ----------------------------------------------------------------------------------


# RETFound is an MAE pretraining checkpoint under "model": the MAE decoder is not part of the encoder.
# Nature paper: MAE from ImageNet-1k weights, then 904,170 CFP from MEH-MIDAS (Moorfields) and Kaggle EyePACS.
@register_encoder(
    "retfound",
    family="RETFound",
    pretraining=Pretraining(
        datasets=("imagenet-1k", "meh-midas", "eyepacs"), source="https://www.nature.com/articles/s41586-023-06555-x"
    ),
    scope="specialty",
    domain="eye",
    loader="timm",
    checkpoint="YukunZhou/RETFound_mae_natureCFP",
    weights_file="RETFound_mae_natureCFP.pth",
    input_size=224,
    **IMAGENET,
    pooling="mean",
    **TIMM_VIT,
    lora_targets=VIT_LORA,
    convert=KeyConversion(state_key="model", drop_prefixes=("mask_token", "decoder_")),
)
def retfound(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return timm_model(entry, weights, arch="vit_large_patch16_224", global_pool="token")


# PanDerm is CAE/BEiT-style (PanDerm classification/models/modeling_finetune.py): the encoder's
# keys sit under "encoder.", attention has q_bias/v_bias and no key bias, and blocks carry
# layer scales gamma_1/gamma_2, which timm's ViT holds as qkv.bias and ls1/ls2.gamma. Its
# fine-tuning code takes the state dict under "model" or "module" when there is one, else the
# file itself, as crsbench's loader does for every entry (no state_key, which would require it).
# Unknown: 2.1M images from 11 clinical sources (Nature Medicine 2025); which public sets are among
# them is not stated in what we could read, and ISIC overlap must not be guessed either way.
@register_encoder(
    "panderm",
    family="PanDerm",
    pretraining=Pretraining(datasets=None, source="https://www.nature.com/articles/s41591-025-03747-y"),
    scope="specialty",
    domain="derm",
    loader="timm",
    checkpoint="gdrive:panderm_ll_data6_checkpoint-499.pth",
    weights_file="panderm_ll_data6_checkpoint-499.pth",
    input_size=224,
    **IMAGENET,
    pooling="mean",
    **TIMM_VIT,
    lora_targets=VIT_LORA,
    convert=KeyConversion(
        keep_prefix="encoder.",
        drop_prefixes=("head.",),
        merge_qv_bias=True,
        rename={".gamma_1": ".ls1.gamma", ".gamma_2": ".ls2.gamma"},
    ),
    model_kwargs={"init_values": 0.1},
    source="https://github.com/SiyuanYan1/PanDerm (Google Drive link in its README)",
)
def panderm(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return timm_model(entry, weights, arch="vit_large_patch16_224", global_pool="token")


# Card: finetuned from dinov2-base; paper: MIMIC-CXR, CheXpert, NIH-CXR, PadChest, BRAX (+ private).
@register_encoder(
    "rad-dino",
    family="RAD-DINO",
    pretraining=Pretraining(
        datasets=("lvd-142m", "mimic-cxr", "chexpert", "nih-chestxray14", "padchest", "brax"),
        source="https://huggingface.co/microsoft/rad-dino",
    ),
    scope="specialty",
    domain="rad",
    loader="transformers",
    checkpoint="microsoft/rad-dino",
    **arch(768, 12, 14, 518),  # DINOv2-B
    input_size=518,
    mean=(0.5307,) * 3,
    std=(0.2583,) * 3,
    pooling="cls",
    **HF_DINOV2,
    lora_targets=DINOV2_LORA,
    convert=KeyConversion(drop_prefixes=("mask_token",)),
)
def rad_dino(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return hf_vision_model(entry, weights, "Dinov2Model")


# hi-ml-multimodal's ImageModel: a torchvision ResNet-50 at encoder.encoder (timm's resnet50 has
# the same keys and forward) plus a patch projector, stored as depth `proj` (features.biovil).
# BioViL paper (ECCV 2022): image-text pretraining on MIMIC-CXR; the CXR-BERT hub card says the same.
@register_encoder(
    "biovil",
    text_tower="cxr-bert",
    family="BioViL",
    pretraining=Pretraining(datasets=("mimic-cxr",), source="https://arxiv.org/abs/2204.09817"),
    scope="specialty",
    domain="rad",
    loader="timm",
    checkpoint="microsoft/BiomedVLP-CXR-BERT-specialized",
    weights_file="biovil_image_resnet50_proj_size_128.pt",
    input_size=480,
    mean=(0.0,) * 3,
    std=(1.0,) * 3,
    pooling="avgpool",
    depth_blocks=RESNET_STAGES,
    chest_only=True,
    lora_targets=("conv1", "conv2", "conv3"),
    convert=KeyConversion(keep_prefix="encoder.encoder.", drop_prefixes=("fc.",)),
    source="hi-ml-multimodal BioViL image encoder (resize 512, centre crop 480, no normalisation)",
)
def biovil(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    from crsbench.features.biovil import biovil_image

    return biovil_image(entry, weights)


# Nature BME 2022: CLIP (OpenAI) weights fine-tuned on MIMIC-CXR image-report pairs.
@register_encoder(
    "chexzero",
    text_tower="open_clip",
    family="CheXzero",
    pretraining=Pretraining(
        datasets=("wit-400m", "mimic-cxr"), source="https://www.nature.com/articles/s41551-022-00936-9"
    ),
    scope="specialty",
    domain="rad",
    loader="open_clip",
    checkpoint="gdrive:best_64_5e-05_original_22000_0.864.pt",
    weights_file="best_64_5e-05_original_22000_0.864.pt",
    input_size=224,
    mean=(101.48761 / 255,) * 3,
    std=(83.43944 / 255,) * 3,
    pooling="projection",
    token_pool="cls",
    depth_blocks="transformer.resblocks",
    final_norm="ln_post",
    chest_only=True,
    lora_targets=("c_fc", "c_proj"),
    convert=OPEN_CLIP_IMAGE_TOWER,
    model_kwargs={"arch": "ViT-B-32-quickgelu"},
    source="https://github.com/rajpurkarlab/CheXzero (CLIP ViT-B/32 on MIMIC-CXR)",
)
def chexzero(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return open_clip_model(entry, weights)
