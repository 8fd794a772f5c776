"""The EHR export's `serving_default` inputs for `PatientRecords`, as a
client sends them (events padded with `""`), and their risks served by an
export in a process without Keras or the project, for the tests that
serve an export."""

import json

import numpy as np

from tests.support import fresh_process


def serving_inputs(records, extra=()):
    """Padded serving inputs (JSON-ready lists) of `records`; `extra[i]`
    events `(code, value, time)` are appended to patient `i`'s own. Two
    padding slots follow the longest record's events."""
    rows = []
    for i in range(len(records)):
        events = list(
            zip(records.codes[i], records.values[i], records.times[i])
        )
        rows.append(events + list(extra[i] if i < len(extra) else ()))
    width = max([len(r) for r in rows] + [0]) + 2  # padding slots too
    codes = [[""] * width for _ in rows]
    values = np.zeros((len(rows), width), "float32")
    times = np.zeros((len(rows), width), "float32")
    for i, events in enumerate(rows):
        for j, (code, value, time) in enumerate(events):
            codes[i][j], values[i, j], times[i, j] = code, value, time
    return {
        "codes": codes,
        "values": values.tolist(),
        "times": times.tolist(),
        "prediction_time": [float(t) for t in records.prediction_times],
        "note": list(records.notes),
    }


def served_risk(path, records):
    """`{"risk": list of float, "dtype": str}`: the export at `path`
    serving `records` (`serving_inputs`) in a process without Keras or
    the project."""
    inputs = serving_inputs(records)
    return fresh_process.run_without_project(
        f"""
inputs = json.loads({json.dumps(inputs)!r})
serve = tf.saved_model.load({path!r}).signatures["serving_default"]
out = serve(codes=tf.constant(inputs["codes"]),
            values=tf.constant(inputs["values"], tf.float32),
            times=tf.constant(inputs["times"], tf.float32),
            prediction_time=tf.constant(inputs["prediction_time"], tf.float32),
            note=tf.constant(inputs["note"]))
emit({{"risk": out["risk"].numpy().tolist(), "dtype": out["risk"].dtype.name}})
"""
    )
