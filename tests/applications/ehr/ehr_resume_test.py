"""`attention-zoo train ehr` interrupted after an epoch and restarted with
the same command resumes from its last finished epoch."""

import keras
import numpy as np
import pytest

from applications import cli
from applications.ehr.risk_model import RiskModel
from tests import resume_testing


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
    fit = RiskModel.fit
    seen, first = [], {}

    def interrupted_fit(self, *args, callbacks=(), **kwargs):
        first["risk_model"] = self
        stop = resume_testing.InterruptAtEpoch(1)
        return fit(self, *args, callbacks=[*callbacks, stop], **kwargs)

    monkeypatch.setattr(RiskModel, "fit", interrupted_fit)
    with pytest.raises(resume_testing.Interrupt):
        cli.main(argv)
    assert (tmp_path / "run" / "backup").exists()
    expected = first["risk_model"].model.get_weights()  # after epoch 0

    class Record(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append(epoch)
            for a, b in zip(self.model.get_weights(), expected):
                np.testing.assert_allclose(a, b)

    def recorded_fit(self, *args, callbacks=(), **kwargs):
        first["resumed"] = self
        return fit(self, *args, callbacks=[*callbacks, Record()], **kwargs)

    capsys.readouterr()
    monkeypatch.setattr(RiskModel, "fit", recorded_fit)
    assert cli.main(argv) == 0
    assert "Resuming the interrupted run" in capsys.readouterr().out
    assert seen == [1]  # only the second epoch ran, from the saved weights
    resumed = first["resumed"]
    assert resumed.config == first["risk_model"].config
    assert resumed.code_vocabulary.codes == (
        first["risk_model"].code_vocabulary.codes
    )
    assert not (tmp_path / "run" / "backup").exists()  # the run finished
