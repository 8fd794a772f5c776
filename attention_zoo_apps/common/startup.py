"""A quiet TensorFlow start-up for the `attention-zoo` command.

TensorFlow prints C++ log lines on stderr while it is imported and when it
first looks for GPUs:

    WARNING: All log messages before absl::InitializeLog() is called ...
    I0000 ... port.cc:153] oneDNN custom operations are on. ...
    I0000 ... cudart_stub.cc:31] Could not find cuda drivers on your ...
    E0000 ... cuda_platform.cc:52] failed call to cuInit: ...

`TF_CPP_MIN_LOG_LEVEL=2` hides TensorFlow's later INFO and WARNING lines but
not the first three (with TensorFlow 2.21 they are written while its
libraries load, at any level, even 3), and the cuInit line is an ERROR,
which only level 3 hides, along with every real C++ error. So
`quiet_tensorflow_start()` sets level 2 and runs the first `import
tensorflow` of the process, wherever it happens, and TensorFlow's first
look for GPUs inside `filtered_stderr()`: stderr (file descriptor 2) goes
through a small filter process that drops exactly the lines of `NOISE` and
passes every other one at once (Python warnings, TensorFlow's Python
`WARNING:` logs, any other C++ line). The inference commands run the first
call of a loaded model the same way (`quietly`). A user who sets
`TF_CPP_MIN_LOG_LEVEL` to 0 or 1 asked for TensorFlow's INFO lines and gets
them all, unfiltered.
"""

import contextlib
import functools
import importlib.util
import os
import subprocess
import sys

# The start-up lines dropped, one regular expression over bytes.
NOISE = (
    rb"^WARNING: All log messages before absl::InitializeLog\(\) is called"
    rb"|\] oneDNN custom operations are on"
    rb"|cudart_stub\.cc:\d+\] Could not find cuda drivers"
    rb"|\] failed call to cuInit"
    # An ERROR once per process, at the first run of a graph, on some CPUs:
    # for some types oneDNN falls back to Eigen's kernels.
    rb"|\] oneDNN supports DT_\w+ only on platforms with AVX-512"
)
# Copies its stdin to its stderr, line by line, without the lines that
# match argv[1]. It leaves Ctrl-C to the parent and ends when the last
# writer closes the pipe, so that what the parent wrote before a crash
# still comes out.
_FILTER = """
import re, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
noise = re.compile(sys.argv[1].encode())
for line in sys.stdin.buffer:
    if not noise.search(line):
        sys.stderr.buffer.write(line)
        sys.stderr.buffer.flush()
"""


def quiet_tensorflow_start():
    """Quietens TensorFlow's start-up logging for the rest of the process.

    Sets `TF_CPP_MIN_LOG_LEVEL=2` unless the user set it and, at level 2
    or 3 and while TensorFlow is not imported yet, makes its first import
    (and first look for GPUs) run inside `filtered_stderr()`. Nothing is
    imported here, so commands that never need TensorFlow stay fast.
    """
    level = os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if level in ("0", "1") or "tensorflow" in sys.modules:
        return
    if not any(isinstance(f, _QuietFirstImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietFirstImport())


def quietly(function):
    """`function`, run inside `filtered_stderr()` unless the user asked for
    TensorFlow's INFO lines (`TF_CPP_MIN_LOG_LEVEL` 0 or 1): for the first
    call of a loaded model, which prints the last line of `NOISE`."""

    @functools.wraps(function)
    def run(*args, **kwargs):
        if os.environ.get("TF_CPP_MIN_LOG_LEVEL") in ("0", "1"):
            return function(*args, **kwargs)
        with filtered_stderr():
            return function(*args, **kwargs)

    return run


@contextlib.contextmanager
def filtered_stderr():
    """Runs the body with file descriptor 2 going through the filter of
    `NOISE`; stderr is as before afterwards. Where no filter process can
    be started, the body runs unfiltered."""
    sys.stderr.flush()
    started = _start_filter()
    try:
        yield
    finally:
        if started is not None:
            saved, child = started
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            child.stdin.close()  # the filter passes the rest, then ends
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass  # a process started in the body still writes to it


def _start_filter():
    """Points file descriptor 2 at a new filter process; returns `(fd of
    the previous stderr, the process)`, or None where it cannot."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr
        return None
    try:
        child = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _FILTER, NOISE.decode()],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=saved,
        )
    except OSError:  # no interpreter to start
        os.close(saved)
        return None
    os.dup2(child.stdin.fileno(), 2)
    return saved, child


class _QuietFirstImport:
    """A `sys.meta_path` finder that takes part in one import only: the
    first `import tensorflow`, whose loading it wraps in
    `filtered_stderr()`; then it removes itself."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)  # found as usual
        if spec is not None and spec.loader is not None:
            load = spec.loader.exec_module

            def exec_module(module):
                with filtered_stderr():
                    load(module)
                    # cuInit is tried here, on the first look for GPUs.
                    module.config.list_physical_devices("GPU")

            spec.loader.exec_module = exec_module
        return spec
