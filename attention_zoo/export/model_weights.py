"""Reading a Keras model's weights back from an export.

An export holds one copy of the model's weights: the SavedModel's
variables, saved by `ServingModule.track_model` as the list
`model_weights` in `model.weights` order (and no optimizer slots).
`read_model_weights` puts them into a model built from the same config
(the `config.json` beside the SavedModel), so an export is all a user
needs to fine-tune it: no second weights file, and no code from the
folder is run (the checkpoint is read as tensors by name).
"""

import os

from attention_zoo.export.versions import resolve_version

MODEL_WEIGHTS = "model_weights"


def exported_weights(directory):
    """The exported model weights of the export in `directory` (a version
    folder or a folder of numbered versions: the newest), as a list of
    NumPy arrays in `model.weights` order.

    Raises:
        ValueError: the SavedModel has no `model_weights` (written before
            exports tracked them, or not by `ServingModule.track_model`).
    """
    # lazy: importing attention_zoo.export imports no TensorFlow (JAX)
    import tensorflow as tf
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    path = resolve_version(directory)
    reader = tf.train.load_checkpoint(
        os.path.join(path, "variables", "variables")
    )
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    root = graph.nodes[0]
    listed = [c.node_id for c in root.children if c.local_name == MODEL_WEIGHTS]
    if not listed:
        raise ValueError(
            f"The SavedModel in {path} has no `{MODEL_WEIGHTS}`: it was "
            "exported before exports kept the model's weights apart from "
            "the optimizer's; export it again from its run folder."
        )
    entries = sorted(
        graph.nodes[listed[0]].children, key=lambda child: int(child.local_name)
    )
    values = []
    for entry in entries:
        (attribute,) = graph.nodes[entry.node_id].attributes
        values.append(reader.get_tensor(attribute.checkpoint_key))
    return values


def read_model_weights(model, directory):
    """Sets `model`'s weights to those of the export in `directory`.

    `model` must be built from the export's config (the same layers, in
    the same order): the count and every shape are checked before any
    weight is set, and a mismatch is a `ValueError` naming the first
    weight that differs.

    Returns:
        `model`.
    """
    values = exported_weights(directory)
    weights = model.weights
    if len(values) != len(weights):
        raise ValueError(
            f"The export in {directory} holds {len(values)} model weights, "
            f"the model has {len(weights)}: it was not built from the "
            "export's config."
        )
    for index, (weight, value) in enumerate(zip(weights, values)):
        if tuple(weight.shape) != tuple(value.shape):
            raise ValueError(
                f"Weight {index} ({weight.path}) has shape "
                f"{tuple(weight.shape)}, the export's has {value.shape}: "
                "the model was not built from the export's config."
            )
    for weight, value in zip(weights, values):
        weight.assign(value)
    return model
