"""Attributions of a risk beside attention: integrated gradients, occlusion.

Attention weights say where the pooling looked, not what moved the risk
(Jain & Wallace 2019, "Attention is not Explanation"; Wiegreffe & Pinter
2019, "Attention is not not Explanation"), so the explanation also carries
two attributions of the risk `f` (the sigmoid output) to each event:

- `integrated_gradients` (Sundararajan et al. 2017, "Axiomatic Attribution
  for Deep Networks") over the event input vectors `x_j` (code embedding
  plus projected value and time features, the output of the layer
  `event_inputs`): `IG_j = sum_d (x_jd - x'_jd) * mean_a df/dx_jd (x' +
  a (x - x'))`, the mean over `a` in [0, 1] taken by the trapezoid rule on
  `steps` intervals. The baseline `x'` is, at every real event, the
  record's average event (the mean of its `x_j`), with the padding mask
  unchanged: the record keeps its length and which events exist, only no
  event stands out from the others, so an event's attribution is what
  its difference from the patient's average does to the risk ("events
  that say nothing" rather than "no events": a masked record is not on a
  straight path from the input, the mask being discrete). The zero
  vector, the usual choice, is degenerate here: the multihead encoder's
  layer normalisation of near-zero vectors makes the risk jump within
  `a < 0.01`, which the trapezoid rule misses (completeness off by more
  than the risk itself at 32 steps). Completeness: `sum_j IG_j = f(x) -
  f(x')` up to the quadrature error, which falls as `1 / steps**2`.
- `occlusion` (leave one out): `f(record) - f(record without event j)`,
  the event removed by masking it as padding (code id 0), which the model
  reads exactly as a record that never had it (padding is masked in the
  encoder and the attention). Note words likewise (all their WordPiece
  tokens set to the padding id).

`kendall_tau` measures the rank agreement of two of these over the top
events, and `attribute_records` runs all three for `PatientRecords`.
Padding gets zero from every method.
"""

import json
import os

import numpy as np
import tensorflow as tf
from keras import ops
from keras.src.backend import get_keras_mask
from keras.src.backend import set_keras_mask
from scipy import stats

from attention_zoo_apps.ehr.metrics import auroc
from attention_zoo_apps.ehr.model import EVENT_ATTENTION_LAYER
from attention_zoo_apps.ehr.model import NOTE_ATTENTION_LAYER

EVENT_INPUTS_LAYER = "event_inputs"
STEPS = 64  # trapezoid intervals: completeness within ~1e-4 on our models
TAU_TOP_K = 5


def run_replacing(model, inputs, replacements):
    """`model`'s risk on `inputs` with some layers' calls replaced.

    `replacements` maps a layer name to `fn(layer, *args, **kwargs)`,
    called instead of the layer with its recorded arguments (masks as
    Keras passed them); everything else runs as `model(inputs,
    training=False)`. The replacement must set the Keras mask on its
    output where the layer had one (`_keep_mask`).

    Returns:
        The model's output, float32 `(B, 1)`.
    """

    # The functional graph's own traversal (what `Functional.call` runs),
    # with every layer that takes `training` called in inference mode.
    def operation(op):
        replace = replacements.get(op.name)

        def call(*args, **kwargs):
            if "training" in getattr(op, "_call_context_args", {}):
                kwargs["training"] = False
            if replace is not None:
                return replace(op, *args, **kwargs)
            return op(*args, **kwargs)

        return call

    inputs = model._standardize_inputs(inputs)
    return model._run_through_graph(inputs, operation_fn=operation)


def _keep_mask(value, like):
    """`value` carrying the Keras mask of `like` (when it has one)."""
    mask = get_keras_mask(like)
    if mask is not None:
        set_keras_mask(value, mask)
    return value


def event_inputs(model, inputs):
    """The event input vectors `x`, float32 `(B, T, D)`, and the mask of
    real events, bool `(B, T)`."""
    outputs = {}

    def record(layer, *args, **kwargs):
        outputs["x"] = layer(*args, **kwargs)
        return outputs["x"]

    run_replacing(model, inputs, {EVENT_INPUTS_LAYER: record})
    return outputs["x"], tf.not_equal(inputs["codes"], 0)


