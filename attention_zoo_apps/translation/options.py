"""The translator's choices, shared by the config, the models and the
command line (which reads them without TensorFlow)."""

MODELS = ("rnn", "transformer")
# The RNN's attention scores, monotonic, local-p, and None: the
# no-attention baseline (`--attention none`).
ATTENTIONS = (
    "additive",
    "general",
    "dot",
    "scaled_dot",
    "monotonic",
    "local",
    None,
)
# What `TranslationConfig.placeholders` copies (`placeholders.Placeholders`).
PLACEHOLDER_RULES = ("numbers", "names", "unknown")
# `TranslationConfig.learning_rate_schedule` (`schedules.WarmupInverseSqrt`).
SCHEDULES = ("constant", "inverse_sqrt")
