"""`DecodingAdapter`: what a model provides for `decode`."""


class DecodingAdapter:
    """A model seen step by step, as `decode` drives it.

    Subclass it (or write any object with the same methods) and implement
    three methods; `decode` does the rest (greedy or beam search, tiling
    for beams, bucketed padding, compiling and caching):

    - `encode(inputs) -> memory`: runs once per batch. `inputs` is what
      the caller gave `decode` (a tensor or a nest), padded to a bucket;
      `memory` is a nest of tensors with leading dimension `B` (encoder
      outputs, projected keys, masks): whatever every step reads but
      never changes. For beam search `decode` tiles it to `B * K` rows
      (`tile_beams`).
    - `initial_state(memory) -> state`: the decoder's state before the
      first step, a nest of tensors with leading dimension `B` (untiled).
    - `step(token_ids, state, memory, index) -> (logits, state,
      attention)`: one step for `N` rows (`B`, or `B * K` with beams):
      `token_ids` int32 `(N,)` the previous tokens, `index` the scalar
      int32 step number; returns logits `(N, V)`, the new state (same
      structure, shapes and dtypes) and attention weights `(N, Ts)`
      (zeros `(N, 1)` for a model without attention). Only `keras.ops`
      and Keras layers, no Python branch on tensor values: it runs inside
      a compiled `ops.while_loop`.

    Three optional hooks:

    - `length_multiple` (class attribute, int or `None`): pad the length
      axis (axis 1) of int inputs of rank >= 2 (token ids) to a multiple
      of it, with PAD (0), so a model that masks PAD compiles for a few
      lengths only; the attention's axis 2 is cut back to the input's
      length. `None` (the default) pads the batch axis only.
    - `compile_encode` (class attribute, bool): `False` keeps `encode`
      out of XLA on TensorFlow: with `jit_compile`, `decode` runs it as a
      graph function and XLA-compiles the search from its memory on.
      For an encoder that XLA:CPU runs slower than TensorFlow's own
      kernels (convolutions: oneDNN's are several times faster). `True`
      (the default) compiles the search whole, `encode` included.
    - `finalize(result, inputs) -> result`: post-processing of the
      search's dict once cut back to the caller's shapes, with the
      caller's `inputs` (e.g. empty rows for empty sources, attention
      reshaped to a grid). Beam search's `beam_*` keys (`beam_attention`
      included) have a beam axis after the batch, `(B, K, ...)`; keep
      them, `decode`'s `num_results` reads them after `finalize`.
      Defaults to returning `result` unchanged.

    `decode` caches the compiled searches on the adapter: one per
    configuration and input bucket. Make a new adapter when the model's
    weights change on JAX (`jax.jit` compiles them in as constants;
    `tf.function` reads the variables at every call).

    Example:

    ```python
    class Decoder(DecodingAdapter):
        def __init__(self, model):
            self.model = model

        def encode(self, source_ids):
            return {"outputs": encoder(source_ids), "mask": source_ids != 0}

        def initial_state(self, memory):
            return (bridge(memory["outputs"][:, -1]),)

        def step(self, token_ids, state, memory, index):
            ...  # embed, one RNN cell step, attend over memory["outputs"]
            return logits, (h,), weights

    result = decode(Decoder(model), source_ids, start_id=2, end_id=3,
                    max_length=50, beam_size=4, length_penalty=0.6)
    ```
    """

    length_multiple = None

    def encode(self, inputs):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `encode(inputs)`."
        )

    def initial_state(self, memory):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `initial_state(memory)`."
        )

    def step(self, token_ids, state, memory, index):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `step(token_ids, state, "
            "memory, index)`."
        )

    def finalize(self, result, inputs):
        return result

    def step_fn(self, memory):
        """`step` closed over `memory` (see `step_function`)."""
        return step_function(self, memory)


def step_function(adapter, memory):
    """`adapter.step` closed over `memory`: the `(token_ids, state, index)`
    function that `greedy_search` and `beam_search` call (tile `memory`
    with `tile_beams` first for beam search). Works for any object with
    the adapter's methods, not only `DecodingAdapter` subclasses."""

    def step_fn(token_ids, state, index):
        return adapter.step(token_ids, state, memory, index)

    return step_fn
