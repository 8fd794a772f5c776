"""Latency of an exported translator's `serving_default` signature.

Run from the repository root (TensorFlow backend):

    python benchmarks/translation_export_latency_bench.py
    python benchmarks/translation_export_latency_bench.py --units 512
    python benchmarks/translation_export_latency_bench.py --quick  # smoke

A `Translator` with the synthetic-demo configuration of
`applications/translation/train.py` (`SYNTHETIC_DEFAULTS`: RNN, GRU,
additive attention, embedding 64, units 128, WordPiece vocabularies of at
most 400, `max_length` 24; `--units` and `--embedding-dim` override) is
trained briefly on `data.make_synthetic_pairs` so that greedy decoding
emits END after a realistic number of tokens (an untrained model stops at
once or runs to `max_length`, and the decoding loop stops when every
sentence of the batch has ended, so latency follows the decoded length).
It is exported with `Translator.export`, loaded back with
`tf.saved_model.load` (after `import tensorflow_text`, which registers the
tokenizer ops), and `signatures["serving_default"](text=...)` is timed for
one sentence and for a batch of 64 held-out sentences: p50 and p95 over
`--calls` calls after warm-up. Single-sentence calls cycle through the 64
sentences of the batch. The exported decoder is compiled with XLA once per
input shape (batch size, source length in tokens), so the warm-up calls
every input once first; "1st-shape ms" is the slowest warm-up call, the
cost of the first request with a new shape. The table also gives the
generated lengths: the mean per sentence (END included; the reference
translations' mean is printed for comparison) and the number of decoding
steps of each call (the longest translation of the call, the signature's
`attention.shape[1]`).
"""

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

# Run as a script from the repository root without installing.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from applications.translation import data  # noqa: E402
from applications.translation.config import TranslationConfig  # noqa: E402
from applications.translation.train import SYNTHETIC_DEFAULTS  # noqa: E402
from applications.translation.translator import Translator  # noqa: E402


def train_translator(args):
    """A `Translator` trained for `args.epochs` on synthetic pairs."""
    values = dict(SYNTHETIC_DEFAULTS, epochs=args.epochs, seed=0)
    if args.units is not None:
        values["units"] = args.units
    if args.embedding_dim is not None:
        values["embedding_dim"] = args.embedding_dim
    if args.learning_rate is not None:
        values["learning_rate"] = args.learning_rate
    config = TranslationConfig(**values)
    synthetic = data.make_synthetic_pairs(args.pairs + args.batch, seed=0)
    train, held_out = (
        synthetic.pairs[: args.pairs],
        synthetic.pairs[args.pairs :],
    )
    translator = Translator(config)
    history = translator.fit(train, verbose=0)
    return translator, held_out, history.history


def time_calls(serve, texts_per_call, calls, warmup):
    """Per-call seconds and decoding steps of `serve(text=...)`, and the
    slowest warm-up call.

    The decoder is compiled with XLA for each new input shape (batch,
    source length), so warm-up calls every input once (then `warmup` more
    calls) and the timed calls see compiled shapes only; the slowest
    warm-up call is the cost of a first call with a new shape.
    """
    cold = []
    for i in range(len(texts_per_call) + warmup):
        text = tf.constant(texts_per_call[i % len(texts_per_call)])
        start = time.perf_counter()
        serve(text=text)["translation"].numpy()
        cold.append(time.perf_counter() - start)
    seconds, steps = [], []
    for i in range(calls):
        text = tf.constant(texts_per_call[i % len(texts_per_call)])
        start = time.perf_counter()
        result = serve(text=text)
        result["translation"].numpy()  # wait for the result
        seconds.append(time.perf_counter() - start)
        steps.append(int(result["attention"].shape[1]))
    return np.array(seconds), np.array(steps), max(cold)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--units", type=int, help="RNN units (default: SYNTHETIC_DEFAULTS)"
    )
    parser.add_argument("--embedding-dim", type=int)
    parser.add_argument("--pairs", type=int, help="default 3000")
    parser.add_argument("--epochs", type=int, help="default 2")
    parser.add_argument("--learning-rate", type=float, help="default 1e-3")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes for a smoke test (under a minute)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.units = args.units or 32
        args.embedding_dim = args.embedding_dim or 16
        args.pairs = args.pairs or 1000
        args.epochs = args.epochs or 2
        args.learning_rate = args.learning_rate or 5e-3
        args.calls, args.warmup = 5, 1
    args.pairs = args.pairs or 3000
    args.epochs = args.epochs or 2

    start = time.perf_counter()
    translator, held_out, history = train_translator(args)
    train_seconds = time.perf_counter() - start
    config = translator.config
    sentences = [source for source, _ in held_out]

    # Decoded lengths in-process (END included), the same compiled decoder
    # as the export.
    ids = translator.source_ids(sentences)
    lengths = translator.decode(ids)["lengths"].numpy()
    references = translator.target_tokenizer.tokenize(
        tf.constant([target for _, target in held_out])
    )
    reference_lengths = references.row_lengths().numpy() + 1  # + END

    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "1")
        start = time.perf_counter()
        translator.export(path)
        export_seconds = time.perf_counter() - start
        serve = tf.saved_model.load(path).signatures["serving_default"]
        cases = {
            "1 sentence": [[s] for s in sentences],
            f"batch of {len(sentences)}": [sentences],
        }
        rows = []
        for name, texts in cases.items():
            seconds, steps, cold = time_calls(
                serve, texts, args.calls, args.warmup
            )
            rows.append((name, seconds, steps, len(texts[0]), cold))

    print(
        f"model {config.model} ({config.cell}, {config.attention} attention,"
        f" bidirectional={config.bidirectional}), embedding "
        f"{config.embedding_dim}, units {config.units}, vocab source "
        f"{translator.source_tokenizer.vocabulary_size} / target "
        f"{translator.target_tokenizer.vocabulary_size}, max_length "
        f"{config.max_length}, {translator.model.count_params():,} params"
    )
    print(
        f"trained {args.epochs} epoch(s) on {args.pairs} synthetic pairs in "
        f"{train_seconds:.0f} s (last loss {history['loss'][-1]:.3f}, "
        f"accuracy {history['accuracy'][-1]:.3f}); export {export_seconds:.0f}"
        f" s; generated length (END incl.) mean {lengths.mean():.2f}, "
        f"min {lengths.min()}, max {lengths.max()} over {len(lengths)} "
        f"held-out sentences (references: mean "
        f"{reference_lengths.mean():.2f})"
    )
    print(
        f"\n{'call':<14}{'calls':>6}{'p50 ms':>9}{'p95 ms':>9}"
        f"{'ms/sentence':>13}{'mean steps':>12}{'1st-shape ms':>14}"
    )
    for name, seconds, steps, per_call, cold in rows:
        p50, p95 = np.percentile(seconds * 1e3, [50, 95])
        print(
            f"{name:<14}{len(seconds):>6}{p50:>9.2f}{p95:>9.2f}"
            f"{p50 / per_call:>13.3f}{steps.mean():>12.2f}"
            f"{cold * 1e3:>14.0f}"
        )
    return rows


if __name__ == "__main__":
    main()
