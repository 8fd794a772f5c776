"""Kernel regression as non-parametric attention (textbook Figure 15.17).

Noisy samples of `f(x) = 2 sin(x) + x^0.8` on `[0, 5)` are the keys and
values; a dense grid of test points are the queries. The inverse bandwidth
`w` of `KernelRegressionAttention` is fitted by gradient descent on the
leave-one-out error of the training points (each point predicts itself from
the others: with itself attended the best `w` would be infinite). The demo
prints the fitted bandwidth and the errors, and writes two PNGs: the attention
weight matrix and the fitted curve.
"""

import argparse
import dataclasses
import os

import keras
import matplotlib
import numpy as np
from matplotlib import pyplot as plt

from attention_zoo.layers import KernelRegressionAttention


def true_function(x):
    return 2.0 * np.sin(x) + x**0.8


@dataclasses.dataclass(frozen=True)
class KernelRegressionData:
    x_train: np.ndarray  # (n,) sorted inputs
    y_train: np.ndarray  # (n,) noisy targets
    x_test: np.ndarray  # (m,) grid
    y_test: np.ndarray  # (m,) noise-free targets


def make_kernel_regression_data(n_train=50, noise=0.5, seed=0):
    """The textbook's 1-D setting: 50 noisy points, a grid of 50 queries."""
    rng = np.random.default_rng(seed)
    x_train = np.sort(rng.uniform(0.0, 5.0, n_train)).astype("float32")
    y_train = true_function(x_train) + rng.normal(0.0, noise, n_train)
    x_test = np.arange(0.0, 5.0, 0.1, dtype="float32")
    return KernelRegressionData(
        x_train=x_train,
        y_train=y_train.astype("float32"),
        x_test=x_test,
        y_test=true_function(x_test).astype("float32"),
    )


def _build_model(bandwidth, trainable):
    """Functional model: query, key, value and mask in, predictions out."""
    query = keras.Input((None,), name="query")
    key = keras.Input((None,), name="key")
    value = keras.Input((None,), name="value")
    mask = keras.Input((None, None), dtype="bool", name="attention_mask")
    layer = KernelRegressionAttention(
        bandwidth=bandwidth, trainable=trainable, name="kernel_regression"
    )
    output = layer(query, value, key=key, attention_mask=mask)
    inputs = {
        "query": query,
        "key": key,
        "value": value,
        "attention_mask": mask,
    }
    return keras.Model(inputs, output), layer


def _inputs(queries, data, leave_one_out=False):
    n = len(data.x_train)
    if leave_one_out:
        mask = ~np.eye(n, dtype=bool)
    else:
        mask = np.ones((len(queries), n), bool)
    return {
        "query": queries[None],
        "key": data.x_train[None],
        "value": data.y_train[None],
        "attention_mask": mask[None],
    }


def fit_bandwidth(
    data, initial_bandwidth=1.0, epochs=200, learning_rate=0.05, verbose=1
):
    """Fits `w = 1/bandwidth` on the leave-one-out squared error.

    Full-batch gradient descent: the one training example (all points as
    queries) is repeated `epochs` times so that Keras runs every step inside
    one compiled epoch, with one progress bar.

    Returns:
        (model, layer, losses): the fitted model, its attention layer and the
        leave-one-out loss before and after fitting.
    """
    model, layer = _build_model(initial_bandwidth, trainable=True)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss="mse")
    inputs = _inputs(data.x_train, data, leave_one_out=True)
    repeated = {k: np.repeat(v, epochs, axis=0) for k, v in inputs.items()}
    targets = np.repeat(data.y_train[None], epochs, axis=0)
    initial_loss = float(model.evaluate(inputs, data.y_train[None], verbose=0))
    model.fit(
        repeated,
        targets,
        batch_size=1,
        epochs=1,
        shuffle=False,
        verbose=verbose,
    )
    final_loss = float(model.evaluate(inputs, data.y_train[None], verbose=0))
    return model, layer, [initial_loss, final_loss]


def predict(model, queries, data, return_weights=False):
    inputs = _inputs(queries, data)
    prediction = np.asarray(model.predict(inputs, verbose=0))[0]
    if not return_weights:
        return prediction
    layer = model.get_layer("kernel_regression")
    _, weights = layer(
        inputs["query"],
        inputs["value"],
        key=inputs["key"],
        return_attention_scores=True,
    )
    return prediction, keras.ops.convert_to_numpy(weights)[0]


