"""The optional feed-forward key network of the alignment layers.

Decomposable attention scores words through an MLP `F` (dropout, then a
Dense layer with ReLU, per layer). `SoftAlignment` and `IntraAttention`
own such a network so that a model calls them on the word vectors alone
and Keras passes the masks on; these helpers create, build and apply it.
"""

import keras

from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate


def check_key_network(key_units, dropout):
    """Validates `key_units` (None or a sequence of positive ints) and
    `dropout`; returns `key_units` as a tuple (or None)."""
    check_rate("dropout", dropout)
    if key_units is None:
        return None
    if isinstance(key_units, int):
        key_units = (key_units,)
    key_units = tuple(key_units)
    if not key_units:
        raise ValueError(
            "`key_units` must be None or a non-empty sequence of positive "
            f"integers. Received: key_units={key_units!r}"
        )
    for units in key_units:
        check_positive_int("key_units", units)
    return key_units


def build_key_network(layer, input_dim, key_units, activation, dropout, seed):
    """Creates and builds the network's sublayers on `layer`; returns them
    as a list (empty when `key_units` is None)."""
    sublayers = []
    width = input_dim
    for index, units in enumerate(key_units or ()):
        if dropout > 0:
            drop = keras.layers.Dropout(
                dropout,
                seed=None if seed is None else seed + index,
                dtype=layer.dtype_policy,
                name=f"key_dropout_{index}",
            )
            sublayers.append(drop)
        dense = keras.layers.Dense(
            units,
            activation=activation,
            dtype=layer.dtype_policy,
            name=f"key_dense_{index}",
        )
        dense.build((None, None, width))
        sublayers.append(dense)
        width = units
    return sublayers


def apply_key_network(sublayers, inputs, training=None):
    """Runs the network; the inputs themselves when it is empty."""
    outputs = inputs
    for sublayer in sublayers:
        if isinstance(sublayer, keras.layers.Dropout):
            outputs = sublayer(outputs, training=training)
        else:
            outputs = sublayer(outputs)
    return outputs
