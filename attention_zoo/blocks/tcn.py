"""Temporal convolutional network: residual blocks of causal convolutions."""

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate
from attention_zoo.layers.causal_dilated_conv1d import CausalDilatedConv1D
from attention_zoo.layers.causal_dilated_conv1d import check_dilations

_NORMALIZATIONS = (None, "layer", "weight", "batch")


class _WeightNormCausalConv1D(CausalDilatedConv1D):
    """`CausalDilatedConv1D` with kernel `g * v / ||v||` (Salimans 2016).

    The norm runs over `(K, C)` for each output channel; `g` starts at
    `||v||`, so the initial kernel is `v`, as in PyTorch's `weight_norm`.
    """

    def build(self, inputs_shape):
        super().build(inputs_shape)
        self.kernel_scale = self.add_weight(
            name="kernel_scale", shape=(self.filters,), initializer="ones"
        )
        self.kernel_scale.assign(self._kernel_norm())

    def _kernel_norm(self):
        return ops.sqrt(ops.sum(ops.square(self.kernel), axis=(0, 1)))

    def _get_kernel(self):
        # (K, C, F) / (F,): every output channel has norm kernel_scale.
        return self.kernel * (self.kernel_scale / self._kernel_norm())


@attention_zoo_export(("attention_zoo.TCN", "attention_zoo.blocks.TCN"))
class TCN(keras.layers.Layer):
    """Temporal convolutional network (Bai, Kolter and Koltun, 2018).

    A stack of residual blocks, one per dilation `d`:

    `h = drop(relu(norm(conv_d(x))))`, `h = drop(relu(norm(conv_d(h))))`,
    `x = relu(h + shortcut(x))`,

    where `conv_d` is a `CausalDilatedConv1D` with `filters` channels,
    `kernel_size` taps and dilation `d`, and `shortcut` is a 1x1 convolution
    where the input width differs from `filters` (the identity otherwise).
    Every convolution is causal, so output `t` depends on inputs `<= t`
    only, and with two convolutions per block the receptive field is

    `receptive_field = 1 + 2 * (kernel_size - 1) * sum(dilations)`.

    Normalisation: `"layer"` (over channels, per time step), `"batch"`,
    `"weight"` (weight normalisation of each convolution kernel, as in the
    paper) or `None`.

    Streaming: `get_initial_state(batch_size)` and `step(x_t, state)` run
    the network one time step at a time, with one queue per convolution
    (see `CausalDilatedConv1D.step`); the outputs equal the full pass in
    inference mode. Layer and weight normalisation are per time step, so
    streaming is exact; batch normalisation streams with its moving
    statistics (inference mode), dropout is off in `step`.

    Masking: masked time steps are read as zeros by every convolution and
    give zero outputs; the mask is passed on when `return_sequences=True`.
    With `return_sequences=False` the output is the last unmasked step.

    Args:
        filters: int, channels of every block.
        kernel_size: int, taps of every convolution. Defaults to `2`.
        dilations: tuple of int, one residual block per dilation. Defaults
            to `(1, 2, 4, 8)`.
        dropout: float in `[0, 1)`, dropout after each convolution during
            training. Defaults to `0.0`.
        normalization: `"layer"`, `"batch"`, `"weight"` or `None`. Defaults
            to `"layer"`.
        return_sequences: bool, return every step `(B, T, F)` or only the
            last `(B, F)`. Defaults to `True`.
        kernel_initializer: initializer of the convolution kernels.
            Defaults to `"glorot_uniform"`.
        seed: optional int, seed of the dropout.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `(B, T, C)`.
        mask: optional boolean tensor `(B, T)`, True = keep.
        training: bool, dropout and batch statistics on.

    Returns:
        `(B, T, F)` if `return_sequences`, else `(B, F)`.

    Example:

    >>> x = np.random.rand(2, 8, 3).astype("float32")
    >>> tcn = TCN(16, kernel_size=2, dilations=(1, 2))
    >>> tcn(x).shape
    (2, 8, 16)
    >>> tcn.receptive_field
    7

    Reference:
        Bai, Kolter and Koltun, "An Empirical Evaluation of Generic
        Convolutional and Recurrent Networks for Sequence Modeling", 2018,
        https://arxiv.org/abs/1803.01271.
    """

    def __init__(
        self,
        filters,
        kernel_size=2,
        dilations=(1, 2, 4, 8),
        dropout=0.0,
        normalization="layer",
        return_sequences=True,
        kernel_initializer="glorot_uniform",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("filters", filters)
        check_positive_int("kernel_size", kernel_size)
        dilations = check_dilations(dilations)
        check_rate("dropout", dropout)
        if normalization not in _NORMALIZATIONS:
            raise ValueError(
                "`normalization` must be one of "
                f"{_NORMALIZATIONS}. Received: normalization={normalization!r}"
            )
        self.filters = filters
        self.kernel_size = kernel_size
        self.dilations = dilations
        self.dropout = dropout
        self.normalization = normalization
        self.return_sequences = return_sequences
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.seed = seed
        self.supports_masking = True

    @property
    def receptive_field(self):
        """`1 + 2 * (kernel_size - 1) * sum(dilations)`."""
        return 1 + 2 * (self.kernel_size - 1) * sum(self.dilations)

    def build(self, inputs_shape):
        if len(inputs_shape) != 3:
            raise ValueError(
                "TCN expects inputs of rank 3 (B, T, C). "
                f"Received: inputs_shape={inputs_shape}"
            )
        conv_cls = CausalDilatedConv1D
        if self.normalization == "weight":
            conv_cls = _WeightNormCausalConv1D
        self._blocks = []
        width = inputs_shape[-1]
        shape = tuple(inputs_shape)
        for i, dilation in enumerate(self.dilations):
            block = {}
            for j in (1, 2):
                conv = conv_cls(
                    self.filters,
                    self.kernel_size,
                    dilation,
                    kernel_initializer=self.kernel_initializer,
                    dtype=self.dtype_policy,
                    name=f"block_{i}_conv_{j}",
                )
                conv.build(shape)
                shape = shape[:-1] + (self.filters,)
                block[f"conv_{j}"] = conv
                norm = self._make_norm(f"block_{i}_norm_{j}")
                if norm is not None:
                    norm.build(shape)
                block[f"norm_{j}"] = norm
            block["dropout"] = keras.layers.Dropout(
                self.dropout,
                seed=None if self.seed is None else self.seed + i,
                dtype=self.dtype_policy,
                name=f"block_{i}_dropout",
            )
            block["shortcut"] = None
            if width != self.filters:
                block["shortcut"] = CausalDilatedConv1D(
                    self.filters,
                    kernel_size=1,
                    kernel_initializer=self.kernel_initializer,
                    dtype=self.dtype_policy,
                    name=f"block_{i}_shortcut",
                )
                block["shortcut"].build(tuple(inputs_shape[:-1]) + (width,))
            width = self.filters
            self._blocks.append(block)

    def _make_norm(self, name):
        if self.normalization == "layer":
            return keras.layers.LayerNormalization(
                epsilon=1e-5, dtype=self.dtype_policy, name=name
            )
        if self.normalization == "batch":
            return keras.layers.BatchNormalization(
                dtype=self.dtype_policy, name=name
            )
        return None

    def call(self, inputs, mask=None, training=None):
        x = inputs
        for block in self._blocks:
            h = x
            for j in (1, 2):
                h = block[f"conv_{j}"](h, mask=mask)
                if block[f"norm_{j}"] is not None:
                    h = block[f"norm_{j}"](h, training=training)
                h = block["dropout"](ops.relu(h), training=training)
            shortcut = x
            if block["shortcut"] is not None:
                shortcut = block["shortcut"](x, mask=mask)
            x = ops.relu(h + shortcut)
        if mask is not None:
            x = ops.where(mask[..., None], x, ops.zeros_like(x))
        if self.return_sequences:
            return x
        return _last_step(x, mask)

    def get_initial_state(self, batch_size):
        """Zero streaming state: a tuple with one queue per convolution."""
        return tuple(
            block[f"conv_{j}"].get_initial_state(batch_size)
            for block in self._blocks
            for j in (1, 2)
        )

    def step(self, inputs, state):
        """One streaming step in inference mode.

        Args:
            inputs: float tensor `(B, C)`, the input at time `t`.
            state: tuple from `get_initial_state` or the previous `step`.

        Returns:
            `(outputs, new_state)`, outputs of shape `(B, filters)`.
        """
        x = ops.cast(inputs, self.compute_dtype)
        new_state = []
        queues = iter(state)
        for block in self._blocks:
            h = x
            for j in (1, 2):
                h, queue = block[f"conv_{j}"].step(h, next(queues))
                new_state.append(queue)
                norm = block[f"norm_{j}"]
                if norm is not None:
                    # Norms are built for (B, T, F): run on (B, 1, F).
                    h = norm(h[:, None, :], training=False)[:, 0, :]
                h = ops.relu(h)
            shortcut = x
            if block["shortcut"] is not None:
                # A 1x1 convolution has no queue: run it on (B, 1, C).
                shortcut = block["shortcut"](x[:, None, :])[:, 0, :]
            x = ops.relu(h + shortcut)
        return x, tuple(new_state)

    def compute_mask(self, inputs, mask=None):
        return mask if self.return_sequences else None

    def compute_output_shape(self, inputs_shape):
        if self.return_sequences:
            return tuple(inputs_shape[:-1]) + (self.filters,)
        return (inputs_shape[0], self.filters)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "filters": self.filters,
                "kernel_size": self.kernel_size,
                "dilations": list(self.dilations),
                "dropout": self.dropout,
                "normalization": self.normalization,
                "return_sequences": self.return_sequences,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "seed": self.seed,
            }
        )
        return config


def _last_step(x, mask):
    """`(B, T, F)` -> `(B, F)`: the last step, or the last unmasked one."""
    if mask is None:
        return x[:, -1, :]
    steps = ops.arange(ops.shape(x)[1], dtype="int32")  # (T,)
    last = ops.max(ops.where(mask, steps[None, :], 0), axis=1)  # (B,)
    return ops.take_along_axis(x, last[:, None, None], axis=1)[:, 0, :]