def _plot(data, curves, weights, out_dir):
    matplotlib.use("Agg")

    os.makedirs(out_dir, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5, 4.5))
    image = ax.imshow(weights, cmap="Reds", origin="upper")
    ax.set_xlabel("training input index (sorted x_i)")
    ax.set_ylabel("test input index (sorted x)")
    ax.set_title("Kernel regression attention weights")
    fig.colorbar(image, ax=ax, label="attention weight")
    weights_path = os.path.join(out_dir, "attention_weights.png")
    fig.savefig(weights_path, dpi=120, bbox_inches="tight")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(data.x_test, data.y_test, "k-", label="truth")
    ax.plot(data.x_train, data.y_train, "o", alpha=0.5, label="samples")
    for label, prediction in curves.items():
        ax.plot(data.x_test, prediction, label=label)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend()
    ax.set_title("Nadaraya-Watson kernel regression")
    curve_path = os.path.join(out_dir, "fitted_curve.png")
    fig.savefig(curve_path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return weights_path, curve_path


def run_demo(
    out,
    epochs=200,
    learning_rate=0.05,
    initial_bandwidth=1.0,
    samples=50,
    noise=0.5,
    seed=0,
):
    """Fits the bandwidth, prints the errors and writes the PNGs to `out`.

    Returns:
        A dict: the fitted `bandwidth`, the test MSE against the noise-free
        curve at the initial bandwidth (`mse_fixed`) and fitted
        (`mse_fitted`), and the `paths` of the two PNGs.
    """
    keras.utils.set_random_seed(seed)
    data = make_kernel_regression_data(samples, noise, seed)
    fixed, _ = _build_model(initial_bandwidth, trainable=False)
    fixed_prediction = predict(fixed, data.x_test, data)

    print(
        f"Fitting the bandwidth on {samples} noisy samples "
        f"(leave-one-out, {epochs} epochs)"
    )
    model, layer, losses = fit_bandwidth(
        data, initial_bandwidth, epochs, learning_rate
    )
    prediction, weights = predict(model, data.x_test, data, return_weights=True)
    mse_fixed = float(np.mean((fixed_prediction - data.y_test) ** 2))
    mse_fitted = float(np.mean((prediction - data.y_test) ** 2))
    print(
        f"fitted bandwidth: {layer.bandwidth:.4f} "
        f"(w = {1.0 / layer.bandwidth:.3f}; started at "
        f"{initial_bandwidth:g})"
    )
    print(f"leave-one-out training MSE: {losses[0]:.4f} -> {losses[-1]:.4f}")
    print(
        f"test MSE against the noise-free curve: "
        f"{mse_fixed:.4f} at bandwidth {initial_bandwidth:g}, "
        f"{mse_fitted:.4f} fitted"
    )
    paths = _plot(
        data,
        {
            f"bandwidth {initial_bandwidth:g}": fixed_prediction,
            f"fitted bandwidth {layer.bandwidth:.3f}": prediction,
        },
        weights,
        out,
    )
    for path in paths:
        print(f"wrote {path}")
    return {
        "bandwidth": float(layer.bandwidth),
        "mse_fixed": mse_fixed,
        "mse_fitted": mse_fitted,
        "paths": list(paths),
    }


def parser():
    """The demo's flags (`attention-zoo demo kernel-regression --help`)."""
    parser = argparse.ArgumentParser(
        prog="attention-zoo demo kernel-regression",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument(
        "--out", default="outputs/kernel-regression", help="folder for the PNGs"
    )
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--initial-bandwidth", type=float, default=1.0)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--noise", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    return parser


def main(argv=None):
    demo_parser = parser()
    args = demo_parser.parse_args(argv)
    for name in ("epochs", "samples"):
        if getattr(args, name) < 1:
            demo_parser.error(f"--{name} must be at least 1")
    for name in ("learning_rate", "initial_bandwidth"):
        if not getattr(args, name) > 0:
            flag = "--" + name.replace("_", "-")
            demo_parser.error(f"{flag} must be positive")

    run_demo(**vars(args))
    return 0
