"""The judge ladder's rerankers (issue 30): ``cross-encoder`` and ``monot5`` graders over tiny models built here
and loaded through ``from_pretrained``; ``exam-harness models pull`` fetching into the Hugging Face cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from exam_harness.core.errors import ConfigError
from exam_harness.core.models import Grade, Passage, Query, TestPoint
from exam_harness.graders.base import GraderConfig, GradingRequest
from exam_harness.graders.registry import default_registry

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


def test_calibrate_fits_a_cross_encoders_cut_points_on_team_labels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sentence_transformers")
    import json

    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from exam_harness.graders.rerankers import CrossEncoderGrader
    from exam_harness.grading.passes import exam_requests
    from exam_harness.io import load_bank, load_runs
    from tests.helpers import KEYWORD_BANK, write_bank, write_exam
    from tests.tiny_models import save_model, train_qa_tokenizer

    torch.manual_seed(0)
    tokenizer = train_qa_tokenizer()
    untyped: dict[str, Any] = {"num_labels": 1}
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id,
                        **untyped)
    model = BertForSequenceClassification(config)
    with torch.no_grad():  # random weights, spread: every pair its own probability
        model.classifier.weight.normal_(0.0, 3.0)
    path = save_model(model, tokenizer, tmp_path / "cross-encoder")
    exam, _ = write_exam(tmp_path / "data")
    bank = write_bank(tmp_path / "bank.jsonl", KEYWORD_BANK)
    monkeypatch.chdir(tmp_path)

    # the team's labels: "yes" for the pool's pairs of the higher half of the model's probabilities
    requests = exam_requests(load_runs([exam]).data, load_bank(bank), k=20, pool="judged")
    grader = CrossEncoderGrader(GraderConfig(options={"model": str(path)}))
    probabilities = grader.probabilities(requests)
    grader.close()
    median = sorted(probabilities)[len(probabilities) // 2]
    assert sum(p >= median for p in probabilities) < len(probabilities)
    (tmp_path / "labels.jsonl").write_text("".join(
        json.dumps({"query_id": r.query.id, "test_point_id": r.test_point.id, "passage_id": r.passage.id,
                    "label": p >= median}) + "\n" for r, p in zip(requests, probabilities)))

    common = [str(exam), "--bank", str(bank), "--grader", "cross-encoder", "--grader-option", f"model={path}",
              "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]
    assert main(["calibrate", *common, "--team-labels", "labels.jsonl", "--fit-cut-points", "cuts.json",
                 "--folds", "2"]) == 0
    printed = capsys.readouterr().out
    pairs = len({(r.passage.id, r.test_point.id) for r in requests})
    assert f"after: cut points fitted on {pairs} labelled pairs of 4 test points: held-out kappa" in printed
    assert "exam_grader_options = cut_points_file=cuts.json" in printed
    fitted = json.loads((tmp_path / "cuts.json").read_text())
    assert fitted["grader"] == "cross-encoder" and fitted["model"] == str(path)
    assert "team labels labels.jsonl" in fitted["fitted_on"]
    below = max(p for p in probabilities if p < median)
    assert below < fitted["cut_points"][3] <= median  # grade 4 begins between the last "no" and the first "yes"

    # the fitted file grades: its verdicts agree with the labels, and the grader's spec names the file's source
    out = tmp_path / "agreement.json"
    assert main(["analyze", "agreement", *common, "--grader-option", "cut_points_file=cuts.json",
                 "--team-labels", "labels.jsonl", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["kappa"] == pytest.approx(1.0)
    report = tmp_path / "evaluation.json"  # an evaluation's results name what the cut points were fitted on
    assert main(["evaluate", *common, "--grader-option", "cut_points_file=cuts.json", "--bootstrap", "0",
                 "--json", str(report)]) == 0
    grader = json.loads(report.read_text())["settings"]["grader"]
    assert grader["options"]["cut_points_fitted_on"] == fitted["fitted_on"]
    spec = default_registry().create("cross-encoder", GraderConfig(options={
        "model": str(path), "cut_points_file": str(tmp_path / "cuts.json")})).spec()
    assert spec.options["cut_points"] == fitted["cut_points"]
    assert spec.options["cut_points_fitted_on"] == fitted["fitted_on"]
    # cut points fitted for another model are refused, naming both
    with pytest.raises(ConfigError, match="not of 'other-model'"):
        default_registry().create("cross-encoder", GraderConfig(options={
            "model": "other-model", "cut_points_file": str(tmp_path / "cuts.json")}))


def test_a_bad_cut_points_file_names_the_file_and_field(tmp_path: Path) -> None:
    import json

    from exam_harness.graders.reranker_cuts import read_fitted_cut_points

    path = tmp_path / "cuts.json"
    good = {"grader": "monot5", "model": "m", "cut_points": [0.1, 0.3, 0.5, 0.7, 0.9], "min_grade": 4,
            "fitted_on": "team labels l.jsonl"}
    path.write_text(json.dumps(good))
    assert read_fitted_cut_points(path).cut_points == (0.1, 0.3, 0.5, 0.7, 0.9)
    path.write_text(json.dumps({**good, "cut_points": [0.9, 0.1, 0.5, 0.7, 0.9]}))
    with pytest.raises(ConfigError, match=r"cuts.json: field 'cut_points' must be 5 increasing"):
        read_fitted_cut_points(path)
    path.write_text(json.dumps({**good, "fitted_on": ""}))
    with pytest.raises(ConfigError, match=r"cuts.json: field 'fitted_on'"):
        read_fitted_cut_points(path)
