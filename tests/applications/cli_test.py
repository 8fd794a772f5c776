"""The `attention-zoo` command: its help says which application each
inference command serves and each command's help shows a working example;
TensorFlow's C++ start-up lines (absl's preamble, oneDNN, the CUDA stub,
cuInit) stay off stderr in every kind of command, while any other line
written to stderr still shows."""

import os
import re
import shlex
import subprocess
import sys
import warnings

import pytest

import attention_zoo
from attention_zoo_apps import cli
from attention_zoo_apps import registry
from attention_zoo_apps.common import startup
from tests.support import tiny_bundles

NOISE = ("absl::InitializeLog", "oneDNN", "cuda", "cuInit")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
APPLICATIONS = registry.all_applications()


def test_each_serving_commands_help_names_its_application():
    helps = [application.infer_help for application in APPLICATIONS]
    assert len(set(helps)) == len(helps)
    text = " ".join(cli._parser().format_help().split())
    for application in APPLICATIONS:
        assert re.search(rf"\b{application.name}\b", application.infer_help)
        assert f"{application.infer_command} {application.infer_help}" in text


@pytest.mark.parametrize("application", APPLICATIONS, ids=lambda a: a.name)
def test_each_infer_command_shows_an_example_that_parses(application, capsys):
    command = application.infer_command
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    examples = [
        line.strip()
        for line in out.splitlines()
        if line.strip().startswith(f"attention-zoo {command} ")
    ]
    assert examples, out
    parser = application.flags().infer_parser()
    for example in examples:
        parser.parse_args(shlex.split(example)[2:])


def test_filtered_stderr_drops_the_start_up_lines_only(capfd):
    lines = [
        b"WARNING: All log messages before absl::InitializeLog() is called"
        b" are written to STDERR\n",
        b"I0000 00:00:1.2 7 port.cc:153] oneDNN custom operations are on."
        b" You may see slightly different numerical results\n",
        b"I0000 00:00:1.2 7 cudart_stub.cc:31] Could not find cuda drivers"
        b" on your machine, GPU will not be used.\n",
        b"E0000 00:00:1.2 7 cuda_platform.cc:52] failed call to cuInit:"
        b" INTERNAL: CUDA error\n",
        b"E0000 00:00:1.2 7 util.cc:131] oneDNN supports DT_BOOL only on"
        b" platforms with AVX-512. Falling back to the default Eigen-based\n",
        b"E0000 00:00:1.2 7 some_kernel.cc:1] a real error\n",
    ]
    with startup.filtered_stderr():
        os.write(2, b"".join(lines))
        # What Python's default `warnings.showwarning` writes.
        sys.stderr.write(
            warnings.formatwarning("a real warning", UserWarning, "x.py", 1)
        )
    err = capfd.readouterr().err
    assert "a real error" in err and "UserWarning: a real warning" in err
    assert not any(word in err for word in NOISE), err


def _run(argv, log_level=None):
    """`argv` in a fresh process without TF_CPP_MIN_LOG_LEVEL (or with
    `log_level`), from this checkout."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    if log_level is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = log_level
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


def _assert_quiet(completed):
    assert completed.returncode == 0, completed.stderr
    assert not any(word in completed.stderr for word in NOISE), completed.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["train", "translation", "--help"],
        pytest.param(
            ["demo", "kernel-regression", "--help"], marks=pytest.mark.slow
        ),
    ],
    ids=" ".join,
)
def test_commands_start_without_tensorflows_noise(argv):
    _assert_quiet(_run([sys.executable, "-m", "attention_zoo_apps.cli", *argv]))


def test_serving_from_the_console_script_prints_no_noise(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "attention-zoo")
    if not os.path.exists(script):
        pytest.skip("the attention-zoo console script is not installed")
    export = tmp_path / "saved_models"
    tiny_bundles.save_stand_in("translation", str(export / "1"))
    completed = _run([script, "translate", str(export), "hola"])
    _assert_quiet(completed)  # cuInit is tried when the model loads
    assert completed.stdout == "hola\thola\n"


@pytest.mark.slow  # a TensorFlow start-up of its own
def test_a_log_level_the_user_chose_is_left_alone():
    argv = ["demo", "kernel-regression", "--help"]  # it starts TensorFlow
    completed = _run(
        [sys.executable, "-m", "attention_zoo_apps.cli", *argv], "0"
    )
    assert completed.returncode == 0, completed.stderr
    # TensorFlow's start-up lines are all there, unfiltered (which ones a
    # machine prints depends on its CPU: oneDNN's only with AVX-512).
    started = re.findall(startup.NOISE, completed.stderr.encode(), re.M)
    assert len(started) >= 2, completed.stderr


def test_infer_commands_help_imports_no_tensorflow():
    code = (
        "import sys\n"
        "from attention_zoo_apps import cli\n"
        "for command in sys.argv[1:]:\n"
        "    try:\n"
        "        cli.main([command, '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted({'tensorflow', 'keras'} & set(sys.modules)))\n"
    )
    commands = [a.infer_command for a in APPLICATIONS]
    completed = _run([sys.executable, "-c", code, *commands])
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[-1] == "[]"


def test_the_version_is_the_packages_and_imports_no_tensorflow():
    code = (
        "import sys\n"
        "from attention_zoo_apps import cli\n"
        "cli.main(['--version'])\n"
        "print(sorted({'tensorflow', 'keras'} & set(sys.modules)))\n"
    )
    completed = _run([sys.executable, "-c", code])
    assert completed.returncode == 0, completed.stderr
    printed, imported = completed.stdout.splitlines()
    assert printed == f"attention-zoo {attention_zoo.__version__}"
    assert imported == "[]"
