"""`Application`: what an application folder tells the rest of the project.

Each `attention_zoo_apps/<name>/__init__.py` defines one, and
`attention_zoo_apps/registry.py` lists them; the `attention-zoo` command, the
demo, the tests' fixtures and the benchmarks find an application's
modules, bundle, generated data, tiny config and demo step through it:

    from attention_zoo_apps import registry

    application = registry.get(name)
    bundle_class = application.bundle_class()
    bundle = bundle_class(application.tiny_config())
    bundle.fit(*application.fit_arguments(40), verbose=0)

An application package holds the modules it names: `train` (the
`attention-zoo train NAME` command, a `main(argv)`), `infer` (the command
that answers from an export, `attention-zoo INFER_COMMAND`, a
`main(argv)`), `flags` (their parsers, `train_parser()` and
`infer_parser()`, which import no TensorFlow), `synthetic` (generated
data, with `fit_arguments(count, seed=0, **options)`) and `demo` (its
`RECIPE` in `attention-zoo demo`). Nothing is imported until asked for,
so that `attention-zoo --help` stays fast.
"""

import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class Application:
    """One application of `attention_zoo_apps/`.

    Attributes:
        name: str, its name in `attention-zoo train NAME`, the demo and the
            export folder `saved_models/NAME/` (the bundle class's
            `application`).
        package: str, the package holding it, e.g. `__name__` in its
            `__init__.py`.
        bundle: str, `"module:Class"` of its `SavedBundle` subclass, the
            module relative to `package`.
        infer_command: str, the `attention-zoo` command that runs its
            export (`infer_module`'s `main`).
        infer_help: str, that command's one-line help in `attention-zoo
            --help`, naming the application it serves.
        tiny_settings: dict, the config fields of the smallest model the
            tests train (`tiny_config()`); each test `.replace(...)`s what
            it needs.
        export_inputs: tuple of str, the input names of its export's
            `serving_default` signature; the inference commands check an
            export against them (`attention_zoo_apps.commands.infer_flags`).
        reads_exports: bool, whether `infer_command` runs its export
            (else it reads something else, e.g. a run folder, and no
            command runs the export). Defaults to `True`.
    """

    name: str
    package: str
    bundle: str
    infer_command: str
    infer_help: str
    tiny_settings: dict = dataclasses.field(default_factory=dict, hash=False)
    export_inputs: tuple = ()
    reads_exports: bool = True

    @property
    def train_module(self):
        """The module of `attention-zoo train NAME` (a `main(argv)`)."""
        return f"{self.package}.train"

    @property
    def flags_module(self):
        """The module of the commands' flags: `train_parser()` and
        `infer_parser()`, built without TensorFlow, so that the commands
        check their flags before `train_module` or `infer_module` is
        imported."""
        return f"{self.package}.flags"

    def flags(self):
        """The `flags_module` (imports it; it imports no TensorFlow)."""
        return self.module("flags")

    @property
    def infer_module(self):
        """The module of `attention-zoo INFER_COMMAND` (a `main(argv)`)."""
        return f"{self.package}.infer"

    @property
    def synthetic_module(self):
        """The module of the generated data (`fit_arguments`)."""
        return f"{self.package}.synthetic"

    @property
    def demo_module(self):
        """The module of the demo's `RECIPE`."""
        return f"{self.package}.demo"

    def module(self, name):
        """The application's module `name` (imports it): `module("evaluate")`
        is `<package>.evaluate`, for code outside its folder that draws
        with its helpers (`attention_zoo_apps.figures`)."""
        return importlib.import_module(f"{self.package}.{name}")

    def bundle_class(self):
        """The `SavedBundle` subclass (imports it)."""
        module, _, name = self.bundle.partition(":")
        return getattr(
            importlib.import_module(f"{self.package}.{module}"), name
        )

    def config_class(self):
        """The config dataclass, the bundle class's `config_class`."""
        return self.bundle_class().config_class

    def fit_arguments(self, count, seed=0, **options):
        """`count` generated training examples, as the positional
        arguments of the bundle's `fit` (see `synthetic.fit_arguments`).

        Args:
            count: int, how many pairs, examples, images or patients.
            seed: int, the generator's seed. Defaults to `0`.
            **options: the keyword arguments of the application's
                `synthetic.fit_arguments` (e.g. an image size).

        Returns:
            A tuple, `bundle.fit(*arguments)`'s positional arguments.
        """
        synthetic = importlib.import_module(self.synthetic_module)
        return synthetic.fit_arguments(count, seed=seed, **options)

    def headline(self, metrics):
        """`"label value"` of this application's first demo metric in
        `metrics` (an export's test metrics, e.g. `"BLEU 41.3"`), or ""
        where `metrics` lacks it."""
        label, key, form = self.demo_recipe().metrics[0]
        value = metrics.get(key)
        if not isinstance(value, (int, float)):
            return ""
        return f"{label} {form.format(value)}"

    def tiny_config(self):
        """The config of the smallest model the tests train."""
        return self.config_class()(**self.tiny_settings)

    def demo_recipe(self):
        """The `attention_zoo_apps.demo.recipe.Recipe` of `attention-zoo
        demo`."""
        return importlib.import_module(self.demo_module).RECIPE
