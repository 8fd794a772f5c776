"""Exports of the four applications: `metadata.json` appears with the model
and says what it is; `jit_compile` decides whether the exported functions
are XLA-compiled; both settings load and run without Keras or the project;
a failed export leaves no version; `--export` records test metrics and the
training data's fingerprint."""

import datetime
import hashlib
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import data_fingerprint
from attention_zoo.export import read_metadata
from attention_zoo.export import saving
from attention_zoo_apps import registry
from tests.support import fresh_process
from tests.support import tiny_bundles


@pytest.fixture(scope="module", params=tiny_bundles.APPLICATIONS)
def exported(request, shared):
    """`(application, bundle, {jit_compile: version folder})`: each
    application's tiny bundle exported with XLA (version 1) and without
    (version 2), both with `tiny_bundles.EXPORT_METRICS` and the
    fingerprint of `EXPORT_DATA` (made once per session, read-only)."""
    application = request.param
    bundle = tiny_bundles.tiny_bundle(application, shared)
    paths = {
        jit_compile: tiny_bundles.tiny_export(shared, application, jit_compile)
        for jit_compile in (True, False)
    }
    return application, bundle, paths


def _xla_must_compile(path):
    """Function name -> its `_XlaMustCompile` attribute, for every function
    of the SavedModel that has one."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    return {
        function.signature.name: function.attr["_XlaMustCompile"].b
        for meta_graph in proto.meta_graphs
        for function in meta_graph.graph_def.library.function
        if "_XlaMustCompile" in function.attr
    }


def test_metadata_says_what_the_export_is(exported):
    application, bundle, paths = exported
    path = paths[False]
    with open(os.path.join(path, "metadata.json")) as f:
        metadata = json.load(f, parse_constant=pytest.fail)  # strict JSON
    assert metadata == read_metadata(path)
    assert metadata["application"] == application
    assert metadata["version"] == 2
    assert metadata["jit_compile"] is False
    assert read_metadata(paths[True])["jit_compile"] is True
    assert metadata["precision"] == "float32"
    assert "int8_layers" not in metadata
    assert metadata["config"] == json.loads(bundle.config.to_json())
    assert metadata["input_limits"] == bundle.input_limits()
    assert all(v >= 1 for v in metadata["input_limits"].values())
    assert metadata["metrics"] == {
        "accuracy": 0.5,
        "confusion": [[1, 0], [0, 1]],
        "recall": {"neutral": None},
    }
    assert metadata["data_fingerprint"] == data_fingerprint(
        tiny_bundles.EXPORT_DATA
    )
    packages = metadata["packages"]
    assert packages["tensorflow"] == tf.__version__
    for name in ("attention_zoo", "keras", "tensorflow_text", "python"):
        assert packages[name], name
    written = datetime.datetime.fromisoformat(metadata["exported_at"])
    age = datetime.datetime.now(datetime.timezone.utc) - written
    assert datetime.timedelta(0) <= age < datetime.timedelta(hours=1)


def test_the_signature_takes_the_registered_inputs(exported):
    # What the inference commands check an export against, and what the
    # stand-in exports of their tests take.
    application, _, paths = exported
    signature = tf.saved_model.load(paths[False]).signatures["serving_default"]
    specs = signature.structured_input_signature[1]
    assert set(specs) == set(registry.get(application).export_inputs)
    stand_in = tiny_bundles.SIGNATURE_INPUTS[application]
    assert {
        name: (spec.shape.as_list(), spec.dtype) for name, spec in specs.items()
    } == stand_in


def test_vocabulary_fingerprints_are_the_saved_files(exported):
    _, bundle, paths = exported
    vocabularies = read_metadata(paths[False])["vocabularies"]
    assert sorted(vocabularies) == sorted(bundle.vocabulary_files())
    assert vocabularies
    for name, digest in vocabularies.items():
        with open(os.path.join(paths[False], name), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == digest
    # The config saved beside is the bundle's.
    with open(os.path.join(paths[False], "config.json")) as f:
        assert f.read() == bundle.config.to_json()


def test_jit_compile_decides_whether_functions_are_xla_compiled(exported):
    _, _, paths = exported
    on, off = _xla_must_compile(paths[True]), _xla_must_compile(paths[False])
    assert any(on.values()), on
    assert not any(off.values()), off


@pytest.fixture(scope="module")
def served(shared):
    """Application -> `{"True"|"False": outputs}`: what one fresh process
    without Keras or the project answers from every application's two
    exports, given `tiny_bundles.columnar_inputs`."""
    cases = [
        [
            application,
            tiny_bundles.columnar_inputs(application),
            str(jit_compile),
            tiny_bundles.tiny_export(shared, application, jit_compile),
        ]
        for application in tiny_bundles.APPLICATIONS
        for jit_compile in (False, True)
    ]
    return fresh_process.run_without_project(
        tiny_bundles.SERVE_COLUMNS_SCRIPT
        + f"""
results = {{}}
for application, columns, name, path in json.loads({json.dumps(cases)!r}):
    results.setdefault(application, {{}})[name] = serve_columns(path, columns)
emit(results)
"""
    )


def test_both_settings_load_and_run_without_the_project(exported, served):
    application, _, paths = exported
    columns = tiny_bundles.columnar_inputs(application)
    signature = tf.saved_model.load(paths[False]).signatures["serving_default"]
    expected = {
        name: value.numpy()
        for name, value in signature(
            **tiny_bundles.signature_inputs(signature, columns)
        ).items()
    }
    served = served[application]
    assert sorted(served) == ["False", "True"]
    for outputs in served.values():
        assert sorted(outputs) == sorted(expected)
        for name, value in expected.items():
            if value.dtype == object:
                decoded = np.vectorize(lambda b: b.decode(), otypes=[object])
                assert outputs[name] == decoded(value).tolist(), name
            else:
                np.testing.assert_allclose(
                    outputs[name], value, atol=1e-5, err_msg=name
                )


def test_a_failed_export_leaves_no_version(tmp_path, monkeypatch, shared):
    bundle = tiny_bundles.tiny_bundle("entailment", shared)

    def fail(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(saving, "write_metadata", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        bundle.export(str(tmp_path / "1"), jit_compile=False)
    assert os.listdir(tmp_path) == []


def test_train_export_records_test_metrics_and_data(tmp_path, capsys):
    from attention_zoo_apps import cli

    export_dir = tmp_path / "saved_models" / "translation"
    code = cli.main(
        [
            "train",
            "translation",
            "--synthetic-pairs",
            "200",
            "--epochs",
            "1",
            "--units",
            "8",
            "--embedding-dim",
            "8",
            "--vocabulary-size",
            "100",
            "--max-length",
            "10",
            "--no-tensorboard",
            "--run-dir",
            str(tmp_path / "run"),
            "--export",
            str(export_dir),
            "--jit-compile",
            "off",
        ]
    )
    assert code == 0
    assert f"exported {export_dir / '1'}" in capsys.readouterr().out
    metadata = read_metadata(export_dir / "1")
    assert metadata["jit_compile"] is False and metadata["version"] == 1
    assert set(metadata["metrics"]) == {
        "bleu",
        "bleu_lowercase",
        "bleu_signature",
        "chrf",
        "chrf_lowercase",
        "examples",
        "beam_size",
    }
    assert len(metadata["data_fingerprint"]) == 64
    assert not any(_xla_must_compile(str(export_dir / "1")).values())
