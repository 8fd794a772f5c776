"""Nadaraya-Watson kernel regression as non-parametric attention."""

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.layers.base_attention import BaseAttention


@attention_zoo_export(
    (
        "attention_zoo.KernelRegressionAttention",
        "attention_zoo.layers.KernelRegressionAttention",
    )
)
class KernelRegressionAttention(BaseAttention):
    """Nadaraya-Watson regression: attention with a Gaussian kernel score.

    `f(x) = sum_i softmax_i(-((x - x_i) w)^2 / 2) y_i`: the test inputs `x`
    are the queries, the training inputs `x_i` the keys and the targets
    `y_i` the values. The score is a Gaussian kernel of bandwidth
    `1 / |w|` (its normalising constant cancels in the softmax); for vector
    inputs, `(x - x_i)^2` is the squared Euclidean distance. The only weight
    is the scalar `w`, initialised to `1 / bandwidth`, which can be fitted
    by gradient descent (with `attention_mask` hiding each training point
    from itself, leave-one-out).

    Letters: `B` batch, `Tq` number of test inputs, `Tv` number of training
    pairs, `d` input width, `dv` target width.

    Masking: as in `BaseAttention` (`value_mask`, `key_mask`,
    `attention_mask`, `query_mask`, causal); masked pairs get weight
    exactly 0 and a fully masked query gives 0.

    Args:
        bandwidth: positive float, the initial kernel width `1 / w`.
            Defaults to `1.0`.
        trainable: bool, whether `w` is learned. Defaults to `True`.
        **kwargs: base `Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        query: test inputs, `(B, Tq)` (scalars), `(B, Tq, 1)` or
            `(B, Tq, d)`.
        value: targets, `(B, Tv)` (scalars) or `(B, Tv, dv)`.
        key: training inputs, `(B, Tv)`, `(B, Tv, 1)` or `(B, Tv, d)`.
            Defaults to `value`.
        query_mask, value_mask, key_mask, attention_mask, use_causal_mask,
        return_attention_scores, training: as in `BaseAttention`.

    Returns:
        Predictions `(B, Tq)` for scalar targets or `(B, Tq, dv)`, and with
        `return_attention_scores=True` the weights `(B, Tq, Tv)`.

    Example:

    ```python
    x_train = np.sort(np.random.rand(1, 50) * 5, axis=-1)  # (1, 50)
    y_train = 2 * np.sin(x_train) + np.random.normal(0, 0.5, (1, 50))
    x_test = np.linspace(0, 5, 20)[None]  # (1, 20)
    layer = KernelRegressionAttention(bandwidth=0.5)
    y_pred = layer(x_test, y_train, key=x_train)  # (1, 20)
    ```

    Reference:
        Nadaraya, "On Estimating Regression", 1964; Watson, "Smooth
        Regression Analysis", 1964. Murphy, "Probabilistic Machine Learning:
        An Introduction", 2022, Section 15.4.2 (eq. 15.40); Zhang et al.,
        "Dive into Deep Learning", https://d2l.ai, Section 10.2.
    """

    def __init__(self, bandwidth=1.0, trainable=True, **kwargs):
        super().__init__(trainable=trainable, **kwargs)
        if isinstance(bandwidth, bool) or not (
            isinstance(bandwidth, (int, float)) and bandwidth > 0
        ):
            raise ValueError(
                "`bandwidth` must be a positive number. "
                f"Received: bandwidth={bandwidth!r}"
            )
        self._initial_bandwidth = float(bandwidth)

    @property
    def bandwidth(self):
        """The current kernel width `1 / |w|`, a Python float."""
        if not self.built:
            return self._initial_bandwidth
        return float(1.0 / abs(ops.convert_to_numpy(self.w)))

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        query_dim = query_shape[-1] if len(query_shape) == 3 else 1
        key_dim = key_shape[-1] if len(key_shape) == 3 else 1
        if query_dim != key_dim:
            raise ValueError(
                "Queries and keys must have the same width. Received: "
                f"query_shape={tuple(query_shape)}, "
                f"key_shape={tuple(key_shape)}"
            )
        self.w = self.add_weight(
            name="w",
            shape=(),
            initializer=keras.initializers.Constant(
                1.0 / self._initial_bandwidth
            ),
        )

    def _attend(self, query, key, value, **arguments):
        scalar_targets = len(value.shape) == 2
        # Scalars (B, T) -> (B, T, 1), so the shared path sees 3-D tensors.
        query, key, value = (
            ops.expand_dims(x, -1) if len(x.shape) == 2 else x
            for x in (query, key, value)
        )
        outputs = super()._attend(query, key, value, **arguments)
        if not scalar_targets:
            return outputs
        if isinstance(outputs, tuple):
            return ops.squeeze(outputs[0], -1), *outputs[1:]
        return ops.squeeze(outputs, -1)  # (B, Tq)

    def _score(self, query, key):
        # (B, Tq, 1, d) - (B, 1, Tv, d) -> squared distances (B, Tq, Tv).
        diff = ops.expand_dims(query, 2) - ops.expand_dims(key, 1)
        distance = ops.sum(ops.square(diff), axis=-1)
        w = self._weight(self.w)
        return -0.5 * distance * ops.square(w)

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        return (*query_shape[:2], *value_shape[2:])

    def _weights_shape(self, query_shape, value_shape):
        return (*query_shape[:2], value_shape[1])

    def get_config(self):
        config = super().get_config()
        config["bandwidth"] = self._initial_bandwidth
        return config