def _average_event(x, mask):
    """The baseline `(B, T, D)`: at every position the mean of the
    record's event vectors `x` `(B, T, D)` over its real events `mask`."""
    weights = tf.cast(mask, x.dtype)[..., None]  # (B, T, 1)
    count = tf.maximum(tf.reduce_sum(weights, axis=1, keepdims=True), 1.0)
    mean = tf.reduce_sum(x * weights, axis=1, keepdims=True) / count
    return tf.broadcast_to(mean, tf.shape(x))


def risk_at_event_inputs(model, inputs, x):
    """The risk `(B,)` with the event input vectors replaced by `x`
    `(B, T, D)` (the mask still from `inputs["codes"]`)."""

    def replace(layer, *args, **kwargs):
        return _keep_mask(tf.identity(x), layer(*args, **kwargs))

    risk = run_replacing(model, inputs, {EVENT_INPUTS_LAYER: replace})
    return risk[:, 0]


def integrated_gradients(model, inputs, steps=STEPS):
    """Integrated gradients of the risk over the event input vectors.

    Args:
        model: a `build_risk_model` model.
        inputs: its input dict (NumPy or tensors), `(B, T)` each.
        steps: int, trapezoid intervals on the path (`steps + 1` gradient
            evaluations per patient, batched). Defaults to `STEPS` (64).

    Returns:
        A dict of float32 NumPy arrays: `attributions` `(B, T)` (zero on
        padding), `risk` `(B,)` = f(x) and `baseline_risk` `(B,)` =
        f(every event replaced by the record's average event), so that
        `attributions.sum(-1) ~ risk - baseline_risk`.
    """
    if steps < 1:
        raise ValueError(f"`steps` must be >= 1. Received: steps={steps}")
    inputs = {k: tf.convert_to_tensor(v) for k, v in inputs.items()}
    x, mask = event_inputs(model, inputs)
    baseline = _average_event(x, mask)
    # Trapezoid weights on alphas 0, 1/steps, ..., 1: halves at the ends.
    alphas = np.linspace(0.0, 1.0, steps + 1, dtype="float32")
    weights = np.full(steps + 1, 1.0 / steps, "float32")
    weights[[0, -1]] /= 2.0
    batch = int(x.shape[0])
    # All alphas of all patients in one batch: row a * B + b.
    repeated = {k: tf.tile(v, [steps + 1, 1]) for k, v in inputs.items()}
    path = baseline[None] + alphas[:, None, None, None] * (x - baseline)[None]
    path = tf.reshape(path, (-1, *x.shape[1:]))  # ((S+1) B, T, D)
    with tf.GradientTape() as tape:
        tape.watch(path)
        risk = risk_at_event_inputs(model, repeated, path)
    gradients = tape.gradient(risk, path)  # each row's own gradient
    gradients = tf.reshape(gradients, (steps + 1, batch, *x.shape[1:]))
    mean_gradient = tf.einsum("a,abtd->btd", weights, gradients)
    attributions = tf.reduce_sum((x - baseline) * mean_gradient, axis=-1)
    attributions = tf.where(mask, attributions, 0.0)
    risk = tf.reshape(risk, (steps + 1, batch))
    return {
        "attributions": attributions.numpy().astype("float32"),
        "risk": risk[-1].numpy(),
        "baseline_risk": risk[0].numpy(),
    }


def occlusion(model, inputs, key="codes", groups=None, batch_size=512):
    """Leave-one-out occlusion: risk(full) - risk(without one item).

    An item (an event, or a note word) is removed by setting its ids in
    `inputs[key]` to 0, the padding id, which the model masks.

    Args:
        model: a `build_risk_model` model.
        inputs: its input dict of NumPy arrays.
        key: `"codes"` (events) or `"note"` (note tokens).
        groups: optional int `(B, T)` of `inputs[key]`'s shape: tokens with
            the same group number in a row are removed together (e.g. the
            WordPiece tokens of one word), -1 for never removed. Defaults
            to every non-padding position alone.
        batch_size: int, model rows per call.

    Returns:
        float32 `(B, T)`: at each position its item's occlusion score
        (shared by the tokens of a group), 0 on padding.
    """
    ids = np.asarray(inputs[key])
    if groups is None:
        groups = np.where(ids != 0, np.arange(ids.shape[1])[None], -1)
    groups = np.asarray(groups)
    full = batched_risk(model, inputs, batch_size)
    rows, removed = [], []  # one model row per (patient, group)
    for b in range(len(ids)):
        for g in np.unique(groups[b][groups[b] >= 0]):
            rows.append(b)
            removed.append(groups[b] == g)
    scores = np.zeros(ids.shape, "float32")
    if not rows:
        return scores
    rows, removed = np.asarray(rows), np.asarray(removed)
    occluded = {k: np.asarray(v)[rows] for k, v in inputs.items()}
    occluded[key] = np.where(removed, 0, occluded[key]).astype(ids.dtype)
    without = batched_risk(model, occluded, batch_size)
    for r, (b, where) in enumerate(zip(rows, removed)):
        scores[b][where] = full[b] - without[r]
    return scores


