"""Bad input through the exported signatures of the four applications.

Each case of the table `CASES` calls an export's `serving_default` with
one kind of bad input (empty or whitespace-only text, 10,000 words,
non-UTF-8 bytes, an empty batch, a batch of 512, corrupt or truncated
image bytes, unknown codes, non-finite numbers, inputs of different
shapes) and checks that it gives a defined output (shapes, dtypes, finite
numbers, the same answer as an equivalent good input) or an
`InvalidArgumentError` that names the input. The same inputs are then sent
to the exports in a fresh process without Keras or the project, as a
server would load them, which must survive them all and answer the same.
The serving page's "Bad input" table (docs/serving.md) says the same in
words.
"""

import base64
import dataclasses
import json
import math
import re
import struct
import zlib

import numpy as np
import pytest
import tensorflow as tf

from attention_zoo.export import read_metadata
from tests.support import fresh_process
from tests.support import tiny_bundles

BATCH = 512
LONG_WORDS = 10_000
# Output name -> dtype of each application's signature.
OUTPUTS = {
    "translation": {
        "translation": tf.string,
        "attention": tf.float32,
        "truncated": tf.bool,
    },
    "entailment": {
        "probabilities": tf.float32,
        "label": tf.string,
        "alignment": tf.float32,
        "truncated": tf.bool,
    },
    "captioning": {
        "caption": tf.string,
        "attention": tf.float32,
        "tokens": tf.string,
        "truncated": tf.bool,
    },
    "ehr": {
        "risk": tf.float32,
        "event_attention": tf.float32,
        "note_tokens": tf.string,
        "note_attention": tf.float32,
        "truncated": tf.bool,
    },
}
SENTENCE = "small cow helps boat"
PREMISE = "the old sad dirty bird stands"
HYPOTHESIS = "the old sad duck stands"


@dataclasses.dataclass(frozen=True)
class Case:
    """One bad input of one application.

    `inputs()` gives the signature's inputs as NumPy arrays. `expect` is
    either a regex that the `InvalidArgumentError` must match, or a
    function `(outputs, serve, limits)` checking the outputs, where
    `serve(**inputs)` calls the signature with NumPy inputs and `limits`
    is the metadata's `input_limits`.
    """

    application: str
    name: str
    inputs: object
    expect: object

    @property
    def id(self):
        return f"{self.application}-{self.name}"


@pytest.fixture(scope="module")
def exports(shared):
    """`(application, jit_compile=False) -> (path, signature,
    input_limits)`: the tiny bundle's export of the session
    (`tiny_bundles.tiny_export`, read-only), loaded once on first use."""
    cache = {}

    def get(application, jit_compile=False):
        key = application, jit_compile
        if key not in cache:
            path = tiny_bundles.tiny_export(shared, application, jit_compile)
            model = tiny_bundles.loaded_export(shared, application, jit_compile)
            signature = model.signatures["serving_default"]
            limits = read_metadata(path)["input_limits"]
            cache[key] = path, signature, limits
        return cache[key]

    return get


def _call(signature, inputs):
    """The signature's NumPy outputs for NumPy `inputs`."""
    specs = signature.structured_input_signature[1]
    tensors = {
        name: tf.constant(value, specs[name].dtype, shape=np.shape(value))
        for name, value in inputs.items()
    }
    return {name: v.numpy() for name, v in signature(**tensors).items()}


def _strings(*values):
    """A 1-D object array of bytes (str encoded as UTF-8)."""
    array = np.empty(len(values), object)
    array[:] = [v.encode() if isinstance(v, str) else v for v in values]
    return array


def _assert_same(left, right, rows=None):
    """Two output dicts are equal (floats to 1e-5), optionally only
    `rows` of `left` against all of `right`."""
    assert sorted(left) == sorted(right)
    for name in left:
        got = left[name] if rows is None else left[name][rows]
        if got.dtype == object:
            np.testing.assert_array_equal(got, right[name], err_msg=name)
        else:
            np.testing.assert_allclose(
                got, right[name], atol=1e-5, err_msg=name
            )


