"""Monotonic attention: alignments that move left to right, never back."""

import math

import keras
from keras import ops

from attention_zoo.api_export import attention_zoo_export
from attention_zoo.checks import check_choice
from attention_zoo.layers.monotonic_alignments import expected_alignments
from attention_zoo.layers.monotonic_alignments import hard_alignment_step
from attention_zoo.layers.monotonic_alignments import scan_steps
from attention_zoo.layers.named_score_attention import NamedScoreAttention

_MODES = ("parallel", "hard")


@attention_zoo_export(
    (
        "attention_zoo.MonotonicAttention",
        "attention_zoo.layers.MonotonicAttention",
    )
)
class MonotonicAttention(NamedScoreAttention):
    """Monotonic attention (Raffel et al.): each output step stops at one
    memory position at or after the previous step's, scanning left to right.

    Output step `i` scores memory position `j` with the energy
    `e_ij = score(q_i, k_j) + r`, Bahdanau's `v^T tanh(W_q q + W_k k + b)`
    (`score="additive"`) or Luong's `q^T W k` (`score="general"`) plus a
    learned scalar `r`, and stops there with probability
    `p_ij = sigmoid(e_ij)`. The alignment before the first step is one-hot
    at position 0 (`initial_alignment`).

    - `mode="parallel"` (training) gives the expected alignment, the
      paper's recurrence `alpha_ij = p_ij q_ij` with
      `q_ij = (1 - p_i,j-1) q_i,j-1 + alpha_i-1,j` (`q_i,-1 = 0`). A row
      sums to at most 1; the rest is the chance of stopping nowhere.
    - `mode="hard"` (inference) takes the decisions: step `i` attends to the
      first `j` at or after step `i-1`'s position with `p_ij > 0.5`
      (one-hot), or to nothing (zeros, and a zero context) when there is
      none; every later step then attends to nothing too, as in the paper.

    The context is `alignment @ value`. With `sigmoid_noise > 0`, Gaussian
    noise of that standard deviation is added to `e` in training only,
    which pushes `p` towards 0 or 1 so that the hard decisions at inference
    match what training saw.

    The recurrence is computed exactly, without the division by
    `cumprod(1 - p)` of the paper's closed form (TF Addons clips that
    product at 1e-10, which loses the alignment once it falls below, e.g.
    after three positions with `p` near 1): `q` depends only on its left
    and upper neighbours, so each anti-diagonal of the `(Tq, Tv)` grid is
    computed at once from the previous one, `Tq + Tv - 1` sequential steps
    of additions and multiplications by numbers in `[0, 1]`. Energies,
    probabilities and alignments are float32 under mixed precision, and
    the alignments are returned in float32: they are the state of a
    recursion, which bfloat16 rounding would make drift.

    Letters: `B` batch, `Tq` output steps, `Tv` memory length, `dq`, `dk`,
    `dv` the widths of query, key and value.

    Masking: masked memory positions (`value_mask`, `key_mask`) get
    `p = 0`: exactly zero weight, and the scan passes over them. A masked
    query step (`query_mask`) has zero output and alignment and passes the
    alignment on unchanged to the next step (as a Keras RNN carries its
    state over masked steps). Keras masks of the inputs fill these
    arguments, and the output carries the query's mask.

    Args:
        units: int, the width of the additive score, only with
            `score="additive"`. Defaults to `None`: the key's width.
        score: str, `"additive"` (Bahdanau) or `"general"` (Luong).
            Defaults to `"additive"`.
        mode: str, `"parallel"` (expected alignments, for training) or
            `"hard"` (one-hot decisions, for inference). A model trained in
            parallel mode decodes in hard mode with the same weights.
            Defaults to `"parallel"`.
        normalize: bool, the weight-normalised additive score
            `g v^T / ||v|| tanh(...)` that the paper uses (additive only).
            Defaults to `False`, as in TF Addons.
        sigmoid_noise: float >= 0, the standard deviation of the noise on
            the energies in training. Defaults to `0.0`.
        score_bias_init: float, the initial `r`. The default `0.0` starts
            at `p = 1/2` for zero scores; a negative value such as `-4`
            (the paper's advice for long memories) starts with small `p`,
            so that early alignments do not stop at the first positions.
            Defaults to `0.0`.
        seed: optional int, the seed of the noise. Defaults to `None`.
        kernel_initializer: initializer of the score's kernels. Defaults
            to `"glorot_uniform"`.
        **kwargs: base `Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(B, Tq, dq)`, the decoder states of all output steps.
        value: `(B, Tv, dv)`, the memory.
        key: optional `(B, Tv, dk)`. Defaults to `value`.
        initial_alignment: optional float `(B, Tv)`, the alignment before
            the first step. Defaults to `initial_alignment(value)`.
        query_mask: optional bool `(B, Tq)`.
        value_mask: optional bool `(B, Tv)`.
        key_mask: optional bool `(B, Tv)`, combined with `value_mask`.
        return_attention_scores: bool, also return the alignments.
            Defaults to `False`.
        training: bool, the noise is added only in training.

    Returns:
        The context `(B, Tq, dv)` and, with `return_attention_scores=True`,
        a tuple `(context, alignments)` with float32 alignments
        `(B, Tq, Tv)`.

    Decoding one step at a time, the previous alignment is the state:
    `initial_alignment(value)` gives the first one, and
    `step(query, value, previous_alignment, ...)` returns
    `(context, alignment)`; chaining steps equals the whole-sequence call.
    `precompute_keys(key)` computes the key part of the score once.

    Example:

    ```python
    layer = MonotonicAttention(units=16, score_bias_init=-1.0)
    decoder_states = np.random.rand(2, 3, 8)  # (B, Tq, dq)
    encoder_outputs = np.random.rand(2, 5, 12)  # (B, Tv, dv)
    context, alignments = layer(
        decoder_states, encoder_outputs, return_attention_scores=True
    )  # (2, 3, 12), (2, 3, 5)

    alignment = layer.initial_alignment(encoder_outputs)  # (2, 5)
    keys = layer.precompute_keys(encoder_outputs)
    for t in range(3):
        context_t, alignment = layer.step(
            decoder_states[:, t], encoder_outputs, alignment,
            prepared_key=keys,
        )  # equal to context[:, t] and alignments[:, t]
    ```

    Reference:
        Raffel, Luong, Liu, Weiss, Eck, "Online and Linear-Time Attention
        by Enforcing Monotonic Alignments", ICML 2017,
        https://arxiv.org/abs/1704.00784 (Sections 2.2-2.4).
    """

    SCORES = ("additive", "general")
    _float32_weights = True

    def __init__(
        self,
        units=None,
        score="additive",
        mode="parallel",
        normalize=False,
        sigmoid_noise=0.0,
        score_bias_init=0.0,
        seed=None,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(
            score,
            units=units,
            kernel_initializer=kernel_initializer,
            normalize=normalize,
            dropout=None,
            seed=seed,
            **kwargs,
        )
        check_choice("mode", mode, _MODES)
        if not _is_number(sigmoid_noise) or sigmoid_noise < 0:
            raise ValueError(
                "`sigmoid_noise` must be a number >= 0. "
                f"Received: sigmoid_noise={sigmoid_noise!r}"
            )
        if not _is_number(score_bias_init):
            raise ValueError(
                "`score_bias_init` must be a finite number. "
                f"Received: score_bias_init={score_bias_init!r}"
            )
        self.mode = mode
        self.sigmoid_noise = sigmoid_noise
        self.score_bias_init = score_bias_init
        if sigmoid_noise > 0:
            self.seed_generator = keras.random.SeedGenerator(seed)

    def build(self, query_shape, value_shape, key_shape=None):
        if len(query_shape) != 3:
            raise ValueError(
                "MonotonicAttention expects queries of shape (B, Tq, dq); "
                "use `step` for one decoder step. "
                f"Received: query_shape={tuple(query_shape)}"
            )
        super().build(query_shape, value_shape, key_shape)
        # `r`, read in float32 also under mixed precision (no autocast).
        self.score_bias = self.add_weight(
            name="score_bias",
            shape=(),
            initializer=keras.initializers.Constant(self.score_bias_init),
            autocast=False,
        )

    def call(
        self,
        query,
        value,
        key=None,
        initial_alignment=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
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
            return_attention_scores=return_attention_scores,
            training=training,
            initial_alignment=initial_alignment,
        )

    def initial_alignment(self, value):
        """The alignment before the first step: one-hot at position 0.

        Args:
            value: `(B, Tv, dv)`, the memory (only its shape is used).

        Returns:
            float32 `(B, Tv)`.
        """
        return _first_position(ops.shape(value)[0], ops.shape(value)[1])

    def step(
        self,
        query,
        value,
        previous_alignment,
        key=None,
        prepared_key=None,
        value_mask=None,
        key_mask=None,
        training=None,
    ):
        """One decoder step, with the previous alignment as the state.

        The layer must be built (called once). Works eagerly and inside
        compiled functions and loops (`ops.fori_loop`, `ops.while_loop`).
        Chained from `initial_alignment(value)`, it gives the rows of the
        whole-sequence call; for a padding step, keep the previous
        alignment as that call does for a masked query.

        Args:
            query: `(B, dq)`, the decoder state of this step.
            value: `(B, Tv, dv)`.
            previous_alignment: float `(B, Tv)`, `initial_alignment(value)`
                at the first step, then the alignment this method returned.
            key: optional `(B, Tv, dk)`. Defaults to `value`.
            prepared_key: optional, `precompute_keys(key)`; replaces `key`.
            value_mask: optional bool `(B, Tv)`.
            key_mask: optional bool `(B, Tv)`.
            training: bool, the noise is added only in training.

        Returns:
            `(context, alignment)`: `(B, dv)` in the compute dtype and
            float32 `(B, Tv)`, the state of the next step.
        """
        self._check_built("step")
        if prepared_key is None:
            prepared_key = self.precompute_keys(value if key is None else key)
        return self.attend(
            query,
            prepared_key,
            value,
            value_mask=value_mask,
            key_mask=key_mask,
            return_attention_scores=True,
            training=training,
            initial_alignment=previous_alignment,
        )

    def _distribute(
        self, scores, mask, query, query_mask, training, initial_alignment=None
    ):
        """Float32 scores -> the alignments `(B, Tq, Tv)` of the mode."""
        probabilities = self._probabilities(scores, mask, training)
        if query_mask is not None:
            # p = 1 everywhere copies alpha_{i-1}: a masked step keeps it.
            keep = ops.expand_dims(ops.cast(query_mask, "bool"), -1)
            probabilities = ops.where(keep, probabilities, 1.0)
        if initial_alignment is None:
            shape = ops.shape(scores)
            initial_alignment = _first_position(shape[0], shape[2])
        initial_alignment = ops.cast(initial_alignment, "float32")
        if self.mode == "parallel":
            return expected_alignments(probabilities, initial_alignment), []
        if probabilities.shape[1] == 1:  # one decoder step: no loop
            alignment, _ = hard_alignment_step(
                initial_alignment, probabilities[:, 0]
            )
            return ops.expand_dims(alignment, 1), []
        steps = ops.transpose(probabilities, (1, 0, 2))  # (Tq, B, Tv)
        _, alignments = scan_steps(
            hard_alignment_step, initial_alignment, steps
        )
        return ops.transpose(alignments, (1, 0, 2)), []  # (B, Tq, Tv)

    def _probabilities(self, scores, mask, training):
        """float32 `p_ij` `(B, Tq, Tv)`; 0 or 1 in hard mode, 0 if masked."""
        energies = scores + ops.convert_to_tensor(self.score_bias)
        if training and self.sigmoid_noise > 0:
            noise = keras.random.normal(
                ops.shape(energies), seed=self.seed_generator
            )
            energies = energies + self.sigmoid_noise * noise
        if self.mode == "parallel":
            probabilities = ops.sigmoid(energies)
        else:
            probabilities = ops.cast(energies > 0, "float32")  # p > 1/2
        if mask is not None:
            probabilities = ops.where(mask, probabilities, 0.0)
        return probabilities

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "mode": self.mode,
                "normalize": self.normalize,
                "sigmoid_noise": self.sigmoid_noise,
                "score_bias_init": self.score_bias_init,
            }
        )
        return config


def _first_position(batch, length):
    """float32 `(B, Tv)`, one-hot at position 0."""
    first = ops.cast(ops.arange(length) == 0, "float32")  # (Tv,)
    return ops.broadcast_to(first, (batch, length))


def _is_number(value):
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )
