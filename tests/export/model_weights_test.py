"""An export holds the model's weights once, without the optimizer's
slots (`ServingModule.track_model`), and `read_model_weights` puts them
back into a model built from the same config."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import exported_weights
from attention_zoo.export import read_model_weights
from attention_zoo.export import save_export
from attention_zoo.export.serving_module import ServingModule
from tests.support.toy_bundle import ToyBundle


def _model(units=3, seed=0):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(units, activation="relu")(inputs)
    outputs = keras.layers.Dense(2)(keras.layers.BatchNormalization()(hidden))
    return keras.Model(inputs, outputs)


class ModelModule(ServingModule):
    def __init__(self, model):
        super().__init__(name="model")
        self.track_model(model)

    @tf.function(
        input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")]
    )
    def serve(self, x):
        return {"y": self.model(x, training=False)}


def _trained(seed=0):
    """A model trained two steps with Adam: it has optimizer slots."""
    model = _model(seed=seed)
    model.compile(optimizer="adam", loss="mse")
    model.optimizer.build(model.trainable_variables)  # fit traces once
    x = np.random.default_rng(seed).normal(size=(16, 4)).astype("float32")
    model.fit(x, x[:, :2], epochs=2, verbose=0)
    return model, x


def _checkpoint_size(path):
    reader = tf.train.load_checkpoint(
        os.path.join(path, "variables", "variables")
    )
    shapes = reader.get_variable_to_shape_map()
    return sum(
        int(np.prod(shape))
        for key, shape in shapes.items()
        if key != "_CHECKPOINTABLE_OBJECT_GRAPH"
    )


def test_the_export_holds_the_weights_and_no_optimizer_state(tmp_path):
    model, x = _trained()
    assert len(model.optimizer.variables) > 2  # slots exist to leave out
    path = save_export(
        ToyBundle(), ModelModule(model), str(tmp_path / "1"), False
    )
    # Exactly the model's values are saved (BatchNormalization's moving
    # statistics included), once.
    assert _checkpoint_size(path) == sum(
        int(np.prod(w.shape)) for w in model.weights
    )
    saved = exported_weights(str(tmp_path))
    assert len(saved) == len(model.weights)
    for weight, value in zip(model.weights, saved):
        np.testing.assert_array_equal(value, keras.ops.convert_to_numpy(weight))
    # The export still serves.
    served = tf.saved_model.load(path).signatures["serving_default"](
        x=tf.constant(x)
    )["y"]
    np.testing.assert_allclose(served, model.predict(x, verbose=0), atol=1e-5)


def test_read_model_weights_restores_a_model_built_anew(tmp_path):
    model, x = _trained()
    save_export(ToyBundle(), ModelModule(model), str(tmp_path / "1"), False)
    fresh = _model(seed=7)
    assert not np.allclose(
        fresh.predict(x, verbose=0), model.predict(x, verbose=0)
    )
    assert read_model_weights(fresh, str(tmp_path)) is fresh
    np.testing.assert_allclose(
        fresh.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6
    )


def test_a_model_of_another_shape_is_refused_before_any_weight_is_set(tmp_path):
    model, _ = _trained()
    save_export(ToyBundle(), ModelModule(model), str(tmp_path / "1"), False)
    other = _model(units=5, seed=3)
    before = [keras.ops.convert_to_numpy(w) for w in other.weights]
    with pytest.raises(
        ValueError, match=r"Weight 0 \(.*kernel\) has shape \(4, 5\)"
    ):
        read_model_weights(other, str(tmp_path))
    for weight, value in zip(other.weights, before):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(weight), value)
    smaller = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    with pytest.raises(
        ValueError, match="holds 8 model weights, the model has 2"
    ):
        read_model_weights(smaller, str(tmp_path))


def test_an_export_without_model_weights_is_named(tmp_path):
    class OldStyle(ServingModule):
        def __init__(self, model):
            super().__init__(name="old")
            self.model = model  # tracked whole, as exports used to be

        @tf.function(
            input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")]
        )
        def serve(self, x):
            return {"y": self.model(x)}

    model, _ = _trained()
    save_export(ToyBundle(), OldStyle(model), str(tmp_path / "1"), False)
    with pytest.raises(
        ValueError, match="has no `model_weights`.*export it again"
    ):
        read_model_weights(_model(), str(tmp_path))
