"""`predict_request`: numbers and bytes are written as TF Serving writes
them, and a signature with one output answers with its values alone. The
exports of the applications are answered in
`tests/applications/common/rest_adapter_test.py`."""

import base64
import json
import math

import tensorflow as tf

from attention_zoo.export.rest import predict_request


class _Formats(tf.Module):
    """Outputs of each kind the JSON writer treats differently."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, "x")])
    def serve(self, x):
        return {
            "third": x / 3.0,
            "same": x,
            "count": tf.cast(tf.round(x), tf.int32),
            "word": tf.strings.as_string(x, precision=1),
            "word_bytes": tf.strings.as_string(x, precision=1),
        }

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, "x")])
    def single(self, x):
        return {"double": 2.0 * x}


def test_numbers_and_bytes_are_written_as_tf_serving_writes_them(tmp_path):
    module = _Formats()
    signatures = {"serving_default": module.serve, "single": module.single}
    tf.saved_model.save(module, str(tmp_path), signatures=signatures)
    model = tf.saved_model.load(str(tmp_path))
    x = [0.2, 3.0, math.nan, -math.inf]
    rows = predict_request(model, {"instances": x})["predictions"]
    assert [row["same"] for row in rows[:2]] == [0.2, 3.0]  # %g reads back
    assert rows[0]["third"] == 0.0666666701  # float32 needs nine digits
    assert rows[1]["third"] == 1.0 and isinstance(rows[1]["third"], float)
    assert math.isnan(rows[2]["same"]) and rows[3]["same"] == -math.inf
    assert [row["count"] for row in rows[:2]] == [0, 3]
    assert isinstance(rows[1]["count"], int)
    assert rows[1]["word"] == "3.0"
    assert rows[1]["word_bytes"] == {"b64": base64.b64encode(b"3.0").decode()}
    text = json.dumps({"predictions": rows})
    assert "NaN" in text and "-Infinity" in text
    # One output: its values without its name.
    single = {"signature_name": "single"}
    answer = predict_request(model, dict(single, instances=[1.5, 2.0]))
    assert answer == {"predictions": [3.0, 4.0]}
    answer = predict_request(model, dict(single, inputs=[1.5, 2.0]))
    assert answer == {"outputs": [3.0, 4.0]}
    # Integers where floats go, but not strings or lossy integers.
    answer = predict_request(model, dict(single, inputs=[1, 2]))
    assert answer == {"outputs": [2.0, 4.0]}
    answer = predict_request(model, dict(single, inputs=[True]))
    assert "Type: True is not of expected type: float" in answer["error"]