def note_word_occlusion(risk_model, records):
    """Per patient, `(word, occlusion)` for each note word read, in note
    order: the risk minus the risk with all the word's WordPiece tokens
    removed (a `##` piece belongs to the word before it)."""
    arrays = risk_model.encode(records)
    arrays.pop("event_index")
    vocabulary = risk_model.note_tokenizer.vocabulary
    ids = arrays["note"]
    groups = np.full(ids.shape, -1)
    words = []
    for row in range(len(ids)):
        words.append([])
        for t in np.flatnonzero(ids[row]):
            piece = vocabulary[ids[row, t]]
            if piece.startswith("##") and words[row]:
                words[row][-1] += piece[2:]
            else:
                words[row].append(piece)
            groups[row, t] = len(words[row]) - 1
    scores = occlusion(risk_model.require_model(), arrays, "note", groups)
    output = []
    for row in range(len(ids)):
        first = [
            int(np.flatnonzero(groups[row] == g)[0])
            for g in range(len(words[row]))
        ]
        output.append(
            [(w, float(scores[row, t])) for w, t in zip(words[row], first)]
        )
    return output


def batched_risk(model, inputs, batch_size=512):
    """float32 `(N,)`: `model`'s risk in batches of `batch_size`."""
    count = len(next(iter(inputs.values())))
    risks = [
        np.asarray(
            model(
                {k: v[s : s + batch_size] for k, v in inputs.items()},
                training=False,
            )
        )[:, 0]
        for s in range(0, count, batch_size)
    ]
    return np.concatenate(risks).astype("float32") if risks else np.zeros(0)


def uniform_attention_risk(model, inputs, layers=None):
    """The risk `(B,)` with attention pooling replaced by the plain mean
    over the unmasked positions (uniform weights), same weights
    otherwise. `layers`: the pooling layers replaced, by default the
    events' and (when there is one) the note's."""
    names = [layer.name for layer in model.layers]
    layers = layers or [
        n for n in (EVENT_ATTENTION_LAYER, NOTE_ATTENTION_LAYER) if n in names
    ]

    # `keras.ops`, as the layers it replaces: on TensorFlow and JAX alike.
    def mean_pooling(layer, values, *args, **kwargs):
        mask = get_keras_mask(values)
        if mask is None:
            mask = ops.ones(ops.shape(values)[:2], "bool")
        weights = ops.cast(mask, values.dtype)  # (B, T)
        count = ops.maximum(ops.sum(weights, -1, keepdims=True), 1.0)
        weights = weights / count
        pooled = ops.einsum("bt,btd->bd", weights, values)  # (B, d)
        if kwargs.get("return_attention_scores"):
            return pooled, weights
        return pooled

    replacements = {name: mean_pooling for name in layers}
    inputs = {k: ops.convert_to_tensor(v) for k, v in inputs.items()}
    risk = run_replacing(model, inputs, replacements)
    return ops.convert_to_numpy(risk)[:, 0]


def top_union(a, b, top_k=TAU_TOP_K):
    """Indices of the union of the `top_k` largest of `a` and of `b`."""
    a, b = np.asarray(a), np.asarray(b)
    top_a = np.argsort(-a, kind="stable")[:top_k]
    top_b = np.argsort(-b, kind="stable")[:top_k]
    return np.union1d(top_a, top_b)


