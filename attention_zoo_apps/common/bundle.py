"""`SavedBundle`: an application's config, vocabularies and weights in one
folder, saved and loaded the same way by every application.

The folder holds `config.json`, one `SubwordTokenizer` folder per
tokenizer and `model.weights.h5` (with the optimizer's state, so training
can go on). An export's version folder holds the same config and
vocabularies beside the SavedModel, whose variables are the model's
weights: `from_export` (and `from_preset`, by a shipped model's name, see
`attention_zoo_apps.common.zoo`) loads a bundle from it, to translate, caption
or
classify in Python or to fine-tune with `fit`.

A bundle may hold a `tf.distribute.Strategy` (`strategy`, None for the
default): the model is then built, compiled and restored under its scope,
and its datasets batch `global_batch_size` examples, the config's
`batch_size` per replica (see `attention_zoo_apps.common.distribute`). The
model is built under the config's dtype policy, `precision` (see
`attention_zoo_apps.common.precision`).
"""

import os
import shutil

import keras

from attention_zoo.export import read_model_weights
from attention_zoo.export import resolve_version
from attention_zoo.export.atomic_file import atomic_files
from attention_zoo.export.atomic_file import write_bytes
from attention_zoo.export.atomic_file import write_text
from attention_zoo_apps.common import distribute
from attention_zoo_apps.common import export_writing
from attention_zoo_apps.common import precision
from attention_zoo_apps.common import run_files
from attention_zoo_apps.common import run_folder
from attention_zoo_apps.common import run_lock
from attention_zoo_apps.common import training
from attention_zoo_apps.common import zoo
from attention_zoo_apps.common.early_stopping import RunEarlyStopping
from attention_zoo_apps.common.wordpiece import VOCABULARY_FILE
from attention_zoo_apps.common.wordpiece import SubwordTokenizer

CONFIG_FILE = run_folder.CONFIG_FILE


