"""`attention-zoo explain`: the report's risk equals `RiskModel.predict`,
it shows the record up to the prediction time and nothing later, escapes
the data's text, shades the most attended event darkest, writes a valid
PNG; an unknown patient, an export, another application's run folder and
a missing folder each exit with code 2 and one line."""

import base64
import csv
import html.parser
import re

import numpy as np
import pytest

from attention_zoo_apps import cli
from attention_zoo_apps.ehr import attributions
from attention_zoo_apps.ehr.data import load_long_format
from attention_zoo_apps.ehr.explain import note_segments
from attention_zoo_apps.ehr.synthetic import make_synthetic_patients
from attention_zoo_apps.ehr.synthetic import save_synthetic_long_format
from tests.support import shared_bundles
from tests.support import tiny_bundles
from tests.support.shared_folders import copy_of

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
HOSTILE = "p<b>1</b>"  # a patient whose id, codes and note hold markup
HOSTILE_CODE = "<script>alert(1)</script>"
HOSTILE_NOTE = 'Hypotensive, <script>alert("note")</script> & patient  stable'


@pytest.fixture(scope="module")
def model_dir(shared):
    """A run folder as `train ehr --run-dir` leaves it (2 epochs of the
    tiny config on 48 synthetic patients; shared by the test files, read
    only)."""
    return shared_bundles.ehr_run(shared)[1]


@pytest.fixture(scope="module")
def risk_model(shared):
    """The risk model of `model_dir`."""
    return shared_bundles.ehr_run(shared)[0]


@pytest.fixture(scope="module")
def synthetic():
    return make_synthetic_patients(3, seed=5)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, synthetic):
    """Three synthetic patients (with rows after the prediction time) and
    `HOSTILE`, long format."""
    directory = tmp_path_factory.mktemp("records")
    save_synthetic_long_format(synthetic, directory)
    rows = {
        "events.csv": [
            (HOSTILE, "1.0", "lab:lactate", "2.0"),
            (HOSTILE, "2.5", HOSTILE_CODE, ""),
            (HOSTILE, "5.0", "rx:heparin", ""),
            (HOSTILE, "30.0", "late:after_cutoff", "1.0"),
        ],
        "notes.csv": [
            (HOSTILE, "3.0", HOSTILE_NOTE),
            (HOSTILE, "30.0", "late secret words"),
        ],
        "labels.csv": [(HOSTILE, "1", "24.0", HOSTILE)],
    }
    for name, lines in rows.items():
        with open(directory / name, "a", newline="") as f:
            csv.writer(f).writerows(lines)
    return directory


class _Report(html.parser.HTMLParser):
    """The event rows `(cells, data-weight, style)` and the note's word
    spans `(text, style)` of a report page."""

    def __init__(self, text):
        super().__init__()
        self.events, self.words, self._open = [], [], None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and "event" in attrs.get("class", ""):
            self.events.append(([], attrs["data-weight"], attrs.get("style")))
        elif tag == "td" and self.events and self._open != "words":
            self._open = "cell"
            self.events[-1][0].append("")
        elif tag == "span" and attrs.get("class") == "word":
            self._open = "words"
            self.words.append(["", attrs["style"]])

    def handle_endtag(self, tag):
        if tag in ("td", "span"):
            self._open = None

    def handle_data(self, data):
        if self._open == "cell":
            self.events[-1][0][-1] += data
        elif self._open == "words":
            self.words[-1][0] += data


def _alpha(style):
    return float(re.search(r"rgba\([^)]*, ([0-9.]+)\)", style).group(1))


def _explain(model_dir, data_dir, patient, out):
    return cli.main(
        [
            "explain",
            str(model_dir),
            "--patient",
            patient,
            "--data",
            str(data_dir),
            "--out",
            str(out),
        ]
    )


