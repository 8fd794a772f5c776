"""The risk model's choices, shared by the model, the config and the
command line (which reads them without TensorFlow)."""

# The event encoders of `build_risk_model` (`--encoder`).
ENCODERS = ("gru", "multihead")
