"""The one deterministic fake embedder the tests share.

`HashEmbeddings` maps each lowercase word to a fixed pseudo-random direction (seeded by a
hash of the word) and sums them, so texts that share words are close and texts that share
none are nearly orthogonal. It is fast, needs no model, and gives the same vectors on every
machine and run.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
from langchain_core.embeddings import Embeddings

_WORD = re.compile(r"[a-z0-9]+")


class HashEmbeddings(Embeddings):
    """Bag-of-words embedder with deterministic per-word directions.

    Args:
        dims: Vector size.
        ignore: Words the embedder does not see (to build vector blind spots in tests).
    """

    def __init__(self, dims: int = 64, *, ignore: frozenset[str] = frozenset()) -> None:
        self.dims = dims
        self.ignore = ignore
        self.calls = 0

    def _word(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self.dims)

    def _embed(self, text: str) -> list[float]:
        vec = np.zeros(self.dims)
        for word in _WORD.findall(text.lower()):
            if word not in self.ignore:
                vec += self._word(word)
        norm = np.linalg.norm(vec)
        if norm == 0:
            vec[0] = 1.0
            norm = 1.0
        return (vec / norm).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self._embed(text)


class FailingEmbeddings(Embeddings):
    """An embedder that always raises, for the degradation paths."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("embedding service unavailable")

    def embed_query(self, text: str) -> list[float]:
        raise RuntimeError("embedding service unavailable")


class QueryFailingEmbeddings(HashEmbeddings):
    """Indexes documents fine, then fails on every query (an outage after writes)."""

    def embed_query(self, text: str) -> list[float]:
        raise TimeoutError("embedding service timed out")
