"""`replaced_calls`: layers computing with other `call`s while an export
is traced (the int8 and folded exports' rewrites)."""

import contextlib


@contextlib.contextmanager
def replaced_calls(replacements):
    """Within the context, each layer of `replacements` (a list of
    `(layer, call)`) computes with `call` (set on the instance, which
    Keras's `__call__` reads); afterwards with its class's own `call`
    again. Functions traced inside keep what they traced."""
    for layer, call in replacements:
        layer.call = call
    try:
        yield
    finally:
        for layer, _ in replacements:
            del layer.call
