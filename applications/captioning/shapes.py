"""Deprecated alias of `applications.captioning.synthetic`.

The generated shapes moved to `synthetic.py` (every application keeps its
generated data there); this module re-exports the public names so that
`applications.captioning.shapes.make_synthetic_shapes` keeps working.
"""

from applications.captioning.synthetic import COLOUR_RGB
from applications.captioning.synthetic import COLOURS
from applications.captioning.synthetic import MIN_IMAGE_SIZE
from applications.captioning.synthetic import RELATIONS
from applications.captioning.synthetic import SHAPES
from applications.captioning.synthetic import SyntheticShapes
from applications.captioning.synthetic import attention_localisation
from applications.captioning.synthetic import box_cells
from applications.captioning.synthetic import make_synthetic_shapes
from applications.captioning.synthetic import mirrored_caption

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
