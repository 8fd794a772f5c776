"""`attention-zoo caption MODEL image.jpg [image2.png ...]`: run a
captioning export.

MODEL is a shipped model's name (`captioning-flickr8k`, see `attention-zoo
models`), a version folder (`saved_models/captioning/3`) or the folder that
holds the versions, in which case the highest version is used. The raw
bytes of each file go to the SavedModel's `serving_default`, which decodes
and resizes them itself; only TensorFlow and TensorFlow Text are needed, as
in TF Serving. One line per image is printed: `path<TAB>caption`.

`--plot out.png` writes the show-attend-tell figure of each image (the
image, then each generated word's attention over it): `out.png` for the
first image, `out-2.png`, `out-3.png`, ... for the next ones. A caption
that reached the longest the model writes (the model card's
`caption_tokens`) without ending was cut there: stderr says so, one line
naming the images. A missing or
unreadable image file is reported by name, with exit code 2; so are another
application's export and a folder without one (one line).
"""

import os
import sys

import tensorflow as tf

from attention_zoo_apps.captioning import flags
from attention_zoo_apps.captioning.images import check_images
from attention_zoo_apps.captioning.overlays import plot_tokens_over_image
from attention_zoo_apps.commands import infer_flags
from attention_zoo_apps.commands import infer_steps

PROG = flags.INFER_PROG


def plot_paths(path, count):
    """`count` PNG paths for `--plot path`: `path` itself, then `stem-2`,
    `stem-3`, ... with the same extension (`.png` where `path` has none,
    as matplotlib adds it)."""
    stem, extension = os.path.splitext(path)
    extension = extension or ".png"
    return [stem + extension] + [
        f"{stem}-{i}{extension}" for i in range(2, count + 1)
    ]


def main(argv=None):
    parser = flags.infer_parser()
    args = parser.parse_args(argv)
    with infer_flags.refusals(parser):
        serve = infer_steps.load_export(
            args.directory, "captioning", seed=args.seed
        )

        _, bad = check_images(args.images)
        if bad:
            for path, reason in bad.items():
                print(
                    f"{parser.prog}: error: cannot read image {path}: {reason}",
                    file=sys.stderr,
                )
            return 2

        encoded = []
        for path in args.images:
            with open(path, "rb") as f:
                encoded.append(f.read())
        outputs = serve(image=tf.constant(encoded))
        captions = [text.decode("utf-8") for text in outputs["caption"].numpy()]
        for path, caption in zip(args.images, captions):
            print(f"{path}\t{caption}")
        infer_flags.warn_truncated(
            PROG,
            [args.images[row] for row in _cut_rows(outputs)],
            _cut(infer_steps.input_limits(args.directory)),
        )
        if args.plot:
            paths = plot_paths(args.plot, len(args.images))
            for index, (image_bytes, caption) in enumerate(
                zip(encoded, captions)
            ):
                written = plot_tokens_over_image(
                    image_bytes,
                    outputs["tokens"][index].numpy(),
                    outputs["attention"][index].numpy(),
                    paths[index],
                    caption,
                )
                print(f"wrote {written}")
        sys.stdout.flush()
        return 0


def _cut_rows(outputs):
    """The images whose caption was cut at the longest length: the
    export's `truncated`, or for exports written before it had one, the
    captions without `[END]` among their `tokens`."""
    if "truncated" in outputs:
        return infer_steps.truncated_rows(outputs)
    tokens = outputs["tokens"].numpy()
    return [row for row in range(len(tokens)) if b"[END]" not in tokens[row]]


def _cut(limits):
    """What the warning says of a cut caption, with the export's limit."""
    longest = "the longest caption"
    if "caption_tokens" in limits:
        longest = f"{limits['caption_tokens']} tokens"
    return (
        f"the caption was cut at {longest}, the most the model writes "
        "(the model card's input limits), before it ended"
    )
