"""The decoder's choices and their checks, shared by the decoder
(`AttentionLSTMDecoder`), the config and the command line.

The checks import `attention_zoo.checks` when they run: the command line
reads the choices before TensorFlow is imported (`flags.py`).
"""

# The score of the attention (`None`: the mean-feature baseline).
ATTENTIONS = ("additive", "general", "dot", "scaled_dot", None)
QUERIES = ("state", "state_and_word")
PREDICTIONS = ("deep", "latent")
ATTENTION_MODES = ("soft", "hard")
HARD_INFERENCES = ("argmax", "expectation")


def check_prediction(prediction, attention):
    """Raises a `ValueError` unless `prediction` is one of `PREDICTIONS`
    and, for `"latent"`, there is an `attention` to mix over."""
    from attention_zoo.checks import check_choice

    check_choice("prediction", prediction, PREDICTIONS)
    if prediction == "latent" and attention is None:
        raise ValueError(
            "prediction='latent' predicts each word from the positions the "
            "decoder looks at, so it needs an `attention`. Received: "
            "attention=None"
        )


def check_attention_mode(attention_mode, attention):
    """Raises a `ValueError` unless `attention_mode` is one of
    `ATTENTION_MODES` and, for `"hard"`, there is an `attention`."""
    from attention_zoo.checks import check_choice

    check_choice("attention_mode", attention_mode, ATTENTION_MODES)
    if attention_mode == "hard" and attention is None:
        raise ValueError(
            "attention_mode='hard' samples where the decoder looks, so it "
            "needs an `attention`. Received: attention=None"
        )


def check_hard_options(
    hard_inference, reinforce_weight, entropy_weight, semi_sampling
):
    """Raises a `ValueError` for a bad option of hard attention (see
    `AttentionLSTMDecoder`)."""
    from attention_zoo import checks

    checks.check_choice("hard_inference", hard_inference, HARD_INFERENCES)
    checks.check_non_negative("reinforce_weight", reinforce_weight)
    checks.check_non_negative("entropy_weight", entropy_weight)
    checks.check_probability("semi_sampling", semi_sampling)
