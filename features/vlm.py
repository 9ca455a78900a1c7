"""E5's generator: a transformers image-text-to-text model, loaded offline, answering greedily.

The model id is a local folder or a Hugging Face hub id already in the local cache: loading
uses `local_files_only=True` (nothing is ever downloaded) and `trust_remote_code=False`.
Each item is one chat: few-shot turns (image + question, the example's answer) and then the
image and the question. For prompts with lettered options the first generated token's logits
over the option letters give the option probabilities (softmax); otherwise there are none.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from crsbench.core import CrsbenchError

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

# Option letters of a multiple-choice prompt, in order; the generator scores the first n.
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class _Prompt(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def letters(self) -> bool: ...


class PromptLike(Protocol):
    """What a generator reads of one prompt item (the analyses' `PromptItem` is one)."""

    @property
    def image(self) -> np.ndarray: ...
    @property
    def prompt(self) -> _Prompt: ...
    @property
    def shots(self) -> Sequence[tuple[np.ndarray, str]]: ...
    @property
    def n_options(self) -> int: ...


class HFGenerator:
    def __init__(self, model_id: str, *, device: str = "cpu", max_new_tokens: int = 64) -> None:
        import torch
        from huggingface_hub.errors import StrictDataclassError  # transformers' config validation
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.torch = torch
        self.max_new_tokens = max_new_tokens
        where = str(Path(model_id).expanduser()) if Path(model_id).expanduser().exists() else model_id
        from crsbench.features.hub import library_calls

        try:
            with library_calls():  # offline, transformers' own output captured
                self.processor = AutoProcessor.from_pretrained(where, local_files_only=True, trust_remote_code=False)
                self.model = (
                    AutoModelForImageTextToText.from_pretrained(where, local_files_only=True, trust_remote_code=False)
                    # transformers wraps .to with functools.wraps, which loses the method binding for mypy.
                    .to(device)  # type: ignore[arg-type]
                    .eval()
                )
        except (OSError, ValueError, StrictDataclassError) as exc:
            text = " ".join(str(exc).split()) if isinstance(exc, StrictDataclassError) else str(exc)
            raise CrsbenchError(
                f"cannot load model {model_id!r} offline (a local folder or a "
                f"hub id in the HF cache): {(text.splitlines() or [type(exc).__name__])[0]}"
            ) from None
        self.device = device
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)

    def _letter_ids(self, n: int) -> list[list[int]] | None:
        ids = []
        for letter in LETTERS[:n]:
            options = set()
            for text in (letter, " " + letter):
                enc = self.tokenizer.encode(text, add_special_tokens=False)
                if len(enc) == 1:
                    options.add(enc[0])
            if not options:
                return None
            ids.append(sorted(options))
        return ids

    def _messages(self, item: PromptLike) -> tuple[list[dict[str, Any]], list[PILImage]]:
        from PIL import Image

        messages: list[dict[str, Any]] = []
        images: list[PILImage] = []
        for pixels, answer in item.shots:
            messages += [
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": item.prompt.text}]},
                {"role": "assistant", "content": [{"type": "text", "text": answer}]},
            ]
            images.append(Image.fromarray(pixels))
        messages.append({"role": "user", "content": [{"type": "image"}, {"type": "text", "text": item.prompt.text}]})
        images.append(Image.fromarray(item.image))
        return messages, images

    def __call__(self, items: Sequence[PromptLike]) -> list[tuple[str, list[float] | None]]:
        torch = self.torch
        out = []
        for item in items:
            messages, images = self._messages(item)
            text = self.processor.apply_chat_template(messages, add_generation_prompt=True)
            inputs = self.processor(images=images, text=[text], return_tensors="pt").to(self.device)
            with torch.no_grad():
                gen = self.model.generate(
                    **inputs,
                    max_new_tokens=self.max_new_tokens,
                    do_sample=False,
                    output_scores=True,
                    return_dict_in_generate=True,
                )
            new_tokens = gen.sequences[0, inputs["input_ids"].shape[1] :]
            answer = self.processor.decode(new_tokens, skip_special_tokens=True).strip()
            probs = None
            letter_ids = self._letter_ids(item.n_options) if item.prompt.letters else None
            if letter_ids is not None and gen.scores:
                logits = gen.scores[0][0].float().cpu().numpy()
                z = np.array([max(logits[i] for i in ids) for ids in letter_ids], dtype=float)
                z = np.exp(z - z.max())
                probs = (z / z.sum()).tolist()
            out.append((answer, probs))
        return out
