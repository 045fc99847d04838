"""Tokenizers: byte-level by default (needs nothing), a Hugging Face ``tokenizers`` JSON file by path, or a
tokenizer on the Hugging Face Hub by name (``hf:NAME[@REVISION]``: its ``tokenizer.json``, fetched once into
the Hub cache; where the Hub cannot be reached the error names the tokenizer).

Each tokenizer also knows how many UTF-8 bytes every token id stands for (``token_bytes``), which is what makes
bits-per-byte exact: special tokens count 0 bytes, and eval excludes them from both sums.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from runner.errors import DataError


class Tokenizer(Protocol):
    name: str
    vocab_size: int
    eos_id: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def token_bytes(self) -> np.ndarray: ...

    def fingerprint(self) -> str: ...


@dataclass(frozen=True)
class ByteTokenizer:
    """Ids 0..255 are the UTF-8 bytes; 256 is ``<|endoftext|>``, which separates documents."""

    name: str = "byte"
    vocab_size: int = 257
    eos_id: int = 256
    specials: tuple[str, ...] = field(default=("<|endoftext|>",))

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: list[int]) -> str:
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")

    def token_bytes(self) -> np.ndarray:
        out = np.ones(self.vocab_size, dtype=np.int64)
        out[256:] = 0
        return out

    def fingerprint(self) -> str:
        return "byte-v1"


@lru_cache(maxsize=1)
def _unicode_to_byte() -> dict[str, int]:
    """Inverse of GPT-2's bytes_to_unicode: ByteLevel BPE spells every byte as one printable character."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


class HFTokenizer:
    """A ``tokenizers`` JSON file (e.g. a trained BPE). Its end-of-text token separates documents."""

    def __init__(self, path: str) -> None:
        from tokenizers import Tokenizer as RustTokenizer

        p = Path(path)
        try:
            self._data = p.read_bytes()
            self._tok = RustTokenizer.from_str(self._data.decode("utf-8"))
        except FileNotFoundError:
            raise DataError(f"data.tokenizer: no such tokenizer file {path}") from None
        except Exception as err:  # tokenizers raises plain Exception on a malformed file
            raise DataError(f"data.tokenizer: cannot load {path}: {str(err).splitlines()[0]}") from None
        self.name = str(p)
        self.vocab_size = self._tok.get_vocab_size(with_added_tokens=True)
        self._special = {t.content: i for i, t in self._tok.get_added_tokens_decoder().items() if t.special}
        eos = next((self._special[s] for s in _EOS_NAMES if s in self._special), None)
        if eos is None:
            raise DataError(
                f"data.tokenizer: {path} has no end-of-text special token (one of {', '.join(_EOS_NAMES)})"
            )
        self.eos_id = eos

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids)

    def token_bytes(self) -> np.ndarray:
        inv = _unicode_to_byte()
        special_ids = set(self._special.values())
        out = np.zeros(self.vocab_size, dtype=np.int64)
        for i in range(self.vocab_size):
            if i in special_ids:
                continue
            piece = self._tok.id_to_token(i)
            if piece is None:
                continue
            if piece.startswith("<0x") and piece.endswith(">") and len(piece) == 6:
                out[i] = 1  # sentencepiece byte fallback
            elif all(ch in inv for ch in piece):
                out[i] = len(piece)  # ByteLevel: one character per byte
            else:
                out[i] = len(piece.replace("\u2581", " ").encode("utf-8"))
        return out

    def fingerprint(self) -> str:
        return "hf-" + hashlib.sha256(self._data).hexdigest()[:16]


_EOS_NAMES = ("<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>", "[SEP]")


def load_tokenizer(spec: str) -> Tokenizer:
    """'byte', a path to a tokenizers JSON file, or ``hf:NAME[@REVISION]`` on the Hugging Face Hub."""
    if spec == "byte":
        return ByteTokenizer()
    if spec.startswith("hf:"):
        return HFTokenizer(_hub_tokenizer_file(spec))
    return HFTokenizer(spec)


def _hub_tokenizer_file(spec: str) -> str:
    name, _, revision = spec.removeprefix("hf:").partition("@")
    if not name or "/" not in name:
        raise DataError(f"data.tokenizer: {spec!r}: expected hf:ORG/NAME[@REVISION]")
    try:
        from huggingface_hub import hf_hub_download

        return hf_hub_download(name, "tokenizer.json", revision=revision or None)
    except Exception as err:  # offline, gated, missing file: one line naming the tokenizer
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise DataError(
            f"data.tokenizer: cannot fetch tokenizer.json of {name}{'@' + revision if revision else ''} "
            f"from the Hugging Face Hub ({type(err).__name__}: {first[:200]})"
        ) from None
