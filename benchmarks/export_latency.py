"""Exported-model latency, p50 / p95, of every application (issue 7).

Run from the repository root (TensorFlow backend):

    python -m benchmarks.export_latency [--out DIR]
    python -m benchmarks.export_latency --apps translation ehr --repeats 50
    python -m benchmarks.export_latency --apps translation --units 512

Each application is built with the small settings of its `train.py`
(`SYNTHETIC_DEFAULTS`, what `attention-zoo train APP` uses on generated
data) and trained for `--epochs` (default 1) on its default generated
data, so that sizes are realistic and the decoders stop after a realistic
number of tokens (the decoding loops stop once every row has emitted END);
quality is not the point (`--units` and `--embedding-dim` override those
sizes in every application whose settings have them, to see how latency
grows with the model):

- translation: RNN encoder-decoder (bidirectional GRU, additive
  attention), embedding 64, units 128, WordPiece vocabularies of at most
  400, `max_length` 24, greedy decoding; 6,000 generated pairs split
  90 / 5 / 5 as `train.py` does; inputs: test-split sentences.
- entailment: decomposable attention, embedding 64, hidden units 100,
  vocabulary of at most 500, `max_length` 64; 8,000 generated pairs,
  90 % trained; inputs: 1,000 pairs generated with seed 1 (the test split).
- captioning: small CNN on 32 px images (an 8 x 8 grid), additive
  attention, embedding 64, units 128, vocabulary of at most 200,
  `max_length` 10, beam search of 3 (the export's and `train.py`'s
  default); 3,600 of 4,000 generated images trained; inputs: PNG bytes of
  images generated with seed 1.
- ehr: multi-head attention encoder, embedding 32, units 32, 4 heads,
  `max_events` 256, notes (at most 256 WordPiece tokens); 1,500 generated
  patients split 80 / 10 / 10 by patient; inputs: test patients, each
  call's event columns padded to its longest record.

Each model is exported twice, `bundle.export(path, jit_compile=False)` and
`jit_compile=True`, loaded with `tf.saved_model.load` (after
`import tensorflow_text`, which registers the tokenizer ops) and its
`signatures["serving_default"]` is called with one example (cycling through
the first `--batch` held-out examples) and with a batch of them. Warm-up
calls every input once (XLA compiles once per input shape, and each
sentence or record length is a shape) and then `--warmup` more times; "cold
ms" is the slowest warm-up call, the cost of a first request with a new
shape (the first call, which traces the graph too, for the batch). Then
all configurations are timed in alternation (`harness.interleaved_samples`):
each of `--repeats` rounds calls every (application, jit, batch) once. A
call ends when its outputs are NumPy arrays. The Markdown table gives p50
and p95 per call, the p50 per example of a batch, the cold calls and, for
the decoders, the mean decoding steps per call (the call's longest output,
END included).
"""

import os
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402, F401  (registers the tokenizer ops)

from attention_zoo_apps import registry  # noqa: E402
from attention_zoo_apps.captioning import train as captioning_train  # noqa: E402
from attention_zoo_apps.captioning.synthetic import make_synthetic_shapes  # noqa: E402
from attention_zoo_apps.ehr import data as ehr_data  # noqa: E402
from attention_zoo_apps.ehr import train as ehr_train  # noqa: E402
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients  # noqa: E402
from attention_zoo_apps.entailment import data as entailment_data  # noqa: E402
from attention_zoo_apps.entailment import synthetic as entailment_synthetic  # noqa: E402
from attention_zoo_apps.entailment import train as entailment_train  # noqa: E402
from attention_zoo_apps.translation import data as translation_data  # noqa: E402
from attention_zoo_apps.translation import synthetic as translation_synthetic  # noqa: E402
from attention_zoo_apps.translation import train as translation_train  # noqa: E402
from benchmarks import harness  # noqa: E402

APPLICATIONS = registry.APPLICATIONS


def _bundle(app, defaults, options):
    """APP's bundle with its `train.py`'s settings for generated data
    (`defaults`), seed 0 and `options`: `epochs`, and the sizes in it
    that `defaults` names (`units`, `embedding_dim`)."""
    bundle_class = registry.get(app).bundle_class()
    settings = dict(defaults, epochs=options["epochs"], seed=0)
    settings.update(
        (key, value)
        for key, value in options.items()
        if key in defaults and value is not None
    )
    return bundle_class(bundle_class.config_class(**settings))


