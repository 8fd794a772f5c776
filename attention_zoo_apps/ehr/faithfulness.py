"""Faithfulness of event rankings: comprehensiveness, sufficiency, recall.

For a ranking of a patient's events by some method (attention, integrated
gradients, occlusion; `attention_zoo_apps.ehr.attributions`), with its top `k`
events (fewer when the record has fewer):

- comprehensiveness = `f(record) - f(record without the top k)`: how much
  of the risk those events carried; higher is more faithful;
- sufficiency = `f(record) - f(only the top k events)`: how much risk the
  top k alone fail to keep; lower is more faithful (DeYoung et al. 2020,
  "ERASER").

Events are removed by masking them as padding, as in `occlusion`; the note
is left as it is (the rankings are over events). A random ranking (seeded)
is the control: a method whose figures do not beat it has not found the
events the risk depends on. Attributions are signed, so rankings put the
most risk-raising events first.

`planted_recall` is, on the synthetic patients, how many of the planted
risk codes a method's top events catch.
"""

import numpy as np

from attention_zoo_apps.ehr.attributions import batched_risk

METHODS = ("attention", "integrated_gradients", "occlusion")


def top_positions(scores, k):
    """Indices of the `k` largest `scores` (ties: the earlier event)."""
    return np.argsort(-np.asarray(scores), kind="stable")[:k]


def comprehensiveness_sufficiency(
    risk_model, records, rankings, k, batch_size=256
):
    """Mean comprehensiveness and sufficiency of each ranking.

    Args:
        risk_model: a fitted `RiskModel`.
        records: `PatientRecords`.
        rankings: `{name: per-patient scores over the events read}` (the
            lists of `attribute_records`, in its event order).
        k: int, events removed / kept.
        batch_size: int, model rows per call.

    Returns:
        `{name: {"comprehensiveness": (N,), "sufficiency": (N,)}}` float32
        per patient, and `"risk"`: `(N,)`.
    """
    model = risk_model.require_model()
    arrays = risk_model.encode(records)
    index = arrays.pop("event_index")
    full = batched_risk(model, arrays, batch_size)
    output = {"risk": full}
    for name, scores in rankings.items():
        removed = np.array(arrays["codes"])
        alone = np.array(arrays["codes"])
        for row in range(len(records)):
            columns = np.flatnonzero(index[row] >= 0)  # the events read
            top = columns[top_positions(scores[row], k)]
            removed[row, top] = 0
            others = np.setdiff1d(columns, top)
            alone[row, others] = 0
        without = batched_risk(model, dict(arrays, codes=removed), batch_size)
        only = batched_risk(model, dict(arrays, codes=alone), batch_size)
        output[name] = {
            "comprehensiveness": full - without,
            "sufficiency": full - only,
        }
    return output


def random_rankings(lengths, seed=0):
    """Per patient, random scores over its `lengths[i]` events."""
    rng = np.random.default_rng(seed)
    return [rng.random(n) for n in lengths]


def planted_recall(event_index, scores, planted, k=3):
    """Mean recall of the planted codes in each patient's top `k`.

    Args:
        event_index: per patient, the record index of each event read.
        scores: per patient, one method's scores over those events.
        planted: per patient, the record indices of its planted codes.
        k: int. Defaults to 3.

    Returns:
        The mean over patients with a planted code read of `|top k ∩
        planted| / min(k, |planted read|)`; NaN when there is none.
    """
    recalls = []
    for index, score, truth in zip(event_index, scores, planted):
        truth = np.intersect1d(truth, index)
        if not len(truth):
            continue
        top = np.asarray(index)[top_positions(score, k)]
        hits = len(np.intersect1d(top, truth))
        recalls.append(hits / min(k, len(truth)))
    return float(np.mean(recalls)) if recalls else float("nan")
