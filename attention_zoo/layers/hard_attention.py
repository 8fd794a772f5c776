"""Hard (stochastic) attention: one position per query, sampled in training."""

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_choice
from attention_zoo.layers.masked_softmax import masked_softmax
from attention_zoo.layers.named_score_attention import NamedScoreAttention

_INFERENCE = ("argmax", "expectation")
# Large but finite, as in `masked_softmax`: masked log-probabilities.
_MASK_VALUE = -1e9


@attention_zoo_export(
    ("attention_zoo.HardAttention", "attention_zoo.layers.HardAttention")
)
class HardAttention(NamedScoreAttention):
    """Hard attention (Xu et al. 2015): each query reads one position.

    The distribution over positions is soft attention's,
    `alpha = softmax_j(score(q, k_j))` with Bahdanau's or Luong's score.
    In training each query samples one position `s ~ Categorical(alpha)`
    and the output is that position's value, `value[s]`; at inference the
    position is the most likely one (`inference="argmax"`), or the output
    is the expectation `alpha @ value` (`inference="expectation"`, which
    is soft attention with the same weights).

    Sampling has no gradient: the score weights learn from REINFORCE.
    With `return_reinforce_terms=True` the layer also returns what that
    estimator needs, in float32: the log-probability `log alpha_s` of the
    chosen position and the entropy `H(alpha) = -sum_j alpha_j log alpha_j`.
    A model adds `-(R - b) log alpha_s - lambda_e H(alpha)` to its loss,
    with the reward `R` (e.g. the log-likelihood of the target, not
    differentiated) and a baseline `b` (paper, Section 4.1). The gradient
    of the likelihood reaches the value at the chosen position as usual.

    Scores, softmax, log-probabilities and the sampling run in float32
    under mixed precision; the selection `one_hot(s) @ value` runs in the
    compute dtype and copies the value exactly.

    Letters: `B` batch, `Tq` query length, `Tv` value length, `dq`, `dk`,
    `dv` the widths of query, key and value.

    Masking: masked positions (`value_mask`, `key_mask`) have probability
    exactly 0 and are never sampled nor chosen. A query whose every
    position is masked, and a query masked by `query_mask`, gives a zero
    output, zero weights, and zero log-probability and entropy. Keras masks
    of the inputs fill these arguments, and the output carries the query's
    mask.

    Args:
        units: int, the width of the additive score's projection, only
            with `score="additive"`. Defaults to `None`: the key's width.
        score: str, `"additive"` (`v^T tanh(W_q q + W_k k + b)`),
            `"general"` (`q^T W k`), `"dot"` or `"scaled_dot"`. Defaults to
            `"additive"`.
        inference: str, outside training: `"argmax"` (the most likely
            position) or `"expectation"` (`alpha @ value`). Defaults to
            `"argmax"`.
        seed: optional int, the seed of the sampling. Defaults to `None`.
        kernel_initializer: initializer of the score's kernels. Defaults
            to `"glorot_uniform"`.
        **kwargs: base `Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(B, Tq, dq)`, or `(B, dq)` for one decoder step.
        value: `(B, Tv, dv)`.
        key: optional `(B, Tv, dk)`. Defaults to `value`.
        query_mask: optional bool `(B, Tq)` (`(B,)` with a 2-D query).
        value_mask: optional bool `(B, Tv)`.
        key_mask: optional bool `(B, Tv)`, combined with `value_mask`.
        return_attention_scores: bool, also return the weights applied to
            `value`: one-hot at the chosen position, or `alpha` with
            `inference="expectation"` outside training. Defaults to
            `False`.
        return_reinforce_terms: bool, also return float32 `log_prob` and
            `entropy` `(B, Tq)`. Outside training `log_prob` is that of
            the most likely position. Defaults to `False`.
        read_expectation: optional bool `(B,)`, in training: the examples
            that read the expectation `alpha @ value` instead of a sampled
            position, with `log_prob` 0 (no REINFORCE term; the scores
            learn from the likelihood's gradient, as soft attention's).
            The paper's "semi-sampling" draws it per image with
            probability 0.5 (Section 4.1). Ignored outside training.
            Defaults to `None` (every example samples).
        training: bool, sample in training.

    Returns:
        The output `(B, Tq, dv)` (`(B, dv)` for a 2-D query); with
        `return_attention_scores=True` also the weights `(B, Tq, Tv)`;
        with `return_reinforce_terms=True` also `log_prob` and `entropy`
        `(B, Tq)` (`(B,)` for a 2-D query), in that order.

    Example:

    ```python
    layer = HardAttention(units=16, seed=0)
    decoder_states = np.random.rand(2, 3, 8)  # (B, Tq, dq)
    encoder_outputs = np.random.rand(2, 5, 12)  # (B, Tv, dv)
    context, weights = layer(
        decoder_states, encoder_outputs, return_attention_scores=True
    )  # (2, 3, 12), one-hot rows (2, 3, 5): the most likely positions
    sampled, log_prob, entropy = layer(
        decoder_states,
        encoder_outputs,
        return_reinforce_terms=True,
        training=True,
    )  # (2, 3, 12), (2, 3), (2, 3)

    # Decoding: project the keys once, attend at every step.
    keys = layer.precompute_keys(encoder_outputs)  # (2, 5, 16)
    step = layer.attend(decoder_states[:, 0], keys, encoder_outputs)
    ```

    Reference:
        Xu, Ba, Kiros, Cho, Courville, Salakhutdinov, Zemel, Bengio,
        "Show, Attend and Tell: Neural Image Caption Generation with
        Visual Attention", ICML 2015, https://arxiv.org/abs/1502.03044
        (Section 4.1).
    """

    def __init__(
        self,
        units=None,
        score="additive",
        inference="argmax",
        seed=None,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(
            score,
            units=units,
            kernel_initializer=kernel_initializer,
            dropout=None,
            seed=seed,
            **kwargs,
        )
        check_choice("inference", inference, _INFERENCE)
        self.inference = inference
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        return_attention_scores=False,
        return_reinforce_terms=False,
        read_expectation=None,
        training=None,
    ):
        return self._attend(
            query,
            self._prepare_key(value if key is None else key),
            value,
            query_mask=query_mask,
            value_mask=value_mask,
            key_mask=key_mask,
            return_attention_scores=return_attention_scores,
            training=training,
            return_reinforce_terms=return_reinforce_terms,
            read_expectation=read_expectation,
        )

    def _distribute(
        self,
        scores,
        mask,
        query,
        query_mask,
        training,
        return_reinforce_terms=False,
        read_expectation=None,
    ):
        """Float32 scores -> one-hot weights of the chosen positions (or
        `alpha`), and `[log_prob, entropy]` when asked for."""
        if mask is not None:
            scores = ops.where(mask, scores, _MASK_VALUE)
        probabilities = masked_softmax(scores, mask)  # (B, Tq, Tv), exact 0s
        log_probs = ops.log_softmax(scores, axis=-1)  # about -1e9 if masked
        if training:
            position = self._sample(log_probs)
        else:
            position = ops.argmax(log_probs, axis=-1)  # (B, Tq)
        chosen = ops.one_hot(position, ops.shape(scores)[-1], dtype="float32")
        if mask is not None:
            # A fully masked row chooses nothing: zero output and terms.
            chosen = chosen * ops.cast(mask, "float32")
        weights = chosen
        if not training and self.inference == "expectation":
            weights = probabilities
        if training and read_expectation is not None:
            expected = ops.reshape(
                ops.cast(read_expectation, "bool"), (-1, 1, 1)
            )  # (B, 1, 1)
            weights = ops.where(expected, probabilities, weights)
            chosen = ops.where(expected, 0.0, chosen)  # log_prob 0
        if not return_reinforce_terms:
            return weights, []
        # 0 * -1e9 = 0 at the positions not chosen.
        log_prob = ops.sum(chosen * log_probs, axis=-1)  # (B, Tq)
        entropy = ops.sum(probabilities * -log_probs, axis=-1)  # (B, Tq)
        return weights, [log_prob, entropy]

    def _sample(self, log_probs):
        """One position per query row of float32 `(B, Tq, Tv)`: int
        `(B, Tq)`, drawn from the row's distribution."""
        shape = ops.shape(log_probs)
        flat = ops.reshape(log_probs, (-1, shape[-1]))  # (B * Tq, Tv)
        draws = keras.random.categorical(flat, 1, seed=self.seed_generator)
        return ops.reshape(draws, shape[:-1])

    def _extras_spec(self, query, arguments):
        if not arguments.get("return_reinforce_terms"):
            return []
        return [
            keras.KerasTensor(query.shape[:-1], dtype="float32")
            for _ in range(2)
        ]

    def get_config(self):
        config = super().get_config()
        config["inference"] = self.inference
        return config