def prepare_translation(options):
    """`(translator, held-out inputs -> signature kwargs, steps)`."""
    pairs = translation_synthetic.make_synthetic_pairs(6000, seed=0).pairs
    train, _, test = translation_data.split_pairs(
        pairs, 0.05, 0.05, seed=0, group_by="source"
    )
    translator = _bundle(
        "translation", translation_train.SYNTHETIC_DEFAULTS, options
    )
    translator.fit(train, verbose=0)
    sentences = [source for source, _ in test]

    def inputs(indices):
        return {"text": tf.constant([sentences[i] for i in indices])}

    def steps(result):  # the longest translation of the call, END included
        return result["attention"].shape[1]

    return translator, inputs, steps


def prepare_entailment(options):
    generated = entailment_synthetic.make_synthetic_entailment(8000, seed=0)
    train, _ = entailment_data.split_examples(generated.examples, 0.1, seed=0)
    test = entailment_synthetic.make_synthetic_entailment(1000, seed=1).examples
    classifier = _bundle(
        "entailment", entailment_train.SYNTHETIC_DEFAULTS, options
    )
    classifier.fit(train, verbose=0)

    def inputs(indices):
        return {
            "premise": tf.constant([test.premises[i] for i in indices]),
            "hypothesis": tf.constant([test.hypotheses[i] for i in indices]),
        }

    return classifier, inputs, None


def prepare_captioning(options):
    captioner = _bundle(
        "captioning", captioning_train.SYNTHETIC_DEFAULTS, options
    )
    size = captioner.config.image_size
    shapes = make_synthetic_shapes(4000, size, seed=0)
    captioner.fit(
        shapes.images[:3600], [[c] for c in shapes.captions[:3600]], verbose=0
    )
    test = make_synthetic_shapes(400, size, seed=1).images
    pngs = [
        tf.io.encode_png(tf.cast(np.round(image * 255), tf.uint8)).numpy()
        for image in test
    ]

    def inputs(indices):
        return {"image": tf.constant([pngs[i] for i in indices])}

    def steps(result):  # the longest caption of the call, END included
        return int(
            tf.reduce_max(
                tf.reduce_sum(tf.cast(result["tokens"] != "", tf.int32), axis=1)
            )
        )

    return captioner, inputs, steps


def prepare_ehr(options):
    records = make_synthetic_patients(1500, seed=0).records
    train, _, test = ehr_data.split_patients(records, 0.1, 0.1, seed=0)
    risk_model = _bundle("ehr", ehr_train.SYNTHETIC_DEFAULTS, options)
    risk_model.fit(train, verbose=0)

    def inputs(indices):
        width = max(len(test.codes[i]) for i in indices)
        codes = np.full((len(indices), width), "", object)
        values = np.zeros((len(indices), width), "float32")
        times = np.zeros((len(indices), width), "float32")
        for row, i in enumerate(indices):
            count = len(test.codes[i])
            codes[row, :count] = test.codes[i]
            values[row, :count] = test.values[i]
            times[row, :count] = test.times[i]
        return {
            "codes": tf.constant(codes, tf.string),
            "values": tf.constant(values),
            "times": tf.constant(times),
            "prediction_time": tf.constant(
                test.prediction_times[list(indices)], tf.float32
            ),
            "note": tf.constant([test.notes[i] for i in indices]),
        }

    return risk_model, inputs, None


PREPARE = {
    "translation": prepare_translation,
    "entailment": prepare_entailment,
    "captioning": prepare_captioning,
    "ehr": prepare_ehr,
}


def serving_runner(serve, calls):
    """A `harness.cycling` runner calling a signature on the input dicts
    `calls` in turn; a call waits for every output as a NumPy array and
    returns the outputs."""

    def run(kwargs):
        result = serve(**kwargs)
        for value in result.values():
            value.numpy()
        return result

    return harness.cycling(run, calls)


