"""`SearchServingModule`: the base of the exports that generate text
(translation, captioning): the search fixed at export, its n-best outputs,
and with sampling the seeds.

A generating export runs `decode` with the search given at export (an
`attention_zoo.decoding.searches` object, or its loose options): greedy
or beam search (`beam_size`, the length and coverage penalties,
`num_results` best hypotheses), or sampling (`sampling`, `temperature`,
`top_k`, `top_p`). A sampling export has two signatures:

- `serving_default` takes the usual inputs, draws a new seed for every
  input in the graph (a stateful TensorFlow op: every call differs) and
  returns it as `seed` (int64 `(B,)`) beside the other outputs;
- `seeded` takes the same inputs and `seed` (int64 `(B,)`, one per input)
  and returns the same outputs: the sample of an input depends only on it
  and its seed, so a client repeats a sample (one `serving_default` gave,
  or one drawn in Python with `seed=[...]`) whatever it is batched with
  (TF Serving's batching) and whichever backend trained the model.

Seeds are taken modulo `2 ** 32` (`attention_zoo.decoding.sampling.
row_seeds`): `-1` and `2 ** 32 - 1` draw alike.
"""

import numpy as np
import tensorflow as tf

from attention_zoo.decoding import searches
from attention_zoo.export.serving_module import ServingModule

SEEDED_SIGNATURE = "seeded"
SEED_SPEC = tf.TensorSpec([None], tf.int64, name="seed")


def best_hypothesis(result, num_results):
    """`decode`'s result for the best hypothesis only: `tokens` `(B, L)`,
    `lengths` `(B,)`, `scores` `(B,)`, `attention` `(B, L, ...)`, as
    `decode` gives them with `num_results=1`."""
    if num_results == 1:
        return result
    return {key: value[:, 0] for key, value in result.items()}


def n_best_outputs(result, detokenize, name):
    """The outputs `name` (tf.string `(B, N)`, best first) and `scores`
    (float32 `(B, N)`, the search's scores) of a result with `N` results
    per input (`tokens` `(B, N, L)`); `detokenize` takes ids `(M, L)` to
    strings `(M,)`."""
    tokens = result["tokens"]
    shape = tf.shape(tokens)
    texts = detokenize(tf.reshape(tokens, [-1, shape[2]]))
    return {
        name: tf.reshape(texts, shape[:2]),
        "scores": tf.cast(result["scores"], tf.float32),
    }


def draw_seeds(count):
    """`count` new seeds, int64 in `[0, 2 ** 32)`, from TensorFlow's
    stateful generator (different at every call of the loaded export)."""
    return tf.random.uniform([count], 0, 2**32, dtype=tf.int64)


class SearchServingModule(ServingModule):
    """A `ServingModule` around a bundle's `decode` and its search.

    A subclass writes `serve` (a `tf.function` on its `input_spec`) as
    `return self.search_outputs(inputs)`, and `outputs(inputs, seed)`:
    the signature's outputs from `self.decode(..., seed)` (see
    `best_hypothesis`, `n_best_outputs`). When its search samples, the
    module also has `seeded`, and `serving_default` returns the seeds it
    drew.

    Args:
        name: str, the module's name.
        bundle: the bundle whose `decode(inputs, search=...)` searches,
            and whose `search_defaults` (a `searches.SearchDefaults`)
            give the default search.
        input_spec: the `tf.TensorSpec` of the signature's input (named).
        jit_compile: bool, XLA-compile the search.
        search: the search (anything `searches.get` takes), or `None`.
        **options: or the search as `decode`'s loose keyword arguments
            (`beam_size`, `length_penalty`, `coverage_penalty`,
            `num_results`, `sampling`, `temperature`, `top_k`, `top_p`);
            a `Sampling` at `"greedy"` or temperature 0 draws nothing (no
            seeds).
    """

    def __init__(
        self, name, bundle, input_spec, *, jit_compile, search=None, **options
    ):
        super().__init__(name=name)
        self._bundle = bundle
        self.search = bundle.search_defaults.resolve(search, **options)
        self._jit_compile = jit_compile
        self.num_results = self.search.num_results
        # "greedy" and temperature 0 are the argmax: nothing is drawn.
        self.samples = isinstance(self.search.canonical(), searches.Sampling)
        if self.samples:
            self.seeded = tf.function(
                self._seeded,
                input_signature=[input_spec, SEED_SPEC],
                autograph=False,
            )

    def decoding_options(self):
        """The search's options, as `metadata.json` records them."""
        return self._bundle.search_defaults.options(self.search)

    def decode(self, inputs, seed=None):
        """The bundle's `decode` of model inputs with the export's search
        (and, sampling, the rows' int64 `seed` `(B,)`)."""
        return self._bundle.decode(
            inputs,
            search=self.search,
            jit_compile=self._jit_compile,
            seed=seed if self.samples else None,
        )

    def search_outputs(self, inputs, seed=None):
        """`outputs(inputs, seed)`; sampling, with the seeds (drawn here
        when `seed` is None) as the output `seed`."""
        if not self.samples:
            return self.outputs(inputs, None)
        if seed is None:
            seed = draw_seeds(tf.shape(inputs)[0])
        return {**self.outputs(inputs, seed), "seed": seed}

    def _seeded(self, inputs, seed):
        check = tf.debugging.assert_equal(
            tf.shape(seed)[0],
            tf.shape(inputs)[0],
            message="`seed` must hold one seed per input",
        )
        with tf.control_dependencies([check]):
            return self.search_outputs(inputs, tf.identity(seed))

    def outputs(self, inputs, seed):
        """The signature's outputs (a subclass writes it)."""
        raise NotImplementedError

    def serving_signatures(self):
        signatures = super().serving_signatures()
        if self.samples:
            signatures[SEEDED_SIGNATURE] = self.seeded
        return signatures

    def warmup_requests(self, inputs):
        """The default's warm-up requests for `inputs` (a list of input
        dicts), and the same through `seeded` when sampling."""
        requests = super().warmup_requests(inputs)
        if self.samples:
            for example in inputs:
                count = len(next(iter(example.values())))
                seed = np.zeros([count], "int64")
                requests.append((SEEDED_SIGNATURE, {**example, "seed": seed}))
        return requests