# --- text: translation and entailment ---------------------------------------


def _long_text(words):
    """`LONG_WORDS` words cycling through `words`."""
    return " ".join(words[i % len(words)] for i in range(LONG_WORDS))


def _translation(*texts):
    return lambda: {"text": _strings(*texts)}


def _translated_nothing(outputs, serve, limits):
    assert outputs["translation"].tolist() == [b""]
    # Not even END: a translation with tokens has at least that one row.
    assert outputs["attention"].shape == (1, 0, 0)


def _whitespace_translates_to_nothing(outputs, serve, limits):
    assert outputs["translation"][0] == b""
    assert not outputs["attention"][0].any()
    assert outputs["attention"][1].any()
    alone = serve(text=_strings(SENTENCE))
    sentence = alone["attention"].shape[2]
    assert outputs["translation"][1] == alone["translation"][0]
    np.testing.assert_allclose(
        outputs["attention"][1, : alone["attention"].shape[1], :sentence],
        alone["attention"][0],
        atol=1e-5,
    )


def _translation_is_cut_to_the_limit(outputs, serve, limits):
    limit = limits["text_tokens"]
    assert outputs["attention"].shape[2] == limit
    # Every word is at least one token: the first `limit` words are cut to
    # the same tokens.
    cut = " ".join(_long_text(SENTENCE.split()).split()[:limit])
    assert outputs.pop("truncated").tolist() == [True]
    read = serve(text=_strings(cut))
    assert read.pop("truncated").tolist() == [False]
    _assert_same(outputs, read)


def _translation_replaces_invalid_utf8(outputs, serve, limits):
    replaced = serve(text=_strings("\ufffd\ufffd", "small cow \ufffd boat"))
    _assert_same(outputs, replaced)


def _translated_empty_batch(outputs, serve, limits):
    assert outputs["translation"].shape == (0,)
    assert outputs["attention"].shape[0] == 0


def _translated_rows_agree(outputs, serve, limits):
    assert outputs["translation"].shape == (BATCH,)
    alone = serve(text=_strings(SENTENCE))
    for row in (0, BATCH - 1):
        _assert_same(outputs, alone, rows=slice(row, row + 1))


def _entailment(premises, hypotheses):
    return lambda: {
        "premise": _strings(*premises),
        "hypothesis": _strings(*hypotheses),
    }


def _entailment_is_cut_to_the_limit(outputs, serve, limits):
    rows, columns = limits["premise_tokens"], limits["hypothesis_tokens"]
    assert outputs["alignment"].shape == (1, rows, columns)
    assert outputs.pop("truncated").tolist() == [True]
    premise = " ".join(_long_text(PREMISE.split()).split()[:rows])
    hypothesis = " ".join(_long_text(HYPOTHESIS.split()).split()[:columns])
    cut = serve(premise=_strings(premise), hypothesis=_strings(hypothesis))
    assert cut.pop("truncated").tolist() == [False]
    _assert_same(outputs, cut)


def _entailment_replaces_invalid_utf8(outputs, serve, limits):
    replaced = serve(
        premise=_strings("\ufffd\ufffd", "the \ufffd bird"),
        hypothesis=_strings("a bird", "\ufffd"),
    )
    _assert_same(outputs, replaced)


def _classified_empty_batch(outputs, serve, limits):
    assert outputs["probabilities"].shape == (0, 3)
    assert outputs["label"].shape == (0,)
    assert outputs["alignment"].shape[0] == 0


def _classified_rows_agree(outputs, serve, limits):
    assert outputs["probabilities"].shape == (BATCH, 3)
    alone = serve(premise=_strings(PREMISE), hypothesis=_strings(HYPOTHESIS))
    for row in (0, BATCH - 1):
        _assert_same(outputs, alone, rows=slice(row, row + 1))