class SavedBundle:
    """Save, load, `fit` and export, the same for every application.

    A subclass sets `application` (its name in `attention-zoo train`),
    `noun` (what errors call it), `config_class` (its `AppConfig`
    dataclass), `examples_class` (what `fit` takes, None when not one
    type) and `tokenizer_dirs` (tokenizer attribute -> sub-folder), and
    says in `input_limits` where its export cuts inputs. It is built as
    `cls(config, strategy=strategy, **tokenizers)`, calls
    `SavedBundle.__init__` first, and writes `make_model` and
    `compile_arguments` (for `build`), the hooks of `fit` (its own class
    docstring says what `fit` takes) and `clear_compiled`; a bundle that
    generates tokens is a `GeneratingBundle`.
    """

    application = None
    noun = "bundle"
    config_class = None
    examples_class = None
    tokenizer_dirs = {"tokenizer": "vocabulary"}
    # The `attention_zoo.export.ServingModule` subclass `export` writes.
    serving_module = None
    clipnorm = 5.0  # of the Adam optimizer `build` compiles with
    strategy = None
    # The epochs the weights have had when a run starts
    # (`run_folder.start`: a finished run's), where `fit_run` resumes.
    initial_epoch = 0

    def __init__(self, config=None, model=None, strategy=None):
        """`config` (None: the `config_class` defaults), an optional
        built `model` and the `tf.distribute.Strategy` to build and train
        under (None: the default)."""
        self.config = config or self.config_class()
        self.model = model
        # True in a bundle whose weights are about to be restored.
        self.restoring = False
        self.strategy = strategy
        self.clear_compiled()

    @property
    def global_batch_size(self):
        """Examples per training step: the config's `batch_size` on each
        of the strategy's replicas."""
        return distribute.global_batch_size(
            self.config.batch_size, self.strategy
        )

    def input_limits(self):
        """Input name -> the length past which the export cuts inputs."""
        return {}

    def warmup_inputs(self):
        """`serving_default` warm-up inputs, one per input bucket: none."""
        return []

    def vocabulary_files(self):
        """The vocabulary files `save_assets` writes, relative to its
        folder (fingerprinted in an export's `metadata.json`)."""
        return [
            f"{folder}/{VOCABULARY_FILE}"
            for folder in self.tokenizer_dirs.values()
        ]

    def save_assets(self, directory):
        """Writes the config and the vocabularies to `directory` (a
        subclass adds its own files). `save` and `fit` call it through
        `write_assets`, which stages them and renames each into place."""
        os.makedirs(directory, exist_ok=True)
        write_text(os.path.join(directory, CONFIG_FILE), self.config.to_json())
        for attribute, folder in self.tokenizer_dirs.items():
            getattr(self, attribute).save(os.path.join(directory, folder))

    def write_assets(self, directory):
        """`save_assets` into a staging folder inside `directory`, then
        each file renamed into place (`atomic_file.atomic_files`): a full
        disk or a kill never leaves half a vocabulary or config (a
        `WriteError` names the file)."""
        with atomic_files(directory) as staging:
            self.save_assets(staging)

    def build(self):
        """Builds the model unless there is one (`make_model`, with the
        config's `seed` set first; the vocabularies must exist) and
        compiles it: Adam at `learning_rate()` with `clipnorm`,
        and `compile_arguments()`. Returns the model."""
        if self.model is None:
            keras.utils.set_random_seed(self.config.seed)
            self.model = self.make_model()
        self.model.compile(
            optimizer=keras.optimizers.Adam(
                self.learning_rate(), clipnorm=self.clipnorm
            ),
            **self.compile_arguments(),
        )
        self.clear_compiled()
        return self.model

    def learning_rate(self):
        """What `build` gives Adam as its learning rate: the config's
        `learning_rate` (a bundle may give a schedule instead)."""
        return self.config.learning_rate

    def ensure_model(self):
        """Builds and compiles the model unless it has an optimizer, under
        the strategy's scope (a model given to the constructor must have
        been built under it) and the config's dtype policy (`precision`),
        whatever the global one."""
        model = self.model
        if (
            distribute.is_tf_strategy(self.strategy)
            and model is not None
            and model.distribute_strategy is not self.strategy
        ):
            raise ValueError(
                "The model was built outside the bundle's strategy: build "
                "it under `strategy.scope()`, or leave `model` out."
            )
        if model is None or model.optimizer is None:
            with distribute.scope(self.strategy):
                with precision.policy_scope(self.config.precision):
                    self.build()
        return self.model

    # -- hooks of `fit` -------------------------------------------------

    def as_examples(self, given):
        """The examples `fit` trains on, from what its caller gave."""
        return given

    def check_examples(self, examples):
        """A `TypeError` unless `examples` is an `examples_class` (when
        the bundle has one)."""
        expected = self.examples_class
        if expected is not None and not isinstance(examples, expected):
            article = "an" if expected.__name__[0] in "AEIOU" else "a"
            raise TypeError(
                f"Expected {article} `{expected.__name__}` (see "
                f"`{expected.__module__}`). Received: "
                f"{type(examples).__name__}"
            )

    def ensure_vocabularies(self, examples):
        """Learns what the bundle lacks (tokenizers, vocabularies) from
        the training `examples`."""
        raise NotImplementedError

    def training_dataset(self, examples):
        """The shuffled training batches of `examples`."""
        return self.dataset(examples, shuffle=True)

    def validation_dataset(self, examples):
        """The validation batches of `examples`."""
        return self.dataset(examples)

    def clear_compiled(self):
        """Drops the functions compiled from the model (after `build` and
        `fit`): the decoding adapter, which caches the compiled searches.
        A bundle caching more extends it."""
        self._adapter = None

    def fit(
        self,
        train,
        validation=None,
        epochs=None,
        checkpoint_dir=None,
        callbacks=(),
        verbose="auto",
        initial_epoch=0,
        patience=None,
    ):
        """Trains on the examples `train` (of the type the bundle's class
        docstring gives), validating on `validation` (the same type; None
        or empty: none); returns the History.

        Checks `train` (`as_examples`, `check_examples`, and not empty:
        else a `ValueError`), learns the vocabularies
        (`ensure_vocabularies`), builds the model (`ensure_model`) and
        trains on `training_dataset(train)`, validating on
        `validation_dataset(validation)` (`fit_datasets`); then
        `clear_compiled`. With `checkpoint_dir`, the vocabularies and
        config are saved there first, the weights every epoch
        (`model.weights.h5`), and an interrupted run restarted with the
        same `checkpoint_dir` resumes from its last finished epoch.
        `epochs` and `initial_epoch` are `keras.Model.fit`'s (the last
        epoch, and the epochs the weights already had). With `patience`,
        training stops once the validation loss has not improved for that
        many epochs and keeps the best epoch's weights.
        """
        train = self.as_examples(train)
        if validation is not None:
            validation = self.as_examples(validation)
        self.check_examples(train)
        if not len(train):
            raise ValueError("`train` is empty.")
        self.ensure_vocabularies(train)
        self.ensure_model()
        validation_data = None
        if validation is not None and len(validation):
            validation_data = self.validation_dataset(validation)
        history = self.fit_datasets(
            self.training_dataset(train),
            validation_data,
            epochs,
            checkpoint_dir,
            callbacks,
            verbose,
            initial_epoch,
            patience,
        )
        self.clear_compiled()
        return history

    def fit_datasets(
        self,
        train,
        validation,
        epochs,
        checkpoint_dir,
        callbacks,
        verbose,
        initial_epoch=0,
        patience=None,
    ):
        """`model.fit` on tf.data datasets, the same for every application.

        Calls `ensure_model` first (callers that make random datasets
        call it before, so the seed `build` sets comes first). With
        `checkpoint_dir`, the assets are saved there, weights are
        checkpointed every epoch and an interrupted run restarted with the
        same directory resumes from its last finished epoch (on a
        multi-worker cluster only the chief writes there, see
        `training.worker_directory`). `epochs` (the last epoch, as in
        `keras.Model.fit`) defaults to the config's; training starts after
        `initial_epoch`. With `patience`, training stops when the
        validation loss has not improved for that many epochs and the best
        epoch's weights are restored (`early_stopping.RunEarlyStopping`,
        its state kept in `checkpoint_dir`). Returns the History.
        """
        self.ensure_model()
        trained = self.training_model()
        # The optimizer's slots come first, as Keras makes them on JAX: made
        # while tracing the first step, they make TensorFlow trace it twice.
        if not trained.optimizer.built:
            with distribute.scope(self.strategy):
                trained.optimizer.build(trained.trainable_variables)
        # The run folder's weights are the whole model's, when `fit`
        # trains a part of it (`training_model`).
        weights_model = None if trained is self.model else self.model
        callbacks = list(callbacks)
        if patience is not None and validation is None:
            raise ValueError(
                "`patience` watches the validation loss: give validation data."
            )
        write_dir = None
        if checkpoint_dir:
            write_dir = training.worker_directory(checkpoint_dir, self.strategy)
        locked = write_dir is not None and write_dir == checkpoint_dir
        if locked:
            stale = run_lock.acquire(write_dir)  # RunFolderBusy
            if stale:
                print(
                    f"Took over the lock of {write_dir} from "
                    f"{run_lock.describe(stale)}, which no longer runs"
                )
        try:
            early_stopping = None
            if patience is not None:
                resume = bool(write_dir) and (
                    initial_epoch > 0 or training.has_backup(write_dir)
                )
                early_stopping = RunEarlyStopping(
                    patience, write_dir, resume, weights_model
                )
            if write_dir:
                # What a resumed run reads is checked before anything is
                # written (a `RunFileError` naming a damaged file).
                run_files.check_resumable(write_dir)
                self.write_assets(write_dir)
                callbacks += training.checkpoint_callbacks(
                    write_dir, weights_model, early_stopping
                )
            elif early_stopping is not None:
                callbacks.append(early_stopping)
            if validation is not None:
                validation = distribute.whole_batches(validation, self.strategy)
            with distribute.fit_scope(self.strategy):
                return trained.fit(
                    distribute.whole_batches(train, self.strategy),
                    validation_data=validation,
                    epochs=epochs or self.config.epochs,
                    initial_epoch=initial_epoch,
                    shuffle=False,  # the datasets shuffle themselves
                    callbacks=callbacks,
                    verbose=verbose,
                )
        finally:
            if locked:
                run_lock.release(write_dir)
            elif write_dir is not None:  # a worker's temporary copy
                shutil.rmtree(write_dir, ignore_errors=True)

    def training_model(self):
        """The model `fit_datasets` trains: the bundle's model, or a model
        sharing all its trainable variables, in the same order, that the
        training and validation datasets feed (a captioner with a frozen
        encoder trains its decoder on cached features)."""
        return self.model

    def require_model(self):
        """The model; a `ValueError` when there is none yet."""
        if self.model is None:
            raise ValueError(f"The {self.noun} has no model: call `fit` first.")
        return self.model

    def export(
        self,
        path,
        *,
        jit_compile=None,
        metrics=None,
        data_fingerprint=None,
        precision="float32",
        fold_batch_norms=False,
    ):
        """Writes the bundle as a SavedModel to `path` (a new version
        folder), atomically: its `serving_module`, whose docstring says
        what the signatures take and return; see `write_export` (and there
        `precision` and `fold_batch_norms`). Loading it needs only
        TensorFlow and TensorFlow Text's ops. Returns `path`."""
        arguments = (path, jit_compile, metrics, data_fingerprint, precision)
        arguments += (fold_batch_norms,)
        return self.write_export(self.serving_module, *arguments)

    def write_export(
        self,
        module_class,
        path,
        jit_compile,
        metrics,
        data_fingerprint,
        precision="float32",
        fold_batch_norms=False,
        **module_options,
    ):
        """The body of `export`: writes the serving module
        `module_class(self, **module_options, jit_compile=...)` to `path`
        with `attention_zoo.export.save_export` (atomically, with the assets,
        `metadata.json` and `warmup_inputs()` as warm-up requests).
        `jit_compile` None: on when a GPU is visible. `precision`
        `"float32"` (the default) or `"int8"`: the model's large `Dense`
        layers as oneDNN int8 matmuls (`attention_zoo.export.int8`; not
        XLA-compiled, so `jit_compile` must not be True), recorded in
        `metadata.json`. `fold_batch_norms`: each convolution's batch
        normalization folded into it, faster on CPU, rounding differently
        (`attention_zoo.export.batch_norm_folding`), listed in
        `metadata.json`. On a backend other than TensorFlow (JAX) the
        export is written by a TensorFlow process from the saved weights
        (`backend_export`). Returns `path`."""
        self.require_model()
        options = (metrics, data_fingerprint, precision, module_options)
        return export_writing.write_export(
            self, module_class, path, jit_compile, *options, fold_batch_norms
        )

    def save(self, directory):
        """Config, vocabularies and weights, for `load`: each file written
        aside and renamed into place (the weights recorded when the folder
        holds a run's `progress.json`, see `run_files`)."""
        self.write_assets(directory)
        if os.path.exists(os.path.join(directory, training.PROGRESS_FILE)):
            run_files.write_weights(
                directory, training.WEIGHTS_FILE, self.model
            )
        else:
            path = os.path.join(directory, training.WEIGHTS_FILE)
            write_bytes(path, run_files.weights_bytes(self.model))

    @classmethod
    def load_assets(cls, directory, strategy=None):
        """A bundle with the saved config and vocabularies, built with
        fresh weights (`fit` with `checkpoint_dir` restores them) under
        `strategy` (None: the default).

        Raises:
            ValueError: naming the file or folder, when the config or a
                vocabulary cannot be read.
        """
        config = run_folder.read_config(directory, cls.config_class)
        tokenizers = {}
        for attribute, folder in cls.tokenizer_dirs.items():
            path = os.path.join(directory, folder)
            try:
                tokenizers[attribute] = SubwordTokenizer.load(path)
            except (OSError, ValueError, TypeError, KeyError) as error:
                raise ValueError(
                    f"{path}: not a readable vocabulary ({error})"
                ) from None
        bundle = cls(config, strategy=strategy, **tokenizers)
        # The weights come from the run: `make_model` need not read
        # pretrained ones (a captioner's ImageNet encoder).
        bundle.restoring = True
        bundle.ensure_model()
        return bundle

    @classmethod
    def from_export(cls, directory, strategy=None):
        """The bundle of the export in `directory` (a version folder, or a
        folder of numbered versions: the newest), with the exported
        weights and a fresh optimizer, under `strategy` (None: the
        default): ready to predict, or to `fit` on new examples (its
        vocabularies are kept: new words go through the subwords).

        Raises:
            FileNotFoundError: no SavedModel in `directory`.
            ValueError: the export is another application's, or has no
                `config.json` beside it, or its weights do not fit the
                config.
        """
        path = resolve_version(directory)
        exported = zoo.exported_application(path)
        if exported != cls.application:
            raise ValueError(
                f"{path} is not an export of {cls.application} "
                f"(its metadata.json names {exported!r})"
            )
        if not os.path.isfile(os.path.join(path, CONFIG_FILE)):
            raise ValueError(f"{path} has no {CONFIG_FILE} beside the model")
        bundle = cls.load_assets(path, strategy)
        read_model_weights(bundle.model, path)
        bundle.clear_compiled()
        return bundle

    @classmethod
    def from_preset(cls, preset, strategy=None):
        """`from_export` of a shipped model's name (`attention-zoo models`
        lists them, see `attention_zoo_apps.common.zoo`) or of an export folder,
        as
        keras-hub's `from_preset` takes a preset's name or path, e.g.
        `Translator.from_preset("translation-spa-eng").translate([...])`.
        """
        return cls.from_export(zoo.resolve(preset), strategy)

    @classmethod
    def load(cls, directory, strategy=None):
        """The bundle written by `save`, under `strategy` (None: the
        default)."""
        bundle = cls.load_assets(directory, strategy)
        with distribute.scope(strategy):  # the optimizer's slots
            training.load_weights(bundle.model, directory)
        return bundle
