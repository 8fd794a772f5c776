"""`attention-zoo translate DIR "text" ...`: run an exported translator.

DIR is a version folder (`saved_models/translation/3`) or the folder that
holds the versions, in which case the highest version is used. Only
TensorFlow and TensorFlow Text are needed, as in TF Serving.
"""

import argparse
import sys

from attention_zoo.export import load_signature
from attention_zoo.export import resolve_version


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="attention-zoo translate",
        description="Translate texts with an exported SavedModel.",
    )
    parser.add_argument("directory", help="export folder or version folder")
    parser.add_argument("texts", nargs="+", help="texts to translate")
    args = parser.parse_args(argv)
    try:
        path = resolve_version(args.directory)
    except FileNotFoundError as error:
        parser.error(str(error))
    import tensorflow as tf

    serve = load_signature(path)
    outputs = serve(text=tf.constant(args.texts))
    for text, translation in zip(args.texts, outputs["translation"].numpy()):
        print(f"{text}\t{translation.decode('utf-8')}")
    sys.stdout.flush()
    return 0
