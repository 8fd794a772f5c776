"""The shared call path of the query/value attention layers."""

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_rate
from attention_zoo.layers.masked_softmax import masked_softmax
from attention_zoo.layers.masked_softmax import merge_attention_masks
from attention_zoo.layers.masked_softmax import merge_value_masks
from attention_zoo.layers.masked_softmax import zero_masked_queries


@attention_zoo_export(
    ("attention_zoo.BaseAttention", "attention_zoo.layers.BaseAttention")
)
class BaseAttention(keras.layers.Layer):
    """Base class of single-head attention: a score and a distribution.

    An attention layer is a choice of score, how a query is compared with
    a key, and of distribution, how the scores become weights of the
    values. This base owns everything else, identical for every member:
    the arguments, the masks, single-query calls, key preparation
    (`precompute_keys`/`attend`), dropout on the weights, the weighted sum
    `output = weights @ value` in the compute dtype, the masked queries,
    shapes and `get_config`.

    - The score: a subclass creates its weights in `build` and overrides
      `_score(query, key) -> (B, Tq, Tv)` (`AdditiveAttention`,
      `BilinearAttention`, `KernelRegressionAttention`), or picks one of
      those by name (`NamedScoreAttention`). `_prepare_key(key)` is the
      part of the score that depends on the key alone (e.g. the key
      projection of Bahdanau attention): `precompute_keys(key)` returns it
      and `attend(query, prepared_key, value, ...)` reuses it, so a
      decoder that attends to the same encoder outputs at every step
      computes it once.
    - The distribution: `_distribute(scores, mask, ...)`, by default the
      softmax over the `Tv` positions allowed by the masks, in float32.
      `LocalAttention` (a window), `MonotonicAttention` (stopping
      probabilities and their alignments) and `HardAttention` (a sampled
      position) override it.

    Letters: `B` batch, `Tq` query length, `Tv` value (and key) length, `dq`,
    `dk`, `dv` the widths of query, key and value.

    Masking: `value_mask` and `key_mask` (`(B, Tv)`, True = attend) hide
    positions; `attention_mask` (`(B, Tq, Tv)`) hides pairs;
    `use_causal_mask=True` hides future positions. Masked positions get
    weight exactly 0, and a query whose every position is masked gets
    all-zero weights and a zero output (never NaN). Rows of queries masked by
    `query_mask` (`(B, Tq)`) are zero in the output and in the weights. Keras
    masks of the inputs (e.g. from `Embedding(mask_zero=True)`) fill these
    arguments automatically, and the output carries the query's mask.

    Args:
        dropout: float in `[0, 1)`, fraction of attention weights dropped in
            training, or None for a member without dropout (then not in
            its config). Defaults to `0.0`.
        seed: optional int, seed of the dropout. Defaults to `None`.
        **kwargs: base `Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(B, Tq, dq)`, or `(B, dq)` for a single query (one decoder
            step), which gives a `(B, dv)` output and `(B, Tv)` weights.
        value: `(B, Tv, dv)`.
        key: optional `(B, Tv, dk)`. Defaults to `value`.
        query_mask: optional bool `(B, Tq)`.
        value_mask: optional bool `(B, Tv)`.
        key_mask: optional bool `(B, Tv)`, combined with `value_mask`.
        attention_mask: optional bool `(B, Tq, Tv)` (`(B, Tv)` with a 2-D
            query).
        use_causal_mask: bool, position `i` attends only to positions
            `j <= i + Tv - Tq`. Defaults to `False`.
        return_attention_scores: bool, also return the weights. Defaults to
            `False`.
        training: bool, dropout is applied only in training.

    Returns:
        The output `(B, Tq, dv)`, and with `return_attention_scores=True` a
        tuple `(output, weights)` with weights `(B, Tq, Tv)` (before dropout).

    Example:

    ```python
    class DotAttention(BaseAttention):
        def _score(self, query, key):
            return ops.matmul(query, ops.swapaxes(key, -1, -2))

    output = DotAttention()(np.ones((2, 3, 4)), np.ones((2, 5, 4)))
    ```
    """

    # True: the weights stay float32 under mixed precision (the state of a
    # recursion); otherwise they are cast to the value's dtype.
    _float32_weights = False

    def __init__(self, dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if dropout is not None:
            check_rate("dropout", dropout)
        self.dropout = dropout
        self.seed = seed
        self.supports_masking = True
        if dropout:
            self.seed_generator = keras.random.SeedGenerator(seed)

    def build(self, query_shape, value_shape, key_shape=None):
        pass

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        return self._attend(
            query,
            self._prepare_key(value if key is None else key),
            value,
            query_mask=query_mask,
            value_mask=value_mask,
            key_mask=key_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )

    def precompute_keys(self, key):
        """Computes the key-only part of the score once, for `attend`.

        The layer must be built (called once). Works inside compiled
        functions and loops (`ops.fori_loop`, `ops.while_loop`).

        Args:
            key: `(B, Tv, dk)`, the keys (the value when no key is used).

        Returns:
            The prepared keys in the compute dtype, e.g. `W_k k + b`
            `(B, Tv, units)` for `AdditiveAttention`.
        """
        self._check_built("precompute_keys")
        return self._prepare_key(ops.cast(key, self.compute_dtype))

    def attend(self, query, prepared_key, value, **arguments):
        """Attention with keys prepared by `precompute_keys`.

        `layer.attend(q, layer.precompute_keys(k), v, ...)` equals
        `layer(q, v, key=k, ...)` (in training, with the same draws); the
        keyword arguments are those of the layer's `call`, with
        `prepared_key` in place of `key`. The layer must be built. Call it
        inside the function being compiled (it reads the weights
        directly), not on symbolic Keras inputs.

        Returns:
            Like `call`: the output, and the weights when
            `return_attention_scores=True`.
        """
        self._check_built("attend")
        query, prepared_key, value = (
            ops.cast(x, self.compute_dtype)
            for x in (query, prepared_key, value)
        )
        return self._attend(query, prepared_key, value, **arguments)

    def _check_built(self, method):
        if not self.built:
            raise ValueError(
                f"Layer '{self.name}' must be built (called once) before "
                f"`{method}`."
            )

    def _prepare_key(self, key):
        """`(B, Tv, dk)` -> whatever `_score` takes as key. Default: as is."""
        return key

    def _score(self, query, key):
        """`(B, Tq, dq)`, prepared key -> scores `(B, Tq, Tv)`."""
        raise NotImplementedError(
            f"{self.__class__.__name__} must implement `_score`."
        )

    def _distribute(self, scores, mask, query, query_mask, training):
        """Scores `(B, Tq, Tv)` -> `(weights, extras)`: the weights of the
        values, and a list of `(B, Tq)` tensors the layer also returns.

        `mask` is a bool tensor broadcastable to the scores (True =
        attend) or None. Default: `masked_softmax`, no extras. A variant
        that turns scores into weights its own way (a window, monotonic
        alignments, a sampled position) overrides this; keyword arguments
        of its `call` that `BaseAttention` does not know arrive here.
        """
        return masked_softmax(scores, mask), []

    def _weight(self, variable):
        """A weight in the compute dtype, also outside `__call__`."""
        return ops.cast(variable, self.compute_dtype)

    def _attend(
        self,
        query,
        key,
        value,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
        **distribution_arguments,
    ):
        single_query = len(query.shape) == 2
        if single_query:
            query = ops.expand_dims(query, 1)  # (B, 1, dq)
            if query_mask is not None:
                query_mask = ops.reshape(query_mask, (-1, 1))  # (B, 1)
            if attention_mask is not None and len(attention_mask.shape) == 2:
                attention_mask = ops.expand_dims(attention_mask, 1)
        scores = self._score(query, key)  # (B, Tq, Tv)
        mask = merge_attention_masks(
            ops.shape(scores)[1],
            ops.shape(scores)[2],
            value_mask=merge_value_masks(value_mask, key_mask),
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
        )
        weights, extras = self._distribute(
            scores,
            mask,
            query,
            query_mask,
            training,
            **distribution_arguments,
        )
        if not self._float32_weights:
            weights = ops.cast(weights, value.dtype)
        used = weights
        if training and self.dropout:
            used = keras.random.dropout(
                weights, self.dropout, seed=self.seed_generator
            )
        output = ops.matmul(ops.cast(used, value.dtype), value)  # (B,Tq,dv)
        if query_mask is not None:
            output = zero_masked_queries(output, query_mask)
            weights = zero_masked_queries(weights, query_mask)
            extras = [
                zero_masked_queries(x, query_mask, query_axis=-1)
                for x in extras
            ]
        results = [output] + ([weights] if return_attention_scores else [])
        results += extras
        if single_query:
            results = [ops.squeeze(x, 1) for x in results]
        return results[0] if len(results) == 1 else tuple(results)

    def compute_mask(self, query, previous_mask=None):
        return previous_mask

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        return (*query_shape[:-1], value_shape[-1])

    def _weights_shape(self, query_shape, value_shape):
        return (*query_shape[:-1], value_shape[-2])

    def _extras_spec(self, query, arguments):
        """The `KerasTensor`s of the extras `call(**arguments)` returns."""
        return []

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        return_attention_scores=False,
        **arguments,
    ):
        key_shape = None if key is None else key.shape
        results = [
            keras.KerasTensor(
                self.compute_output_shape(query.shape, value.shape, key_shape),
                dtype=self.compute_dtype,
            )
        ]
        if return_attention_scores:
            dtype = "float32" if self._float32_weights else self.compute_dtype
            results.append(
                keras.KerasTensor(
                    self._weights_shape(query.shape, value.shape), dtype=dtype
                )
            )
        results += self._extras_spec(query, arguments)
        return results[0] if len(results) == 1 else tuple(results)

    def get_config(self):
        config = super().get_config()
        if self.dropout is not None:
            config["dropout"] = self.dropout
        config["seed"] = self.seed
        return config
