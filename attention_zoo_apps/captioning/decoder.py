"""The show-attend-tell decoder: an LSTM with soft attention over an image.

Following Xu et al. (2015) and the seeds' lecture notes on spatial
attention, each position `i` of the CNN feature map is one annotation
vector `a_i`. Before each word `t` the decoder looks at the image:

- `alpha_t = softmax_i(score(q_t, a_i))` (this project's attention
  layers; additive by default), `z_t = beta_t * sum_i alpha_ti a_i` with a
  learned gate `beta_t = sigmoid(w^T q_t + b)`. The query is
  the paper's `q_t = h_{t-1}` by default (`query="state"`), or
  `q_t = h_{t-1} + W_q E y_{t-1}` (`query="state_and_word"`). `h_{t-1}`
  has not seen the word just emitted, `y_{t-1}`: with the paper's query the
  decoder chooses where to look for word `t` without knowing word `t - 1`,
  so after `"a red"` it cannot look at the red object to name its shape;
- `h_t, c_t = LSTM([E y_{t-1}, z_t], h_{t-1}, c_t-1)`, starting from
  `h_0 = tanh(W_h mean_i a_i)`, `c_0 = tanh(W_c mean_i a_i)`;
- the "deep output" `p(y_t) = softmax(L_o(E y_{t-1} + L_hz [h_t, z_t]))`.

`prediction="latent"` ties each word to the positions looked at while
emitting it (a latent alignment, as in Deng et al. 2018, "Latent Alignment
and Variational Attention"): the decoder first reads the previous word,
then looks, then predicts the word as a mixture over the positions,

- `h_t, c_t = LSTM([E y_{t-1}, z_{t-1}], h_{t-1}, c_{t-1})` (the previous
  step's context is fed back, `z_0 = 0`);
- `alpha_t`, `z_t` as above with the query `q_t = h_t`;
- `p(y_t) = sum_i alpha_ti softmax(L_o(E y_{t-1} + L_h h_t + L_a a_i))`,
  computed exactly (log-sum-exp over the `L` positions).

With the soft context in the output (`"deep"`), nothing ties a word to the
cells looked at while emitting it: the decoder may read an object early
and name it later. With the mixture, a word is likely only where the
attention lands on cells that predict it, so the heatmap of each word
shows what it names. The cost is a `(B, L, V)` per-position logit table
per image and an `(N, L, V)` softmax per step (see
docs/quality/captioning.md).

`attention=None` gives the no-attention baseline: `z_t` is the mean
feature at every step (and no gate).

`attention_mode="hard"` is the paper's stochastic hard attention
(`HardAttention`, same score): in training each word samples one position
from `alpha_t`, `z_t` is the gated feature there, and the attention learns
by REINFORCE, a loss added in training (`attention_losses`; its baseline
is the non-trainable weight `reward_baseline`). At inference it reads the
most likely position (`hard_inference="argmax"`) or the expectation, so
decoding has no random state. The weights returned are the one-hot
positions read (`alpha_t` for the expectation), and `prediction="latent"`
predicts the word from the position read alone.

Training runs the recurrence over the teacher-forced words (unrolled when
the caption length is static, else with `keras.ops.scan`); decoding
(`step`) runs the same recurrence one word at a time, so both give the
same logits. Dropout acts outside the recurrence (on the word embeddings
and the deep output), which keeps the scanned function free of random
state (as JAX needs).
"""

import keras
from keras import ops

from attention_zoo.checks import check_choice
from attention_zoo.checks import check_non_negative
from attention_zoo.checks import check_positive_int
from attention_zoo.checks import check_rate
from attention_zoo.layers import AdditiveAttention
from attention_zoo.layers import BilinearAttention
from attention_zoo.layers import HardAttention
from attention_zoo_apps.captioning.attention_losses import add_reinforce_loss
from attention_zoo_apps.captioning.attention_losses import attention_penalty
from attention_zoo_apps.captioning.attention_losses import expectation_reads
from attention_zoo_apps.captioning.option_checks import check_attention_mode
from attention_zoo_apps.captioning.option_checks import check_hard_options
from attention_zoo_apps.captioning.option_checks import check_prediction
from attention_zoo_apps.captioning.options import ATTENTIONS
from attention_zoo_apps.captioning.options import QUERIES


