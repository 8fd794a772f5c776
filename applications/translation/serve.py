"""`attention-zoo translate DIR "text" ...`: run an exported translator.

DIR is a version folder (`saved_models/translation/3`) or the folder that
holds the versions, in which case the highest version is used. Only
TensorFlow and TensorFlow Text are needed, as in TF Serving.
"""

import argparse
import os
import sys


def resolve_version(directory):
    """`directory` itself if it is a SavedModel, else its newest version."""
    if os.path.exists(os.path.join(directory, "saved_model.pb")):
        return directory
    versions = (
        sorted(
            (int(name) for name in os.listdir(directory) if name.isdigit()),
        )
        if os.path.isdir(directory)
        else []
    )
    if not versions:
        raise FileNotFoundError(
            f"No SavedModel in {directory!r} (no saved_model.pb and no "
            "numbered version folders)"
        )
    return os.path.join(directory, str(versions[-1]))


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

    from applications.translation.export import load_translation

    serve = load_translation(path)
    outputs = serve(text=tf.constant(args.texts))
    for text, translation in zip(args.texts, outputs["translation"].numpy()):
        print(f"{text}\t{translation.decode('utf-8')}")
    sys.stdout.flush()
    return 0
