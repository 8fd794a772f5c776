"""`attention-zoo demo`: every application, end to end, in one command.

    attention-zoo demo                        # all of them, a few minutes
    attention-zoo demo --only APP [APP ...] --out /tmp/demo
    attention-zoo demo --quick                # tiny settings (tests)

It opens with the trained models shipped in `saved_models/`
(`attention_zoo_apps.demo.shipped`): each runs on its card's examples through
the command a user would type, by name, and draws its attention pictures,
in seconds. The applications are those of `attention_zoo_apps.registry`, in its
order, after the kernel-regression demo. For each the demo trains briefly on its
generated data (`attention-zoo train APP` with the small settings of the
`RECIPE` in its `demo.py`, see `attention_zoo_apps.demo.recipe`), which prints
the
held-out metrics and exports the model to `OUT/saved_models/APP/<n>/`; then
it loads that export in a fresh Python that has TensorFlow and
tensorflow-text's ops but neither Keras nor this project
(`attention_zoo_apps.demo.fresh_process`), sends it one example, times the
calls,
and prints the answer. The attention pictures of each application (those of
its trainer and of the reloaded export) and the kernel-regression demo's two
PNGs are gathered in `OUT/pictures/`. Last comes a table: the held-out
metric, the export, the latency per example and the example's output of each
application, also written to `OUT/summary.txt` and `OUT/summary.json`.

Run folders (checkpoints, vocabularies) go to `OUT/runs/APP/`; an
interrupted demo run again with the same flags resumes its training.
"""

import importlib
import json
import os
import shutil
import time
import traceback

import keras

from attention_zoo_apps import registry
from attention_zoo_apps.demo import flags
from attention_zoo_apps.demo import table
from attention_zoo_apps.demo.flags import KERNEL_REGRESSION
from attention_zoo_apps.demo.flags import SHIPPED
from attention_zoo_apps.demo.fresh_process import serve_in_fresh_process
from attention_zoo_apps.demo.shipped import show_shipped_models
from attention_zoo_apps.kernel_regression.demo import run_demo


class _Progress:
    """Prints one header line per stage with the time since the start."""

    def __init__(self, total):
        self.start = time.perf_counter()
        self.total = total
        self.step = 0
        self.name = ""

    def elapsed(self):
        return time.perf_counter() - self.start

    def next_application(self, name):
        self.step += 1
        self.name = name

    def stage(self, text):
        minutes, seconds = divmod(int(self.elapsed()), 60)
        print(
            f"\n==> [{self.step}/{self.total} {self.name}] {text} "
            f"({minutes}:{seconds:02d} elapsed)",
            flush=True,
        )


def _kernel_regression(out, quick, progress):
    progress.stage("fitting the kernel bandwidth")
    run_dir = os.path.join(out, "runs", KERNEL_REGRESSION)
    result = run_demo(run_dir, epochs=20 if quick else 200)
    pictures = []
    for path in result["paths"]:
        target = os.path.join(
            out, "pictures", f"{KERNEL_REGRESSION}-{os.path.basename(path)}"
        )
        shutil.copyfile(path, target)
        pictures.append(target)
    return {
        "application": KERNEL_REGRESSION,
        "metric": f"test MSE {result['mse_fitted']:.3f} "
        f"(bandwidth 1: {result['mse_fixed']:.3f})",
        "export": "-",
        "latency_ms": None,
        "output": f"fitted bandwidth {result['bandwidth']:.3f}",
        "pictures": pictures,
    }


def _shipped(out, progress):
    """The shipped models on their cards' examples: their summary rows."""
    progress.stage("the shipped models (saved_models/), on their examples")
    rows = []
    for shipped in show_shipped_models(os.path.join(out, "pictures")):
        rows.append(
            {
                "application": shipped["name"],
                "metric": shipped["headline"] or "-",
                "export": "shipped",
                "latency_ms": None,
                "output": shipped["output"],
                "pictures": shipped["pictures"],
                **({"failed": True} if shipped.get("failed") else {}),
            }
        )
    if not rows:
        print("no shipped models found")
    return rows


def _versions(folder):
    if not os.path.isdir(folder):
        return set()
    return {int(name) for name in os.listdir(folder) if name.isdigit()}


