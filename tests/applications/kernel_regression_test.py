"""The kernel-regression demo: fits, improves on its start, writes PNGs."""

import numpy as np
import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.kernel_regression import demo


def test_data_follows_the_textbook_setting():
    data = demo.make_kernel_regression_data(n_train=50, seed=1)
    assert data.x_train.shape == (50,) and data.x_test.shape == (50,)
    assert np.all(np.diff(data.x_train) >= 0)
    residual = data.y_train - demo.true_function(data.x_train)
    assert 0.3 < residual.std() < 0.7  # the noise level asked for


def test_fitting_lowers_the_leave_one_out_error():
    data = demo.make_kernel_regression_data(seed=0)
    model, layer, losses = demo.fit_bandwidth(
        data, initial_bandwidth=1.0, epochs=60, verbose=0
    )
    assert losses[-1] < 0.9 * losses[0]
    # Narrower than the starting kernel: w = 1 over-smooths this curve.
    assert layer.bandwidth < 1.0
    # Independent NumPy prediction with the fitted bandwidth.
    w = 1.0 / layer.bandwidth
    d = data.x_test[:, None] - data.x_train[None, :]
    logits = -0.5 * (d * w) ** 2
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    expected = weights @ data.y_train
    actual = demo.predict(model, data.x_test, data)
    np.testing.assert_allclose(actual, expected, atol=1e-4)


def test_cli_default_job_prints_bandwidth_and_writes_pngs(tmp_path, capsys):
    code = cli.main(
        ["demo", "kernel-regression", "--out", str(tmp_path), "--epochs", "20"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "fitted bandwidth:" in out and "test MSE" in out
    for name in ("attention_weights.png", "fitted_curve.png"):
        png = (tmp_path / name).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 5000


@pytest.mark.parametrize("flag", ["--epochs", "--samples"])
def test_cli_rejects_nonpositive_counts(flag, capsys):
    with pytest.raises(SystemExit):
        cli.main(["demo", "kernel-regression", flag, "0"])
    assert flag in capsys.readouterr().err
