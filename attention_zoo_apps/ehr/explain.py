"""What the model attended to for one patient, as HTML and a PNG.

`explain_patient` gathers one patient's risk and attention weights (over
every event and, cut into words, over the note), beside two attributions
of the risk to each event (integrated gradients and leave-one-out
occlusion, `attention_zoo_apps.ehr.attributions`) and their rank agreement with
attention; `plot_explanation` draws them and `render_html` writes the
self-contained report page; the command `attention-zoo explain`
(`attention_zoo_apps.ehr.infer`) runs them on a trained run folder.
"""

import base64
import html
import os
import re

import matplotlib
import numpy as np
from matplotlib import pyplot as plt

from attention_zoo_apps.common.wordpiece import split_words
from attention_zoo_apps.ehr import attributions

SHADE = (230, 85, 13)  # the dark end of matplotlib's "Oranges"
# Under this change of risk with uniform attention weights, the page says
# the prediction does not rely on the attention.
UNIFORM_TOLERANCE = 0.01
# What the page says of attention weights (Jain & Wallace 2019; Wiegreffe &
# Pinter 2019).
ATTENTION_CAVEAT = (
    "Attention weights show where the model looked when it summarised the "
    "record, not how much each event changed the risk: other weights can "
    "give the same prediction (Jain &amp; Wallace 2019, &ldquo;Attention is "
    "not Explanation&rdquo;), and whether they explain depends on the model "
    "(Wiegreffe &amp; Pinter 2019), so they are shown beside two "
    "attributions of the risk itself, integrated gradients and leave-one-out "
    "occlusion, and their rank agreement (Kendall tau)."
)
# RE2's `\s`, which `SubwordTokenizer` splits words on.
_WHITESPACE = re.compile(r"([\t\n\f\r ]+)")
_CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 64em;
       color: #222; }
