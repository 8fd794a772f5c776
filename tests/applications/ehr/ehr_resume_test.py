"""`attention-zoo train ehr` interrupted after an epoch and restarted with
the same command resumes from its last finished epoch."""

import pytest

from attention_zoo_apps.ehr.risk_model import RiskModel
from tests.support import resume_checks


# Slow tier; the quick twins resume other applications' interrupted runs
# through the same run folder code (run_folder_faults_test's entailment
# run, translator_test).
@pytest.mark.slow
def test_restarted_run_resumes_after_an_interrupt(
    tmp_path, monkeypatch, capsys
):
    argv = [
        "train",
        "ehr",
        "--synthetic-patients",
        "40",
        "--epochs",
        "2",
        "--embedding-dim",
        "8",
        "--units",
        "8",
        "--batch-size",
        "16",
        "--run-dir",
        str(tmp_path / "run"),
    ]
    first, resumed = resume_checks.check_cli_resumes(
        monkeypatch, RiskModel, argv, tmp_path / "run"
    )
    assert "Resuming the interrupted run" in capsys.readouterr().out
    assert resumed.config == first.config
    assert resumed.code_vocabulary.codes == first.code_vocabulary.codes
    assert not (tmp_path / "run" / "backup").exists()  # the run finished
