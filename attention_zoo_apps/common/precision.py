"""Mixed precision for `attention-zoo train APP --precision NAME`.

    float32          everything in float32 (the default)
    mixed_bfloat16   bfloat16 compute, float32 weights: GPUs from Ampere
                     on, TPUs and recent CPUs
    mixed_float16    float16 compute, float32 weights, with loss scaling
                     (Keras wraps the optimizer in a `LossScaleOptimizer`):
                     GPUs before Ampere

The name is a Keras dtype policy. It is stored in the app config
(`precision`), so the run directory and every export record it, and a
bundle builds its model under its config's policy (`policy_scope` in
`SavedBundle.ensure_model`): a resumed run, `Bundle.load(...)` and an
export use the policy the model was trained with, whatever the process's
global policy. Softmax, losses and the models' last layers stay float32
(see "Dtypes and mixed precision" in CONTRIBUTING.md).
"""

import contextlib

import keras

from attention_zoo_apps.common.flag_checks import PRECISIONS


def check_precision(precision):
    """Raises a ValueError unless `precision` is one of `PRECISIONS`."""
    if precision not in PRECISIONS:
        raise ValueError(
            f"`precision` must be one of {PRECISIONS}. "
            f"Received: precision={precision!r}"
        )


def set_precision(precision):
    """Sets the global Keras dtype policy (before a model is built)."""
    check_precision(precision)
    keras.mixed_precision.set_global_policy(precision)


def use_run_precision(config, flag=None):
    """Sets the global policy to the run's `config.precision`.

    `flag` is the `--precision` given: a resumed run keeps the precision
    it started with (its checkpoints hold that optimizer), so a different
    flag is reported and ignored.
    """
    if flag is not None and flag != config.precision:
        print(
            f"--precision {flag} ignored: the interrupted run trains in "
            f"{config.precision}"
        )
    set_precision(config.precision)


@contextlib.contextmanager
def policy_scope(precision):
    """Builds under `precision`, then restores the global policy: layers
    keep the policy they were created with."""
    previous = keras.mixed_precision.global_policy()
    set_precision(precision)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)
