"""`build_decomposable_attention`: attend, compare, aggregate (Parikh 2016).

With premise words `a_1..a_m` and hypothesis words `b_1..b_n` (embedded,
then projected to `hidden_units`), the textbook's equations 15.46-15.53:

- attend: `e_ij = F(a_i)^T F(b_j)`; `beta_i` = the hypothesis aligned to
  `a_i`, `alpha_j` = the premise aligned to `b_j` (`SoftAlignment`);
- compare: `v_A,i = G([a_i, beta_i])`, `v_B,j = G([b_j, alpha_j])`;
- aggregate: `v_A = sum_i v_A,i`, `v_B = sum_j v_B,j` (padding left out),
  `y = H([v_A, v_B])`.

`F`, `G` and `H` are two-layer ReLU networks with dropout, shared between
the two sentences. With `intra_attention=True` each sentence first attends
to itself (`IntraAttention`, distance-biased) and the model reads
`[a_i, a'_i]`. With `attention=False` the model is the no-attention
baseline: the same embeddings and networks, but each word is compared
with nothing (`v_A,i = G(a_i)`), so the classifier sees two bags of words.
"""

import keras
from keras import ops

from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate
from attention_zoo.layers import IntraAttention
from attention_zoo.layers import SoftAlignment

ALIGNMENT_LAYER = "attend"


@keras.saving.register_keras_serializable(
    package="entailment", name="MaskedSum"
)
class MaskedSum(keras.layers.Layer):
    """Sums `(B, T, d)` over time, skipping masked steps -> `(B, d)`.

    The aggregate step of decomposable attention (eq. 15.49). The Keras
    mask of the input is used automatically.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is not None:
            inputs = inputs * ops.cast(ops.expand_dims(mask, -1), inputs.dtype)
        return ops.sum(inputs, axis=1)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], inputs_shape[-1])


def build_decomposable_attention(
    vocabulary_size,
    embedding_dim=300,
    hidden_units=200,
    intra_attention=False,
    dropout=0.2,
    num_classes=3,
    attention=True,
    embeddings=None,
    max_distance=10,
    trainable_embeddings=True,
    name="decomposable_attention",
):
    """The decomposable attention model of Parikh et al. (2016).

    Args:
        vocabulary_size: int, number of token ids (id 0 is padding).
        embedding_dim: int, word vector size. Defaults to `300`.
        hidden_units: int, width of the projection and of `F`, `G`, `H`.
            Defaults to `200`.
        intra_attention: bool, add intra-sentence attention. Defaults to
            `False`.
        dropout: float in `[0, 1)`, dropout before each layer of `F`, `G`
            and `H`. Defaults to `0.2`.
        num_classes: int. Defaults to `3`.
        attention: bool; `False` builds the no-attention baseline.
            Defaults to `True`.
        embeddings: optional float array `(vocabulary_size,
            embedding_dim)` to start the (trainable) embeddings from,
            e.g. GloVe vectors from
            `attention_zoo_apps.common.word_vectors.load_word_vectors`.
        max_distance: int, see `IntraAttention`. Defaults to `10`.
        trainable_embeddings: bool; `False` keeps the word vectors fixed
            (random or pretrained) and trains only the projection and the
            networks, as the paper does with GloVe; on small training sets
            it also curbs overfitting. Defaults to `True`.
        name: model name.

    Returns:
        A `keras.Model` with inputs `{"premise": (B, m), "hypothesis": (B,
        n)}` (int32 ids, 0 = padding) and output the class probabilities
        `(B, num_classes)` (float32, also under mixed precision). Use
        `alignment_model` for a model that also returns the alignment.

    Example:

    ```python
    model = build_decomposable_attention(vocabulary_size=1000)
    model.compile("adam", "sparse_categorical_crossentropy")
    probabilities = model({"premise": ids_a, "hypothesis": ids_b})
    ```
    """
    for arg, value in (
        ("vocabulary_size", vocabulary_size),
        ("embedding_dim", embedding_dim),
        ("hidden_units", hidden_units),
        ("num_classes", num_classes),
        ("max_distance", max_distance),
    ):
        check_positive_int(arg, value)
    check_rate("dropout", dropout)
    initializer = "uniform" if trainable_embeddings else "random_normal"
    if embeddings is not None:
        if tuple(embeddings.shape) != (vocabulary_size, embedding_dim):
            raise ValueError(
                "`embeddings` must have shape (vocabulary_size, "
                f"embedding_dim) = {(vocabulary_size, embedding_dim)}. "
                f"Received: embeddings.shape={tuple(embeddings.shape)}"
            )
        initializer = keras.initializers.Constant(embeddings)

    premise = keras.Input((None,), dtype="int32", name="premise")
    hypothesis = keras.Input((None,), dtype="int32", name="hypothesis")
    embed = keras.layers.Embedding(
        vocabulary_size,
        embedding_dim,
        mask_zero=True,
        embeddings_initializer=initializer,
        trainable=trainable_embeddings,
        name="embedding",
    )
    project = keras.layers.Dense(
        hidden_units, use_bias=False, name="projection"
    )
    a, b = project(embed(premise)), project(embed(hypothesis))
    networks = dict(key_units=(hidden_units, hidden_units), dropout=dropout)
    if intra_attention:
        intra = IntraAttention(
            max_distance=max_distance, name="intra_attention", **networks
        )
        join = keras.layers.Concatenate(name="with_phrase")
        a, b = join([a, intra(a)]), join([b, intra(b)])
    if attention:
        beta, alpha = SoftAlignment(name=ALIGNMENT_LAYER, **networks)(
            [a, b], return_attention_scores=True
        )[:2]
        join = keras.layers.Concatenate(name="with_aligned")
        a, b = join([a, beta]), join([b, alpha])
    compare = _mlp(hidden_units, dropout, "compare")
    total = MaskedSum(name="aggregate")
    v_a, v_b = total(_apply(compare, a)), total(_apply(compare, b))
    hidden = keras.layers.Concatenate(name="pair")([v_a, v_b])
    hidden = _apply(_mlp(hidden_units, dropout, "classify"), hidden)
    logits = keras.layers.Dense(num_classes, name="logits")(hidden)
    probabilities = keras.layers.Activation(
        "softmax", dtype="float32", name="probabilities"
    )(logits)
    return keras.Model(
        {"premise": premise, "hypothesis": hypothesis}, probabilities, name=name
    )


def alignment_model(model):
    """A model sharing `model`'s weights with outputs `{"probabilities":
    (B, C), "alignment": (B, m, n)}`, where row `i` of the alignment holds
    the weights of `beta_i` over the hypothesis words (zeros on padding).

    Raises:
        ValueError: `model` has no attention (the baseline).
    """
    try:
        layer = model.get_layer(ALIGNMENT_LAYER)
    except ValueError:
        raise ValueError(
            "This model has no alignment: it was built with `attention=False`."
        ) from None
    alignment = layer.output[2]
    return keras.Model(
        model.inputs,
        {"probabilities": model.output, "alignment": alignment},
        name=f"{model.name}_with_alignment",
    )


def _mlp(units, dropout, name):
    """Two ReLU layers with dropout before each (the paper's F, G, H)."""
    layers = []
    for index in range(2):
        layers.append(
            keras.layers.Dropout(dropout, name=f"{name}_dropout_{index}")
        )
        layers.append(
            keras.layers.Dense(
                units, activation="relu", name=f"{name}_dense_{index}"
            )
        )
    return layers


def _apply(layers, x):
    for layer in layers:
        x = layer(x)
    return x
