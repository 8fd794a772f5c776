"""The decoder's attention losses (Xu et al. 2015): the doubly stochastic
penalty of soft attention, and REINFORCE with an entropy bonus for hard
attention.

Hard attention samples one image position per word (`HardAttention`), so
the likelihood has no gradient with respect to the attention's scores.
The paper's learning rule (Section 4.1, with the moving-average baseline
`b` and the entropy `H` of the attention distribution) is the gradient of
the likelihood plus that of

    - lambda_r (R - b) sum_t log alpha_t(s_t) - lambda_e sum_t H(alpha_t),

where `s_t` is the position sampled for word `t` and the reward `R`, the
log-likelihood of the caption under those samples, is not differentiated.
`b` follows `R`: `b <- 0.9 b + 0.1 mean(R)` after each training batch.

Here the caption's log-likelihood is taken per word, as the authors' code
does (`RL_sumCost`: the mean cost over the time steps): one baseline then
serves captions of every length. Both sums are divided by the caption's
length, like the cross-entropy they are added to (Keras averages it over
words), which keeps the paper's ratio of the terms: `lambda_r = 0.1`
(the code's `/ 10.`) and `lambda_e = 0.002` (its `alpha_entropy_c`).
"""

import keras
from keras import ops

from attention_zoo_apps.common.token_ids import END_ID

BASELINE_DECAY = 0.9  # b <- 0.9 b + 0.1 R (Xu et al., Section 4.1)


def attention_penalty(weights, step_mask=None):
    """The doubly stochastic attention penalty, per example.

    `sum_i (1 - sum_t alpha_ti)^2`: it pushes every image position to get
    about as much attention, summed over the caption, as one word's worth
    (Xu et al. 2015, eq. 14). Steps where `step_mask` is False (padding
    after the caption) do not count.

    Args:
        weights: float `(B, T, L)` attention weights.
        step_mask: optional bool `(B, T)`.

    Returns:
        float32 `(B,)`.
    """
    weights = ops.cast(weights, "float32")
    if step_mask is not None:
        weights = weights * ops.cast(step_mask, "float32")[:, :, None]
    total = ops.sum(weights, axis=1)  # (B, L)
    return ops.sum(ops.square(1.0 - total), axis=-1)


def next_words(tokens):
    """The words each step predicts: int32 `(B, T)` from `caption_in`.

    `tokens` is START then the caption's words, PAD (0) after them; the
    targets are the next word at each step and END after the last one, 0
    on padding: the captioner's `caption_out`, also for captions cut to
    the length.
    """
    tokens = ops.cast(tokens, "int32")
    following = ops.pad(tokens[:, 1:], ((0, 0), (0, 1)))  # (B, T)
    targets = ops.where(following != 0, following, END_ID)
    return ops.where(tokens != 0, targets, 0)


def caption_log_likelihood(logits, tokens):
    """Per caption word: float32 `(B,)`, `mean_t log p(y_t)` over the
    steps of each caption (`logits` `(B, T, V)`, `tokens` `(B, T)`)."""
    steps = ops.cast(ops.not_equal(tokens, 0), "float32")  # (B, T)
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    targets = ops.expand_dims(next_words(tokens), -1)  # (B, T, 1)
    words = ops.squeeze(ops.take_along_axis(log_probs, targets, -1), -1)
    return ops.sum(words * steps, axis=1) / _lengths(steps)


def reinforce_loss(
    logits,
    tokens,
    log_probs,
    entropies,
    baseline,
    reinforce_weight=0.1,
    entropy_weight=0.002,
):
    """Hard attention's REINFORCE term and entropy bonus, batch mean.

    Args:
        logits: float `(B, T, V)`, the words' logits under the sampled
            positions.
        tokens: int `(B, T)`, `caption_in` (PAD = 0 after the caption).
        log_probs: float `(B, T)`, `log alpha_t(s_t)` of the sampled
            positions.
        entropies: float `(B, T)`, `H(alpha_t)`.
        baseline: float scalar, `b`.
        reinforce_weight: `lambda_r`. Defaults to `0.1`.
        entropy_weight: `lambda_e`. Defaults to `0.002`.

    Returns:
        `(loss, reward)`: the float32 scalar loss and the batch mean of
        the reward `R` (per word; not differentiated), for the baseline.
    """
    steps = ops.cast(ops.not_equal(tokens, 0), "float32")  # (B, T)
    lengths = _lengths(steps)
    reward = ops.stop_gradient(caption_log_likelihood(logits, tokens))
    advantage = reward - ops.cast(baseline, "float32")  # (B,)
    chosen = ops.sum(ops.cast(log_probs, "float32") * steps, 1) / lengths
    entropy = ops.sum(ops.cast(entropies, "float32") * steps, 1) / lengths
    loss = -reinforce_weight * advantage * chosen - entropy_weight * entropy
    return ops.mean(loss), ops.mean(reward)


def _lengths(steps):
    """float32 `(B,)`: the steps of each caption, at least 1."""
    return ops.maximum(ops.sum(steps, axis=1), 1.0)


def add_reinforce_loss(decoder, logits, tokens, terms):
    """Adds `reinforce_loss` to `decoder` (`add_loss`) with its weights,
    then moves its `reward_baseline` towards this batch's mean reward (the
    loss uses the baseline before the update). `terms` `(B, T, 2)` are the
    log-probabilities of the sampled positions and the entropies."""
    baseline = ops.convert_to_tensor(decoder.reward_baseline)
    loss, reward = reinforce_loss(
        logits,
        tokens,
        terms[..., 0],
        terms[..., 1],
        baseline,
        decoder.reinforce_weight,
        decoder.entropy_weight,
    )
    decoder.add_loss(loss)
    decoder.reward_baseline.assign(
        BASELINE_DECAY * baseline + (1.0 - BASELINE_DECAY) * reward
    )


def expectation_reads(decoder, tokens):
    """Semi-sampling's draw (Section 4.1): bool `(B,)`, the images that
    read the expectation in this training step, each with probability
    `decoder.semi_sampling` (the attention layer's seed generator: no new
    variable)."""
    draws = keras.random.uniform(
        ops.shape(tokens)[:1], seed=decoder.attention_layer.seed_generator
    )
    return draws < decoder.semi_sampling