def test_report_shows_the_predicted_risk_and_attention(
    model_dir, risk_model, data_dir, synthetic, tmp_path, capsys
):
    out = tmp_path / "report.html"
    assert _explain(model_dir, data_dir, "p00001", out) == 0
    page = out.read_text(encoding="utf-8")
    records = load_long_format(data_dir)
    record = records.select([records.patient_ids.index("p00001")])
    expected = risk_model.predict(record)
    risk = f"{expected['risk'][0]:.4f}"
    assert f"Risk: <b>{risk}</b>" in page
    assert f"risk {risk}" in capsys.readouterr().out
    # Every event up to the prediction time, in order; none after it.
    report = _Report(page)
    assert [cells[1] for cells, _, _ in report.events] == record.codes[0]
    assert synthetic.records.codes[1] == record.codes[0]
    assert all(float(cells[0]) <= 24.0 for cells, _, _ in report.events)
    for _, code, _ in synthetic.late_events[1]:
        if code.startswith("outcome:"):  # only ever after the cutoff
            assert code not in page
    assert synthetic.late_notes[1][0][1] not in page
    # The most attended event is shaded darkest.
    alphas = [_alpha(style) for _, _, style in report.events]
    heaviest = int(np.argmax(expected["event_attention"][0]))
    assert alphas[heaviest] == max(alphas) == 1.0
    weights = [float(weight) for _, weight, _ in report.events]
    np.testing.assert_allclose(
        weights, expected["event_attention"][0], atol=1e-6
    )
    # A valid PNG beside the page, also inline as a data URI.
    png = (tmp_path / "report.png").read_bytes()
    assert png.startswith(PNG_SIGNATURE) and b"IEND" in png[-12:]
    inline = re.search(r'src="data:image/png;base64,([^"]+)"', page)
    assert base64.b64decode(inline.group(1)) == png
    assert "http://" not in page and "https://" not in page


def test_report_shows_attributions_beside_attention(
    model_dir, risk_model, data_dir, tmp_path
):
    """Integrated gradients and occlusion per event, as
    `attribute_records` computes them; the taus; the caveat."""
    out = tmp_path / "report.html"
    assert _explain(model_dir, data_dir, "p00002", out) == 0
    page = out.read_text(encoding="utf-8")
    records = load_long_format(data_dir)
    record = records.select([records.patient_ids.index("p00002")])
    expected = attributions.attribute_records(risk_model, record)
    report = _Report(page)
    shown = np.array(
        [[float(c) for c in cells[4:6]] for cells, _, _ in report.events]
    )
    np.testing.assert_allclose(
        shown[:, 0], expected["integrated_gradients"][0], atol=1e-4
    )
    np.testing.assert_allclose(shown[:, 1], expected["occlusion"][0], atol=1e-4)
    for method in ("integrated_gradients", "occlusion"):
        tau = float(
            re.search(f'data-method="{method}" data-tau="([^"]+)"', page).group(
                1
            )
        )
        assert tau == pytest.approx(expected[f"tau_{method}"][0], nan_ok=True)
    assert "Attention is not Explanation" in page and "Wiegreffe" in page
    uniform = re.search(r'class="uniform-risk">([0-9.]+)<', page).group(1)
    arrays = risk_model.encode(record)
    arrays.pop("event_index")
    assert float(uniform) == pytest.approx(
        attributions.uniform_attention_risk(risk_model.model, arrays)[0],
        abs=1e-4,
    )
    assert "Words whose removal lowers the risk most" in page


def test_text_from_the_data_is_escaped(model_dir, data_dir, tmp_path):
    out = tmp_path / "hostile.html"
    assert _explain(model_dir, data_dir, HOSTILE, out) == 0
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page and "<b>1</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "p&lt;b&gt;1&lt;/b&gt;" in page
    assert "late:after_cutoff" not in page and "secret" not in page
    report = _Report(page)
    codes = [cells[1] for cells, _, _ in report.events]
    assert codes == ["lab:lactate", HOSTILE_CODE, "rx:heparin"]
    # The note's words, shaded one by one, spell the note (case kept).
    words = [text for text, _ in report.words]
    assert "Hypotensive" in words and "<" in words and "script" in words
    assert "".join(words) == HOSTILE_NOTE.replace(" ", "")
    assert max(_alpha(style) for _, style in report.words) == 1.0


def test_unknown_patient_exits_with_code_2(
    model_dir, data_dir, tmp_path, capsys
):
    out = tmp_path / "report.html"
    assert _explain(model_dir, data_dir, "nobody", out) == 2
    err = capsys.readouterr().err
    assert "'nobody'" in err and str(data_dir) in err
    assert not out.exists()


