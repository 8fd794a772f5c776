"""`ServingModule`: the base of every export's serving module.

Imports TensorFlow (a `tf.Module` subclass needs it to be defined), so
`attention_zoo.export` imports this module only when `ServingModule` is
first used.
"""

import tensorflow as tf

from attention_zoo.export.saving import DEFAULT_SIGNATURE


class ServingModule(tf.Module):
    """What an export saves: named signatures, tracked state and assets.

    An export is one `tf.Module` written by `save_export`. This base holds
    what every export shares, so that a subclass only says what is its
    own: each signature's inputs and outputs (a `tf.function` with an
    `input_signature`) and the in-graph pre- and post-processing around
    the model (tokenizing, decoding images, detokenizing, ...).

    - **Signatures.** `SIGNATURES` maps each signature key to the name of
      a `tf.function` method; the default is
      `{"serving_default": "serve"}`, the one TF Serving answers when a
      request names no signature. Extend it in a subclass to export more
      (`{**ServingModule.SIGNATURES, "encode": "encode"}`).
    - **State.** Trackable attributes (a tokenizer, lookup tables) are
      saved with their variables, as for any `tf.Module`. The Keras model
      is given to `track_model`, which saves its weights and nothing else
      (a compiled model's optimizer slots would double or triple the
      export's size): they are the checkpoint's `model_weights` list, in
      `model.weights` order, which `attention_zoo.export.read_model_weights`
      reads back into a model built from the same config.
    - **Assets.** Files passed as `assets={"vocabulary.txt": path}` are
      copied into the SavedModel's `assets/` folder and read from there
      once loaded: `self.asset_path("vocabulary.txt")` is the path tensor
      to give in-graph readers (e.g. `tf.lookup.TextFileInitializer`).

    Args:
        name: optional str, the module's name.
        assets: optional dict, key -> path of a file to save as an asset.
            The key names it in `asset_path` (the saved copy keeps the
            file's base name).

    Example:

    ```python
    class DoublingModule(ServingModule):
        def __init__(self, model):
            super().__init__(name="doubling")
            self.track_model(model)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32,
                                                    name="x")])
        def serve(self, x):
            return {"y": 2.0 * self.model(x)}

    save_export(bundle, DoublingModule(model), "saved_models/<app>/1",
                jit_compile=False)
    load_signature("saved_models/<app>")(x=tf.ones([3]))["y"]
    ```
    """

    SIGNATURES = {DEFAULT_SIGNATURE: "serve"}

    def __init__(self, name=None, assets=None):
        super().__init__(name=name)
        self.assets = {
            key: tf.saved_model.Asset(path)
            for key, path in (assets or {}).items()
        }

    def track_model(self, model):
        """Makes `model` the module's `model` and saves its weights, only.

        `model.weights` become the tracked list `model_weights` (the
        SavedModel's variables, in that order); the model itself is kept
        untracked, so what else it holds (its optimizer and the
        optimizer's slots, a compiled model's metrics) stays out of the
        export.
        """
        self.model_weights = list(model.weights)
        # Past `tf.Module`'s attribute tracking: not a dependency.
        object.__setattr__(self, "model", model)

    def asset_path(self, key):
        """The path (a tf.string scalar) of the asset saved under `key`:
        the original file before saving, the saved copy once loaded."""
        if key not in self.assets:
            raise KeyError(f"No asset {key!r}. Assets: {sorted(self.assets)}")
        return self.assets[key].asset_path

    def warmup_requests(self, inputs):
        """The `(signature key, inputs)` warm-up requests that TF Serving
        replays for `inputs`, a list of dicts of the default signature's
        inputs (see `attention_zoo.export.write_warmup_requests`): one
        `serving_default` request each; a subclass with more signatures
        may warm them up too."""
        return [(DEFAULT_SIGNATURE, example) for example in inputs]

    def serving_signatures(self):
        """Signature key -> `tf.function`, what `save_export` saves.

        Raises:
            TypeError: a method named in `SIGNATURES` is missing or is
                not a `tf.function` with an `input_signature`.
        """
        signatures = {}
        for key, method in self.SIGNATURES.items():
            function = getattr(self, method, None)
            if getattr(function, "input_signature", None) is None:
                raise TypeError(
                    f"Signature {key!r} needs `{type(self).__name__}."
                    f"{method}` to be a `tf.function` with an "
                    f"`input_signature`. Received: {function!r}"
                )
            signatures[key] = function
        return signatures
