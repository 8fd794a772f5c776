"""Synthetic captioned images: two coloured shapes and how they are placed.

`make_synthetic_shapes` draws, on a dark noisy background, two filled shapes
(`SHAPES`) in two colours (`COLOURS`), placed so that one relation word
(`RELATIONS`) describes them, and captions each image
`"a <colour> <shape> <relation> a <colour> <shape>"`, e.g.
`"a red circle above a blue square"`. Every object comes with its box and
the positions of its two words in the caption, a ground truth for spatial
attention: when the decoder emits `red` or `circle`, it should look inside
the red circle's box, i.e. at the feature-map cells `box_cells` returns;
`attention_localisation` measures how often it does. `mirrored_caption`
gives the other true caption of a scene (`"a blue square below a red
circle"`). A small model learns the task in minutes on a CPU.
`fit_arguments` gives the arguments of `Captioner.fit` on such images.
"""

import dataclasses

import numpy as np

COLOURS = ("red", "green", "blue", "yellow", "magenta", "cyan")
# Pure colours: any two differ by 1 in at least one channel, and each has a
# channel at 1, far above the dark background.
COLOUR_RGB = {
    "red": (1.0, 0.0, 0.0),
    "green": (0.0, 1.0, 0.0),
    "blue": (0.0, 0.0, 1.0),
    "yellow": (1.0, 1.0, 0.0),
    "magenta": (1.0, 0.0, 1.0),
    "cyan": (0.0, 1.0, 1.0),
}
SHAPES = ("circle", "square", "triangle")
RELATIONS = ("above", "below", "left of", "right of")
# relation -> (axis it is decided on: 0 rows, 1 columns; whether the first
# object comes first along that axis).
_GEOMETRY = {
    "above": (0, True),
    "below": (0, False),
    "left of": (1, True),
    "right of": (1, False),
}
_OPPOSITE = {
    "above": "below",
    "below": "above",
    "left of": "right of",
    "right of": "left of",
}
MIN_IMAGE_SIZE = 16


@dataclasses.dataclass(frozen=True)
class SyntheticShapes:
    """Synthetic images with captions and per-object ground truth.

    Attributes:
        images: float32 array `(N, S, S, 3)` with values in `[0, 1]`.
        captions: list of N str, `"a <colour> <shape> <relation> a
            <colour> <shape>"`.
        objects: list (one per image) of two dicts, in caption order:
            `"colour"` and `"shape"` (str), `"box"` the tuple
            `(y0, x0, y1, x1)` of int pixel bounds (`y1`, `x1` exclusive;
            the shape touches all four sides), `"words"` the pair of
            0-based indices of its colour and shape words among the
            caption's whitespace-separated words.
    """

    images: np.ndarray
    captions: list
    objects: list

    def __len__(self):
        return len(self.captions)


