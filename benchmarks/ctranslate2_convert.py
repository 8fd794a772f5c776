"""A Transformer `Translator` as a CTranslate2 model, and a check that
CTranslate2 translates with it as we do.

Run from the repository root, on a translator saved with `save` (a
`model="transformer"` bundle; CTranslate2 comes with the `benchmarks`
extra, `pip install ".[benchmarks]"`):

    python -m benchmarks.ctranslate2_convert BUNDLE_DIR OUT_DIR \
        [--quantization int8]

`convert(translator, output_dir, quantization)` fills a
`ctranslate2.specs.TransformerSpec` (the public spec API, as
CTranslate2's own converters do) with the model's weights and writes
`model.bin`, `config.json` and the vocabularies (`shared_vocabulary.json`
when source and target are one list) to `output_dir`; `quantization` is
CTranslate2's weight type (`None`: as they are, float32; `"int8"`,
`"int8_float32"`, `"int16"`, `"float16"`, ...).
`benchmarks.ctranslate2_compare` decodes our source ids with it beside
`Translator.decode`: on the test's tiny translators
(`tests/benchmarks/ctranslate2_convert_test.py`) every float32
translation is ours token for token, the log-probabilities within 2e-5.

The mapping (`D` model width, `H` heads, `K` key/value heads, `Dk` head
size, CTranslate2 linears are `(out, in)`, our kernels `(in, ...)`):

- `source_embedding` / `target_embedding` (`PositionalEmbedding`): the
  token tables `(V, D)` -> `encoder.embeddings[0].weight` /
  `decoder.embeddings.weight`, with `scale_embeddings` (both multiply by
  `sqrt(D)` in float32); the positions -> `position_encodings.encodings`
  `(max_length + 2, D)`, written out row for row: the learned table, or
  the sinusoids our layer computes (`sin` of every angle in the first
  `D / 2` channels, `cos` in the rest, from position 0). CTranslate2's own
  sinusoids start at position 1 and space the frequencies by
  `D / 2 - 1`, so they are never used.
- `encoder_i`: `self_attention_norm` -> `self_attention.layer_norm`;
  query, key and value kernels `(D, H | K, Dk)` -> one fused
  `self_attention.linear[0]` `((H + 2K) Dk, D)`, biases likewise; the
  output kernel `(H, Dk, D)` -> `self_attention.linear[1]` `(D, H Dk)`;
  `feed_forward_norm` -> `ffn.layer_norm`; `feed_forward_inner` /
  `feed_forward_output` -> `ffn.linear_0` / `ffn.linear_1` (ReLU).
- `decoder_i`: the same for its causal `self_attention`, plus
  `cross_attention_norm` -> `attention.layer_norm`, the query kernel ->
  `attention.linear[0]`, key and value fused -> `attention.linear[1]`
  `(2 K Dk, D)`, the output -> `attention.linear[2]`.
- `encoder_norm` / `decoder_norm` -> `encoder.layer_norm` /
  `decoder.layer_norm` (pre-norm, so one final norm each; `config.json`
  takes their epsilon, 1e-5, for every layer norm).
- `logits`: the `Dense` kernel `(D, V)` transposed and its bias ->
  `decoder.projection`; with tied embeddings the target token table and
  the `LogitsBias` bias (CTranslate2 stores the shared table once).

Both scale queries by `1 / sqrt(Dk)` (ours folds it into the query
kernel), and both share key/value head `h // (H / K)` with query head
`h`, so grouped-query and multi-query models convert too. The
vocabularies are the tokenizers' lists (id = position), with `[UNK]`,
`[START]` (`bos_token` and `decoder_start_token`) and `[END]`
(`eos_token`) named in `config.json`; nothing is added to the source (our
sources have no START or END). Tokenizing text (and placeholders) stays
ours: CTranslate2 takes and gives token strings.

What the spec cannot say is refused with a `ValueError`: an RNN
translator, a `sliding_window` (CTranslate2's window only trims a
decoder's cache; our encoder's two-sided band has no counterpart), gated
attention (`use_gate`), an activation other than ReLU, layer norms with
different epsilons, and vocabularies that do not fit the model (a
repeated token, reserved tokens out of place, a size other than the
embedding's). A mixed-precision translator converts (its weights are
float32) but computes in bfloat16 or float16 where CTranslate2, unless
told otherwise, computes in float32.
"""

import argparse
import os

