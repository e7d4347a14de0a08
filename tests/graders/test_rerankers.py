"""The judge ladder's rerankers (issue 30): ``cross-encoder`` and ``monot5`` graders over tiny models built here
and loaded through ``from_pretrained``; ``exam-harness models pull`` fetching into the Hugging Face cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.errors import ConfigError
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.registry import default_registry
from exam_harness.models import Grade, Passage, Query, TestPoint

pytest.importorskip("transformers")


def requests() -> list[GradingRequest]:
    query = Query(id="q", text="ocean tides")
    tp = TestPoint(id="q/1", query_id="q", kind="question", text="What causes the tides?")
    return [GradingRequest(query, tp, Passage(id=f"p{i}", text=t)) for i, t in
            enumerate(["The moon's gravity pulls the oceans.", "Bread rises in a warm kitchen."])]


def grades(name: str, model: Path) -> list[Grade]:
    grader = default_registry().create(name, GraderConfig(options={"model": str(model)}))
    try:
        assert grader.spec().revision is not None  # a local folder: its content fingerprint
        out = grader.grade_batch(requests())
    finally:
        grader.close()
    assert all(isinstance(g, Grade) for g in out)
    return [g for g in out if isinstance(g, Grade)]


def test_a_cross_encoder_grades_its_sigmoid_at_the_cut_points(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from tests.tiny_models import save_model, train_qa_tokenizer

    tokenizer = train_qa_tokenizer()
    untyped: dict[str, Any] = {"num_labels": 1}  # a keyword BertConfig keeps though its signature does not list it
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id,
                        **untyped)
    model = BertForSequenceClassification(config)
    with torch.no_grad():  # the logit is the bias whatever the pair: sigmoid(2) = 0.8808 -> grade 4 of 0.1..0.9
        model.classifier.weight.zero_()
        model.classifier.bias.fill_(2.0)
    path = save_model(model, tokenizer, tmp_path / "cross-encoder")
    found = grades("cross-encoder", path)
    assert [g.grade for g in found] == [4, 4]
    assert found[0].details["probability"] == pytest.approx(0.880797, abs=1e-5)


def test_monot5_reads_the_true_and_false_logits(tmp_path: Path) -> None:
    import torch

    from tests.tiny_models import build_t5, corpus_texts, save_model, train_tokenizer

    tokenizer = train_tokenizer([*corpus_texts(), "true false true false relevant"])
    model = build_t5(tokenizer)
    with torch.no_grad():  # every output logit 0: "true" and "false" alike
        model.lm_head.weight.zero_()
    path = save_model(model, tokenizer, tmp_path / "monot5")
    found = grades("monot5", path)
    assert [g.grade for g in found] == [3, 3]  # true and false alike: P(true) = 0.5 reaches the third cut point
    assert found[0].details["probability"] == pytest.approx(0.5)


def test_a_missing_model_names_models_pull(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    grader = default_registry().create("monot5", GraderConfig(options={"model": str(tmp_path / "absent")}))
    with pytest.raises(ConfigError, match="exam-harness models pull"):
        grader.grade_batch(requests())


def test_models_pull_fetches_each_name_into_the_hub_cache(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    import huggingface_hub

    asked: list[tuple[str, Any]] = []

    def fake_download(repo_id: str, revision: Any = None) -> str:
        asked.append((repo_id, revision))
        if repo_id == "nobody/absent":
            raise OSError("404 Client Error: repository not found")
        return f"/cache/{repo_id}"

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    assert main(["models", "pull", "castorini/monot5-base-msmarco", "cross-encoder/ms-marco-MiniLM-L6-v2"]) == 0
    out = capsys.readouterr().out
    assert asked == [("castorini/monot5-base-msmarco", None), ("cross-encoder/ms-marco-MiniLM-L6-v2", None)]
    assert "castorini/monot5-base-msmarco: /cache/castorini/monot5-base-msmarco" in out
    assert main(["models", "pull", "nobody/absent"]) != 0
    assert "cannot fetch 'nobody/absent'" in capsys.readouterr().err
