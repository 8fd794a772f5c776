import atexit
import gc
import os
import pathlib
import shutil
import tempfile


def _add_xla_flag(flag):
    """Appends `--name=value` to `XLA_FLAGS` unless it already sets `name`."""
    flags = os.environ.get("XLA_FLAGS", "")
    if flag.split("=")[0] not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {flag}".strip()


def _share_the_cores():
    """Under pytest-xdist, each worker's TensorFlow and XLA use their share
    of the cores (one each with `-n auto` on 2 cores) rather than every
    core each: thread pools of two workers that both take every core
    fight over them. Set in the environment before TensorFlow or JAX
    starts, so the processes the tests start get the same share.
    `ATTENTION_ZOO_TEST_THREADS` overrides the share (0: leave as is)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    default = max(1, (os.cpu_count() or 1) // workers) if workers > 1 else 0
    threads = int(os.environ.get("ATTENTION_ZOO_TEST_THREADS", default))
    if threads < 1:
        return
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(threads))
    os.environ.setdefault("TF_NUM_INTEROP_THREADS", str(threads))
    if threads == 1:
        _add_xla_flag("--xla_cpu_multi_thread_eigen=false")


def _compile_quickly():
    """XLA compiles the tests' many small functions quickly: LLVM's cheap
    settings (`--xla_backend_optimization_level=0` and
    `--xla_llvm_disable_expensive_passes=true`), XLA's CPU loop emitters
    for fused element-wise work rather than its newer MLIR fusion emitters
    (`--xla_cpu_use_fusion_emitters=false`), and each program's machine
    code in one piece rather than split for parallel compilation
    (`--xla_cpu_parallel_codegen_split_count=1`): the same XLA programs
    after the same HLO passes, less optimised machine code. The tests'
    tiny shapes do not notice the slower code; their compilations
    dominate. On the 2-core machine the LLVM settings took about 30 % off
    the compile-bound layer, block and decoding tests on JAX and 15 % on
    TensorFlow; the loop emitters then took README's JAX line from 223 to
    145 s and its TensorFlow line from about 560 to 450 s, and one piece
    a further 8 % off the JAX layer and decoding tests (each measured
    side by side on one day). Benchmarks run outside pytest with XLA's
    defaults. Set in the environment before TensorFlow or JAX starts, for
    the processes the tests start too. `ATTENTION_ZOO_TEST_XLA=default`
    leaves XLA's settings as they are."""
    if os.environ.get("ATTENTION_ZOO_TEST_XLA") == "default":
        return
    _add_xla_flag("--xla_backend_optimization_level=0")
    _add_xla_flag("--xla_llvm_disable_expensive_passes=true")
    _add_xla_flag("--xla_cpu_use_fusion_emitters=false")
    _add_xla_flag("--xla_cpu_parallel_codegen_split_count=1")


def _two_host_devices_on_jax():
    """On the JAX line (`KERAS_BACKEND=jax`), XLA's host platform shows
    two CPU devices, so that `--distribution data-parallel` trains over
    two (`tests/jax_applications/jax_data_parallel_test.py`). Everything
    else places its arrays on the first, as with one device."""
    if os.environ.get("KERAS_BACKEND") == "jax":
        _add_xla_flag("--xla_force_host_platform_device_count=2")


def _share_compiled_programs():
    """JAX keeps what XLA compiled in a folder of this test session
    (`JAX_COMPILATION_CACHE_DIR`, every program however quick to compile),
    so a program that another test or the other worker compiled before is
    read back rather than compiled again: many tests build the same small
    layers and searches. The folder is made by the first pytest process
    (pytest-xdist's workers and the processes the tests start inherit it)
    and removed when that process ends; it starts empty every session. On
    the 2-core machine README's JAX line took 136 s instead of 153
    (measured side by side). TensorFlow's persistent XLA cache
    (`--tf_xla_persistent_cache_directory`) gave the TensorFlow tests
    nothing and is not used. A cache folder already set is left alone."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="attention-zoo-tests-jax-cache-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = folder
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")


_share_the_cores()
_compile_quickly()
_two_host_devices_on_jax()
_share_compiled_programs()

import keras  # noqa: E402  (after the thread settings)
import pytest  # noqa: E402

# The helpers' asserts report their operands, as the tests' own do.
pytest.register_assert_rewrite("tests.support")

# `shared(name, build)`: folders built once per session, for all workers.
from tests.support.shared_folders import shared  # noqa: E402, F401

SHARED_DATA = pathlib.Path(
    os.environ.get(
        "ATTENTION_ZOO_SHARED_DATA",
        pathlib.Path(__file__).resolve().parents[2] / "shared" / "data",
    )
)


def _seed_keeping_instantiated_functions(seed):
    """`keras.utils.set_random_seed(seed)` without its one side effect
    on TensorFlow's runtime: `tf.random.set_seed` clears the eager context's
    caches, and with them every function instantiated so far. A test that
    called a model, a search or an export that an earlier test or a
    session fixture had already run then paid again for its instantiation
    (Grappler's rewrite of the whole graph: 0.5 s for the tiny EHR export's
    signature, more for a beam search), once per test. The seeds are the
    same: Python's, NumPy's, Keras's and TensorFlow's global seed, whose
    operation seeds start again from `seed`. What the clearing also did,
    restart the counters of stateful random kernels already run, no test
    relies on: the project's random numbers are stateless (Keras
    `SeedGenerator`s, the searches' counter-based draws)."""
    from tensorflow.python.eager import context

    runtime = context.context()
    handle = runtime._context_handle
    runtime._context_handle = None  # `_set_global_seed` clears when set
    try:
        keras.utils.set_random_seed(seed)
    finally:
        runtime._context_handle = handle


# The full demo (10 of the slow tier's 17 min) starts first: under
# `--dist loadfile` the other worker then runs the rest beside it, rather
# than the demo starting ninth and finishing alone at the end (longest
# first, as schedulers do: the slow tier went from 18.7 to 17.0 min).
# The JAX application runs (four files of 12-23 s, collected last) start
# first too: README's JAX line took 119 and 124 s against 132 and 130 s
# with them last (alternating runs on one day). So do the documented
# train lines (2.5-3 min in one file), on the other worker than the demo.
LONG_FILES = (
    "tests/applications/demo_test.py",
    "tests/docs_train_commands_test.py",
    "tests/jax_applications/",
)


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_FILES))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a test file's last test (its module fixtures torn down), the
    garbage it left is collected and what survives (imports, session
    fixtures, caches) is frozen (`gc.freeze`): Python's full collections
    then walk only what later files made. Without it a test process of
    several million objects spent about 30 s of a 9-minute suite in full
    collections, 0.7 s each."""
    result = yield
    if nextitem is None or nextitem.path != item.path:
        gc.collect()
        gc.freeze()
    return result


@pytest.fixture(autouse=True)
def _seed_and_policy():
    _seed_keeping_instantiated_functions(0)
    policy = keras.config.dtype_policy()
    yield
    keras.config.set_dtype_policy(policy)


@pytest.fixture
def shared_data():
    """`../shared/data`; tests that need it skip cleanly where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