# --- images: captioning -------------------------------------------------------


def _image(seed, channels=3):
    """A generated 32 px shapes image, uint8 `(32, 32, channels)`."""
    from attention_zoo_apps.captioning.shapes import make_synthetic_shapes

    image = make_synthetic_shapes(1, image_size=32, seed=seed).images[0]
    image = tf.cast(image * 255, tf.uint8)
    if channels == 1:
        return tf.image.rgb_to_grayscale(image)
    if channels == 4:
        return tf.concat(
            [image, tf.fill([32, 32, 1], tf.constant(255, tf.uint8))], -1
        )
    return image


def _png(seed=7, channels=3):
    return tf.io.encode_png(_image(seed, channels)).numpy()


def _jpeg(seed=7):
    return tf.io.encode_jpeg(_image(seed)).numpy()


def _png_claiming(width, height):
    """A PNG whose header claims `width x height` pixels, with 100 bytes of
    pixel data: a decompression bomb's header."""

    def chunk(kind, body):
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(100)))
        + chunk(b"IEND", b"")
    )


def _captioning(*images):
    """Inputs of `images`, each bytes or a function giving bytes (made
    when the case runs, not when the tests are collected)."""
    return lambda: {
        "image": _strings(*[x() if callable(x) else x for x in images])
    }


def _captioned(count):
    def check(outputs, serve, limits):
        steps = limits["caption_tokens"]
        assert outputs["caption"].shape == (count,)
        assert outputs["tokens"].shape == (count, steps)
        assert outputs["attention"].shape[:2] == (count, steps)
        assert (outputs["attention"] >= 0).all()

    return check


def _captioned_rows_agree(outputs, serve, limits):
    _captioned(BATCH)(outputs, serve, limits)
    alone = serve(image=_strings(_png()))
    for row in (0, BATCH - 1):
        _assert_same(outputs, alone, rows=slice(row, row + 1))


def _not_an_image(*positions):
    return (
        r"`image`: the entries at these batch positions are not a "
        r"decodable .*\[" + " ".join(str(p) for p in positions) + r"\]"
    )


# --- events and notes: EHR ----------------------------------------------------

NAN = math.nan
INF = math.inf


def _ehr(codes, values, times, prediction_time, note):
    """EHR inputs; `codes` a list of rows, `note` a list of str."""
    width = len(codes[0]) if codes else 0
    code_array = np.empty((len(codes), width), object)
    for i, row in enumerate(codes):
        code_array[i] = [c.encode() if isinstance(c, str) else c for c in row]
    return {
        "codes": code_array,
        "values": np.asarray(values, "float32").reshape(
            len(values), -1 if values else 0
        ),
        "times": np.asarray(times, "float32").reshape(
            len(times), -1 if times else 0
        ),
        "prediction_time": np.asarray(prediction_time, "float32"),
        "note": _strings(*note),
    }


def _patient(codes, values=None, times=None, note="hypotensive overnight"):
    """One patient with events `codes` at times 1, 2, ... (value 1.0)."""
    values = [1.0] * len(codes) if values is None else values
    times = (
        [float(t + 1) for t in range(len(codes))] if times is None else times
    )
    return lambda: _ehr([codes], [values], [times], [24.0], [note])


def _same_as(make_inputs):
    """The outputs equal those of the good input `make_inputs()`."""

    def check(outputs, serve, limits):
        _assert_same(outputs, serve(**make_inputs()))

    return check


def _padding_ignored(outputs, serve, limits):
    assert outputs["event_attention"][0, 1] == 0
    alone = serve(**_patient(["lab:lactate"])())
    np.testing.assert_allclose(outputs["risk"], alone["risk"], atol=1e-6)
    np.testing.assert_allclose(
        outputs["event_attention"][:, :1], alone["event_attention"], atol=1e-6
    )


def _no_events(outputs, serve, limits):
    assert not outputs["event_attention"].any()
    alone = serve(**_ehr([[]], [[]], [[]], [24.0], ["hypotensive overnight"]))
    np.testing.assert_allclose(outputs["risk"], alone["risk"], atol=1e-6)


