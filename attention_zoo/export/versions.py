"""Finding the SavedModel to serve in a folder of numbered versions."""

import os


def resolve_version(directory):
    """`directory` itself if it is a SavedModel, else its newest version.

    TF Serving's layout is one folder per model holding numbered version
    folders (`saved_models/<app>/1`, `saved_models/<app>/2`, ...); the
    highest number is the one served.

    Raises:
        FileNotFoundError: `directory` holds neither `saved_model.pb` nor
            a numbered version folder.
    """
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