@keras.saving.register_keras_serializable(
    package="captioning", name="AttentionLSTMDecoder"
)
class AttentionLSTMDecoder(keras.layers.Layer):
    """Show-attend-tell LSTM decoder over a set of image features.

    Letters: `B` batch, `L` feature positions (`H * W`), `D` feature width,
    `T` caption steps, `V` vocabulary.

    Args:
        vocabulary_size: int, number of word ids (0 is padding).
        embedding_dim: int. Defaults to `256`.
        units: int, LSTM width (and additive attention width). Defaults to
            `512`.
        attention: one of `"additive"`, `"general"`, `"dot"`,
            `"scaled_dot"` or `None` (the mean-feature baseline). `"dot"`
            and `"scaled_dot"` need `units == D`. Defaults to
            `"additive"`.
        dropout: float in `[0, 1)`, on the word embeddings and the deep
            output in training. Defaults to `0.3`.
        attention_regularization: float >= 0, `lambda` of the doubly
            stochastic penalty, added with `add_loss` in training: the
            batch mean of `attention_penalty` divided by each caption's
            length, to match the cross-entropy's averaging over words
            (soft attention; hard attention's weights are one-hot).
            Defaults to `1.0`.
        query: `"state"` (the attention query is the LSTM state alone, as
            in Xu et al. 2015) or `"state_and_word"` (the state plus a
            projection of the previous word's embedding). Defaults to
            `"state"`.
        prediction: `"deep"` (the paper's deep output from the soft
            context) or `"latent"` (read, then look, then predict the word
            as a mixture over the positions; see the module docstring).
            Defaults to `"deep"`.
        attention_mode: `"soft"` (the weighted mean of the features) or
            `"hard"` (one sampled position per word, trained by REINFORCE;
            see the module docstring). Defaults to `"soft"`.
        hard_inference: `"argmax"` or `"expectation"`: what hard attention
            reads outside training. Defaults to `"argmax"`.
        reinforce_weight: float >= 0, `lambda_r` of the REINFORCE term
            (hard attention). Defaults to `0.1`.
        entropy_weight: float >= 0, `lambda_e` of the entropy bonus (hard
            attention). Defaults to `0.002`.
        semi_sampling: float in `[0, 1]`, hard attention: the chance that
            an image reads the expectation, with no REINFORCE term, for a
            training step (Section 4.1; 0.5 there). Defaults to `0.0`.
        **kwargs: base layer arguments.

    Call arguments:
        features: `(B, L, D)` annotation vectors.
        tokens: int `(B, T)`: START then the caption's words (PAD = 0
            after it).
        training: bool.

    Returns:
        `(logits, weights)`: float32 logits `(B, T, V)` and float32
        attention weights `(B, T, L)` (zeros for the baseline).
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim=256,
        units=512,
        attention="additive",
        dropout=0.3,
        attention_regularization=1.0,
        query="state",
        prediction="deep",
        attention_mode="soft",
        hard_inference="argmax",
        reinforce_weight=0.1,
        entropy_weight=0.002,
        semi_sampling=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("vocabulary_size", vocabulary_size)
        check_positive_int("embedding_dim", embedding_dim)
        check_positive_int("units", units)
        check_rate("dropout", dropout)
        check_choice("attention", attention, ATTENTIONS)
        check_non_negative("attention_regularization", attention_regularization)
        check_choice("query", query, QUERIES)
        check_prediction(prediction, attention)
        check_attention_mode(attention_mode, attention)
        check_hard_options(
            hard_inference, reinforce_weight, entropy_weight, semi_sampling
        )
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.attention = attention
        self.dropout = dropout
        self.attention_regularization = attention_regularization
        self.query = query
        self.prediction = prediction
        self.attention_mode = attention_mode
        self.hard_inference = hard_inference
        self.reinforce_weight = reinforce_weight
        self.entropy_weight = entropy_weight
        self.semi_sampling = semi_sampling

    def build(self, features_shape, tokens_shape=None):
        width = features_shape[-1]
        if self.attention in ("dot", "scaled_dot") and width != self.units:
            raise ValueError(
                f"attention={self.attention!r} compares the LSTM state with "
                f"the features directly, so `units` ({self.units}) must "
                f"equal the feature width ({width})."
            )
        policy = self.dtype_policy

        def dense(units, name, activation=None):
            layer = keras.layers.Dense(
                units, activation=activation, dtype=policy, name=name
            )
            return layer

        self.embedding = keras.layers.Embedding(
            self.vocabulary_size,
            self.embedding_dim,
            dtype=policy,
            name="embedding",
        )
        self.embedding.build((None,))
        self.init_h = dense(self.units, "init_h", "tanh")
        self.init_c = dense(self.units, "init_c", "tanh")
        for layer in (self.init_h, self.init_c):
            layer.build((None, width))
        self.cell = keras.layers.LSTMCell(self.units, dtype=policy, name="lstm")
        self.cell.build((None, self.embedding_dim + width))
        self.attention_layer = None
        if self.attention_mode == "hard":
            self.attention_layer = HardAttention(
                self.units if self.attention == "additive" else None,
                score=self.attention,
                inference=self.hard_inference,
                dtype=policy,
                name="attention",
            )
            # b, the REINFORCE baseline: updated in training, not trained.
            # On read, each replica of a tf.distribute strategy keeps its
            # own (no sync inside the step, where it would lose losses
            # added before it), and saving reads their mean.
            with keras.name_scope(self.name, caller=self):
                self.reward_baseline = keras.Variable(
                    initializer="zeros",
                    shape=(),
                    dtype="float32",
                    trainable=False,
                    autocast=False,
                    aggregation="mean",
                    synchronization="on_read",
                    name="reward_baseline",
                )
        elif self.attention == "additive":
            self.attention_layer = AdditiveAttention(
                self.units, dtype=policy, name="attention"
            )
        elif self.attention is not None:
            self.attention_layer = BilinearAttention(
                self.attention, dtype=policy, name="attention"
            )
        if self.attention_layer is not None:
            self.attention_layer.build(
                (None, None, self.units), (None, None, width)
            )
            self.gate = dense(1, "gate", "sigmoid")
            self.gate.build((None, self.units))
            if self.query == "state_and_word":
                self.word_query = keras.layers.Dense(
                    self.units, use_bias=False, dtype=policy, name="word_query"
                )
                self.word_query.build((None, self.embedding_dim))
        self.deep_output = dense(self.embedding_dim, "deep_output")
        if self.prediction == "latent":
            # The context leaves the output: each position's term is added
            # to the deep output of the state inside the mixture.
            self.deep_output.build((None, self.units))
            self.position_output = keras.layers.Dense(
                self.embedding_dim,
                use_bias=False,
                dtype=policy,
                name="position_output",
            )
            self.position_output.build((None, width))
        else:
            self.deep_output.build((None, self.units + width))
        self.logits = keras.layers.Dense(
            self.vocabulary_size, dtype=policy, name="logits"
        )
        self.logits.build((None, self.embedding_dim))
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=policy, name="dropout"
        )

    # -- the recurrence, shared by training and decoding -------------------

    def prepare(self, features):
        """The per-image tensors every step needs: `features`, their
        `mean`, with attention the projected `keys` and, for
        `prediction="latent"`, each position's `position_logits`
        `(B, L, V)` (`L_o L_a a_i`: the logits layer is linear, so this
        term is computed once per image, not per step)."""
        features = ops.cast(features, self.compute_dtype)
        memory = {"features": features, "mean": ops.mean(features, axis=1)}
        if self.attention_layer is not None:
            memory["keys"] = self.attention_layer.precompute_keys(features)
        if self.prediction == "latent":
            kernel = ops.cast(self.logits.kernel, self.compute_dtype)
            memory["position_logits"] = ops.matmul(
                self.position_output(features), kernel
            )
        return memory

    def initial_state(self, memory):
        """`(h_0, c_0)` from the mean feature, and `z_0 = 0` for
        `prediction="latent"`."""
        mean = memory["mean"]
        state = (self.init_h(mean), self.init_c(mean))
        if self.prediction == "latent":
            state += (ops.zeros_like(mean),)
        return state

    def look(self, h, embedded, memory, training=None):
        """The gated context `(N, D)`, float32 weights `(N, L)` and float32
        terms `(N, 2)` for the state `h` (and, with
        `query="state_and_word"`, the word read). The terms are hard
        attention's log-probability of the position read and entropy
        (zeros for soft attention)."""
        query = h
        if self.query == "state_and_word":
            query = h + self.word_query(embedded)
        hard = {
            "return_reinforce_terms": True,
            "read_expectation": memory.get("read_expectation"),
            "training": training,
        }
        context, weights, *terms = self.attention_layer.attend(
            query,
            memory["keys"],
            memory["features"],
            return_attention_scores=True,
            **(hard if self.attention_mode == "hard" else {}),
        )
        context = self.gate(query) * context
        weights = ops.cast(weights, "float32")
        if terms:
            return context, weights, ops.stack(terms, axis=-1)
        return context, weights, _no_terms(weights)

    def recur(self, embedded, state, memory, training=None):
        """One step from embedded words `(N, e)`: `(deep (N, e), state,
        weights (N, L), terms (N, 2))` (`look`'s terms)."""
        if self.prediction == "latent":
            return self._read_then_look(embedded, state, memory, training)
        h, c = state
        if self.attention_layer is None:
            context = memory["mean"]
            weights = ops.zeros(ops.shape(memory["features"])[:2], "float32")
            terms = _no_terms(weights)
        else:
            context, weights, terms = self.look(h, embedded, memory, training)
        inputs = ops.concatenate([embedded, ops.cast(context, h.dtype)], -1)
        output, (h, c) = self.cell(inputs, [h, c])
        deep = embedded + self.deep_output(
            ops.concatenate([output, ops.cast(context, output.dtype)], -1)
        )
        return deep, (h, c), weights, terms

    def _read_then_look(self, embedded, state, memory, training):
        """`prediction="latent"`'s step: the LSTM reads the previous word
        and context, then the new state looks."""
        h, c, context = state
        inputs = ops.concatenate([embedded, ops.cast(context, h.dtype)], -1)
        output, (h, c) = self.cell(inputs, [h, c])
        context, weights, terms = self.look(h, embedded, memory, training)
        context = ops.cast(context, memory["mean"].dtype)
        deep = embedded + self.deep_output(output)
        return deep, (h, c, context), weights, terms

    def word_logits(self, deep, weights, memory):
        """Float32 logits `(..., V)` from the deep outputs `(..., e)`.

        For `prediction="latent"` they are the log-probabilities of the
        mixture `log sum_i alpha_i softmax(L_o deep + position_logits_i)`
        over the weights `(..., L)`.
        """
        logits = ops.cast(self.logits(deep), "float32")
        if self.prediction == "deep":
            return logits
        positions = ops.cast(memory["position_logits"], "float32")
        if len(deep.shape) == 3:  # (B, T, e): the same table at every step
            positions = positions[:, None]
        per_position = ops.log_softmax(
            logits[..., None, :] + positions, axis=-1
        )
        # Renormalised: under mixed precision the weights arrive rounded
        # to bfloat16, and the mixture's probabilities should sum to 1.
        log_weights = ops.log(ops.maximum(weights, 1e-30)) - ops.log(
            ops.sum(weights, axis=-1, keepdims=True)
        )
        return ops.logsumexp(log_weights[..., None] + per_position, axis=-2)

    def embed(self, tokens):
        tokens = ops.cast(tokens, "int32")
        return ops.cast(
            ops.take(self.embedding.embeddings, tokens, axis=0),
            self.compute_dtype,
        )

    def step(self, tokens, state, memory):
        """Decoding: int32 `(N,)` previous words -> `(logits float32
        (N, V), state, weights (N, L))`."""
        deep, state, weights, _ = self.recur(self.embed(tokens), state, memory)
        return self.word_logits(deep, weights, memory), state, weights

    # -- training ---------------------------------------------------------

    def call(self, features, tokens, training=None):
        memory = self.prepare(features)
        if training and self.attention_mode == "hard" and self.semi_sampling:
            memory["read_expectation"] = expectation_reads(self, tokens)
        embedded = self.dropout_layer(self.embed(tokens), training=training)
        deep, weights, terms = self._teacher_forced(embedded, memory, training)
        deep = self.dropout_layer(deep, training=training)
        logits = self.word_logits(deep, weights, memory)
        if training and self.attention_mode == "hard":
            add_reinforce_loss(self, logits, tokens, terms)
        elif (
            training
            and self.attention_layer is not None
            and self.attention_regularization > 0
        ):
            # Per caption word, like the token-averaged cross-entropy it is
            # added to (the paper sums both over the caption).
            steps = ops.not_equal(tokens, 0)
            penalty = attention_penalty(weights, steps) / ops.maximum(
                ops.sum(ops.cast(steps, "float32"), axis=1), 1.0
            )
            self.add_loss(self.attention_regularization * ops.mean(penalty))
        return logits, weights

    def _teacher_forced(self, embedded, memory, training=None):
        """Runs `recur` over `(B, T, e)` -> `(deep (B, T, e), weights
        (B, T, L), terms (B, T, 2))`.

        With a static `T` (batches padded to a fixed length, as
        `make_caption_dataset` does) the steps are unrolled: this
        differentiates under XLA on TensorFlow, whose `while_loop`
        gradients need a fixed trip count. A dynamic `T` uses
        `keras.ops.scan` (graph mode and JAX).
        """
        state = self.initial_state(memory)
        steps = embedded.shape[1]
        if isinstance(steps, int):
            outputs = []
            for t in range(steps):
                deep, state, weights, terms = self.recur(
                    embedded[:, t], state, memory, training
                )
                outputs.append((deep, weights, terms))
            return tuple(ops.stack(x, axis=1) for x in zip(*outputs))
        h0 = state[0]
        zeros_deep = ops.zeros((ops.shape(h0)[0], self.embedding_dim), h0.dtype)
        zeros_weights = ops.zeros(ops.shape(memory["features"])[:2], "float32")
        size = len(state)

        def scan_step(carry, embedded_t):
            deep, state, weights, terms = self.recur(
                embedded_t, carry[:size], memory, training
            )
            carry = (*state, ops.cast(deep, h0.dtype), weights, terms)
            return carry, carry  # Keras' TF scan wants ys shaped as carry

        _, outputs = ops.scan(
            scan_step,
            (*state, zeros_deep, zeros_weights, _no_terms(zeros_weights)),
            ops.transpose(embedded, (1, 0, 2)),
        )
        return tuple(ops.swapaxes(x, 0, 1) for x in outputs[size:])

    def compute_output_spec(self, features, tokens, training=None):
        batch, steps = tokens.shape[0], tokens.shape[1]
        return (
            keras.KerasTensor((batch, steps, self.vocabulary_size), "float32"),
            keras.KerasTensor((batch, steps, features.shape[1]), "float32"),
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "units": self.units,
                "attention": self.attention,
                "dropout": self.dropout,
                "attention_regularization": self.attention_regularization,
                "query": self.query,
                "prediction": self.prediction,
                "attention_mode": self.attention_mode,
                "hard_inference": self.hard_inference,
                "reinforce_weight": self.reinforce_weight,
                "entropy_weight": self.entropy_weight,
                "semi_sampling": self.semi_sampling,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "vocab_size" in config:  # the key before `vocabulary_size`
            config["vocabulary_size"] = config.pop("vocab_size")
        return super().from_config(config)


def _no_terms(weights):
    """Zero REINFORCE terms `(N, 2)` for weights `(N, L)`."""
    return ops.zeros((ops.shape(weights)[0], 2), "float32")
