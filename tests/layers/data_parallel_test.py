"""The layers under `keras.distribution.DataParallel` on the JAX backend.

A model of `AdditiveAttention`, `MultiHead` and `AttentionPooling` is
trained twice on the same batches from the same weights: on one device,
then with `DataParallel` over two CPU devices (each step's batch split in
two, the weights replicated). The loss curves must agree. It runs in a
subprocess with `KERAS_BACKEND=jax` and
`XLA_FLAGS=--xla_force_host_platform_device_count=2` (both must be set
before JAX starts), so it would run the same under either backend of the
suite: it runs on README's JAX line only (`jax_runs.ONLY_ON_JAX`), once.
The same process then runs the training page's `DataParallel` example
(its `KERAS_BACKEND=jax python - <<'EOF'` block) as written.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np

from tests.support import jax_runs
from tests.support.data_parallel_fits import EPOCHS

pytestmark = jax_runs.ONLY_ON_JAX

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def _page_example():
    """The Python of the training page's `DataParallel` example."""
    page = pathlib.Path(ROOT) / "docs" / "training.md"
    heredoc = r"KERAS_BACKEND=jax python - <<'EOF'\n(.*?)\nEOF\n"
    return re.search(heredoc, page.read_text(), re.S)[1]


def test_data_parallel_matches_one_device():
    env = dict(
        os.environ,
        KERAS_BACKEND="jax",
        JAX_PLATFORMS="cpu",
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    script = (
        "import json\n"
        "import keras\n"
        "import numpy as np\n"
        "from tests.support.data_parallel_fits import "
        "compare_single_and_data_parallel\n"
        "result = compare_single_and_data_parallel()\n"
        f"page = {_page_example()!r}\n"
        "exec(compile(page, 'docs/training.md', 'exec'), {})\n"
        "mesh = keras.distribution.distribution().device_mesh\n"
        "result['page_devices'] = int(np.size(mesh.devices))\n"
        "print(json.dumps(result))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["backend"] == "jax"
    assert result["devices"] == result["weight_devices"] == 2
    assert result["page_devices"] == 2  # the page's example ran
    single, parallel = result["single"], result["data_parallel"]
    assert len(parallel) == EPOCHS
    assert parallel[-1] < 0.8 * parallel[0]  # it learns
    # The same global batches and weights: the same curve, up to the
    # order in which the two halves' gradients are summed.
    np.testing.assert_allclose(parallel, single, rtol=1e-4)
