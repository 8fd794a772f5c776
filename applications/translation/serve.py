"""`attention-zoo translate DIR "text" ...`: run an exported translator.

DIR is a version folder (`saved_models/translation/3`) or the folder that
holds the versions, in which case the highest version is used. Only
TensorFlow and TensorFlow Text are needed, as in TF Serving.
"""

import sys

from applications.common import serving
from attention_zoo.export import load_signature


def main(argv=None):
    parser = serving.export_parser(
        "attention-zoo translate",
        "Translate texts with an exported SavedModel.",
    )
    parser.add_argument("texts", nargs="+", help="texts to translate")
    args = parser.parse_args(argv)
    path = serving.export_version(parser, args.directory)
    import tensorflow as tf

    serve = load_signature(path)
    outputs = serve(text=tf.constant(args.texts))
    for text, translation in zip(args.texts, outputs["translation"].numpy()):
        print(f"{text}\t{translation.decode('utf-8')}")
    sys.stdout.flush()
    return 0
