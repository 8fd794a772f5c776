"""Causal dilated 1D convolution with step-by-step (streaming) inference."""

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_positive_int


def check_dilations(dilations):
    """Validates a stack's dilation rates; returns them as a tuple."""
    dilations = tuple(dilations)
    if not dilations or not all(
        isinstance(d, int) and not isinstance(d, bool) and d > 0
        for d in dilations
    ):
        raise ValueError(
            "`dilations` must be a non-empty sequence of positive "
            f"integers. Received: dilations={dilations}"
        )
    return dilations


@attention_zoo_export(
    (
        "attention_zoo.CausalDilatedConv1D",
        "attention_zoo.layers.CausalDilatedConv1D",
    )
)
class CausalDilatedConv1D(keras.layers.Layer):
    """Causal dilated 1D convolution: output `t` sees inputs `<= t` only.

    With kernel `W` of shape `(K, C, F)`, dilation `d` and padding
    `P = d * (K - 1)` zeros on the left of the time axis:

    `y[t] = act(b + sum_{k=0}^{K-1} x[t - d * (K - 1 - k)] @ W[k])`,

    with `x[s] = 0` for `s < 0`. The output has the input's length and never
    depends on the future. Each output sees `receptive_field = 1 + d (K - 1)`
    inputs; a stack of such layers sees `1 + (K - 1) * sum(dilations)`. The
    weights are laid out as in `keras.layers.Conv1D` (`kernel` of shape
    `(K, C, F)`, then `bias` of shape `(F,)`), so trained `Conv1D` weights
    can be copied in with `set_weights`, and with equal weights the layer
    equals `keras.layers.Conv1D(padding="causal", dilation_rate=d)`.

    Streaming: `get_initial_state(batch_size)` returns zeros of shape
    `(B, P, C)`, a queue of the last `P` inputs (the zero padding), and
    `step(x_t, state)` returns `(y_t, new_state)` for one time step. Running
    `step` over a sequence gives the full-sequence output (the "fast
    WaveNet" queue of Paine et al. 2016).

    Masking: time steps where `mask` is False are read as zeros (as if they
    were padding), their outputs are zero, and the mask is passed on. With
    a mask, changing values at masked steps changes nothing. `step` takes
    no mask.

    Args:
        filters: int, number of output channels `F`.
        kernel_size: int, number of taps `K`. Defaults to `2`.
        dilation_rate: int, spacing `d` between taps. Defaults to `1`.
        activation: activation name or callable, or `None`. Defaults to
            `None`.
        use_bias: bool, add a bias. Defaults to `True`.
        kernel_initializer: initializer of the kernel. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer of the bias. Defaults to `"zeros"`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `(B, T, C)`.
        mask: optional boolean tensor `(B, T)`, True = keep.

    Returns:
        Float tensor `(B, T, F)`.

    Example:

    >>> x = np.random.rand(2, 8, 3).astype("float32")
    >>> conv = CausalDilatedConv1D(4, kernel_size=2, dilation_rate=2)
    >>> conv(x).shape
    (2, 8, 4)
    >>> conv.receptive_field
    3

    Reference:
        van den Oord et al., "WaveNet: A Generative Model for Raw Audio",
        2016, https://arxiv.org/abs/1609.03499; Paine et al., "Fast
        Wavenet Generation Algorithm", 2016,
        https://arxiv.org/abs/1611.09482.
    """

    def __init__(
        self,
        filters,
        kernel_size=2,
        dilation_rate=1,
        activation=None,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("filters", filters)
        check_positive_int("kernel_size", kernel_size)
        check_positive_int("dilation_rate", dilation_rate)
        self.filters = filters
        self.kernel_size = kernel_size
        self.dilation_rate = dilation_rate
        self.activation = keras.activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    @property
    def receptive_field(self):
        """Number of inputs each output sees: `1 + d * (K - 1)`."""
        return 1 + self.dilation_rate * (self.kernel_size - 1)

    @property
    def padding_size(self):
        """Left padding and streaming queue length `P = d * (K - 1)`."""
        return self.dilation_rate * (self.kernel_size - 1)

    def build(self, inputs_shape):
        if len(inputs_shape) != 3:
            raise ValueError(
                "CausalDilatedConv1D expects inputs of rank 3 (B, T, C). "
                f"Received: inputs_shape={inputs_shape}"
            )
        if inputs_shape[-1] is None:
            raise ValueError(
                "The channel dimension of the inputs must be defined. "
                f"Received: inputs_shape={inputs_shape}"
            )
        self.in_channels = int(inputs_shape[-1])
        self.kernel = self.add_weight(
            name="kernel",
            shape=(self.kernel_size, self.in_channels, self.filters),
            initializer=self.kernel_initializer,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias",
                shape=(self.filters,),
                initializer=self.bias_initializer,
            )
        else:
            self.bias = None

    def call(self, inputs, mask=None):
        if mask is not None:
            # Masked steps read as zeros, like the causal padding.
            inputs = ops.where(mask[..., None], inputs, ops.zeros_like(inputs))
        # (B, P + T, C): zeros on the left only, so output t sees x[<= t].
        padded = ops.pad(inputs, ((0, 0), (self.padding_size, 0), (0, 0)))
        outputs = ops.conv(
            padded,
            self._get_kernel(),
            strides=1,
            padding="valid",
            dilation_rate=self.dilation_rate,
        )  # (B, T, F)
        outputs = self._finish(outputs)
        if mask is not None:
            outputs = ops.where(
                mask[..., None], outputs, ops.zeros_like(outputs)
            )
        return outputs

    def get_initial_state(self, batch_size):
        """Zero streaming state, a queue of shape `(B, P, C)`.

        Args:
            batch_size: int or scalar tensor, `B`.

        Returns:
            Zeros of shape `(B, d * (K - 1), C)` in the compute dtype.
        """
        return ops.zeros(
            (batch_size, self.padding_size, self.in_channels),
            dtype=self.compute_dtype,
        )

    def step(self, inputs, state):
        """One streaming step.

        Args:
            inputs: float tensor `(B, C)`, the input at time `t`.
            state: float tensor `(B, P, C)`, the last `P` inputs (oldest
                first), from `get_initial_state` or the previous `step`.

        Returns:
            `(outputs, new_state)`: `(B, F)` and `(B, P, C)`.
        """
        inputs = ops.cast(inputs, self.compute_dtype)
        state = ops.cast(state, self.compute_dtype)
        # (B, P + 1, C): the queue with x_t appended.
        window = ops.concatenate([state, inputs[:, None, :]], axis=1)
        # (B, K * C): the K taps side by side, read with static slices.
        taps = ops.concatenate(
            [
                window[:, k * self.dilation_rate, :]
                for k in range(self.kernel_size)
            ],
            axis=-1,
        )
        kernel = ops.cast(self._get_kernel(), self.compute_dtype)
        kernel = ops.reshape(kernel, (-1, self.filters))  # (K * C, F)
        outputs = ops.matmul(taps, kernel)  # (B, F)
        return self._finish(outputs), window[:, 1:, :]

    def _get_kernel(self):
        """The `(K, C, F)` kernel; subclasses may reparametrise it."""
        return self.kernel

    def _finish(self, outputs):
        """Bias and activation on `(..., F)`."""
        if self.use_bias:
            outputs = outputs + ops.cast(self.bias, outputs.dtype)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.filters,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "filters": self.filters,
                "kernel_size": self.kernel_size,
                "dilation_rate": self.dilation_rate,
                "activation": keras.activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config