def _note_read(tokens):
    def check(outputs, serve, limits):
        assert outputs["note_tokens"].shape == (1, tokens)
        assert outputs["note_attention"].shape == (1, tokens)

    return check


def _note_is_cut_to_the_limit(outputs, serve, limits):
    limit = limits["note_tokens"]
    _note_read(limit)(outputs, serve, limits)
    # The last `limit` words (at least one token each) keep the same tokens.
    words = _long_text(["hypotensive", "overnight"]).split()
    cut = serve(**_patient(["lab:lactate"], note=" ".join(words[-limit:]))())
    assert outputs.pop("truncated").tolist() == [True]
    cut.pop("truncated")  # its words too may be more tokens than read
    _assert_same(outputs, cut)


MANY_CODES = ["lab:lactate", "rx:heparin", "lab:glucose"] * 10
MANY_TIMES = [0.5 * (t + 1) for t in range(len(MANY_CODES))]  # <= 24


def _events_are_cut_to_the_limit(outputs, serve, limits):
    limit, count = limits["events"], len(MANY_CODES)
    assert limit < count
    read = np.flatnonzero(outputs["event_attention"][0])
    assert read.min() >= count - limit, read
    cut = _patient(MANY_CODES[-limit:], times=MANY_TIMES[-limit:])
    last = serve(**cut())
    assert outputs["truncated"].tolist() == [True]
    np.testing.assert_allclose(outputs["risk"], last["risk"], atol=1e-6)
    np.testing.assert_allclose(
        outputs["event_attention"][0, -limit:],
        last["event_attention"][0],
        atol=1e-6,
    )


def _well_formed_only(outputs, serve, limits):
    """Nothing beyond what every case checks (shapes, dtypes, finite)."""


def _scored_empty_batch(outputs, serve, limits):
    assert outputs["risk"].shape == (0,)
    assert outputs["event_attention"].shape[0] == 0
    assert outputs["note_tokens"].shape[0] == 0


def _scored_rows_agree(outputs, serve, limits):
    assert outputs["risk"].shape == (BATCH,)
    alone = serve(**_patient(["lab:lactate", "rx:heparin"])())
    for row in (0, BATCH - 1):
        _assert_same(outputs, alone, rows=slice(row, row + 1))


def _batch_of(make_inputs, count=BATCH):
    """`make_inputs()` (one example) repeated `count` times."""

    def inputs():
        return {
            name: np.repeat(value, count, axis=0)
            for name, value in make_inputs().items()
        }

    return inputs


