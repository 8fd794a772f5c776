"""The decoder's choices, shared by the decoder (`AttentionLSTMDecoder`),
the config and the command line, which reads them before TensorFlow is
imported (`flags.py`); their checks are `option_checks`.
"""

# The score of the attention (`None`: the mean-feature baseline).
ATTENTIONS = ("additive", "general", "dot", "scaled_dot", None)
QUERIES = ("state", "state_and_word")
PREDICTIONS = ("deep", "latent")
ATTENTION_MODES = ("soft", "hard")
HARD_INFERENCES = ("argmax", "expectation")