def _application(application, out, quick, repeats, progress):
    """Trains, exports, reloads and serves one application; its row."""
    recipe = application.demo_recipe()
    name = application.name
    settings = recipe.quick_settings if quick else recipe.settings
    run_dir = os.path.join(out, "runs", name)
    export_root = os.path.join(out, "saved_models", name)
    before = _versions(export_root)
    arguments = recipe.flags(quick)
    progress.stage(f"attention-zoo train {name} {' '.join(arguments)}")
    trainer = importlib.import_module(application.train_module)
    # The demo's runs start anew each time (`--overwrite`): a rerun with
    # other settings (`--quick`) replaces the last one.
    code = trainer.main(
        arguments
        + ["--run-dir", run_dir, "--overwrite", "--export", export_root]
    )
    new = _versions(export_root) - before
    if code or not new:
        raise RuntimeError(
            f"attention-zoo train {name} exited with code {code}"
            + ("" if new else " and exported nothing")
        )
    export_dir = os.path.join(export_root, str(max(new)))
    with open(os.path.join(export_dir, "metadata.json")) as f:
        metrics = json.load(f)["metrics"]

    progress.stage(f"reloading {export_dir} in a fresh Python")
    example = recipe.example(settings)
    served = serve_in_fresh_process(export_dir, example, repeats=repeats)
    output = recipe.describe(example, served["outputs"])
    print(
        f"TensorFlow {served['tensorflow']} with "
        f"{served['op_libraries']} tensorflow-text op libraries, no Keras: "
        f"loaded in {served['load_seconds']:.1f} s, first call "
        f"{served['first_call_ms']:.0f} ms, then "
        f"{served['latency_ms']:.1f} ms per example"
    )
    print(f"example: {_short(json.dumps(example))}")
    print(f"output:  {output}")

    progress.stage("attention pictures")
    pictures = recipe.gather_pictures(
        name,
        run_dir,
        settings,
        served["outputs"],
        os.path.join(out, "pictures"),
    )
    for path in pictures:
        print(f"wrote {path}")
    return {
        "application": name,
        "metric": recipe.describe_metrics(metrics),
        "metrics": metrics,
        "export": export_dir,
        "latency_ms": served["latency_ms"],
        "output": output,
        "pictures": pictures,
    }


def _short(text, limit=300):
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cells(row):
    latency = row["latency_ms"]
    return [
        row["application"],
        row["metric"],
        row["export"],
        "-" if latency is None else f"{latency:.1f}",
        row["output"],
    ]


def main(argv=None):
    args = flags.parse(argv)
    names = list(
        dict.fromkeys(args.only or flags.CHOICES)
    )  # once each, in order
    os.makedirs(os.path.join(args.out, "pictures"), exist_ok=True)
    progress = _Progress(len(names))
    rows = []
    for name in names:
        progress.next_application(name)
        if name == SHIPPED:
            rows += _shipped(args.out, progress)
            _clear_session()
            continue
        try:
            if name == KERNEL_REGRESSION:
                row = _kernel_regression(args.out, args.quick, progress)
            else:
                row = _application(
                    registry.get(name),
                    args.out,
                    args.quick,
                    args.repeats,
                    progress,
                )
        except Exception as error:  # noqa: BLE001 (report, go on)
            traceback.print_exc()
            row = {
                "application": name,
                "metric": "FAILED",
                "export": "-",
                "latency_ms": None,
                "output": f"{type(error).__name__}: {error}",
                "pictures": [],
                "failed": True,
            }
        rows.append(row)
        _clear_session()

    seconds = progress.elapsed()
    summary = table.format_table([_cells(row) for row in rows])
    minutes, rest = divmod(int(seconds), 60)
    print(f"\nDemo finished in {minutes}:{rest:02d}.\n\n{summary}\n")
    print(f"pictures: {os.path.join(args.out, 'pictures')}")
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(summary + "\n")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"seconds": seconds, "rows": rows}, f, indent=2)
    return 1 if any(row.get("failed") for row in rows) else 0


def _clear_session():
    """Frees the last application's models and graphs before the next."""
    keras.backend.clear_session()
