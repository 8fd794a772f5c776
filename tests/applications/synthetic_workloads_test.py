"""`synthetic_workloads`: each application's bundle class and the generated
data its `fit` takes."""

import inspect

import numpy as np
import pytest

from applications import synthetic_workloads
from applications.ehr.data import PatientRecords
from applications.entailment.data import EntailmentExamples


@pytest.mark.parametrize("application", synthetic_workloads.APPLICATIONS)
def test_bundle_class_is_the_applications(application):
    bundle_class = synthetic_workloads.bundle_class(application)
    assert bundle_class.application == application
    assert bundle_class.config_class is not None


@pytest.mark.parametrize("application", synthetic_workloads.APPLICATIONS)
def test_fit_arguments_are_fits_positional_arguments(application):
    arguments = synthetic_workloads.fit_arguments(application, 5)
    fit = inspect.signature(synthetic_workloads.bundle_class(application).fit)
    # After `self`, the parameters without a default, one per argument.
    required = [
        parameter
        for parameter in list(fit.parameters.values())[1:]
        if parameter.default is inspect.Parameter.empty
    ]
    assert len(arguments) == len(required)
    assert all(len(argument) == 5 for argument in arguments)


def test_each_application_generates_its_own_kind_of_data():
    (pairs,) = synthetic_workloads.fit_arguments("translation", 3)
    assert all(
        isinstance(source, str) and isinstance(target, str)
        for source, target in pairs
    )
    (examples,) = synthetic_workloads.fit_arguments("entailment", 3)
    assert isinstance(examples, EntailmentExamples)
    images, captions = synthetic_workloads.fit_arguments(
        "captioning", 3, image_size=24
    )
    assert images.shape == (3, 24, 24, 3) and images.dtype == np.float32
    assert all(isinstance(caption, str) for caption in captions)
    (records,) = synthetic_workloads.fit_arguments("ehr", 3)
    assert isinstance(records, PatientRecords)


@pytest.mark.parametrize("application", synthetic_workloads.APPLICATIONS)
def test_the_seed_picks_the_examples(application):
    def generated(seed):
        return repr(synthetic_workloads.fit_arguments(application, 2, seed)[-1])

    assert generated(0) == generated(0)
    assert generated(0) != generated(1)


def test_unknown_applications_are_refused():
    with pytest.raises(ValueError, match="Unknown application"):
        synthetic_workloads.bundle_class("parsing")
    with pytest.raises(ValueError, match="Unknown application"):
        synthetic_workloads.fit_arguments("parsing", 2)
