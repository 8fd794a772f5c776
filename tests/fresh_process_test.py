"""`tests.support.fresh_process`: the scripts of a test process share one
process without Keras or the project, which stays that way; a failure is
reported and a dead process replaced."""

import pytest

from tests.support.fresh_process import run_without_project

PID = "import os\nemit(os.getpid())"


def test_scripts_share_a_process_that_keeps_keras_and_the_project_out():
    first = run_without_project(PID)
    assert run_without_project("emit([1, (2, 3)])") == [1, [2, 3]]  # JSON
    for name in (
        "keras",
        "attention_zoo",
        "attention_zoo_apps",
        "tensorflow_text",
    ):
        with pytest.raises(AssertionError, match="ModuleNotFoundError"):
            run_without_project(f"import {name}")
    # A script that lifts the block fails, and the block is back after it.
    with pytest.raises(AssertionError, match="keras was imported"):
        run_without_project(
            "sys.modules.pop('keras')\n"
            "sys.modules['keras'] = type(sys)('keras')"
        )
    with pytest.raises(AssertionError, match="ModuleNotFoundError"):
        run_without_project("import keras")
    assert run_without_project("emit('earlier' in globals())") is False
    assert run_without_project(PID) == first


def test_a_process_that_dies_is_reported_and_replaced():
    first = run_without_project(PID)
    with pytest.raises(AssertionError, match="died or took over"):
        run_without_project("os._exit(3)")
    second = run_without_project(PID)
    assert second != first
    assert run_without_project(PID) == second


def test_chosen_op_libraries_get_a_process_of_their_own():
    shared = run_without_project(PID)
    script = "emit([os.getpid(), [os.path.basename(p) for p in OP_LIBRARIES]])"
    pid, loaded = run_without_project(
        script, op_libraries=["_normalize_ops.so"]
    )
    assert pid != shared and loaded == ["_normalize_ops.so"]
    assert run_without_project(PID) == shared
