"""`SavedBundle`: an application's config, vocabularies and weights in one
folder, saved and loaded the same way by every application.

The folder holds `config.json`, one `SubwordTokenizer` folder per
tokenizer and `model.weights.h5` (with the optimizer's state, so training
can go on).
"""

import os

from applications.common import training
from applications.common.wordpiece import SubwordTokenizer

CONFIG_FILE = "config.json"


class SavedBundle:
    """Save, load and `fit` for `Translator`, `EntailmentClassifier`,
    `Captioner`, `RiskModel`.

    A subclass sets `config_class` (its `AppConfig` dataclass) and
    `tokenizer_dirs` (tokenizer attribute -> sub-folder); it is built as
    `cls(config, **tokenizers)` and has `build()` and a `model`.
    """

    config_class = None
    tokenizer_dirs = {"tokenizer": "vocabulary"}

    def save_assets(self, directory):
        """Writes the config and the vocabularies to `directory`."""
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, CONFIG_FILE), "w") as f:
            f.write(self.config.to_json())
        for attribute, folder in self.tokenizer_dirs.items():
            getattr(self, attribute).save(os.path.join(directory, folder))

    def ensure_model(self):
        """Builds and compiles the model unless it has an optimizer."""
        if self.model is None or self.model.optimizer is None:
            self.build()
        return self.model

    def fit_datasets(
        self, train, validation, epochs, checkpoint_dir, callbacks, verbose
    ):
        """`model.fit` on tf.data datasets, the same for every application.

        Calls `ensure_model` first (callers that make random datasets
        call it before, so the seed `build` sets comes first). With
        `checkpoint_dir`, the assets are saved there, weights are
        checkpointed every epoch and an interrupted run restarted with the
        same directory resumes from its last finished epoch. `epochs`
        defaults to the config's. Returns the History.
        """
        self.ensure_model()
        callbacks = list(callbacks)
        if checkpoint_dir:
            self.save_assets(checkpoint_dir)
            callbacks += training.checkpoint_callbacks(checkpoint_dir)
        return self.model.fit(
            train,
            validation_data=validation,
            epochs=epochs or self.config.epochs,
            shuffle=False,  # the datasets shuffle themselves
            callbacks=callbacks,
            verbose=verbose,
        )

    def save(self, directory):
        """Config, vocabularies and weights, for `load`."""
        self.save_assets(directory)
        self.model.save_weights(os.path.join(directory, training.WEIGHTS_FILE))

    @classmethod
    def load_assets(cls, directory):
        """A bundle with the saved config and vocabularies, built with
        fresh weights (`fit` with `checkpoint_dir` restores them)."""
        with open(os.path.join(directory, CONFIG_FILE)) as f:
            config = cls.config_class.from_json(f.read())
        tokenizers = {
            attribute: SubwordTokenizer.load(os.path.join(directory, folder))
            for attribute, folder in cls.tokenizer_dirs.items()
        }
        bundle = cls(config, **tokenizers)
        bundle.build()
        return bundle

    @classmethod
    def load(cls, directory):
        """The bundle written by `save`."""
        bundle = cls.load_assets(directory)
        training.load_weights(bundle.model, directory)
        return bundle
