"""Saved models load without running code: each application's Keras model
reloads from `.keras` with `safe_mode=True` and gives the same outputs,
every custom layer is registered, and the sources use no pickle, `Lambda`
layer, marshal or dill.

The model tests of the applications round-trip some configurations
already (`assert_model_round_trip`); these cover every application's
model the way its bundle builds it, in float32 and in `mixed_bfloat16`.
"""

import importlib
import inspect
import pathlib
import pkgutil
import re

import keras
import numpy as np
import pytest

import attention_zoo
import attention_zoo_apps
from attention_zoo_apps.captioning.model import build_captioner
from attention_zoo_apps.common import precision
from attention_zoo_apps.ehr.model import build_risk_model
from attention_zoo_apps.entailment.model import build_decomposable_attention
from attention_zoo_apps.translation.config import TranslationConfig
from attention_zoo_apps.translation.model import build_translation_model
from tests.support.layer_checks import assert_model_round_trip

REPOSITORY = pathlib.Path(__file__).resolve().parents[3]
SCANNED = ("attention_zoo", "attention_zoo_apps")
# Ways to run code while loading: pickle (and its wrappers), marshal,
# dill, `Lambda` layers, unsafe Keras deserialization.
FORBIDDEN = {
    # (`np.load(..., allow_pickle=False)` refuses pickles: allowed.)
    "pickle": re.compile(r"pickle(?!\s*=\s*False)", re.IGNORECASE),
    "marshal": re.compile(r"\bmarshal\b"),
    "dill": re.compile(r"\bdill\b"),
    "shelve": re.compile(r"\bshelve\b"),
    "joblib": re.compile(r"\bjoblib\b"),
    "Lambda layer": re.compile(r"\bLambda\b"),
    "unsafe loading": re.compile(
        r"safe_mode\s*=\s*False|enable_unsafe_deserialization"
    ),
}
# The one module that may unpickle: PyTorch's `.pth` reader, whose
# unpickler refuses every global but tensors and OrderedDicts (see its
# docstring; tests/applications/captioning/torch_weights_test.py checks
# that it refuses others).
RESTRICTED_UNPICKLERS = {"attention_zoo_apps/captioning/torch_weights.py"}
IDS = np.array([[5, 3, 7, 2, 0, 0], [4, 9, 1, 0, 0, 0]], "int32")


def _translation(model):
    config = TranslationConfig(
        model=model,
        embedding_dim=8,
        units=8,
        model_dim=8,
        num_heads=2,
        feed_forward_dim=16,
        num_layers=1,
        max_length=8,
        tie_embeddings=model == "transformer",
    )
    return build_translation_model(config, 12, 12), {
        "source": IDS,
        "target_in": IDS[:, :5],
    }


def _entailment():
    model = build_decomposable_attention(
        12, embedding_dim=8, hidden_units=8, intra_attention=True
    )
    return model, {"premise": IDS, "hypothesis": IDS[:, :4]}


def _captioning(encoder, attention, image_size=32):
    model = build_captioner(
        12,
        encoder=encoder,
        image_size=image_size,
        embedding_dim=8,
        units=8,
        attention=attention,
    )
    shape = (2, image_size, image_size, 3)
    images = np.random.default_rng(0).uniform(size=shape)
    return model, {"image": images.astype("float32"), "caption_in": IDS}


def _ehr(encoder):
    model = build_risk_model(
        12, 12, embedding_dim=8, units=8, encoder=encoder, num_heads=2
    )
    rng = np.random.default_rng(0)
    inputs = {
        "codes": IDS,
        "values": rng.normal(size=IDS.shape).astype("float32"),
        "has_value": (IDS > 3).astype("float32"),
        "times": rng.uniform(0, 48, IDS.shape).astype("float32"),
        "note": IDS[:, ::-1].copy(),
    }
    return model, inputs


MODELS = {
    "translation-rnn": lambda: _translation("rnn"),
    "translation-transformer": lambda: _translation("transformer"),
    "entailment": _entailment,
    "captioning": lambda: _captioning("small_cnn", "additive"),
    "captioning-baseline": lambda: _captioning("small_cnn", None),
    # 64 px: MobileNetV2's 2 x 2 feature map (32 px would leave one).
    "captioning-mobilenet": lambda: _captioning("MobileNetV2", "general", 64),
    "ehr-gru": lambda: _ehr("gru"),
    "ehr-multihead": lambda: _ehr("multihead"),
}


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
@pytest.mark.parametrize("application", list(MODELS))
def test_model_reloads_in_safe_mode(application, policy, tmp_path):
    with precision.policy_scope(policy):
        model, inputs = MODELS[application]()
    loaded = assert_model_round_trip(model, inputs, tmp_path)

    def policies(model):
        # Inputs and nested functional models do not save a policy.
        return [
            (layer.name, layer.dtype_policy.name)
            for layer in model._flatten_layers(include_self=False)
            if not isinstance(layer, (keras.Model, keras.layers.InputLayer))
        ]

    # Each layer keeps its policy (the float32 heads too).
    assert policies(loaded) == policies(model)
    assert policy in dict(policies(loaded)).values()


def _modules():
    for package in (attention_zoo, attention_zoo_apps):
        yield package
        for info in pkgutil.walk_packages(
            package.__path__, prefix=f"{package.__name__}."
        ):
            yield importlib.import_module(info.name)


def test_every_custom_layer_is_registered():
    classes = {
        cls
        for module in _modules()
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, keras.layers.Layer)
        and cls.__module__.split(".")[0] in SCANNED
    }
    # What a saved config can name: public classes, bases only through
    # their subclasses (private sublayers are rebuilt by their owner).
    public = [cls for cls in classes if not cls.__name__.startswith("_")]
    bases = {base for cls in public for base in cls.__mro__[1:]}
    saved = [cls for cls in public if cls not in bases]
    assert len(saved) >= 10
    for cls in sorted(saved, key=lambda c: c.__qualname__):
        name = keras.saving.get_registered_name(cls)
        assert keras.saving.get_registered_object(name) is cls, (
            f"{cls.__module__}.{cls.__qualname__} is not registered with "
            "keras.saving.register_keras_serializable"
        )


def test_sources_use_no_pickle_lambda_marshal_or_dill():
    sources = sorted(
        path
        for folder in SCANNED
        for path in (REPOSITORY / folder).rglob("*.py")
    )
    assert len(sources) >= 20
    found = [
        f"{path.relative_to(REPOSITORY)}:{number}: {what}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for what, pattern in FORBIDDEN.items()
        if pattern.search(line)
        and not (
            what == "pickle"
            and str(path.relative_to(REPOSITORY)) in RESTRICTED_UNPICKLERS
        )
    ]
    assert not found, "\n".join(found)