import keras
import numpy as np
from ctranslate2.specs import common_spec
from ctranslate2.specs import transformer_spec
from ctranslate2.specs.model_spec import ACCEPTED_MODEL_TYPES

from attention_zoo.blocks.positional_embedding import PositionalEmbedding
from attention_zoo_apps.common import token_ids
from attention_zoo_apps.translation.transformer_model import LogitsBias
from attention_zoo_apps.translation.translator import Translator

# The reserved tokens and the ids they must have in both vocabularies.
RESERVED = {
    token_ids.PAD: token_ids.PAD_ID,
    token_ids.UNK: token_ids.UNK_ID,
    token_ids.START: token_ids.START_ID,
    token_ids.END: token_ids.END_ID,
}


def make_spec(translator):
    """The `ctranslate2.specs.TransformerSpec` of a Transformer
    `Translator`, weights and vocabularies set (not yet validated).

    Raises:
        ValueError: one line saying what CTranslate2 cannot express.
    """
    config = translator.config
    if config.model != "transformer":
        raise ValueError(
            "Only Transformer translators convert to CTranslate2. "
            f"Received: config.model={config.model!r}"
        )
    model = translator.require_model()
    layers = _layers(model)
    _check_blocks(layers["encoder"] + layers["decoder"])
    epsilon = _epsilon(layers)
    heads = layers["encoder"][0].num_heads
    kv_heads = layers["encoder"][0].num_key_value_heads
    if kv_heads == heads:
        kv_heads = None
    source_vocabulary = _vocabulary(
        "source", translator.source_tokenizer, layers["source_embedding"]
    )
    target_vocabulary = _vocabulary(
        "target", translator.target_tokenizer, layers["target_embedding"]
    )

    encoder = transformer_spec.TransformerEncoderSpec(
        len(layers["encoder"]),
        heads,
        pre_norm=True,
        activation=common_spec.Activation.RELU,
        num_heads_kv=kv_heads,
    )
    decoder = transformer_spec.TransformerDecoderSpec(
        len(layers["decoder"]),
        heads,
        pre_norm=True,
        activation=common_spec.Activation.RELU,
        num_heads_kv=kv_heads,
    )
    spec = transformer_spec.TransformerSpec(encoder, decoder)
    spec.config.unk_token = token_ids.UNK
    spec.config.bos_token = token_ids.START
    spec.config.eos_token = token_ids.END
    spec.config.decoder_start_token = token_ids.START
    spec.config.add_source_bos = False
    spec.config.add_source_eos = False
    spec.config.layer_norm_epsilon = epsilon
    spec.register_source_vocabulary(source_vocabulary)
    spec.register_target_vocabulary(target_vocabulary)

    weights = _Weights(model)
    _set_embedding(
        encoder.embeddings[0],
        encoder,
        encoder.position_encodings,
        layers["source_embedding"],
    )
    for layer_spec, block in zip(encoder.layer, layers["encoder"]):
        _set_self_attention(layer_spec.self_attention, weights, block.name)
        _set_feed_forward(layer_spec.ffn, weights, block.name)
    _set_layer_norm(encoder.layer_norm, weights, "encoder_norm")

    _set_embedding(
        decoder.embeddings,
        decoder,
        decoder.position_encodings,
        layers["target_embedding"],
    )
    for layer_spec, block in zip(decoder.layer, layers["decoder"]):
        _set_self_attention(layer_spec.self_attention, weights, block.name)
        _set_cross_attention(layer_spec.attention, weights, block.name)
        _set_feed_forward(layer_spec.ffn, weights, block.name)
    _set_layer_norm(decoder.layer_norm, weights, "decoder_norm")
    if isinstance(layers["logits"], LogitsBias):
        # Tied: the target token table is the output matrix.
        decoder.projection.weight = decoder.embeddings.weight
    else:
        decoder.projection.weight = np.ascontiguousarray(
            weights("logits/kernel").T
        )
    decoder.projection.bias = weights("logits/bias")
    return spec


