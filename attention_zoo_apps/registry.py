"""The applications, in the order the command, the demo, the tests and the
benchmarks list them: the one place outside an application's folder that
names them.

    from attention_zoo_apps import registry

    for application in registry.all_applications():
        print(application.name, application.infer_command)
    registry.get("ehr").tiny_config()

A new application is a folder `attention_zoo_apps/<name>/` whose `__init__.py`
defines `APPLICATION = Application(...)` (see `attention_zoo_apps.application`),
and its name added to `APPLICATIONS`.
"""

import importlib

# Each is the package `attention_zoo_apps.<name>` and `Application.name`.
APPLICATIONS = ("translation", "entailment", "captioning", "ehr")


def get(name):
    """The `Application` called `name`.

    Raises:
        ValueError: `name` is not one of `APPLICATIONS`.
    """
    if name not in APPLICATIONS:
        raise ValueError(
            f"Unknown application: {name!r}. Known applications: "
            + ", ".join(APPLICATIONS)
        )
    return importlib.import_module(f"attention_zoo_apps.{name}").APPLICATION


def all_applications():
    """Every `Application`, in the order of `APPLICATIONS`."""
    return tuple(get(name) for name in APPLICATIONS)
