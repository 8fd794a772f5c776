"""The gallery page of `attention-zoo figures`: each figure's PNGs and
caption, in `OUT/index.md`."""

import dataclasses
import os

from attention_zoo.export.atomic_file import atomic_write

INDEX = "index.md"


@dataclasses.dataclass(frozen=True)
class Figure:
    """One reproduced figure.

    Attributes:
        name: str, its name in `--only` (`"15.15"`, `"heads"`).
        title: str, what the book calls it.
        images: tuple of str, its PNGs' paths (`index.md` names them
            relative to its folder).
        caption: str, what it shows and where ours differs from the book
            (markdown, results computed, not written in).
    """

    name: str
    title: str
    images: tuple
    caption: str


def write_index(out, figures, failures=()):
    """Writes `out/index.md`: per figure its title, images and caption,
    then a line per figure that failed (`(name, message)`). Returns the
    path."""
    lines = [
        "# The chapter, figure by figure",
        "",
        "Made by `attention-zoo figures` with this library and the shipped "
        "models (`saved_models/`).",
        "",
    ]
    for figure in figures:
        number = figure.name if figure.name[0].isdigit() else ""
        heading = f"Figure {number}: " if number else ""
        lines += [f"## {heading}{figure.title}", ""]
        lines += [
            f"![{figure.title}]({os.path.relpath(image, out)})"
            for image in figure.images
        ]
        lines += ["", figure.caption, ""]
    if failures:
        lines += ["## Not made", ""]
        lines += [f"- {name}: {message}" for name, message in failures]
        lines.append("")
    path = os.path.join(out, INDEX)
    with atomic_write(path, "w") as f:
        f.write("\n".join(lines))
    return path
