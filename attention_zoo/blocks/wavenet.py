"""WaveNet: stacks of gated dilated causal convolutions with skip outputs."""

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_positive_int
from attention_zoo.layers.causal_dilated_conv1d import CausalDilatedConv1D
from attention_zoo.layers.causal_dilated_conv1d import check_dilations

_DEFAULT_DILATIONS = tuple(2**i for i in range(10))  # 1, 2, ..., 512


@attention_zoo_export(("attention_zoo.WaveNet", "attention_zoo.blocks.WaveNet"))
class WaveNet(keras.layers.Layer):
    """WaveNet body: gated residual layers with summed skip connections.

    A causal convolution (`kernel_size` taps, dilation 1) maps the input to
    `R = residual_channels` channels, then `stacks` repetitions of the
    `dilations` each run one gated residual layer with dilation `d`:

    `[f, g] = conv_d(h)` (a `CausalDilatedConv1D` with `2 R` filters),
    `z = tanh(f) * sigmoid(g)`, `skip += z @ W_skip + b_skip`,
    `h = h + z @ W_res + b_res` (not for the last layer).

    The output is the skip sum `(B, T, skip_channels)`. The output head is
    the user's business; the paper uses `relu -> 1x1 conv -> relu -> 1x1
    conv -> softmax` over 256 mu-law levels, e.g.
    `Dense(256, dtype="float32")(Dense(S, "relu")(relu(skip)))`. Output `t`
    depends on inputs `<= t` only, over

    `receptive_field = 1 + (kernel_size - 1) * (1 + stacks * sum(dilations))`

    steps (3071 for the defaults: 3 stacks of 1, 2, ..., 512).

    Streaming: `get_initial_state(batch_size)` and `step(x_t, state)`
    generate one step at a time with one queue per convolution, the fast
    WaveNet algorithm of Paine et al. (2016): each step costs one layer
    evaluation per layer instead of a pass over the receptive field, and
    equals the full forward pass. `autoregressive_generate` (in
    `attention_zoo.blocks`) runs it as one compiled loop.

    Masking: masked time steps are read as zeros by every convolution and
    give zero outputs; the mask is passed on.

    Args:
        residual_channels: int, width `R` of the residual stream.
        skip_channels: int, width `S` of the skip outputs.
        dilations: tuple of int, dilations of one stack. Defaults to
            `(1, 2, 4, ..., 512)`.
        stacks: int, repetitions of `dilations`. Defaults to `3`.
        kernel_size: int, taps of every causal convolution. Defaults to `2`.
        kernel_initializer: initializer of all kernels. Defaults to
            `"glorot_uniform"`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `(B, T, C)`.
        mask: optional boolean tensor `(B, T)`, True = keep.

    Returns:
        Float tensor `(B, T, S)`, the sum of the skip outputs.

    Example:

    >>> x = np.random.rand(2, 8, 1).astype("float32")
    >>> net = WaveNet(8, 16, dilations=(1, 2, 4), stacks=2)
    >>> net(x).shape
    (2, 8, 16)
    >>> net.receptive_field
    16

    Reference:
        van den Oord et al., "WaveNet: A Generative Model for Raw Audio",
        2016, https://arxiv.org/abs/1609.03499; Paine et al., "Fast
        Wavenet Generation Algorithm", 2016,
        https://arxiv.org/abs/1611.09482.
    """

    def __init__(
        self,
        residual_channels,
        skip_channels,
        dilations=_DEFAULT_DILATIONS,
        stacks=3,
        kernel_size=2,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("residual_channels", residual_channels)
        check_positive_int("skip_channels", skip_channels)
        check_positive_int("stacks", stacks)
        check_positive_int("kernel_size", kernel_size)
        dilations = check_dilations(dilations)
        self.residual_channels = residual_channels
        self.skip_channels = skip_channels
        self.dilations = dilations
        self.stacks = stacks
        self.kernel_size = kernel_size
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.supports_masking = True

    @property
    def receptive_field(self):
        """`1 + (kernel_size - 1) * (1 + stacks * sum(dilations))`."""
        total = 1 + self.stacks * sum(self.dilations)
        return 1 + (self.kernel_size - 1) * total

    def build(self, inputs_shape):
        if len(inputs_shape) != 3:
            raise ValueError(
                "WaveNet expects inputs of rank 3 (B, T, C). "
                f"Received: inputs_shape={inputs_shape}"
            )
        hidden_shape = tuple(inputs_shape[:-1]) + (self.residual_channels,)
        gated_shape = tuple(inputs_shape[:-1]) + (self.residual_channels,)
        self._input_conv = CausalDilatedConv1D(
            self.residual_channels,
            self.kernel_size,
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
            name="input_conv",
        )
        self._input_conv.build(inputs_shape)
        self._gate_convs = []
        self._skip_denses = []
        self._residual_denses = []
        num_layers = self.stacks * len(self.dilations)
        for i in range(num_layers):
            gate = CausalDilatedConv1D(
                2 * self.residual_channels,
                self.kernel_size,
                self.dilations[i % len(self.dilations)],
                kernel_initializer=self.kernel_initializer,
                dtype=self.dtype_policy,
                name=f"gate_conv_{i}",
            )
            gate.build(hidden_shape)
            self._gate_convs.append(gate)
            skip = keras.layers.Dense(
                self.skip_channels,
                kernel_initializer=self.kernel_initializer,
                dtype=self.dtype_policy,
                name=f"skip_{i}",
            )
            skip.build(gated_shape)
            self._skip_denses.append(skip)
            # The last layer's residual output would be unused.
            if i < num_layers - 1:
                residual = keras.layers.Dense(
                    self.residual_channels,
                    kernel_initializer=self.kernel_initializer,
                    dtype=self.dtype_policy,
                    name=f"residual_{i}",
                )
                residual.build(gated_shape)
                self._residual_denses.append(residual)

    def call(self, inputs, mask=None):
        h = self._input_conv(inputs, mask=mask)  # (B, T, R)
        skip = None
        for i, gate in enumerate(self._gate_convs):
            z = self._gated_unit(gate(h, mask=mask))  # (B, T, R)
            s = self._skip_denses[i](z)  # (B, T, S)
            skip = s if skip is None else skip + s
            if i < len(self._residual_denses):
                h = h + self._residual_denses[i](z)
        if mask is not None:
            skip = ops.where(mask[..., None], skip, ops.zeros_like(skip))
        return skip

    def get_initial_state(self, batch_size):
        """Zero streaming state: a tuple with one queue per convolution.

        The queues have shapes `(B, (kernel_size - 1) * d, channels)`: the
        input convolution's first, then one per gated layer.
        """
        convs = [self._input_conv] + list(self._gate_convs)
        return tuple(conv.get_initial_state(batch_size) for conv in convs)

    def step(self, inputs, state):
        """One streaming step (fast WaveNet generation).

        Args:
            inputs: float tensor `(B, C)`, the input at time `t`.
            state: tuple from `get_initial_state` or the previous `step`.

        Returns:
            `(outputs, new_state)`, outputs of shape `(B, S)`.
        """
        h, queue = self._input_conv.step(inputs, state[0])
        new_state = [queue]
        skip = None
        for i, gate in enumerate(self._gate_convs):
            gated, queue = gate.step(h, state[i + 1])
            new_state.append(queue)
            z = self._gated_unit(gated)  # (B, R)
            s = self._skip_denses[i](z)  # (B, S)
            skip = s if skip is None else skip + s
            if i < len(self._residual_denses):
                h = h + self._residual_denses[i](z)
        return skip, tuple(new_state)

    def _gated_unit(self, x):
        """`(..., 2R)` -> `(..., R)`: `tanh(filter) * sigmoid(gate)`."""
        filter_part = x[..., : self.residual_channels]
        gate_part = x[..., self.residual_channels :]
        return ops.tanh(filter_part) * ops.sigmoid(gate_part)

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.skip_channels,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "residual_channels": self.residual_channels,
                "skip_channels": self.skip_channels,
                "dilations": list(self.dilations),
                "stacks": self.stacks,
                "kernel_size": self.kernel_size,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