def make_synthetic_shapes(
    num_images, image_size=64, seed=0, background_noise=0.05
):
    """Generates images of two coloured shapes with relational captions.

    Each image holds two filled objects with different colour-shape pairs
    (the colours or the shapes may coincide, never both), each in a square
    box whose side varies between about 22 % and 34 % of the image (14 to
    22 px at 64 px). The relation word is decided by the boxes: for
    `"above"` the first object's box ends at least a gap (2 px at 64 px)
    before the second's begins, row-wise (`y1` of the first `<= y0` of the
    second); `"below"`, `"left of"` and `"right of"` likewise. On the other
    axis the boxes overlap by at least half the smaller side, so exactly one
    of the four relations holds. Positions are otherwise random. Objects
    are drawn in flat `COLOUR_RGB` colours over a background of uniform
    noise in `[0, background_noise)`.

    Images are generated one after another from one seeded generator, so
    the same seed gives the same set, and the first `k` images of a larger
    set equal a set of `k`.

    Args:
        num_images: int, how many images.
        image_size: int, the side `S` in pixels, at least 16. Defaults to
            `64`.
        seed: int, seeds the NumPy generator. Defaults to `0`.
        background_noise: float in `[0, 1]`, the background's noise
            amplitude. Defaults to `0.05`.

    Returns:
        A `SyntheticShapes`.

    Example:

    >>> shapes = make_synthetic_shapes(2, image_size=32, seed=0)
    >>> shapes.images.shape
    (2, 32, 32, 3)
    >>> caption = shapes.captions[0]
    >>> first = shapes.objects[0][0]
    >>> [caption.split()[i] for i in first["words"]] == [
    ...     first["colour"], first["shape"]
    ... ]
    True
    """
    if (
        isinstance(num_images, bool)
        or not isinstance(num_images, int)
        or num_images < 0
    ):
        raise ValueError(
            "`num_images` must be a non-negative integer. "
            f"Received: num_images={num_images!r}"
        )
    if (
        isinstance(image_size, bool)
        or not isinstance(image_size, int)
        or image_size < MIN_IMAGE_SIZE
    ):
        raise ValueError(
            f"`image_size` must be an integer of at least {MIN_IMAGE_SIZE}. "
            f"Received: image_size={image_size!r}"
        )
    if isinstance(background_noise, bool) or not (
        isinstance(background_noise, (int, float))
        and 0.0 <= background_noise <= 1.0
    ):
        raise ValueError(
            "`background_noise` must be a float in [0, 1]. "
            f"Received: background_noise={background_noise!r}"
        )
    rng = np.random.default_rng(seed)
    size = image_size
    images = np.zeros((num_images, size, size, 3), "float32")
    captions, objects = [], []
    for index in range(num_images):
        images[index] = rng.uniform(0.0, background_noise, (size, size, 3))
        pairs = rng.choice(len(COLOURS) * len(SHAPES), 2, replace=False)
        relation = RELATIONS[rng.integers(len(RELATIONS))]
        sides = rng.integers(
            round(size * 14 / 64), round(size * 22 / 64) + 1, 2
        )
        boxes = _place(rng, sides, relation, size)
        words = ["a"]
        scene = []
        for number, (pair, box) in enumerate(zip(pairs, boxes)):
            colour = COLOURS[pair // len(SHAPES)]
            shape = SHAPES[pair % len(SHAPES)]
            y0, x0, y1, x1 = box
            mask = _shape_mask(shape, y1 - y0)  # (side, side)
            images[index, y0:y1, x0:x1][mask] = COLOUR_RGB[colour]
            scene.append(
                {
                    "colour": colour,
                    "shape": shape,
                    "box": box,
                    "words": (len(words), len(words) + 1),
                }
            )
            words += [colour, shape]
            if number == 0:
                words += relation.split() + ["a"]
        captions.append(" ".join(words))
        objects.append(scene)
    return SyntheticShapes(images=images, captions=captions, objects=objects)


def _place(rng, sides, relation, size):
    """Two boxes `(y0, x0, y1, x1)` of sides `sides` such that `relation`
    holds between the first and the second and no other relation does."""
    axis, first_before = _GEOMETRY[relation]
    gap = max(1, size // 32)
    # `a` is the object that comes first along `axis`, `b` the other one.
    a, b = (0, 1) if first_before else (1, 0)
    side_a, side_b = sides[a], sides[b]
    # Along `axis`: a's start, then b's start after a's end and the gap;
    # which one is drawn first alternates, so neither hugs its border.
    if rng.random() < 0.5:
        start_a = rng.integers(0, size - side_a - gap - side_b + 1)
        start_b = rng.integers(start_a + side_a + gap, size - side_b + 1)
    else:
        start_b = rng.integers(side_a + gap, size - side_b + 1)
        start_a = rng.integers(0, start_b - gap - side_a + 1)
    # Across `axis`: intervals overlapping by at least half the smaller side.
    overlap = min(side_a, side_b) // 2
    across_a = rng.integers(0, size - side_a + 1)
    low = max(0, across_a - side_b + overlap)
    high = min(size - side_b, across_a + side_a - overlap)
    across_b = rng.integers(low, high + 1)
    boxes = {}
    for key, start, across, side in (
        (a, start_a, across_a, side_a),
        (b, start_b, across_b, side_b),
    ):
        y0, x0 = (start, across) if axis == 0 else (across, start)
        boxes[key] = (int(y0), int(x0), int(y0 + side), int(x0 + side))
    return boxes[0], boxes[1]


def _shape_mask(shape, side):
    """A boolean `(side, side)` mask of the filled shape, touching all four
    sides of its square; tested at pixel centres."""
    centres = np.arange(side) + 0.5
    y, x = np.meshgrid(centres, centres, indexing="ij")  # (side, side)
    middle = side / 2
    if shape == "circle":
        return (y - middle) ** 2 + (x - middle) ** 2 <= middle**2
    if shape == "triangle":  # apex at the top, base the bottom row
        return np.abs(x - middle) <= (y + 0.5) / 2
    return np.ones((side, side), bool)


def box_cells(box, image_size, grid_size):
    """The cells of a feature-map grid that a pixel box overlaps.

    The image is cut into `grid_size` equal rows and columns (the feature
    map of a CNN with stride `image_size / grid_size`, e.g. an 8 x 8 map of
    a 64 px image with stride 8); a cell counts when it shares at least one
    pixel with the box.

    Args:
        box: `(y0, x0, y1, x1)` int pixel bounds, `y1` and `x1` exclusive.
        image_size: int `S`, or a pair `(height, width)`.
        grid_size: int `G`, or a pair `(rows, cols)`.

    Returns:
        A set of `(row, col)` int pairs.

    Example:

    >>> sorted(box_cells((10, 20, 30, 25), 64, 8))
    [(1, 2), (1, 3), (2, 2), (2, 3), (3, 2), (3, 3)]
    """
    height, width = _pair("image_size", image_size)
    rows, cols = _pair("grid_size", grid_size)
    y0, x0, y1, x1 = (int(v) for v in box)
    if not (0 <= y0 < y1 <= height and 0 <= x0 < x1 <= width):
        raise ValueError(
            "`box` must be (y0, x0, y1, x1) with 0 <= y0 < y1 <= height and "
            f"0 <= x0 < x1 <= width ({height}, {width}). Received: box={box!r}"
        )
    # Cell r spans pixels [r * height / rows, (r + 1) * height / rows).
    row_range = range(y0 * rows // height, -(-y1 * rows // height))
    col_range = range(x0 * cols // width, -(-x1 * cols // width))
    return {(r, c) for r in row_range for c in col_range}


def _pair(name, value):
    """`(value, value)` for an int, else the pair of positive ints."""
    if isinstance(value, int):
        values = (value, value)
    else:
        try:
            values = tuple(value)
        except TypeError:
            values = ()
    if len(values) != 2 or any(
        isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values
    ):
        raise ValueError(
            f"`{name}` must be a positive integer or a pair of them. "
            f"Received: {name}={value!r}"
        )
    return values


def attention_localisation(heatmaps, tokens, objects, image_size):
    """How often the attention looks at the object a word names.

    For each image, the generated tokens are glued into words (a `##`
    piece continues the word before it; `[END]` and the other reserved
    tokens are left out) and every colour word followed by a shape word
    that together name one of the image's objects (`"red circle"`) is
    checked, wherever it stands in the caption, so the mirrored caption
    (`"a blue square below a red circle"`) counts as well. Each of the two
    words scores a hit when the argmax cell of its first token's heatmap is
    one of that object's `box_cells`. Phrases that name no object of the
    image are wrong words, not attention errors, and are left out.

    Args:
        heatmaps: list (one per image) of float arrays `(tokens, H, W)`,
            the attention of each generated token, as
            `Captioner.caption(..., return_attention=True)` returns them.
        tokens: list (one per image) of lists of str, the generated tokens.
        objects: list (one per image) of the objects of
            `SyntheticShapes.objects`.
        image_size: int `S`, the images' side in pixels.

    Returns:
        A dict: `"rate"`, the share of checked words that hit (0.0 when
        none was checked); `"words"`, how many words were checked;
        `"chance"`, the mean share of the grid's cells inside the named
        object's box over those words, the rate of an argmax drawn at
        random; `"by_word"`, the rate of each word of the first and the
        second phrase checked in a caption (`"1st colour"`, `"1st
        shape"`, `"2nd colour"`, `"2nd shape"`; None where no such word
        was checked).
    """
    if not len(heatmaps) == len(tokens) == len(objects):
        raise ValueError(
            "`heatmaps`, `tokens` and `objects` must have one entry per "
            f"image. Received: {len(heatmaps)}, {len(tokens)} and "
            f"{len(objects)} entries"
        )
    hits, checked, chance = 0, 0, 0.0
    by_word = {
        f"{order} {kind}": [0, 0]
        for order in ("1st", "2nd")
        for kind in ("colour", "shape")
    }
    for maps, pieces, scene in zip(heatmaps, tokens, objects):
        maps = np.asarray(maps)
        if maps.ndim != 3 or len(maps) != len(pieces):
            raise ValueError(
                "Each entry of `heatmaps` must have shape (tokens, H, W), "
                "one heatmap per token. Received: shape "
                f"{maps.shape} for {len(pieces)} tokens"
            )
        grid = maps.shape[1:]
        named = {(obj["colour"], obj["shape"]): obj for obj in scene}
        words, starts = _glue_pieces(pieces)
        phrases = 0
        for at in range(len(words) - 1):
            obj = named.get((words[at], words[at + 1]))
            if obj is None:
                continue
            cells = box_cells(obj["box"], image_size, grid)
            order = ("1st", "2nd")[phrases] if phrases < 2 else None
            phrases += 1
            for kind, token in zip(
                ("colour", "shape"), (starts[at], starts[at + 1])
            ):
                row, col = np.unravel_index(np.argmax(maps[token]), grid)
                hit = (int(row), int(col)) in cells
                hits += hit
                checked += 1
                chance += len(cells) / (grid[0] * grid[1])
                if order is not None:
                    by_word[f"{order} {kind}"][0] += hit
                    by_word[f"{order} {kind}"][1] += 1
    return {
        "rate": hits / checked if checked else 0.0,
        "words": checked,
        "chance": chance / checked if checked else 0.0,
        "by_word": {
            word: hit / seen if seen else None
            for word, (hit, seen) in by_word.items()
        },
    }


def mirrored_caption(caption):
    """The same scene described from the other object: `"a red circle
    above a blue square"` -> `"a blue square below a red circle"`.

    Both captions are true of the image (the generator picks which object
    comes first at random), so evaluations use both as references.

    Args:
        caption: str, a caption of `make_synthetic_shapes`.

    Returns:
        A str.
    """
    words = caption.split()
    relation = " ".join(words[3:-3])
    if (
        len(words) < 7
        or relation not in _OPPOSITE
        or words[0] != "a"
        or words[-3] != "a"
    ):
        raise ValueError(
            "`caption` must read 'a <colour> <shape> <relation> a <colour> "
            f"<shape>'. Received: caption={caption!r}"
        )
    return " ".join(["a", *words[-2:], _OPPOSITE[relation], "a", *words[1:3]])


def fit_arguments(count, seed=0, image_size=32):
    """The positional arguments of `Captioner.fit` on generated shapes.

    Args:
        count: int, how many images.
        seed: int, the generator's seed. Defaults to `0`.
        image_size: int, the images' side in pixels. Defaults to `32`.

    Returns:
        A tuple `(images, captions)`: a float32 array `(count, image_size,
        image_size, 3)` and a list of `count` str (one caption each).

    Example:

    >>> images, captions = fit_arguments(2, image_size=16)
    >>> images.shape, len(captions)
    ((2, 16, 16, 3), 2)
    """
    shapes = make_synthetic_shapes(count, image_size=image_size, seed=seed)
    return shapes.images, shapes.captions


def _glue_pieces(pieces):
    """WordPiece tokens -> `(words, starts)`: the words and the index of
    each word's first token; reserved tokens (`[END]`) are dropped."""
    words, starts = [], []
    for index, piece in enumerate(pieces):
        if piece.startswith("[") and piece.endswith("]"):
            continue
        if piece.startswith("##") and words:
            words[-1] += piece[2:]
        else:
            words.append(piece)
            starts.append(index)
    return words, starts
