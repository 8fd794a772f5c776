"""`predict_request` on the applications' exports: both of TF Serving's
REST layouts give what the signature gives, bad requests get TF Serving's
error object, and the serving page's `curl` examples parse and match what the
exports answer. How numbers and bytes are written:
`tests/export/rest_test.py`."""

import json

import numpy as np
import pytest

from attention_zoo.export.rest import predict_request
from tests.support import serving_page
from tests.support import tiny_bundles
from tests.support.serving_page import layout


def _model(application, shared):
    """The loaded export of the application's tiny bundle, with the
    default `jit_compile` (`tiny_bundles.loaded_export`)."""
    return tiny_bundles.loaded_export(shared, application)


@pytest.fixture(scope="module", params=tiny_bundles.APPLICATIONS)
def served(request, shared):
    """`(application, loaded SavedModel, columnar inputs, direct outputs)`."""
    application = request.param
    model = _model(application, shared)
    signature = model.signatures["serving_default"]
    columns = tiny_bundles.columnar_inputs(application)
    inputs = tiny_bundles.signature_inputs(signature, columns)
    expected = {k: v.numpy() for k, v in signature(**inputs).items()}
    return application, model, columns, expected


def _assert_same(json_value, expected, name):
    """A JSON value of the adapter equals the signature's NumPy value."""
    if expected.dtype == object:
        decode = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])
        assert json_value == decode(expected).tolist(), name
    else:
        got = np.asarray(json_value, expected.dtype)
        assert got.shape == expected.shape, name
        np.testing.assert_allclose(got, expected, atol=1e-6, err_msg=name)


def test_row_format_answers_what_the_signature_gives(served):
    _, model, columns, expected = served
    instances = tiny_bundles.row_instances(columns)
    response = predict_request(model, {"instances": instances})
    assert list(response) == ["predictions"], response
    predictions = response["predictions"]
    assert len(predictions) == len(instances)
    for row, prediction in enumerate(predictions):
        assert sorted(prediction) == sorted(expected)
        for name, value in expected.items():
            _assert_same(prediction[name], value[row, ...], name)
    assert json.loads(json.dumps(response)) == response  # plain JSON data


def test_columnar_format_answers_what_the_signature_gives(served):
    _, model, columns, expected = served
    response = predict_request(model, {"inputs": columns})
    assert list(response) == ["outputs"], response
    assert sorted(response["outputs"]) == sorted(expected)
    for name, value in expected.items():
        _assert_same(response["outputs"][name], value, name)
    # The signature may be named, or given itself.
    signature = model.signatures["serving_default"]
    named = {"signature_name": "serving_default", "inputs": columns}
    assert predict_request(model, named) == response
    assert predict_request(signature, {"inputs": columns}) == response


def test_a_single_input_may_be_sent_bare(served):
    _, model, columns, _ = served
    instances = tiny_bundles.row_instances(columns)
    rows = predict_request(model, {"instances": instances})
    whole = predict_request(model, {"inputs": columns})
    if len(columns) == 1:
        ((name, values),) = columns.items()
        assert predict_request(model, {"instances": values}) == rows
        assert predict_request(model, {"inputs": values}) == whole
    else:
        bare = predict_request(model, {"instances": ["a", "b"]})
        assert "instances is a plain list" in bare["error"]
        bare = predict_request(model, {"inputs": ["a", "b"]})
        assert "inputs is a plain value/list" in bare["error"]


def _ehr_row(**changes):
    row = tiny_bundles.row_instances(tiny_bundles.columnar_inputs("ehr"))[0]
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


ERRORS = [
    ({"instances": [], "inputs": {}}, "one of 'inputs' or 'instances'"),
    ({}, "Missing 'inputs' or 'instances' key"),
    ({"instances": []}, "No values in 'instances' array"),
    ({"instances": {"codes": []}}, "'instances' to be an list/array"),
    ([], "Is not object"),
    ({"instances": [_ehr_row(note=None)]}, "keys must be equal to: codes,"),
    ({"instances": [_ehr_row(age=3)]}, "does not have named input: age"),
    (
        {"instances": [_ehr_row(), _ehr_row(codes=["a", "b"])]},
        "Failed to process element: 1 key: codes of 'instances' list. "
        "Error: Expecting tensor size: 3 but got: 2",
    ),
    (
        {"instances": [_ehr_row(values=[1.0, "high", 0.0])]},
        'JSON Value: "high" Type: String is not of expected type: float',
    ),
    (
        {"instances": [_ehr_row(prediction_time=2**25)]},
        "to float without loss of precision",
    ),
    ({"instances": [_ehr_row(note={"b64": "%%%"})]}, "Unable to base64"),
    (
        {"inputs": {"codes": [["a"]], "values": [[1.0]], "times": [[1.0]]}},
        "Missing named input: note in 'inputs' object.",
    ),
    (
        {"instances": [_ehr_row(codes=[["a", "b"], ["c"]])]},
        "Encountered list at unexpected size: 1 at level: 1",
    ),
    (
        {"instances": [_ehr_row(prediction_time=[24.0])]},
        "Input prediction_time has shape [1,1]",
    ),
    (
        {"instances": [_ehr_row(values=[1.0, 2.0])]},
        "`codes`, `values` and `times` must have one shape",
    ),
    (
        {"signature_name": "nope", "instances": [_ehr_row()]},
        'Serving signature name: "nope" not found in signature def',
    ),
]


@pytest.mark.parametrize("body, message", ERRORS)
def test_bad_requests_get_an_error_object(body, message, shared):
    response = predict_request(_model("ehr", shared), body)
    assert list(response) == ["error"], response
    assert message in response["error"]


def test_readme_examples_parse_and_match_the_exports(shared):
    examples = serving_page.curl_examples()
    assert sorted({e[0] for e in examples}) == sorted(tiny_bundles.APPLICATIONS)
    for application, command, shown in examples:
        request = serving_page.request_of(command)
        keys = serving_page.jq_keys(command)
        model = _model(application, shared)
        response = predict_request(model, request)
        assert "error" not in response, (application, response)
        if keys is not None:  # piped through `jq '.predictions[] | {...}'`
            answer = [
                {key: row[key] for key in keys}
                for row in response["predictions"]
            ]
            assert layout(answer[0]) == layout(shown), application
            continue
        assert sorted(response) == sorted(shown), application
        body = next(iter(shown.values()))
        if isinstance(body, list):  # predictions: one per instance
            assert len(body) == len(request["instances"]), application
        assert layout(response) == layout(shown), application
