"""The checks of the decoder's choices (`options`), shared by the decoder
(`AttentionLSTMDecoder`) and the config."""

from attention_zoo.checks import check_choice
from attention_zoo.checks import check_non_negative
from attention_zoo.checks import check_probability
from attention_zoo_apps.captioning.options import ATTENTION_MODES
from attention_zoo_apps.captioning.options import HARD_INFERENCES
from attention_zoo_apps.captioning.options import PREDICTIONS


def check_prediction(prediction, attention):
    """Raises a `ValueError` unless `prediction` is one of `PREDICTIONS`
    and, for `"latent"`, there is an `attention` to mix over."""
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
    check_choice("hard_inference", hard_inference, HARD_INFERENCES)
    check_non_negative("reinforce_weight", reinforce_weight)
    check_non_negative("entropy_weight", entropy_weight)
    check_probability("semi_sampling", semi_sampling)
