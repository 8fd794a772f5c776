"""`attention_zoo_apps.registry`: every application's descriptor resolves
(bundle
and config classes, command modules, generated data, tiny config, demo
recipe), and the command lists every registered application."""

import dataclasses
import importlib
import inspect
import subprocess
import sys

import numpy as np
import pytest

from attention_zoo_apps import cli
from attention_zoo_apps import registry
from attention_zoo_apps.application import Application
from attention_zoo_apps.demo.recipe import Recipe
from attention_zoo_apps.ehr.data import PatientRecords
from attention_zoo_apps.entailment.data import EntailmentExamples

NAMES = registry.APPLICATIONS


def test_the_registry_lists_the_applications_in_order():
    applications = registry.all_applications()
    assert [application.name for application in applications] == list(NAMES)
    assert all(isinstance(a, Application) for a in applications)
    assert registry.get(NAMES[0]) is applications[0]


@pytest.mark.parametrize("name", NAMES)
def test_bundle_and_config_classes_are_the_applications(name):
    application = registry.get(name)
    assert application.package == f"attention_zoo_apps.{name}"
    bundle_class = application.bundle_class()
    assert bundle_class.application == name
    assert application.config_class() is bundle_class.config_class
    assert dataclasses.is_dataclass(application.config_class())


@pytest.mark.parametrize("name", NAMES)
def test_command_modules_import(name):
    application = registry.get(name)
    for module in (application.train_module, application.infer_module):
        assert callable(importlib.import_module(module).main), module
    assert isinstance(application.demo_recipe(), Recipe)
    assert application.infer_help
    # Any module of the package, by its name in the package.
    synthetic = application.module("synthetic")
    assert synthetic.__name__ == application.synthetic_module


@pytest.mark.parametrize("name", NAMES)
def test_tiny_config_is_an_instance_of_the_config_class(name):
    application = registry.get(name)
    config = application.tiny_config()
    assert type(config) is application.config_class()
    assert config.epochs == 1
    assert config != application.config_class()()  # smaller than default


@pytest.mark.parametrize("name", NAMES)
def test_fit_arguments_are_fits_positional_arguments(name):
    application = registry.get(name)
    arguments = application.fit_arguments(5)
    fit = inspect.signature(application.bundle_class().fit)
    # After `self`, the parameters without a default, one per argument.
    required = [
        parameter
        for parameter in list(fit.parameters.values())[1:]
        if parameter.default is inspect.Parameter.empty
    ]
    assert len(arguments) == len(required)
    assert all(len(argument) == 5 for argument in arguments)


def test_each_application_generates_its_own_kind_of_data():
    (pairs,) = registry.get("translation").fit_arguments(3)
    assert all(
        isinstance(source, str) and isinstance(target, str)
        for source, target in pairs
    )
    (examples,) = registry.get("entailment").fit_arguments(3)
    assert isinstance(examples, EntailmentExamples)
    images, captions = registry.get("captioning").fit_arguments(
        3, image_size=24
    )
    assert images.shape == (3, 24, 24, 3) and images.dtype == np.float32
    assert all(isinstance(caption, str) for caption in captions)
    (records,) = registry.get("ehr").fit_arguments(3)
    assert isinstance(records, PatientRecords)


@pytest.mark.parametrize("name", NAMES)
def test_the_seed_picks_the_examples(name):
    application = registry.get(name)

    def generated(seed):
        return repr(application.fit_arguments(2, seed)[-1])

    assert generated(0) == generated(0)
    assert generated(0) != generated(1)


def test_unknown_applications_are_refused():
    with pytest.raises(ValueError, match="Unknown application") as error:
        registry.get("parsing")
    assert all(name in str(error.value) for name in NAMES)


def test_the_command_lists_every_application():
    applications = registry.all_applications()
    assert set(cli.TRAINERS) == set(NAMES)
    assert set(cli.COMMANDS) == {a.infer_command for a in applications}
    text = cli._parser().format_help()
    for application in applications:
        assert application.infer_command in text
        assert application.infer_help in " ".join(text.split())
    assert cli.DEMOS.keys().isdisjoint(NAMES)


def test_help_imports_neither_tensorflow_nor_keras():
    code = (
        "import sys\n"
        "from attention_zoo_apps import cli\n"
        "for argv in (['--help'], ['figures', '--help']):\n"
        "    try:\n"
        "        cli.main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted({'tensorflow', 'keras', 'jax'} & set(sys.modules)))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip().splitlines()[-1] == "[]"
    for application in registry.all_applications():
        assert application.infer_command in completed.stdout
    assert "--only NAME" in completed.stdout  # `figures --help`
