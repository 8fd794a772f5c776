"""A captioner's fast exports against its graph export, same weights.

Run from the repository root (TensorFlow backend):

    python -m benchmarks.captioning_export_bench \\
        [--model captioning-flickr8k] [--images 0] [--repeats 30] [--out DIR]

`--model` is a shipped model's name or an export folder of a captioner
trained on Flickr8k by `release.build_zoo`'s command. It is exported four
times (`EXPORTS`): as `attention-zoo train --export` writes it on a CPU
(`jit_compile` off, TF Serving's CPU default), with `--jit-compile on`
(the beam search XLA-compiled; the image encoder stays a graph function,
`DecodingAdapter.compile_encode`, since XLA's CPU convolutions are slower
than oneDNN's), and each of the two with `--export-fold-batch-norms`
(`attention_zoo.export.batch_norm_folding`). Then:

1. Quality: each export captions the model's test sample
   (`release.build_zoo.test_sample`: the test images the card scores; the
   first `--images`, 0: all), 32 images a call: BLEU-4 and CIDEr-D
   against the references, and how many captions are the first export's.
2. Speed: the exports' `serving_default` called in process, in
   alternation (`harness.interleaved_samples`), `--repeats` rounds with
   1 and 32 JPEG images a call (cycling through the sample, each call
   made once before): median ms per call and the speed-up over the
   graph export.

With `--out DIR` it writes `DIR/captioning_export_bench.json` and `.txt`.
"""

import os
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import tensorflow as tf  # noqa: E402

from attention_zoo_apps.captioning.captioner import Captioner  # noqa: E402
from attention_zoo_apps.captioning.metrics import caption_metrics  # noqa: E402
from attention_zoo_apps.common import zoo  # noqa: E402
from benchmarks import harness  # noqa: E402
from release import build_zoo  # noqa: E402

# Export name -> its `export` options.
EXPORTS = {
    "float32": dict(jit_compile=False),
    "float32 XLA": dict(jit_compile=True),
    "float32, BN folded": dict(jit_compile=False, fold_batch_norms=True),
    "float32 XLA, BN folded": dict(jit_compile=True, fold_batch_norms=True),
}
BATCHES = (1, 32)


def _parser():
    parser = harness.parser(__doc__, repeats=30)
    parser.add_argument("--model", default="captioning-flickr8k")
    parser.add_argument(
        "--images",
        type=int,
        default=0,
        help="caption the first N images of the test sample (0: all)",
    )
    return parser


def main(argv=None):
    return harness.run(__file__, _parser(), measure, argv)


def measure(args):
    inputs, references = build_zoo.test_sample("captioning-flickr8k")
    images = inputs["image"][: args.images or None]
    references = references[: len(images)]
    captioner = Captioner.from_export(zoo.resolve(args.model))
    result = {"model": args.model, "images": len(images), "quality": []}
    with tempfile.TemporaryDirectory() as folder:
        serves = {}
        for name, options in EXPORTS.items():
            path = os.path.join(folder, name.replace(" ", "-"), "1")
            serves[name] = tf.saved_model.load(
                captioner.export(path, **options)
            ).signatures["serving_default"]
        first = None
        for name, serve in serves.items():
            captions = harness.serve_texts(serve, "image", images, "caption")
            first = first or captions
            scores = caption_metrics(captions, references)
            same = sum(a == b for a, b in zip(first, captions))
            result["quality"].append(
                {
                    "export": name,
                    "bleu_4": scores["bleu_4"],
                    "cider": scores["cider"],
                    "same captions": same,
                }
            )
            print(
                f"{name}: BLEU-4 {scores['bleu_4']:.2f}, CIDEr-D "
                f"{scores['cider']:.3f} on {len(images)} test images, "
                f"{same} captions the first export's",
                flush=True,
            )
        result["rows"] = harness.export_speed_rows(
            serves,
            lambda batch: [{"image": c} for c in _calls(images, batch)],
            "caption",
            BATCHES,
            args.repeats,
        )
    for row in result["rows"]:
        print(
            f"batch {row['batch']}, {row['export']}: {row['ms per call']} "
            f"ms ({row['speed-up']}x)"
        )
    return result


def _calls(images, batch, count=64):
    """Up to `count` calls of `batch` images each, in the sample's order
    (at least one, going round a sample smaller than `batch`)."""
    calls = max(1, min(count, len(images) // batch))
    return [
        tf.constant([images[(start + i) % len(images)] for i in range(batch)])
        for start in range(0, calls * batch, batch)
    ]


if __name__ == "__main__":
    main()
