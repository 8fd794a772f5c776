"""Counter-based random numbers for sampling: the same bits everywhere.

A sampled token must not depend on what else is decoded beside it: a
served request is batched with strangers (TF Serving's batching) and
padded to a bucket, and a model trained on JAX is served by TensorFlow.
`keras.random`'s kernels give one draw per call over the whole batch, so
a row's draw changes with the batch, the backend and the compiler. Here a
random number is a pure function of three counters, `(row seed, step,
token id)`, hashed with integer arithmetic that `keras.ops` computes
bit for bit alike on TensorFlow and JAX, eagerly or under XLA (as
counter-based generators such as Philox do; Salmon et al., 2011).

The hash is `mix32`, Chris Wellons's "lowbias32" integer finalizer (two
xor-shift-multiply rounds, a bijection of the 32-bit integers), over
`uint32` tensors whose products wrap modulo `2 ** 32`. `uniform` takes 23
bits of it to a float32 in `(0, 1)` and `gumbel` makes the Gumbel noise
with which `argmax(logits + noise)` is a draw from `softmax(logits)` (the
Gumbel-max trick).
"""

from keras import ops

# Constants of `mix32` and the odd offsets that keep the counters apart.
_SHIFTS = (16, 15, 16)
_MULTIPLIERS = (0x7FEB352D, 0x846CA68B)
_STEP_OFFSET = 0x9E3779B9  # 2 ** 32 / golden ratio
_TOKEN_OFFSET = 0x85EBCA6B
# `uniform` keeps 23 bits: `1 - 2 ** -24` is the largest float32 below 1.
_BITS = 23


def as_uint32(x):
    """An int tensor (or Python int) as its `uint32` bits, modulo `2 ** 32`."""
    if isinstance(x, int):
        return ops.convert_to_tensor(x % 2**32, "uint32")
    return ops.cast(x, "uint32")


def mix32(x):
    """The lowbias32 hash of `uint32` `x`, elementwise (a bijection)."""
    for shift, multiplier in zip(_SHIFTS, _MULTIPLIERS):
        x = ops.bitwise_xor(x, ops.right_shift(x, shift))
        x = ops.multiply(x, ops.convert_to_tensor(multiplier, "uint32"))
    return ops.bitwise_xor(x, ops.right_shift(x, _SHIFTS[-1]))


def step_keys(row_seeds, step):
    """One key per row and step: `uint32` `(N,)` from `row_seeds` `(N,)`
    and the int scalar `step`."""
    step = mix32(as_uint32(step) + as_uint32(_STEP_OFFSET))
    return mix32(ops.bitwise_xor(mix32(as_uint32(row_seeds)), step))


def uniform(keys, ids):
    """float32 in `(0, 1)` for every key `(N,)` and id of `ids` (`(N, M)`
    or `(1, M)`): `(N, M)`, a function of `(key, id)` alone."""
    ids = mix32(as_uint32(ids) + as_uint32(_TOKEN_OFFSET))
    bits = mix32(ops.bitwise_xor(keys[:, None], ids))
    bits = ops.right_shift(bits, 32 - _BITS)
    return (ops.cast(bits, "float32") + 0.5) * (2.0**-_BITS)


def gumbel(keys, ids):
    """Standard Gumbel noise `-log(-log(u))` for `uniform(keys, ids)`."""
    return -ops.log(-ops.log(uniform(keys, ids)))
