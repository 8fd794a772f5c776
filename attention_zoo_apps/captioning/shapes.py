"""Deprecated alias of `attention_zoo_apps.captioning.synthetic`.

The generated shapes moved to `synthetic.py` (every application keeps its
generated data there); this module re-exports the public names so that
`attention_zoo_apps.captioning.shapes.make_synthetic_shapes` keeps working.
"""

from attention_zoo_apps.captioning.synthetic import COLOUR_RGB
from attention_zoo_apps.captioning.synthetic import COLOURS
from attention_zoo_apps.captioning.synthetic import MIN_IMAGE_SIZE
from attention_zoo_apps.captioning.synthetic import RELATIONS
from attention_zoo_apps.captioning.synthetic import SHAPES
from attention_zoo_apps.captioning.synthetic import SyntheticShapes
from attention_zoo_apps.captioning.synthetic import attention_localisation
from attention_zoo_apps.captioning.synthetic import box_cells
from attention_zoo_apps.captioning.synthetic import make_synthetic_shapes
from attention_zoo_apps.captioning.synthetic import mirrored_caption

__all__ = [
    "COLOURS",
    "COLOUR_RGB",
    "MIN_IMAGE_SIZE",
    "RELATIONS",
    "SHAPES",
    "SyntheticShapes",
    "attention_localisation",
    "box_cells",
    "make_synthetic_shapes",
    "mirrored_caption",
]
