"""Compiled streaming loops for networks with `get_initial_state`/`step`.

A compiled `step` costs milliseconds per call in dispatch while its
arithmetic takes microseconds, so the loop over time steps itself has to be
compiled: both functions here run all steps inside one `ops.fori_loop`
with fixed-size output buffers written by `ops.slice_update`. They work
eagerly, under `tf.function(jit_compile=True)` and under `jax.jit`.

Any network with `get_initial_state(batch_size)` and
`step(inputs, state) -> (outputs, state)` fits: `CausalDilatedConv1D`,
`TCN`, `WaveNet`.
"""

from keras import ops


def stream_sequence(network, inputs, initial_state=None):
    """Runs `network.step` over every time step of `inputs`.

    Equals `network(inputs)` (in inference mode, without a mask) and also
    returns the state after the last step, e.g. to prime generation with a
    prompt.

    Args:
        network: a built layer with `get_initial_state` and `step`.
        inputs: float tensor `(B, T, C)`, `T >= 1`.
        initial_state: optional state to start from; zeros by default.

    Returns:
        `(outputs, state)`: `(B, T, F)` and the state after step `T - 1`.
    """
    batch_size = ops.shape(inputs)[0]
    num_steps = ops.shape(inputs)[1]
    state = initial_state
    if state is None:
        state = network.get_initial_state(batch_size)
    # The first step outside the loop gives the output width and dtype.
    first, state = network.step(inputs[:, 0, :], state)  # (B, F)
    outputs = ops.zeros((batch_size, num_steps, first.shape[-1]), first.dtype)
    outputs = ops.slice_update(outputs, (0, 0, 0), first[:, None, :])

    def body(t, carry):
        outputs, state = carry
        x_t = ops.take(inputs, t, axis=1)  # (B, C)
        y_t, state = network.step(x_t, state)
        outputs = ops.slice_update(
            outputs, (0, t, 0), ops.cast(y_t, outputs.dtype)[:, None, :]
        )
        return outputs, state

    return ops.fori_loop(1, num_steps, body, (outputs, state))


def autoregressive_generate(
    network,
    head,
    initial_input,
    num_steps,
    initial_state=None,
    return_state=False,
):
    """Generates `num_steps` steps, feeding each output back as input.

    At every step `y = network.step(x, state)` and `x = head(y)`; the new
    `x` is recorded and becomes the next input. `head` maps the network's
    output `(B, F)` back to the input width `(B, C)`: a `Dense` layer, or a
    function that samples (for sampling, draw with a `SeedGenerator` so the
    loop stays compiled). The whole loop is one `ops.fori_loop` with
    buffers of fixed size, so compile it once around this call.

    Args:
        network: a built layer with `get_initial_state` and `step`, such as
            `WaveNet` or `TCN`.
        head: callable `(B, F) -> (B, C)`.
        initial_input: float tensor `(B, C)`, the first input.
        num_steps: int, number of steps to generate.
        initial_state: optional state, e.g. from `stream_sequence` over a
            prompt (then pass the prompt's next input as `initial_input`);
            zeros by default.
        return_state: bool, also return the final state.

    Returns:
        Tensor `(B, num_steps, C)` of generated inputs in the dtype of
        `initial_input` (step `i` is `head` of the output at step `i`),
        and the final state if `return_state`.

    Example:

    >>> net = WaveNet(8, 8, dilations=(1, 2), stacks=1)
    >>> head = keras.layers.Dense(1)
    >>> _ = head(net(np.zeros((1, 4, 1), "float32"))[:, 0])
    >>> autoregressive_generate(net, head, np.zeros((1, 1), "float32"), 5).shape
    (1, 5, 1)
    """
    initial_input = ops.convert_to_tensor(initial_input)
    batch_size = ops.shape(initial_input)[0]
    state = initial_state
    if state is None:
        state = network.get_initial_state(batch_size)
    dtype = initial_input.dtype
    outputs = ops.zeros(
        (batch_size, num_steps, initial_input.shape[-1]), dtype=dtype
    )

    def body(t, carry):
        x, state, outputs = carry
        y, state = network.step(x, state)
        x = ops.cast(head(y), dtype)  # (B, C)
        outputs = ops.slice_update(outputs, (0, t, 0), x[:, None, :])
        return x, state, outputs

    _, state, outputs = ops.fori_loop(
        0, num_steps, body, (initial_input, state, outputs)
    )
    if return_state:
        return outputs, state
    return outputs
