"""What `pip install .` installs: two import packages under the project's
name (`attention_zoo`, `attention_zoo_apps`), no generic top-level name
(`applications`, `saved_models`), a wheel without the 126 MB of shipped
models that still finds them by name in the checkout it was built from;
and the deprecated `applications` of a checkout is `attention_zoo_apps`.
"""

import email
import fnmatch
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
WHEEL_LIMIT = 5 * 2**20  # bytes


def _copy(source, target, ignore=()):
    """A copy of `source`'s tracked kind of files, so that the build's
    `build/` folder (setuptools keeps stale files there) starts empty."""
    skip = {".git", ".venv", "build", "site", "outputs", *ignore}
    shutil.copytree(
        source,
        target,
        ignore=lambda folder, names: [
            n for n in names if n in skip or n.endswith(".egg-info")
        ],
    )
    return target


def _build_wheel(source, out):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"]
        + [str(source), "--wheel-dir", str(out)],
        check=True,
        timeout=600,
    )
    (wheel,) = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A copy of the checkout whose `saved_models` is the checkout's."""
    copy = _copy(
        ROOT, tmp_path_factory.mktemp("c") / "checkout", ["saved_models"]
    )
    (copy / "saved_models").symlink_to(ROOT / "saved_models")
    return copy


@pytest.fixture(scope="module")
def library_wheel(checkout, tmp_path_factory):
    return _build_wheel(checkout, tmp_path_factory.mktemp("wheel"))


def _top_level_names(wheel):
    with zipfile.ZipFile(wheel) as archive:
        return {name.split("/")[0] for name in archive.namelist()}


def _requirements(wheel):
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith("/METADATA")]
        metadata = email.message_from_bytes(archive.read(name))
    return metadata.get_all("Requires-Dist")


def _unpack(wheel, folder):
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder)  # a pure-Python wheel: site-packages
    return folder


def _python(code, site, cwd, *args):
    environment = dict(os.environ, PYTHONPATH=str(site))
    environment.pop("ATTENTION_ZOO_MODELS", None)
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_the_wheel_holds_the_project_packages_only(library_wheel):
    names = _top_level_names(library_wheel)
    assert names == {
        "attention_zoo",
        "attention_zoo_apps",
        library_wheel.name.split("-py3")[0] + ".dist-info",
    }
    assert library_wheel.stat().st_size < WHEEL_LIMIT
    requirements = _requirements(library_wheel)
    # keras-hub only with the benchmarks extra.
    hub = [r for r in requirements if r.startswith("keras-hub")]
    assert hub and all('extra == "benchmarks"' in r for r in hub)


@pytest.mark.slow
def test_the_installed_package_finds_the_shipped_models_of_its_checkout(
    checkout, library_wheel, tmp_path
):
    site = _unpack(library_wheel, tmp_path / "site")
    recorded = site / "attention_zoo_apps" / "common" / "built_from.txt"
    assert recorded.read_text().strip() == str(checkout)
    code = (
        "import json, sys\n"
        "import attention_zoo_apps\n"
        "from attention_zoo_apps.common import zoo\n"
        "found = zoo.find('translation-spa-eng').path\n"
        "with open(zoo.BUILT_FROM, 'w') as file:\n"
        "    file.write(sys.argv[1])  # the checkout moved away\n"
        "try:\n"
        "    zoo.resolve('translation-spa-eng')\n"
        "except FileNotFoundError as error:\n"
        "    message = str(error)\n"
        "print(json.dumps([attention_zoo_apps.__file__, found, message]))\n"
    )
    # Run outside the checkout, as an installed package is.
    package, found, message = json.loads(
        _python(code, site, tmp_path, str(tmp_path / "moved-away"))
    )
    assert package == str(site / "attention_zoo_apps" / "__init__.py")
    assert found == str(checkout / "saved_models" / "translation-spa-eng")
    assert "no shipped model found" in message
    assert "pip install ./saved_models" in message
    assert "ATTENTION_ZOO_MODELS" in message


def test_the_package_list_names_the_project_packages_only():
    """The quick twin of the wheel's test: what pyproject.toml's package
    list finds, and where keras-hub is required."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        project = tomllib.load(file)
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = [
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in ROOT.rglob("__init__.py")
        if ".venv" not in path.parts and "build" not in path.parts
    ]
    found = [p for p in packages if any(fnmatch.fnmatch(p, i) for i in include)]
    assert (
        "attention_zoo" in found and "attention_zoo_apps.translation" in found
    )
    assert {p.split(".")[0] for p in found} == {
        "attention_zoo",
        "attention_zoo_apps",
    }
    assert "applications" in packages  # the checkout's deprecated name...
    data = project["tool"]["setuptools"]["package-data"]
    assert not any("saved_models" in key for key in data)  # ...and no models
    dependencies = " ".join(project["project"]["dependencies"])
    assert "keras-hub" not in dependencies
    extras = project["project"]["optional-dependencies"]
    assert any(r.startswith("keras-hub") for r in extras["benchmarks"])


def test_the_old_name_applications_is_the_same_package_with_a_warning():
    for name in [n for n in sys.modules if n.split(".")[0] == "applications"]:
        del sys.modules[name]
    try:
        with pytest.deprecated_call(match="attention_zoo_apps"):
            from applications.common import zoo as old_zoo
            from applications.translation import TranslationConfig
        import attention_zoo_apps
        from attention_zoo_apps.common import zoo
        from attention_zoo_apps.translation.config import (
            TranslationConfig as config,
        )

        assert TranslationConfig is config  # one class, registered once
        assert old_zoo is zoo
        assert sys.modules["applications"] is attention_zoo_apps
        assert zoo.__spec__.name == "attention_zoo_apps.common.zoo"
    finally:
        for name in [
            n for n in sys.modules if n.split(".")[0] == "applications"
        ]:
            del sys.modules[name]
        sys.meta_path[:] = [
            finder
            for finder in sys.meta_path
            if type(finder).__name__ != "_OldNames"
        ]


@pytest.mark.slow
def test_the_models_distribution_is_found_by_name(library_wheel, tmp_path):
    models = _build_wheel(
        _copy(ROOT / "saved_models", tmp_path / "saved_models"),
        tmp_path / "models",
    )
    assert _top_level_names(models) == {
        "attention_zoo_models",
        models.name.split("-py3")[0] + ".dist-info",
    }
    site = _unpack(library_wheel, tmp_path / "site")
    _unpack(models, site)
    (site / "attention_zoo_apps" / "common" / "built_from.txt").unlink()
    code = (
        "from attention_zoo_apps.common import zoo\n"
        "print(zoo.find('captioning-flickr8k').path)\n"
    )
    path = _python(code, site, tmp_path)
    assert path == str(site / "attention_zoo_models" / "captioning-flickr8k")