def convert(translator, output_dir, quantization=None):
    """Writes `translator` (a Transformer `Translator`) as a CTranslate2
    model directory.

    Args:
        translator: a `Translator` with `config.model="transformer"` and
            a model.
        output_dir: str, the folder (made if missing; the files it
            writes are replaced).
        quantization: optional str, CTranslate2's weight type
            (`"int8"`, `"int8_float32"`, `"int16"`, `"float16"`,
            `"bfloat16"`, `"float32"`, ...). Defaults to `None` (the
            weights as they are, float32).

    Returns:
        `output_dir`, holding `model.bin`, `config.json` and the
        vocabularies; load it with `ctranslate2.Translator(output_dir)`.

    Raises:
        ValueError: what CTranslate2 cannot express (see the module), or
            an unknown `quantization`.
    """
    if quantization is not None and quantization not in ACCEPTED_MODEL_TYPES:
        raise ValueError(
            "`quantization` must be None or one of "
            f"{', '.join(ACCEPTED_MODEL_TYPES)}. "
            f"Received: quantization={quantization!r}"
        )
    spec = make_spec(translator)
    spec.validate()
    spec.optimize(quantization=quantization)
    os.makedirs(output_dir, exist_ok=True)
    spec.save(output_dir)
    return output_dir


def _layers(model):
    """The named layers of a `build_transformer_translator` model."""
    by_name = {layer.name: layer for layer in model.layers}
    found = {}
    for stack in ("encoder", "decoder"):
        found[stack] = []
        while f"{stack}_{len(found[stack])}" in by_name:
            found[stack].append(by_name[f"{stack}_{len(found[stack])}"])
    names = (
        "source_embedding",
        "target_embedding",
        "encoder_norm",
        "decoder_norm",
        "logits",
    )
    missing = [name for name in names if name not in by_name]
    if missing or not found["encoder"] or not found["decoder"]:
        raise ValueError(
            "The model must come from `build_transformer_translator`. "
            f"Received: a model with layers {sorted(by_name)}"
        )
    found.update({name: by_name[name] for name in names})
    return found


def _check_blocks(blocks):
    """Refuses what the spec cannot express, block by block."""
    first = blocks[0]
    for block in blocks:
        if block.sliding_window is not None:
            raise ValueError(
                "CTranslate2 has no attention window for an encoder (its "
                "`sliding_window` trims a decoder's cache). Received: "
                f"sliding_window={block.sliding_window}"
            )
        if block.use_gate:
            raise ValueError(
                "CTranslate2 has no gated attention. Received: use_gate=True"
            )
        if block.activation is not keras.activations.relu:
            name = keras.activations.serialize(block.activation)
            raise ValueError(
                "Only ReLU feed-forward networks convert (the translator's "
                f"blocks use it). Received: activation={name!r}"
            )
        for argument in ("num_heads", "key_dim", "num_key_value_heads"):
            if getattr(block, argument) != getattr(first, argument):
                raise ValueError(
                    f"Every block must have the same `{argument}`. "
                    f"Received: {getattr(first, argument)} and "
                    f"{getattr(block, argument)}"
                )


def _epsilon(layers):
    """The one layer-norm epsilon of the model (CTranslate2 has one)."""
    epsilons = {layers["encoder_norm"].epsilon, layers["decoder_norm"].epsilon}
    epsilons |= {
        block.layer_norm_epsilon
        for block in layers["encoder"] + layers["decoder"]
    }
    if len(epsilons) != 1:
        raise ValueError(
            "CTranslate2 takes one layer-norm epsilon. Received: "
            f"{sorted(epsilons)}"
        )
    return float(epsilons.pop())


def _vocabulary(side, tokenizer, embedding):
    """The tokenizer's tokens (id = position), checked against the
    embedding and the reserved ids."""
    tokens = [str(token) for token in tokenizer.vocabulary]
    if len(tokens) != embedding.vocabulary_size:
        raise ValueError(
            f"The {side} vocabulary must have the embedding's "
            f"{embedding.vocabulary_size} tokens. Received: {len(tokens)}"
        )
    if len(set(tokens)) != len(tokens):
        repeated = sorted({t for t in tokens if tokens.count(t) > 1})
        raise ValueError(
            f"CTranslate2 needs distinct tokens. Received: the {side} "
            f"vocabulary repeats {repeated[:5]}"
        )
    for token, index in RESERVED.items():
        if tokens[index] != token:
            raise ValueError(
                f"The {side} vocabulary must have {token} at id {index}. "
                f"Received: {tokens[index]!r}"
            )
    return tokens


def _array(variable):
    """A weight as a float32 NumPy array."""
    return np.asarray(keras.ops.convert_to_numpy(variable), "float32")


