"""The flags of a tiny `attention-zoo train APP` run on each
application's generated data (a few seconds to a minute on 2 cores), for
the tests that run the command itself, and such runs built once per test
session for every test process (`finished_run`, `interrupted_run`).

`train(app, run_dir, *flags)` runs `attention-zoo train APP` in process
with `TINY_FLAGS[app]`. `record_fits(bundle_class, callbacks)` wraps the
bundle class's `fit` (as a context manager) so that every call adds
`callbacks()` to its own. The shared runs are folders of
`tests/support/shared_folders.py`: a test that writes into one trains in
a copy (`copy_of(folder / "run", tmp_path / "run")`).
"""

import contextlib
import json

# Each tiny run skips TensorBoard's logs (`--no-tensorboard`): they cost a
# compile and a few images per run, and only the tests of the logs read
# them (they give `--tensorboard`, as the shared runs do).
TINY_FLAGS = {
    "translation": ["--synthetic-pairs", "200", "--units", "8",
                    "--embedding-dim", "8", "--vocabulary-size", "60",
                    "--max-length", "12", "--no-tensorboard"],
    "entailment": ["--synthetic-examples", "200", "--embedding-dim", "8",
                   "--hidden-units", "8", "--vocabulary-size", "60",
                   "--no-tensorboard"],
    "ehr": ["--synthetic-patients", "60", "--embedding-dim", "8",
            "--units", "8", "--no-tensorboard"],
    "captioning": ["--synthetic-images", "40", "--image-size", "32",
                   "--embedding-dim", "8", "--units", "8",
                   "--vocabulary-size", "60", "--beam-size", "1",
                   "--no-tensorboard"],
}  # fmt: skip
# What a run whose logs a test reads adds to `TINY_FLAGS`.
LOGS = ("--tensorboard",)

FITS_FILE = "fits.json"  # beside `run`: the epochs each `fit` ran


def train(app, run_dir, *flags):
    """`attention-zoo train APP` in process, with `TINY_FLAGS[app]`."""
    from attention_zoo_apps import cli

    return cli.main(
        ["train", app, *TINY_FLAGS[app], "--run-dir", str(run_dir), *flags]
    )


@contextlib.contextmanager
def record_fits(bundle_class, callbacks):
    """While inside, every `bundle_class.fit` call adds `callbacks()` (a
    list of new callbacks) to its own."""
    fit, make = bundle_class.fit, callbacks
    own = "fit" in vars(bundle_class)

    def recorded(self, *args, callbacks=(), **kwargs):
        return fit(self, *args, callbacks=[*callbacks, *make()], **kwargs)

    bundle_class.fit = recorded
    try:
        yield
    finally:
        if own:
            bundle_class.fit = fit
        else:
            del bundle_class.fit


def _epochs_recorder():
    import keras

    class Epochs(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.epochs = []

        def on_epoch_begin(self, epoch, logs=None):
            self.epochs.append(epoch)

    return Epochs()


# The applications whose shared finished run is also exported (the
# `--init-from` tests fine-tune from it).
EXPORTED = {"translation"}


def finished_run(shared, app):
    """The shared folder of a finished tiny run of APP: `run` (the run
    folder of `TINY_FLAGS[app] --epochs 1`), `fits.json` (the epochs each
    `fit` of it ran) and, for the `EXPORTED` applications, `export` (its
    `--export` folder, which holds version 1)."""
    from attention_zoo_apps import registry

    def build(folder):
        recorders = []

        def callbacks():
            recorders.append(_epochs_recorder())
            return recorders[-1:]

        flags = ["--epochs", "1", *LOGS]
        if app in EXPORTED:
            flags += ["--export", str(folder / "export")]
        with record_fits(registry.get(app).bundle_class(), callbacks):
            assert train(app, folder / "run", *flags) == 0
        fits = [recorder.epochs for recorder in recorders]
        (folder / FITS_FILE).write_text(json.dumps(fits))

    return shared(f"tiny-run-{app}-finished", build)


def interrupted_run(shared, app, epochs=2, at_epoch=1):
    """The shared folder of a tiny run of APP (`TINY_FLAGS[app] --epochs
    EPOCHS`) interrupted at the start of epoch AT_EPOCH (counted from 0):
    `run`, its run folder, holds the backup to resume from."""
    from attention_zoo_apps import registry
    from attention_zoo_apps.common import training
    from tests.support import resume_checks

    def build(folder):
        def callbacks():
            return [resume_checks.InterruptAtEpoch(at_epoch)]

        with record_fits(registry.get(app).bundle_class(), callbacks):
            try:
                train(app, folder / "run", "--epochs", str(epochs), *LOGS)
            except resume_checks.Interrupt:
                pass
            else:
                raise AssertionError("the run was not interrupted")
        assert (folder / "run" / training.BACKUP_DIR).is_dir()

    return shared(f"tiny-run-{app}-{epochs}-interrupted-at-{at_epoch}", build)