.risk { font-size: 1.6em; }
table { border-collapse: collapse; }
th, td { padding: 2px 10px; text-align: left; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
tr.unread { color: #999; }
.note { white-space: pre-wrap; line-height: 1.9; border: 1px solid #ddd;
        padding: 0.6em; }
img { max-width: 100%; }
"""


def explain_patient(risk_model, record, top_k=5):
    """What `render_html` and `plot_explanation` show of a one-patient
    `PatientRecords`.

    Returns:
        A dict: `patient_id`, `label`, `prediction_time`, `risk` (float),
        `events` (a list of `(time, code, value, weight)`, `weight` None for
        events not read), `note` (the text), `note_segments` (see
        `note_segments`; None when the model reads no note) and `top_events`
        / `note_words` from `RiskModel.predict`; `attributions` (per event
        `(integrated gradients, occlusion)`, None for events not read),
        `baseline_risk` (integrated gradients' baseline, see
        `attention_zoo_apps.ehr.attributions`), `uniform_risk` (the risk with
        uniform attention weights), `tau` (`{"integrated_gradients": ...,
        "occlusion": ...}`, Kendall tau-b with attention over the top
        `TAU_TOP_K` events of either), `word_occlusion` (per note word
        read, `(word, occlusion)`, in note order; empty without a note)
        and `names` (code -> the data's readable name, for this record's
        codes that have one: FHIR's `display`).
    """
    output = risk_model.predict(record, top_k=top_k)
    scores = attributions.attribute_records(risk_model, record)
    codes = record.codes[0]
    attention = output["event_attention"][0]
    start = len(codes) - len(attention)  # only the last events are read
    events = [
        (
            float(record.times[0][j]),
            code,
            float(record.values[0][j]),
            float(attention[j - start]) if j >= start else None,
        )
        for j, code in enumerate(codes)
    ]
    per_event = [None] * len(codes)
    for position, j in enumerate(scores["event_index"][0]):
        per_event[j] = (
            float(scores["integrated_gradients"][0][position]),
            float(scores["occlusion"][0][position]),
        )
    arrays = risk_model.encode(record)
    arrays.pop("event_index")
    uniform = attributions.uniform_attention_risk(
        risk_model.require_model(), arrays
    )
    note, segments = record.notes[0], None
    if "note_attention" in output:
        segments = note_segments(
            risk_model.note_tokenizer, note, output["note_attention"][0]
        )
    return {
        "patient_id": record.patient_ids[0],
        "label": int(record.labels[0]),
        "prediction_time": float(record.prediction_times[0]),
        "risk": float(output["risk"][0]),
        "events": events,
        "note": note,
        "note_segments": segments,
        "top_events": output["top_events"][0],
        "note_words": output.get("note_words", [[]])[0],
        "attributions": per_event,
        "baseline_risk": float(scores["baseline_risk"][0]),
        "uniform_risk": float(uniform[0]),
        "tau": {
            method: float(scores[f"tau_{method}"][0])
            for method in ("integrated_gradients", "occlusion")
        },
        "word_occlusion": (
            attributions.note_word_occlusion(risk_model, record)[0]
            if segments is not None
            else []
        ),
        "tau_top_k": attributions.TAU_TOP_K,
        "names": {c: record.names[c] for c in codes if c in record.names},
    }


def _code_label(code, names):
    """A code as the page shows it, escaped: the data's readable name and
    the code in brackets, or the code alone."""
    name = names.get(code)
    return html.escape(f"{name} [{code}]" if name else code)


def note_segments(tokenizer, note, weights):
    """`note` cut into `(text, weight)` segments that join back to it.

    Each word as the tokenizer splits it (punctuation apart) gets the sum
    of its WordPiece tokens' `weights`, which cover the last
    `len(weights)` tokens; whitespace, and words with no token read, get
    None. Where the original spelling cannot be lined up with the
    tokenizer's words (normalization changed the splitting), the whole
    whitespace-free chunk gets its words' summed weight.
    """
    parts = [p for p in _WHITESPACE.split(note) if p]
    chunks = [p for p in parts if not _WHITESPACE.fullmatch(p)]
    if not chunks:
        return [(note, None)] if note else []
    words = split_words(
        chunks,
        tokenizer.lowercase,
        tokenizer.normalization,
        tokenizer.strip_accents,
    )
    spelled = split_words(chunks, lowercase=False, normalization=None)
    pieces = tokenizer.tokenize(words.flat_values).row_lengths().numpy()
    total = int(pieces.sum())
    if total < len(weights):  # cannot happen unless the tokenizer differs
        return [(note, None)]
    # One weight per token of the whole note, NaN for those not read.
    token_weights = np.r_[np.full(total - len(weights), np.nan), weights]
    word_weights = []
    for start, count in zip(np.cumsum(pieces) - pieces, pieces):
        read = token_weights[start : start + count]
        read = read[~np.isnan(read)]
        word_weights.append(float(read.sum()) if len(read) else None)
    segments, index = [], 0
    row_words = words.row_lengths().numpy()
    row_spelled = spelled.to_list()
    chunk_of = iter(range(len(chunks)))
    for part in parts:
        if _WHITESPACE.fullmatch(part):
            segments.append((part, None))
            continue
        c = next(chunk_of)
        mine = word_weights[index : index + row_words[c]]
        index += row_words[c]
        texts = [t.decode("utf-8") for t in row_spelled[c]]
        if len(texts) == len(mine) and "".join(texts) == part:
            segments.extend(zip(texts, mine))
        else:
            read = [w for w in mine if w is not None]
            segments.append((part, sum(read) if read else None))
    return segments


def plot_explanation(explanation, path, top_k=5):
    """Writes the PNG: the events over the hours since admission (bars
    coloured and sized by weight, the `top_k` heaviest labelled with their
    weights unless under 2% of the heaviest) and, with a note, its words'
    weights in note order. Returns `path`."""
    matplotlib.use("Agg")
    cmap = plt.get_cmap("Oranges")
    words = [
        (text, weight)
        for text, weight in explanation["note_segments"] or []
        if weight is not None
    ]
    rows = 2 if words else 1
    fig, axes = plt.subplots(rows, 1, figsize=(10, 3.4 * rows), squeeze=False)
    ax = axes[0, 0]
    events = explanation["events"]
    times = np.array([e[0] for e in events], "float64")
    weights = np.array(
        [np.nan if e[3] is None else e[3] for e in events], "float64"
    )
    read = ~np.isnan(weights)
    top = max(float(np.nanmax(weights)) if read.any() else 0.0, 1e-12)
    ax.vlines(
        times[read],
        0.0,
        weights[read],
        colors=cmap(0.3 + 0.7 * weights[read] / top),
        linewidth=2.5,
    )
    ax.plot(times[~read], np.zeros((~read).sum()), "|", color="lightgray")
    ax.axvline(
        explanation["prediction_time"],
        color="gray",
        linestyle="--",
        label="prediction time",
    )
    heaviest = np.argsort(-np.where(read, weights, -1.0), kind="stable")
    # The `top_k` heaviest, less those too light to see (under 2% of the
    # heaviest: labels pointing at invisible bars mislead).
    labelled = sorted(
        (
            j
            for j in heaviest[: min(top_k, read.sum())]
            if weights[j] >= 0.02 * top
        ),
        key=times.__getitem__,
    )
    for level, j in enumerate(labelled):  # one row each, in time order
        ax.annotate(
            f"{events[j][1]} ({weights[j]:.2f})",
            (times[j], weights[j]),
            xytext=(times[j], top * (1.1 + 0.13 * level)),
            fontsize=8,
            arrowprops={"arrowstyle": "-", "color": "gray", "lw": 0.6},
            parse_math=False,
        )
    ax.set_ylim(0.0, top * (1.2 + 0.13 * len(labelled)))
    ax.set_xlabel("hours since admission")
    ax.set_ylabel("attention weight")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(
        f"patient {explanation['patient_id']}: risk "
        f"{explanation['risk']:.4f} ({read.sum()} events read)",
        parse_math=False,
    )
    if words:
        _plot_words(axes[1, 0], words, cmap, top_k)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_words(ax, words, cmap, top_k):
    """Bars of the note words' weights, in note order."""
    weights = np.array([w for _, w in words], "float64")
    top = max(float(weights.max()), 1e-12)
    ax.bar(range(len(words)), weights, color=cmap(0.3 + 0.7 * weights / top))
    if len(words) <= 40:
        ax.set_xticks(
            range(len(words)),
            [text for text, _ in words],
            rotation=90,
            fontsize=8,
            parse_math=False,
        )
    else:  # too many to name: label the heaviest
        ax.set_xticks([])
        for j in np.argsort(-weights, kind="stable")[:top_k]:
            ax.annotate(
                words[j][0],
                (j, weights[j]),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                fontsize=8,
                parse_math=False,
            )
    ax.set_ylabel("attention weight")
    ax.set_title("note words (summed over their WordPiece tokens)")


def _shade(weight, top):
    """Inline CSS: the background's opacity is `weight / top`."""
    alpha = weight / top if top > 0 else 0.0
    red, green, blue = SHADE
    return f"background-color: rgba({red}, {green}, {blue}, {alpha:.3f})"


def render_html(explanation, png, model_dir):
    """The report page; every text from the data is HTML-escaped."""
    esc = html.escape
    names = explanation.get("names", {})
    patient = esc(explanation["patient_id"])
    events = explanation["events"]
    top = max([e[3] for e in events if e[3] is not None] + [0.0])
    rows = []
    for (time, code, value, weight), scores in zip(
        events, explanation["attributions"]
    ):
        value_text = "" if np.isnan(value) else f"{value:g}"
        if scores is None:
            scores_text = "<td></td><td></td>"
        else:
            scores_text = "".join(
                f'<td class="number">{score:+.4f}</td>' for score in scores
            )
        if weight is None:
            opening = '<tr class="event unread" data-weight="">'
            weight_text = "not read"
        else:
            opening = (
                f'<tr class="event" data-weight="{weight:.6f}" '
                f'style="{_shade(weight, top)}">'
            )
            weight_text = f"{weight:.4f}"
        rows.append(
            f'{opening}<td class="number">{time:.2f}</td>'
            f"<td>{_code_label(code, names)}</td>"
            f'<td class="number">{esc(value_text)}</td>'
            f'<td class="number">{weight_text}</td>{scores_text}</tr>'
        )
    most = ", ".join(
        f"{_code_label(code, names)} at {time:.1f} h ({weight:.3f})"
        for code, time, weight in explanation["top_events"]
    )
    image = base64.b64encode(png).decode("ascii")
    body = [
        f"<h1>Patient {patient}</h1>",
        f'<p class="risk">Risk: <b>{explanation["risk"]:.4f}</b></p>',
        f"<p>Predicted {explanation['prediction_time']:g} h after "
        f"admission; recorded label {explanation['label']}; model "
        f"{esc(os.fspath(model_dir))}.</p>",
        f"<p>Most attended events: {most or 'none'}.</p>",
        _attribution_html(explanation),
        f'<img alt="attention over the events and the note" '
        f'src="data:image/png;base64,{image}">',
        f"<h2>Events ({len(events)}, up to the prediction time)</h2>",
        "<table><tr><th>hours</th><th>code</th><th>value</th>"
        "<th>attention</th><th>integrated gradients</th>"
        "<th>occlusion</th></tr>",
        *rows,
        "</table>",
        "<h2>Note</h2>",
        _note_html(explanation),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>Risk explanation: patient {patient}</title>\n"
        f"<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _attribution_html(explanation):
    """The caveat on attention, the top events by each attribution, the
    Kendall taus and the risk under uniform attention."""
    names = explanation.get("names", {})
    events, scores = explanation["events"], explanation["attributions"]
    read = [j for j, s in enumerate(scores) if s is not None]
    k = explanation["tau_top_k"]
    lines = []
    for column, name in enumerate(("integrated gradients", "occlusion")):
        top = sorted(read, key=lambda j: -scores[j][column])[:3]
        named = ", ".join(
            f"{_code_label(events[j][1], names)} at {events[j][0]:.1f} h "
            f"({scores[j][column]:+.3f})"
            for j in top
        )
        method = name.replace(" ", "_")
        tau = explanation["tau"][method]
        tau_text = "undefined" if np.isnan(tau) else f"{tau:+.2f}"
        lines.append(
            f'<li class="attribution" data-method="{method}" '
            f'data-tau="{tau}">Most risk-raising events by {name}: '
            f"{named or 'none'}; Kendall tau with attention over the top "
            f"{k} events of either: {tau_text}.</li>"
        )
    pooled = "the events"
    if explanation.get("note_segments") is not None:
        pooled = "the events and of the note's tokens"
    reliance = ""
    change = abs(explanation["uniform_risk"] - explanation["risk"])
    if change < UNIFORM_TOLERANCE:
        reliance = (
            '<span class="no-reliance">: about the same, so for this '
            "patient the prediction does not rely on where attention "
            "looked</span>"
        )
    return (
        f'<p class="caveat">{ATTENTION_CAVEAT}</p>\n<ul>'
        + "".join(lines)
        + "</ul>\n"
        f"<p>Integrated gradients start from the record with every event "
        f"replaced by its average event (risk "
        f"{explanation['baseline_risk']:.4f}) and add up to the difference; "
        f"occlusion is the risk minus the risk without the event. With "
        f"uniform attention weights (plain means of {pooled}) the risk "
        f'would be <span class="uniform-risk">'
        f"{explanation['uniform_risk']:.4f}</span>{reliance}.</p>"
        + _split_reliance(explanation.get("reliance"))
    )


def _split_reliance(reliance):
    """The test split's AUROC with and without attention (written by
    `train ehr`), or nothing."""
    if not reliance or np.isnan(reliance["uniform_auroc"]):
        return ""
    with_attention, uniform = reliance["auroc"], reliance["uniform_auroc"]
    verdict = (
        "barely lower, so over these patients the model does not rely on "
        "where attention looks"
        if with_attention - uniform < UNIFORM_TOLERANCE
        else f"{with_attention - uniform:.3f} lower: the model relies on "
        "where attention looks"
    )
    return (
        f'\n<p class="split-reliance">On the test split of this run '
        f"({reliance['patients']} patients) the AUROC is "
        f"{with_attention:.3f} with attention and {uniform:.3f} with "
        f"uniform weights: {verdict}.</p>"
    )


def _note_html(explanation):
    """The note as spans shaded by weight, or why there is none."""
    note, segments = explanation["note"], explanation["note_segments"]
    if not note.strip():
        return "<p>No note up to the prediction time.</p>"
    if segments is None:
        return (
            "<p>The model reads no notes (trained on events only).</p>"
            f'<div class="note">{html.escape(note)}</div>'
        )
    top = max([w for _, w in segments if w is not None] + [0.0])
    spans = []
    for text, weight in segments:
        if weight is None:
            spans.append(html.escape(text))
        else:
            spans.append(
                f'<span class="word" data-weight="{weight:.6f}" '
                f'title="{weight:.4f}" style="{_shade(weight, top)}">'
                f"{html.escape(text)}</span>"
            )
    words = ", ".join(
        f"{html.escape(word)} ({weight:.3f})"
        for word, weight in explanation["note_words"]
    )
    occluded = sorted(explanation["word_occlusion"], key=lambda w: -w[1])
    occluded = ", ".join(
        f"{html.escape(word)} ({score:+.3f})" for word, score in occluded[:5]
    )
    return (
        f"<p>Most attended words: {words or 'none'}.</p>"
        f'<p class="word-occlusion">Words whose removal lowers the risk '
        f"most (occlusion): {occluded or 'none'}.</p>"
        f'<div class="note">{"".join(spans)}</div>'
    )