def _positions(embedding):
    """The position table `(max_length, D)` of a `PositionalEmbedding`:
    the learned one, or the sinusoids the layer adds, computed by a copy
    of it whose token table is zero (so its output is the positions)."""
    if embedding.positions == "learned":
        return _array(embedding.position_embeddings)
    zero = PositionalEmbedding(
        1,
        embedding.output_dim,
        embedding.max_length,
        positions="sinusoidal",
        scale_embeddings=False,
        embeddings_initializer="zeros",
        dtype="float32",
    )
    ids = np.zeros((1, embedding.max_length), "int32")
    return _array(zero(ids)[0])


def _set_embedding(spec, stack, positions, embedding):
    spec.weight = _array(embedding.token_embeddings)
    stack.scale_embeddings = bool(embedding.scale_embeddings)
    positions.encodings = _positions(embedding)


def _set_layer_norm(spec, weights, name):
    spec.gamma = weights(f"{name}/gamma")
    spec.beta = weights(f"{name}/beta")


def _set_linear(spec, kernel, bias):
    """`kernel` `(in, out)` (flattened) -> CTranslate2's `(out, in)`."""
    spec.weight = np.ascontiguousarray(kernel.T)
    spec.bias = bias


def _projections(weights, name, roles):
    """`MultiHead` projections side by side: kernels `(in, H, Dk)` ->
    `(in, sum of H Dk)`, biases `(H, Dk)` -> `(sum of H Dk,)` (zeros
    for a layer without biases)."""
    kernels, biases = [], []
    for role in roles:
        kernel = weights(f"{name}/{role}_kernel")
        kernel = kernel.reshape(kernel.shape[0], -1)
        bias = weights(f"{name}/{role}_bias", optional=True)
        if bias is None:
            bias = np.zeros(kernel.shape[1], "float32")
        kernels.append(kernel)
        biases.append(bias.reshape(-1))
    return np.concatenate(kernels, axis=1), np.concatenate(biases)


def _output(weights, name):
    """A `MultiHead` output projection `(H, Dk, D)` -> `(H Dk, D)`, and
    its bias `(D,)`."""
    kernel = weights(f"{name}/output_kernel")
    kernel = kernel.reshape(-1, kernel.shape[-1])
    bias = weights(f"{name}/output_bias", optional=True)
    if bias is None:
        bias = np.zeros(kernel.shape[1], "float32")
    return kernel, bias


def _set_self_attention(spec, weights, block):
    name = f"{block}/self_attention"
    _set_layer_norm(spec.layer_norm, weights, f"{name}_norm")
    kernel, bias = _projections(weights, name, ("query", "key", "value"))
    _set_linear(spec.linear[0], kernel, bias)
    _set_linear(spec.linear[1], *_output(weights, name))


def _set_cross_attention(spec, weights, block):
    name = f"{block}/cross_attention"
    _set_layer_norm(spec.layer_norm, weights, f"{name}_norm")
    _set_linear(spec.linear[0], *_projections(weights, name, ("query",)))
    kernel, bias = _projections(weights, name, ("key", "value"))
    _set_linear(spec.linear[1], kernel, bias)
    _set_linear(spec.linear[2], *_output(weights, name))


def _set_feed_forward(spec, weights, block):
    _set_layer_norm(spec.layer_norm, weights, f"{block}/feed_forward_norm")
    for linear, role in ((spec.linear_0, "inner"), (spec.linear_1, "output")):
        name = f"{block}/feed_forward_{role}"
        _set_linear(linear, weights(f"{name}/kernel"), weights(f"{name}/bias"))


class _Weights:
    """The model's weights by path (`"encoder_0/self_attention/
    query_kernel"`), as float32 NumPy arrays."""

    def __init__(self, model):
        self._variables = {
            variable.path: variable for variable in model.weights
        }

    def __call__(self, path, optional=False):
        if path not in self._variables:
            if optional:
                return None
            raise ValueError(
                "The model must come from `build_transformer_translator`. "
                f"Received: a model without the weight {path!r}"
            )
        return _array(self._variables[path])


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("bundle_dir", help="a saved Transformer Translator")
    parser.add_argument("out_dir", help="the CTranslate2 model folder")
    parser.add_argument(
        "--quantization",
        choices=sorted(ACCEPTED_MODEL_TYPES),
        default=None,
        help="CTranslate2's weight type (default: float32, as saved)",
    )
    args = parser.parse_args(argv)
    translator = Translator.load(args.bundle_dir)
    convert(translator, args.out_dir, args.quantization)
    print(args.out_dir)


if __name__ == "__main__":
    main()
