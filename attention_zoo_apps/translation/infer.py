"""`attention-zoo translate MODEL "text" ...`: run a translation export.

MODEL is a shipped model's name (`translation-spa-eng`, see
`attention-zoo models`), a version folder (`saved_models/translation/3`)
or the folder that holds the versions, in which case the highest version
is used. Only
TensorFlow and TensorFlow Text are needed, as in TF Serving. A text longer
than the model reads is translated sentence by sentence by the export; one
of which some was still not read (a sentence longer than the model card's
`text_tokens`, or too many sentences) is said on stderr in one line
naming it. Another application's export, a folder without one and an
empty text are refused with one line naming them (exit code 2).
"""

import sys

import tensorflow as tf

from attention_zoo_apps.commands import infer_flags
from attention_zoo_apps.commands import infer_steps
from attention_zoo_apps.common.flag_checks import UsageError
from attention_zoo_apps.translation import flags

PROG = flags.INFER_PROG


def main(argv=None):
    parser = flags.infer_parser()
    args = parser.parse_args(argv)
    with infer_flags.refusals(parser):
        for index, text in enumerate(args.texts, 1):
            if not text.strip():
                raise UsageError(f"text {index} is empty: {text!r}")
        serve = infer_steps.load_export(
            args.directory, "translation", seed=args.seed
        )

        outputs = serve(text=tf.constant(args.texts))
        for text, translation in zip(
            args.texts, outputs["translation"].numpy()
        ):
            print(f"{text}\t{translation.decode('utf-8')}")
        sys.stdout.flush()
        cut = [f"text {row + 1}" for row in infer_steps.truncated_rows(outputs)]
        if cut:
            limits = infer_steps.input_limits(args.directory)
            infer_flags.warn_truncated(PROG, cut, _cut(limits))
        return 0


def _cut(limits):
    """What the warning says of a text the export did not read whole."""
    tokens, count = limits.get("text_tokens"), limits.get("sentences")
    what = f"{tokens} tokens" if tokens else "what the model reads"
    said = f"a sentence is longer than {what}"
    if count:
        said += f" or there are more than {count} sentences"
    return (
        f"{said}: only what the model read is translated (the model "
        "card's input limits)"
    )
