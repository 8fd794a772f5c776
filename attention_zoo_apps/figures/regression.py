"""Figure 15.17: Nadaraya-Watson kernel regression as attention, from the
kernel-regression demo
(`attention_zoo_apps.kernel_regression.demo.run_demo`)."""

import contextlib
import io
import os

from attention_zoo_apps.figures.gallery import Figure
from attention_zoo_apps.kernel_regression.demo import run_demo

FOLDER = "15.17"  # the demo's two PNGs, under the names it gives them


def kernel_regression(out):
    """Figure 15.17: the demo's weight matrix and fitted curve."""
    with contextlib.redirect_stdout(io.StringIO()):  # the demo's report
        result = run_demo(os.path.join(out, FOLDER))
    bandwidth = result["bandwidth"]
    caption = (
        f"`KernelRegressionAttention` on the book's setting (50 noisy "
        f"samples of 2 sin(x) + x^0.8, queries on a grid of 50): (a) the "
        f"weight matrix, test inputs down and training inputs across, a "
        f"diagonal band as in the book; (b) the predictions. The book fixes "
        f"w = 1; ours also fits the bandwidth by gradient descent on the "
        f"leave-one-out error, to {bandwidth:.3f} (w = "
        f"{1.0 / bandwidth:.2f}), and draws the matrix at that bandwidth: "
        f"the error against the noise-free curve goes from "
        f"{result['mse_fixed']:.3f} at bandwidth 1 to "
        f"{result['mse_fitted']:.3f} fitted."
    )
    return Figure(
        "15.17",
        "Kernel regression as non-parametric attention",
        tuple(result["paths"]),
        caption,
    )