def warm_up(runner, calls, extra, steps):
    """Calls `runner` once per input (`calls` of them), then `extra` more
    times; returns the slowest call (s) and the mean decoding steps (None
    without `steps`)."""
    seconds, counts = [], []
    for _ in range(calls + extra):
        start = time.perf_counter()
        result = runner()
        seconds.append(time.perf_counter() - start)
        if steps is not None:
            counts.append(steps(result))
    return max(seconds), (np.mean(counts) if counts else None)


def load_runners(app, args, directory):
    """Trains `app`, exports it with XLA off and on, loads both and warms
    them up; returns `{(app, jit, batch): (runner, cold s, steps)}`."""
    start = time.perf_counter()
    options = dict(
        epochs=args.epochs, units=args.units, embedding_dim=args.embedding_dim
    )
    bundle, inputs, steps = PREPARE[app](options)
    trained = time.perf_counter() - start
    indices = list(range(args.batch))
    cases = {1: [inputs([i]) for i in indices], args.batch: [inputs(indices)]}
    loaded = {}
    for jit in (False, True):
        path = os.path.join(directory, app, "on" if jit else "off")
        start = time.perf_counter()
        bundle.export(path, jit_compile=jit)
        exported = time.perf_counter() - start
        serve = tf.saved_model.load(path).signatures["serving_default"]
        for batch, calls in cases.items():
            runner = serving_runner(serve, calls)
            cold, mean_steps = warm_up(runner, len(calls), args.warmup, steps)
            loaded[(app, jit, batch)] = (runner, cold, mean_steps)
        print(
            f"{app}: {bundle.model.count_params():,} params, trained "
            f"{trained:.0f} s, export (jit {'on' if jit else 'off'}) "
            f"{exported:.0f} s",
            flush=True,
        )
    return loaded


def print_table(apps, batch, loaded, samples):
    """The Markdown table it prints."""
    print(
        f"\n| application | jit | batch 1 p50 ms | batch 1 p95 ms | "
        f"batch {batch} p50 ms | batch {batch} p95 ms | ms/example at "
        f"{batch} | cold batch 1 ms | cold batch {batch} ms | decoding "
        f"steps 1 / {batch} |"
    )
    print("| --- | --- |" + " ---: |" * 8)
    for app in apps:
        for jit in (False, True):
            one, many = (app, jit, 1), (app, jit, batch)
            p50, p95 = np.percentile(samples[one] * 1e3, [50, 95])
            q50, q95 = np.percentile(samples[many] * 1e3, [50, 95])
            steps = loaded[one][2], loaded[many][2]
            shown = "-"
            if steps[0] is not None:
                shown = f"{steps[0]:.1f} / {steps[1]:.0f}"
            print(
                f"| {app} | {'on' if jit else 'off'} | {p50:.2f} | "
                f"{p95:.2f} | {q50:.2f} | {q95:.2f} | {q50 / batch:.3f} | "
                f"{loaded[one][1] * 1e3:.0f} | {loaded[many][1] * 1e3:.0f} "
                f"| {shown} |"
            )


def main(argv=None):
    parser = harness.parser(__doc__, repeats=100)
    parser.add_argument(
        "--apps", nargs="+", choices=APPLICATIONS, default=list(APPLICATIONS)
    )
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument(
        "--units",
        type=int,
        help="RNN / encoder units (default: each train.py's)",
    )
    parser.add_argument(
        "--embedding-dim", type=int, help="default: each train.py's"
    )
    return harness.run(__file__, parser, measure, argv)


def measure(args):
    """Per-call seconds of every `(app, jit, batch)`, in arrays."""
    loaded = {}
    with tempfile.TemporaryDirectory() as directory:
        for app in args.apps:
            loaded.update(load_runners(app, args, directory))
        runners = {key: value[0] for key, value in loaded.items()}
        start = time.perf_counter()
        samples = {
            key: np.array(seconds)
            for key, seconds in harness.interleaved_samples(
                runners, args.repeats
            ).items()
        }
    print(
        f"timed {args.repeats} rounds of {len(runners)} configurations in "
        f"{time.perf_counter() - start:.0f} s"
    )
    print_table(args.apps, args.batch, loaded, samples)
    return samples


if __name__ == "__main__":
    main()
