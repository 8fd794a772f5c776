"""Figure 15.15: the receptive field of a dilated causal convolution stack.

The dependencies are measured on the layers themselves, not drawn: a
stack of `CausalDilatedConv1D` (one channel, kernel of ones, no bias,
linear) is run on unit impulses, so output `t` for the impulse at input
`s` is `d y_t / d x_s`, the number of paths from `x_s` to `y_t`. The
`WaveNet` and `TCN` blocks, which are not linear, are probed by
perturbing one input at a time.
"""

import os

import numpy as np
from keras import ops
from matplotlib import pyplot as plt

from attention_zoo.blocks import TCN
from attention_zoo.blocks import WaveNet
from attention_zoo.layers import CausalDilatedConv1D
from attention_zoo_apps.common.plots import save_figure
from attention_zoo_apps.figures.gallery import Figure

DILATIONS = (1, 2, 4, 8)  # the book's (WaveNet's Figure 3)
KERNEL_SIZE = 2
STEPS = 16


def dilated_stack(dilations=DILATIONS, kernel_size=KERNEL_SIZE):
    """The stack's layers: one channel, kernels of ones, no bias."""
    return [
        CausalDilatedConv1D(
            1,
            kernel_size=kernel_size,
            dilation_rate=d,
            use_bias=False,
            kernel_initializer="ones",
            name=f"dilation_{d}",
        )
        for d in dilations
    ]


def impulse_responses(layers, steps=STEPS):
    """`(steps, steps)` array: `[t, s]` is output `t` of `layers` applied
    in turn to the unit impulse at input `s` (linear layers: `d y_t / d
    x_s`)."""
    x = np.eye(steps, dtype="float32")[:, :, None]  # (S, T, 1): impulse s
    for layer in layers:
        x = layer(x)
    return ops.convert_to_numpy(x)[:, :, 0].T  # (T, S)


def layer_dependencies(layers, steps=STEPS):
    """`(len(layers) + 1, steps)`: row `l` the paths from each unit of
    layer `l` (row 0 the input) to the last output."""
    rows = [
        impulse_responses(layers[level:], steps)[-1]
        for level in range(len(layers))
    ]
    last = np.zeros(steps, "float32")
    last[-1] = 1.0  # the output unit itself
    return np.stack(rows + [last])


def perturbation_field(block, steps, seed=0):
    """How many of the last `steps` inputs change `block`'s last output:
    each input perturbed in turn, the rest random."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, steps, 1)).astype("float32")
    changed = np.repeat(x, steps, axis=0)
    changed[np.arange(steps), np.arange(steps), 0] += 1.0
    base = ops.convert_to_numpy(block(x))[0, -1]
    moved = ops.convert_to_numpy(block(changed))[:, -1]
    return int(np.sum(np.any(np.abs(moved - base) > 1e-6, axis=-1)))


def receptive_field(out):
    """Figure 15.15: a dilated stack's dependencies, measured."""
    layers = dilated_stack()
    responses = impulse_responses(layers)
    dependencies = layer_dependencies(layers)
    field = int(np.count_nonzero(responses[-1]))
    wavenet = WaveNet(8, 8, dilations=DILATIONS, stacks=1)
    tcn = TCN(8, dilations=DILATIONS)
    probe_steps = 64
    fields = {
        "WaveNet": (perturbation_field(wavenet, probe_steps), wavenet),
        "TCN": (perturbation_field(tcn, probe_steps), tcn),
    }

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), layout="constrained")
    names = ["input"] + [f"dilation {d}" for d in DILATIONS]
    names[-1] = f"output ({names[-1]})"
    image = axes[0].imshow(
        dependencies, cmap="Blues", origin="lower", aspect="auto"
    )
    axes[0].set_yticks(range(len(names)), names)
    axes[0].set_xlabel("time step")
    axes[0].set_ylabel("layer")
    axes[0].set_title("units the last output depends on")
    fig.colorbar(image, ax=axes[0], label="paths to the last output")
    image = axes[1].imshow(responses, cmap="Blues", origin="lower")
    axes[1].set_xlabel("input step s")
    axes[1].set_ylabel("output step t")
    axes[1].set_title("d y_t / d x_s of the stack (kernels of ones)")
    fig.colorbar(image, ax=axes[1], label="d y_t / d x_s (paths)")
    path = save_figure(fig, os.path.join(out, "15.15-receptive-field.png"))

    expected = 1 + (KERNEL_SIZE - 1) * sum(DILATIONS)
    blocks = "; ".join(
        f"`{name}` (dilations {', '.join(map(str, DILATIONS))}) changes its "
        f"last output for {seen} of {probe_steps} perturbed inputs, its "
        f"`receptive_field` says {block.receptive_field}"
        for name, (seen, block) in fields.items()
    )
    caption = (
        f"A stack of four `CausalDilatedConv1D` layers (kernel "
        f"{KERNEL_SIZE}, dilations {', '.join(map(str, DILATIONS))}) run on "
        f"unit impulses: left, which units of each layer the last output "
        f"depends on (the book's picture); right, `d y_t / d x_s` for "
        f"every pair, zero above the diagonal (causal). The last output "
        f"reads {field} inputs; `1 + (K - 1) * sum(dilations)` = "
        f"{expected}. {blocks}. The book draws WaveNet's figure by hand; "
        f"here the dependencies are measured on the layers; the colour "
        f"counts paths, at most {int(responses.max())} from an input to an "
        f"output here (doubling dilations of a kernel of 2 tile the field)."
    )
    return Figure(
        "15.15",
        "Dilated causal convolutions (WaveNet)",
        (path,),
        caption,
    )