CASES = [
    # Translation: `text`.
    Case("translation", "empty string", _translation(""), _translated_nothing),
    Case(
        "translation",
        "whitespace only",
        _translation(" \t\n ", SENTENCE),
        _whitespace_translates_to_nothing,
    ),
    Case(
        "translation",
        "10,000 words",
        _translation(_long_text(SENTENCE.split())),
        _translation_is_cut_to_the_limit,
    ),
    Case(
        "translation",
        "non-UTF-8 bytes",
        _translation(b"\xff\xfe", b"small cow \xe9 boat"),
        _translation_replaces_invalid_utf8,
    ),
    Case(
        "translation",
        "empty batch",
        _translation(),
        _translated_empty_batch,
    ),
    Case(
        "translation",
        "batch of 512",
        _translation(*[SENTENCE] * BATCH),
        _translated_rows_agree,
    ),
    # Entailment: `premise`, `hypothesis`.
    Case(
        "entailment",
        "empty strings",
        _entailment([""], [""]),
        r"`premise` must not be empty .*\[0\]",
    ),
    Case(
        "entailment",
        "whitespace only",
        _entailment([PREMISE, " \t"], [HYPOTHESIS, "\n"]),
        r"`premise` must not be empty .*\[1\]",
    ),
    Case(
        "entailment",
        "empty hypothesis",
        _entailment([PREMISE, PREMISE], [HYPOTHESIS, "\u00a0"]),
        r"`hypothesis` must not be empty .*\[1\]",
    ),
    Case(
        "entailment",
        "10,000 words",
        _entailment(
            [_long_text(PREMISE.split())], [_long_text(HYPOTHESIS.split())]
        ),
        _entailment_is_cut_to_the_limit,
    ),
    Case(
        "entailment",
        "non-UTF-8 bytes",
        _entailment([b"\xff\xfe", b"the \xe9 bird"], [b"a bird", b"\xc3"]),
        _entailment_replaces_invalid_utf8,
    ),
    Case(
        "entailment",
        "empty batch",
        _entailment([], []),
        _classified_empty_batch,
    ),
    Case(
        "entailment",
        "batch of 512",
        _entailment([PREMISE] * BATCH, [HYPOTHESIS] * BATCH),
        _classified_rows_agree,
    ),
    Case(
        "entailment",
        "premise and hypothesis counts differ",
        _entailment([PREMISE, PREMISE], [HYPOTHESIS]),
        "`premise` and `hypothesis` must have the same length",
    ),
    # Captioning: `image`.
    Case(
        "captioning",
        "PNG, JPEG, grayscale and RGBA",
        _captioning(
            _png, _jpeg, lambda: _png(channels=1), lambda: _png(channels=4)
        ),
        _captioned(4),
    ),
    Case("captioning", "empty bytes", _captioning(b""), _not_an_image(0)),
    Case(
        "captioning",
        "corrupt PNG",
        _captioning(b"\x89PNG\r\n\x1a\n" + b"garbage" * 20),
        _not_an_image(0),
    ),
    Case(
        "captioning",
        "truncated PNG",
        _captioning(lambda: _png()[: len(_png()) // 2]),
        _not_an_image(0),
    ),
    Case(
        "captioning",
        "truncated JPEG",
        _captioning(lambda: _jpeg()[: len(_jpeg()) // 2]),
        _not_an_image(0),
    ),
    Case(
        "captioning",
        "not an image",
        _captioning(b"a caption, not an image"),
        _not_an_image(0),
    ),
    Case(
        "captioning",
        "header claiming 65535 x 65535 pixels",
        _captioning(lambda: _png_claiming(65535, 65535)),
        _not_an_image(0),
    ),
    Case(
        "captioning",
        "bad images among good ones",
        _captioning(_png, b"", _jpeg, b"GIF89a\x00\x00"),
        _not_an_image(1, 3),
    ),
    Case("captioning", "empty batch", _captioning(), _captioned(0)),
    Case(
        "captioning",
        "batch of 512",
        lambda: _captioning(*[_png()] * BATCH)(),
        _captioned_rows_agree,
    ),
    # EHR: `codes`, `values`, `times`, `prediction_time`, `note`.
    Case(
        "ehr",
        "unknown codes",
        _patient(["never:seen", "zzz"]),
        _same_as(_patient(["other:unknown", "y"])),
    ),
    Case("ehr", "empty codes only", _patient(["", ""]), _no_events),
    Case("ehr", "whitespace codes", _patient([" ", "\t"]), _no_events),
    Case("ehr", "no event slots", _patient([]), _no_events),
    Case(
        "ehr",
        "empty note",
        _patient(["lab:lactate"], note=""),
        _note_read(0),
    ),
    Case(
        "ehr",
        "10,000-word note",
        _patient(
            ["lab:lactate"], note=_long_text(["hypotensive", "overnight"])
        ),
        _note_is_cut_to_the_limit,
    ),
    Case(
        "ehr",
        "more events than read",
        _patient(MANY_CODES, times=MANY_TIMES),
        _events_are_cut_to_the_limit,
    ),
    Case(
        "ehr",
        "NaN and infinite values",
        _patient(["lab:lactate"] * 3, values=[NAN, INF, -INF]),
        _same_as(_patient(["lab:lactate"] * 3, values=[NAN] * 3)),
    ),
    Case(
        "ehr",
        "NaN time on padding",
        _patient(["lab:lactate", ""], times=[1.0, NAN]),
        _padding_ignored,
    ),
    Case(
        "ehr",
        "extreme finite times",
        lambda: _ehr([["lab:lactate"]], [[1.0]], [[-3e38]], [3e38], ["x"]),
        _well_formed_only,
    ),
    Case(
        "ehr",
        "NaN time",
        _patient(["lab:lactate", "rx:heparin"], times=[1.0, NAN]),
        r"`times` must be finite .*\[\[0 1\]\]",
    ),
    Case(
        "ehr",
        "infinite time",
        _patient(["lab:lactate"], times=[-INF]),
        r"`times` must be finite .*\[\[0 0\]\]",
    ),
    Case(
        "ehr",
        "NaN prediction time",
        lambda: _ehr([["lab:lactate"]], [[1.0]], [[1.0]], [NAN], ["x"]),
        r"`prediction_time` must be finite .*\[0\]",
    ),
    Case(
        "ehr",
        "infinite prediction time",
        lambda: _ehr([["lab:lactate"]], [[1.0]], [[1.0]], [INF], ["x"]),
        r"`prediction_time` must be finite",
    ),
    Case(
        "ehr",
        "non-UTF-8 code and note",
        _patient([b"\xff\xfe"], note=b"caf\xe9 \xff"),
        _same_as(_patient(["other:unknown"], note="caf\ufffd \ufffd")),
    ),
    Case(
        "ehr",
        "codes and values shapes differ",
        lambda: _ehr([["lab:lactate", ""]], [[1.0]], [[1.0, 2.0]], [24], ["x"]),
        "`codes`, `values` and `times` must have one shape",
    ),
    Case(
        "ehr",
        "codes and times shapes differ",
        lambda: {
            **_ehr(
                [["lab:lactate", ""]], [[1.0, 0.0]], [[1.0, 2.0]], [24], [""]
            ),
            "times": np.ones((1, 3), "float32"),
        },
        "`codes`, `values` and `times` must have one shape",
    ),
    Case(
        "ehr",
        "prediction times and notes per patient differ",
        lambda: _ehr([["lab:lactate"]], [[1.0]], [[1.0]], [24, 12], ["x"]),
        "`prediction_time` and `note` need one entry a patient",
    ),
    Case(
        "ehr",
        "empty batch",
        lambda: _ehr([], [], [], [], []),
        _scored_empty_batch,
    ),
    Case(
        "ehr",
        "empty batch with event slots",
        lambda: {
            **_ehr([], [], [], [], []),
            "codes": np.empty((0, 3), object),
            "values": np.zeros((0, 3), "float32"),
            "times": np.zeros((0, 3), "float32"),
        },
        _scored_empty_batch,
    ),
    Case(
        "ehr",
        "batch of 512",
        _batch_of(_patient(["lab:lactate", "rx:heparin"])),
        _scored_rows_agree,
    ),
]


def _assert_well_formed(application, outputs, batch):
    """Every output present, of its dtype, `batch` rows, finite numbers."""
    assert sorted(outputs) == sorted(OUTPUTS[application])
    for name, dtype in OUTPUTS[application].items():
        value = outputs[name]
        assert value.shape[0] == batch, name
        if dtype == tf.string:
            assert value.dtype == object, name
        elif dtype == tf.bool:
            assert value.dtype == bool, name
        else:
            assert value.dtype == np.float32, name
            assert np.isfinite(value).all(), name


def _shapes(outputs):
    """Output name -> shape (a list), as the serving process answers."""
    return {name: list(value.shape) for name, value in outputs.items()}


def _run(case, signature, limits):
    """Runs `case` against `signature` and checks what it expects; returns
    the output shapes (None when the case expects an error)."""
    inputs = case.inputs()
    if isinstance(case.expect, str):
        with pytest.raises(tf.errors.InvalidArgumentError, match=case.expect):
            _call(signature, inputs)
        return None
    outputs = _call(signature, inputs)
    shapes = _shapes(outputs)
    batch = len(next(iter(inputs.values())))
    _assert_well_formed(case.application, outputs, batch)
    case.expect(outputs, lambda **kw: _call(signature, kw), limits)
    return shapes


# Case id -> the output shapes of the export without XLA, from a case that
# passed here: the serving process's test reuses them instead of calling
# the signature again (it calls it for the cases not run before it).
_SHAPES = {}


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_gives_a_defined_output_or_names_the_input(case, exports):
    _, signature, limits = exports(case.application)
    _SHAPES[case.id] = _run(case, signature, limits)


# With XLA (the default when exporting on a GPU) the compiled part sees a
# padded batch; the cases where that could matter.
XLA_CASES = [
    case
    for case in CASES
    if case.name
    in (
        "empty string",
        "empty strings",
        "whitespace only",
        "empty batch",
        "empty codes only",
        "bad images among good ones",
        "NaN time",
    )
]


@pytest.mark.parametrize("case", XLA_CASES, ids=[c.id for c in XLA_CASES])
def test_bad_input_with_xla(case, exports):
    _, signature, limits = exports(case.application, jit_compile=True)
    _run(case, signature, limits)


def _as_json(value):
    """A NumPy input as JSON data: dtype, shape and the flat items (bytes
    as base64; NaN and infinities as Python's `json` writes them)."""
    array = np.asarray(value)
    if array.dtype == object:
        items = [base64.b64encode(x).decode("ascii") for x in array.ravel()]
        return {"dtype": "string", "shape": array.shape, "items": items}
    return {"dtype": "float32", "shape": array.shape, "items": array.ravel()}


def test_a_serving_process_survives_every_case(exports, tmp_path):
    requests, expected = [], {}
    for case in CASES:
        path, signature, _ = exports(case.application)
        inputs = case.inputs()
        encoded = {name: _as_json(value) for name, value in inputs.items()}
        requests.append((case.id, path, encoded))
        if not isinstance(case.expect, str):
            if _SHAPES.get(case.id) is None:
                _SHAPES[case.id] = _shapes(_call(signature, inputs))
            expected[case.id] = _SHAPES[case.id]
    request_file = tmp_path / "requests.json"
    request_file.write_text(
        json.dumps(requests, default=lambda x: np.asarray(x).tolist())
    )
    # Only `InvalidArgumentError` is caught: any other exception, or a
    # crash, fails the subprocess and so this test.
    answers = fresh_process.run_without_project(
        f"""
import base64

signatures = {{}}
answers = {{}}
with open({str(request_file)!r}) as f:
    requests = json.load(f)
for case_id, path, inputs in requests:
    if path not in signatures:
        model = tf.saved_model.load(path)
        signatures[path] = model.signatures["serving_default"]
    tensors = {{}}
    for name, spec in inputs.items():
        if spec["dtype"] == "string":
            items = [base64.b64decode(item) for item in spec["items"]]
            array = np.array(items, object).reshape(spec["shape"])
            tensors[name] = tf.constant(array, tf.string)
        else:
            array = np.array(spec["items"], "float32").reshape(spec["shape"])
            tensors[name] = tf.constant(array)
    try:
        outputs = signatures[path](**tensors)
    except tf.errors.InvalidArgumentError as error:
        answers[case_id] = {{"error": error.message}}
    else:
        answers[case_id] = {{k: list(v.shape) for k, v in outputs.items()}}
emit(answers)
"""
    )
    assert sorted(answers) == sorted(case.id for case in CASES)
    for case in CASES:
        answer = answers[case.id]
        if isinstance(case.expect, str):
            assert re.search(case.expect, answer.get("error", "")), case.id
        else:
            assert answer == expected[case.id], case.id