def test_a_folder_without_a_model_exits_with_code_2(data_dir, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert _explain(tmp_path, data_dir, "p00001", out) == 2
    assert "holds no trained risk model" in capsys.readouterr().err


def _refusal(directory, data_dir, tmp_path, capsys):
    """The one line `explain directory` ends with (exit code 2)."""
    assert _explain(directory, data_dir, "p00001", tmp_path / "r.html") == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_another_applications_run_folder_is_one_line(
    data_dir, tmp_path, capsys
):
    run = tmp_path / "translation_run"
    run.mkdir()
    (run / "config.json").write_text('{"source_vocabulary_size": 100}')
    (run / "model.weights.h5").write_bytes(b"")
    line = _refusal(run, data_dir, tmp_path, capsys)
    assert f"{run / 'config.json'} is not the config of an ehr run" in line
    assert "source_vocabulary_size" in line and "--run-dir" in line


def test_a_damaged_weights_file_is_one_line(
    model_dir, data_dir, tmp_path, capsys
):
    run = tmp_path / "run"
    copy_of(model_dir, run)
    (run / "model.weights.h5").write_bytes(b"not hdf5")
    line = _refusal(run, data_dir, tmp_path, capsys)
    assert f"cannot load the risk model in {run}" in line


def test_an_export_or_a_missing_folder_is_one_line(data_dir, tmp_path, capsys):
    exports = tmp_path / "saved_models"
    tiny_bundles.save_stand_in("ehr", str(exports / "1"))
    for folder in (exports, exports / "1"):
        line = _refusal(folder, data_dir, tmp_path, capsys)
        assert "(an export; pass the --run-dir of `train ehr`)" in line
    missing = tmp_path / "missing"
    line = _refusal(missing, data_dir, tmp_path, capsys)
    assert f"{missing} does not exist" in line


def test_note_segments_join_back_and_drop_unread_tokens(risk_model):
    tokenizer = risk_model.note_tokenizer
    note = "Patient  HYPOTENSIVE,\nqwertyuiop zz."
    count = int(tokenizer.tokenize([note]).row_lengths()[0])
    weights = np.linspace(1.0, 2.0, count).astype("float32")
    segments = note_segments(tokenizer, note, weights)
    assert "".join(text for text, _ in segments) == note
    spelled = [text for text, weight in segments if weight is not None]
    assert spelled[:3] == ["Patient", "HYPOTENSIVE", ","]
    total = sum(weight for _, weight in segments if weight is not None)
    assert total == pytest.approx(float(weights.sum()), rel=1e-6)
    # Only the last 2 tokens read: the first words get no weight, and the
    # last ones share exactly those 2 tokens' weights.
    short = note_segments(tokenizer, note, weights[-2:])
    assert short[0] == ("Patient", None)
    read = [weight for _, weight in short if weight is not None]
    assert sum(read) == pytest.approx(float(weights[-2:].sum()), rel=1e-6)


def test_predicted_note_words_are_distinct(risk_model):
    """A word that occurs several times is listed once (weights summed)."""
    records = make_synthetic_patients(6, seed=7).records
    output = risk_model.predict(records, top_k=50)
    for i, words in enumerate(output["note_words"]):
        names = [word for word, _ in words]
        assert len(names) == len(set(names))
        total = sum(weight for _, weight in words)
        attention = output["note_attention"][i]
        if len(names) < 50:  # every word listed: all the weight is there
            assert total == pytest.approx(float(attention.sum()), abs=1e-5)
    assert any(records.notes[i].split().count("patient") > 1 for i in range(6))


@pytest.mark.parametrize("uniform, says", [(0.505, True), (0.3, False)])
def test_page_says_when_attention_barely_matters(uniform, says):
    from attention_zoo_apps.ehr import explain

    explanation = {
        "events": [(1.0, "a", 2.0, 0.7), (2.0, "b", np.nan, 0.3)],
        "attributions": [(0.1, 0.2), (-0.1, 0.0)],
        "tau": {"integrated_gradients": 1.0, "occlusion": float("nan")},
        "tau_top_k": 5,
        "baseline_risk": 0.4,
        "risk": 0.5,
        "uniform_risk": uniform,
    }
    text = explain._attribution_html(explanation)
    assert ('class="no-reliance"' in text) == says
    assert "a at 1.0 h (+0.100)" in text and "undefined" in text


@pytest.mark.parametrize(
    "uniform, verdict", [(0.795, "does not rely"), (0.6, "0.200 lower")]
)
def test_page_gives_the_test_splits_auroc_with_uniform_weights(
    uniform, verdict
):
    from attention_zoo_apps.ehr import explain

    explanation = {
        "events": [(1.0, "a", 2.0, 0.7)],
        "attributions": [(0.1, 0.2)],
        "tau": {"integrated_gradients": 1.0, "occlusion": 1.0},
        "tau_top_k": 5,
        "baseline_risk": 0.4,
        "risk": 0.5,
        "uniform_risk": 0.2,
        "reliance": {"auroc": 0.8, "uniform_auroc": uniform, "patients": 9},
    }
    text = explain._attribution_html(explanation)
    assert "(9 patients) the AUROC is 0.800 with attention" in text
    assert f"and {uniform:.3f} with uniform weights" in text
    assert verdict in text
    explanation["reliance"] = None  # runs from before it: nothing
    assert "split-reliance" not in explain._attribution_html(explanation)


def test_attention_reliance_scores_the_split_both_ways(risk_model, tmp_path):
    from attention_zoo_apps.ehr.metrics import auroc

    records = make_synthetic_patients(40, seed=11).records
    reliance = attributions.attention_reliance(risk_model, records)
    risk = risk_model.predict(records)["risk"]
    arrays = risk_model.encode(records)
    arrays.pop("event_index")
    uniform = attributions.uniform_attention_risk(risk_model.model, arrays)
    assert reliance["patients"] == 40
    assert reliance["auroc"] == pytest.approx(auroc(records.labels, risk))
    assert reliance["uniform_auroc"] == pytest.approx(
        auroc(records.labels, uniform)
    )
    assert not np.allclose(risk, uniform)  # attention does change the risk
    # Risks already predicted (`train ehr`'s evaluation) are used as given.
    given = attributions.attention_reliance(risk_model, records, 1 - risk)
    assert given["auroc"] == pytest.approx(auroc(records.labels, 1 - risk))
    assert given["uniform_auroc"] == reliance["uniform_auroc"]
    attributions.write_reliance(str(tmp_path), reliance)
    assert attributions.read_reliance(str(tmp_path)) == reliance


def test_codes_show_the_readable_name_the_data_carries(model_dir, tmp_path):
    """FHIR's `display` names its code on the page (beside the code)."""
    import json

    loinc = "http://loinc.org"
    stay = {"reference": "Encounter/e1"}

    def observation(key, hours, code, display=None):
        coding = {"system": loinc, "code": code}
        if display:
            coding["display"] = display
        return {
            "resourceType": "Observation",
            "id": key,
            "status": "final",
            "code": {"coding": [coding]},
            "subject": {"reference": "Patient/a"},
            "encounter": stay,
            "effectiveDateTime": f"2150-01-01T{hours:02d}:00:00Z",
            "valueQuantity": {"value": 1.5, "unit": "mg/dL"},
        }

    resources = [
        {"resourceType": "Patient", "id": "a"},
        {
            "resourceType": "Encounter",
            "id": "e1",
            "class": {"code": "IMP"},
            "subject": {"reference": "Patient/a"},
            "period": {
                "start": "2150-01-01T00:00:00Z",
                "end": "2150-01-05T00:00:00Z",
            },
        },
        observation("o1", 2, "2160-0", "Creatinine <serum>"),
        observation("o2", 3, "X-1"),
    ]
    folder = tmp_path / "fhir"
    folder.mkdir()
    (folder / "all.ndjson").write_text(
        "".join(json.dumps(r) + "\n" for r in resources), encoding="utf-8"
    )
    out = tmp_path / "page.html"
    assert _explain(model_dir, folder, "e1", out) == 0
    page = out.read_text(encoding="utf-8")
    codes = [cells[1] for cells, _, _ in _Report(page).events]
    assert codes == [
        "Creatinine <serum> (mg/dL) [http://loinc.org|2160-0]",
        "http://loinc.org|X-1",
    ]
    assert "Creatinine &lt;serum&gt; (mg/dL)" in page  # escaped
