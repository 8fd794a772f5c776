"""The attention losses: targets equal to the captioner's `caption_out`,
the REINFORCE term and entropy bonus against NumPy, and a reward that is
not differentiated."""

import keras
import numpy as np
import pytest

from attention_zoo_apps import registry
from attention_zoo_apps.captioning.attention_losses import (
    caption_log_likelihood,
)
from attention_zoo_apps.captioning.attention_losses import next_words
from attention_zoo_apps.captioning.attention_losses import reinforce_loss
from attention_zoo_apps.captioning.captioner import Captioner
from attention_zoo_apps.common.wordpiece import END_ID
from tests.support.layer_checks import to_numpy

B, T, V = 3, 5, 11
TOKENS = np.array([[2, 5, 6, 7, 0], [2, 8, 0, 0, 0], [2, 4, 4, 9, 10]])


def test_next_words_by_hand():
    expected = [
        [5, 6, 7, END_ID, 0],
        [8, END_ID, 0, 0, 0],
        [4, 4, 9, 10, END_ID],
    ]
    np.testing.assert_array_equal(to_numpy(next_words(TOKENS)), expected)


def test_next_words_are_the_captioners_targets():
    """Also for a caption cut to `max_length`: the decoder derives the
    targets from `caption_in` alone."""
    captioner = Captioner(registry.get("captioning").tiny_config())
    captions = [
        "a red circle above a blue square",
        "a green triangle",
        " ".join(["a red circle left of a blue square"] * 3),  # cut
    ]
    captioner.ensure_tokenizer(captions)
    images = np.zeros((3, 32, 32, 3), "float32")
    inputs, caption_out = next(iter(captioner.dataset(images, captions)))
    np.testing.assert_array_equal(
        to_numpy(next_words(inputs["caption_in"].numpy())), caption_out
    )
    assert np.all(caption_out.numpy()[2] != 0)  # the cut caption fills T


def np_log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def np_targets(tokens):
    targets = np.zeros_like(tokens)
    for b, row in enumerate(tokens):
        words = [w for w in row[1:] if w != 0]
        targets[b, : len(words) + 1] = words + [END_ID]
    return targets


def test_reinforce_loss_matches_numpy():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(B, T, V)).astype("float32")
    log_probs = np.log(rng.uniform(0.05, 1, size=(B, T))).astype("float32")
    entropies = rng.uniform(0, 2, size=(B, T)).astype("float32")
    baseline = -2.5
    loss, reward = reinforce_loss(
        logits, TOKENS, log_probs, entropies, baseline, 0.3, 0.01
    )
    steps = TOKENS != 0
    lengths = steps.sum(1)
    targets = np_targets(TOKENS)
    words = np.take_along_axis(np_log_softmax(logits), targets[..., None], -1)
    rewards = (words[..., 0] * steps).sum(1) / lengths  # per word
    chosen = (log_probs * steps).sum(1) / lengths
    entropy = (entropies * steps).sum(1) / lengths
    expected = np.mean(-0.3 * (rewards - baseline) * chosen - 0.01 * entropy)
    assert float(to_numpy(loss)) == pytest.approx(expected, rel=1e-5)
    assert float(to_numpy(reward)) == pytest.approx(rewards.mean(), rel=1e-5)
    np.testing.assert_allclose(
        to_numpy(caption_log_likelihood(logits, TOKENS)), rewards, rtol=1e-5
    )


def test_the_reward_is_not_differentiated():
    """The loss reaches the logits through nothing: the likelihood's own
    gradient comes from the cross-entropy, not from `R`."""
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(B, T, V)).astype("float32")
    log_probs = np.log(rng.uniform(0.05, 1, size=(B, T))).astype("float32")
    entropies = rng.uniform(0, 2, size=(B, T)).astype("float32")

    def loss(logits, log_probs):
        return reinforce_loss(logits, TOKENS, log_probs, entropies, 0.0)[0]

    if keras.backend.backend() == "jax":
        import jax

        grads = jax.grad(loss, argnums=(0, 1))(logits, log_probs)
    else:
        import tensorflow as tf

        variables = [tf.Variable(logits), tf.Variable(log_probs)]
        with tf.GradientTape() as tape:
            value = loss(*variables)
        grads = tape.gradient(value, variables)
    assert grads[0] is None or np.all(to_numpy(grads[0]) == 0)
    log_prob_grad = to_numpy(grads[1])
    assert np.all(log_prob_grad[TOKENS == 0] == 0)  # padding steps
    assert np.all(log_prob_grad[TOKENS != 0] != 0)
