"""`ToyBundle`: the part of an application bundle `save_export` uses (a
config, a vocabulary file, input limits), for the export tests."""

import json
import os


class _ToyConfig:
    def to_json(self):
        return json.dumps({"units": 4})


class ToyBundle:
    """The part of a bundle `save_export` uses."""

    application = "toy"
    config = _ToyConfig()

    def __init__(self, fail=False):
        self.fail = fail

    def save_assets(self, directory):
        with open(os.path.join(directory, "config.json"), "w") as f:
            f.write(self.config.to_json())
        with open(os.path.join(directory, "vocabulary.txt"), "w") as f:
            f.write("[PAD]\n[UNK]\n")
        if self.fail:
            raise RuntimeError("disk full")

    def vocabulary_files(self):
        return ["vocabulary.txt"]

    def input_limits(self):
        return {"x": 8}
