"""The serving benchmarks run end to end, briefly: every cell answered
with no error and no wrong answer, every fault run as it should be."""

import pytest

from benchmarks import serving_faults
from benchmarks import serving_load


@pytest.mark.slow
def test_serving_load_measures_every_cell(tmp_path):
    results = serving_load.measure(
        serving_load.parse_arguments(
            [
                "--apps",
                "entailment",
                "echo",
                "--clients=2",
                "--seconds=0.5",
                "--warmup=0.2",
                f"--out={tmp_path}",
            ]
        )
    )
    result = results["applications"]["entailment"]
    assert result["ceiling"]["examples_per_s"] > 0
    cells = {(c["protocol"], c["batching"]): c for c in result["cells"]}
    assert set(cells) == {
        (protocol, batching)
        for protocol in ("rest", "grpc")
        for batching in ("on", "off")
    }
    for cell in cells.values():
        assert cell["answers"] > 0, cell
        assert cell["errors"] == cell["wrong"] == 0, cell
        assert cell["mean_batch_size"] >= 1, cell
    echo = results["applications"]["echo"]  # the server's own ceiling
    assert len(echo["cells"]) == 4
    assert all(c["answers"] > 0 and c["errors"] == 0 for c in echo["cells"])
    assert all(c["wrong"] == 0 for c in echo["cells"])
    assert (tmp_path / "serving_load.json").exists()


@pytest.mark.slow
def test_serving_faults_new_and_corrupt_versions():
    rows = serving_faults.main(
        [
            "--clients=2",
            "--protocols=grpc",
            "--batching=on",
            "--scenarios",
            "new version",
            "corrupt version",
            "--seconds=0.5",
            "--poll=0.2",
            "--out=",
        ]
    )
    new, corrupt = rows
    assert new["failed"] == new["wrong"] == 0, new
    assert new["version_1_answers"] > 0 and new["version_2_answers"] > 0
    assert corrupt["failed"] == corrupt["wrong"] == 0, corrupt
    assert corrupt["version_2_answers"] == 0
    assert corrupt["version_1_state"] == "AVAILABLE"
