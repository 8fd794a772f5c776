"""`attention-zoo figures`: the cheap figures in seconds, with the
receptive field checked against the dilation arithmetic; the whole
command (slow) within its two minutes."""

import os
import sys
import time

import numpy as np
import pytest
from matplotlib import image as mpimg

from attention_zoo_apps import cli
from attention_zoo_apps.figures import convolution
from attention_zoo_apps.figures import flags
from attention_zoo_apps.figures import heads
from attention_zoo_apps.figures import run
from attention_zoo_apps.figures.gallery import INDEX

CHEAP = ("15.15", "15.16", "heads", "positions")


def _reference_field(steps, kernel_size, dilations):
    """NumPy: `[t, s]` is True when output `t` of the causal stack can
    depend on input `s`, built layer by layer from the taps
    `t - d * k`, `k < kernel_size`."""
    reach = np.eye(steps, dtype=bool)  # (T, S): layer 0 is the input
    for d in dilations:
        step = np.zeros_like(reach)
        for t in range(steps):
            for k in range(kernel_size):
                if t - d * k >= 0:
                    step[t] |= reach[t - d * k]
        reach = step
    return reach


def _assert_picture(path):
    assert os.path.isfile(path), path
    pixels = mpimg.imread(path)
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert pixels[..., :3].std() > 0.05  # not a blank page


@pytest.mark.parametrize(
    "kernel_size, dilations", [(2, (1, 2, 4, 8)), (3, (1, 2)), (2, (1, 1, 3))]
)
def test_receptive_field_matches_the_dilation_arithmetic(
    kernel_size, dilations
):
    steps = 20
    layers = convolution.dilated_stack(dilations, kernel_size)
    responses = convolution.impulse_responses(layers, steps)
    expected = _reference_field(steps, kernel_size, dilations)
    np.testing.assert_array_equal(responses != 0, expected)
    # The last output reads `1 + (K - 1) * sum(dilations)` inputs.
    field = 1 + (kernel_size - 1) * sum(dilations)
    assert np.count_nonzero(responses[-1]) == field
    assert not np.triu(responses, 1).any()  # causal


def test_head_offsets_name_the_key_each_query_reads_most():
    steps = 5
    previous = np.eye(steps, k=-1)  # query i reads key i - 1
    previous[0, 0] = 1.0  # the first has no previous: itself
    itself = np.eye(steps)
    found = heads.offsets(np.stack([previous, itself]))
    assert found == [(-1, 0.8), (0, 1.0)]


def test_cheap_figures_write_pngs_and_the_gallery(tmp_path, capsys):
    code = cli.main(["figures", "--out", str(tmp_path), "--only", *CHEAP])
    assert code == 0
    printed = capsys.readouterr().out
    index = (tmp_path / INDEX).read_text()
    for name in CHEAP:
        assert f"] {name} " in printed
    images = [line for line in index.splitlines() if line.startswith("![")]
    assert len(images) == len(CHEAP)
    for line in images:
        _assert_picture(tmp_path / line.split("](")[1].rstrip(")"))
    # 15.15's caption states the field it measured: 16 = 1 + 15.
    assert "The last output reads 16 inputs" in index
    assert "## Not made" not in index


def test_a_failing_figure_is_reported_and_the_others_still_made(
    tmp_path, capsys, monkeypatch
):
    def broken(out):
        raise RuntimeError("no such model")

    monkeypatch.setitem(run.MAKERS, "15.16", broken)
    code = run.main(["--out", str(tmp_path), "--only", "15.16", "positions"])
    assert code == 1
    assert (
        "15.16 FAILED: RuntimeError: no such model" in capsys.readouterr().out
    )
    index = (tmp_path / INDEX).read_text()
    assert "positions.png" in index
    assert "- 15.16: RuntimeError: no such model" in index


def test_a_bad_figure_name_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["figures", "--only", "15.18"])
    assert stopped.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.slow
def test_the_whole_command_makes_every_figure_in_two_minutes(tmp_path):
    start = time.perf_counter()
    code = cli.main(["figures", "--out", str(tmp_path)])
    seconds = time.perf_counter() - start
    print(f"attention-zoo figures: {seconds:.1f} s", file=sys.stderr)
    assert code == 0
    index = (tmp_path / INDEX).read_text()
    for name in flags.FIGURES:
        # The chapter's figures by number, the lecture's by their PNG.
        numbered = name[0].isdigit()
        assert (f"## Figure {name}:" if numbered else f"]({name}.png)") in index
    assert "## Not made" not in index
    images = [line for line in index.splitlines() if line.startswith("![")]
    assert len(images) >= len(flags.FIGURES)
    for line in images:
        _assert_picture(tmp_path / line.split("](")[1].rstrip(")"))
    assert seconds < 120