def kendall_tau(a, b, top_k=TAU_TOP_K):
    """Kendall's tau-b between two scores of the same events, over the
    events in the top `top_k` of either (their union, so that an event
    one method ranks high and the other low counts against agreement).

    Tau-b (`scipy.stats.kendalltau`'s default) corrects for ties, which
    occlusion and attention have (e.g. zeros). NaN with fewer than 2
    events or when one score is constant on them.
    """
    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    if len(a) < 2:
        return float("nan")
    chosen = top_union(a, b, top_k)
    if np.ptp(a[chosen]) == 0 or np.ptp(b[chosen]) == 0:
        return float("nan")
    return float(stats.kendalltau(a[chosen], b[chosen]).statistic)


def attribute_records(risk_model, records, steps=STEPS, batch_size=32):
    """Attention, integrated gradients and occlusion for `records`.

    Args:
        risk_model: a fitted `RiskModel`.
        records: `PatientRecords`.
        steps: integrated-gradient intervals. Defaults to `STEPS`.
        batch_size: patients at a time (each is `steps + 1` gradient rows).

    Returns:
        A dict of per-patient lists, each over the events the model read
        (the last `max_events`, in record order): `event_index` (int, the
        index into `records.codes[i]`), `attention`, `integrated_gradients`,
        `occlusion` (float32); and arrays `(N,)`: `risk`, `baseline_risk`
        (integrated gradients' baseline), `tau_integrated_gradients` and
        `tau_occlusion` (Kendall tau-b of each with attention, see
        `kendall_tau`).
    """
    model = risk_model.require_model()
    output = {
        name: []
        for name in (
            "event_index",
            "attention",
            "integrated_gradients",
            "occlusion",
        )
    }
    risk, baseline = [], []
    for start in range(0, len(records), batch_size):
        part = records.select(
            range(start, min(start + batch_size, len(records)))
        )
        arrays = risk_model.encode(part)
        index = arrays.pop("event_index")
        attention = risk_model.predict_function()(arrays)["event_attention"]
        ig = integrated_gradients(model, arrays, steps)
        left_out = occlusion(model, arrays)
        risk.append(ig["risk"])
        baseline.append(ig["baseline_risk"])
        for row in range(len(part)):
            kept = index[row] >= 0
            output["event_index"].append(index[row][kept])
            output["attention"].append(attention[row][kept])
            output["integrated_gradients"].append(ig["attributions"][row][kept])
            output["occlusion"].append(left_out[row][kept])
    output["risk"] = np.concatenate(risk) if risk else np.zeros(0)
    output["baseline_risk"] = (
        np.concatenate(baseline) if baseline else np.zeros(0)
    )
    for method in ("integrated_gradients", "occlusion"):
        output[f"tau_{method}"] = np.array(
            [
                kendall_tau(a, m)
                for a, m in zip(output["attention"], output[method])
            ],
            "float64",
        )
    return output


RELIANCE_FILE = "attention_reliance.json"


def attention_reliance(risk_model, records, risk=None):
    """AUROC of `records` with the model's attention, and with uniform
    weights in its place (`uniform_attention_risk`): if the second barely
    drops, the model does not rely on where attention looks. `risk`: the
    model's risks of `records` when already predicted (else predicted).

    Returns:
        A dict `auroc`, `uniform_auroc` (NaN without both classes) and
        `patients`.
    """
    arrays = risk_model.encode(records)
    arrays.pop("event_index")
    if risk is None:
        risk = risk_model.predict(records)["risk"]
    uniform = uniform_attention_risk(risk_model.require_model(), arrays)
    return {
        "auroc": float(auroc(records.labels, risk)),
        "uniform_auroc": float(auroc(records.labels, uniform)),
        "patients": len(records),
    }


def write_reliance(run_dir, reliance):
    """Writes `attention_reliance`'s dict to `run_dir` for `read_reliance`
    (`attention-zoo explain`'s page)."""
    path = os.path.join(run_dir, RELIANCE_FILE)
    with open(path, "w", encoding="utf-8") as file:
        json.dump(reliance, file)


def read_reliance(run_dir):
    """What `train ehr` wrote of `attention_reliance` for its test split,
    or None (runs from before it, or without a test split)."""
    path = os.path.join(run_dir, RELIANCE_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as file:
        return json.load(file)
