"""Synthetic shapes: captions from the drawn objects, boxes, feature-map
cells."""

import itertools
import math

import numpy as np
import pytest

from attention_zoo_apps.captioning import synthetic

NUM_IMAGES = 120


@pytest.fixture(scope="module")
def generated():
    return synthetic.make_synthetic_shapes(NUM_IMAGES, image_size=64, seed=3)


def _relations_that_hold(first, second):
    """The relation words true of two `(y0, x0, y1, x1)` boxes (the first
    entirely above / below / left of / right of the second)."""
    (ay0, ax0, ay1, ax1), (by0, bx0, by1, bx1) = first, second
    holds = {
        "above": ay1 <= by0,
        "below": ay0 >= by1,
        "left of": ax1 <= bx0,
        "right of": ax0 >= bx1,
    }
    return {word for word, true in holds.items() if true}


def _colour_mask(image, colour):
    """Pixels exactly of `colour` (the background noise is far below it)."""
    rgb = np.asarray(synthetic.COLOUR_RGB[colour], "float32")
    return np.all(np.abs(image - rgb) < 1e-6, axis=-1)


def test_images_are_float_in_unit_range(generated):
    images = generated.images
    assert images.shape == (NUM_IMAGES, 64, 64, 3)
    assert images.dtype == np.float32
    assert images.min() >= 0.0 and images.max() <= 1.0
    assert len(generated) == NUM_IMAGES
    assert len(generated.captions) == len(generated.objects) == NUM_IMAGES


def test_colours_are_distinct():
    assert 4 <= len(synthetic.COLOURS) <= 6
    assert set(synthetic.COLOUR_RGB) == set(synthetic.COLOURS)
    for a, b in itertools.combinations(synthetic.COLOURS, 2):
        difference = np.subtract(
            synthetic.COLOUR_RGB[a], synthetic.COLOUR_RGB[b]
        )
        assert np.abs(difference).max() >= 0.5, (a, b)


def test_captions_name_the_objects_in_order(generated):
    pattern_words = {
        "colour": set(synthetic.COLOURS),
        "shape": set(synthetic.SHAPES),
    }
    for caption, objects in zip(generated.captions, generated.objects):
        words = caption.split()
        assert caption == " ".join(words)  # single spaces
        assert len(objects) == 2
        first, second = objects
        relation = " ".join(words[3:-3])
        assert relation in synthetic.RELATIONS
        assert words[0] == "a" and words[-3] == "a"
        for obj in objects:
            colour_at, shape_at = obj["words"]
            assert words[colour_at] == obj["colour"]
            assert words[shape_at] == obj["shape"]
            assert obj["colour"] in pattern_words["colour"]
            assert obj["shape"] in pattern_words["shape"]
        assert first["words"] == (1, 2)
        assert second["words"] == (len(words) - 2, len(words) - 1)
        assert (first["colour"], first["shape"]) != (
            second["colour"],
            second["shape"],
        )


def test_relation_word_matches_the_boxes(generated):
    seen = set()
    for caption, (first, second) in zip(generated.captions, generated.objects):
        relation = " ".join(caption.split()[3:-3])
        seen.add(relation)
        # Exactly the captioned relation holds, so the boxes are disjoint
        # and no other word would describe them.
        assert _relations_that_hold(first["box"], second["box"]) == {
            relation
        }, caption
    assert seen == set(synthetic.RELATIONS)


def test_objects_are_drawn_in_their_boxes(generated):
    shapes_seen, colours_seen = set(), set()
    for image, objects in zip(generated.images, generated.objects):
        outside = np.ones((64, 64), bool)
        for obj in objects:
            y0, x0, y1, x1 = obj["box"]
            assert all(isinstance(v, int) for v in obj["box"])
            side = y1 - y0
            assert side == x1 - x0 and 14 <= side <= 22
            assert 0 <= y0 and 0 <= x0 and y1 <= 64 and x1 <= 64
            outside[y0:y1, x0:x1] = False
            centre = image[y0 + side // 2, x0 + side // 2]
            np.testing.assert_allclose(
                centre, synthetic.COLOUR_RGB[obj["colour"]], atol=1e-6
            )
            mask = _colour_mask(image[y0:y1, x0:x1], obj["colour"])
            # The shape touches all four sides of its box.
            assert mask[0].any() and mask[-1].any()
            assert mask[:, 0].any() and mask[:, -1].any()
            # Its area tells the shape: a full square, a disc (pi / 4) or a
            # triangle (about half).
            fill = mask.mean()
            expected = {"square": 1.0, "circle": math.pi / 4, "triangle": 0.5}
            assert abs(fill - expected[obj["shape"]]) < 0.08, (obj, fill)
            shapes_seen.add(obj["shape"])
            colours_seen.add(obj["colour"])
        # Outside the boxes there is only the dark background noise.
        assert image[outside].max() < 0.05
    assert shapes_seen == set(synthetic.SHAPES)
    assert colours_seen == set(synthetic.COLOURS)


def test_same_seed_same_set():
    a = synthetic.make_synthetic_shapes(6, image_size=32, seed=7)
    b = synthetic.make_synthetic_shapes(6, image_size=32, seed=7)
    np.testing.assert_array_equal(a.images, b.images)
    assert a.captions == b.captions and a.objects == b.objects
    c = synthetic.make_synthetic_shapes(6, image_size=32, seed=8)
    assert a.captions != c.captions
    # A smaller set is a prefix of a larger one.
    first = synthetic.make_synthetic_shapes(3, image_size=32, seed=7)
    np.testing.assert_array_equal(first.images, a.images[:3])
    assert first.captions == a.captions[:3]


@pytest.mark.parametrize("image_size", [16, 40])
def test_other_sizes_and_no_noise(image_size):
    generated = synthetic.make_synthetic_shapes(
        20, image_size=image_size, seed=1, background_noise=0.0
    )
    assert generated.images.shape == (20, image_size, image_size, 3)
    for image, (first, second) in zip(generated.images, generated.objects):
        outside = np.ones((image_size, image_size), bool)
        for box in (first["box"], second["box"]):
            y0, x0, y1, x1 = box
            assert 0 <= y0 < y1 <= image_size and 0 <= x0 < x1 <= image_size
            outside[y0:y1, x0:x1] = False
        assert not image[outside].any()  # exactly zero background
        assert len(_relations_that_hold(first["box"], second["box"])) == 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_images": -1}, "num_images=-1"),
        ({"num_images": 2.0}, "num_images=2.0"),
        ({"num_images": 2, "image_size": 8}, "image_size=8"),
        ({"num_images": 2, "background_noise": 1.5}, "background_noise=1.5"),
    ],
)
def test_make_synthetic_shapes_checks_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        synthetic.make_synthetic_shapes(**kwargs)


@pytest.mark.parametrize(
    "box, image_size, grid_size, expected",
    [
        # Rows 10-29 meet cells 1-3 (8-15, 16-23, 24-31); columns 20-24
        # meet cells 2 (16-23) and 3 (24-31).
        (
            (10, 20, 30, 25),
            64,
            8,
            {(1, 2), (1, 3), (2, 2), (2, 3), (3, 2), (3, 3)},
        ),
        ((0, 0, 8, 8), 64, 8, {(0, 0)}),  # y1, x1 exclusive
        ((56, 56, 64, 64), 64, 8, {(7, 7)}),
        ((7, 7, 9, 9), 64, 8, {(0, 0), (0, 1), (1, 0), (1, 1)}),
        ((0, 0, 64, 64), 64, 2, {(0, 0), (0, 1), (1, 0), (1, 1)}),
        # A 4 x 2 grid of a 64 x 32 image: cells of 16 x 16 pixels.
        ((20, 0, 40, 10), (64, 32), (4, 2), {(1, 0), (2, 0)}),
        # 7 px cells of a 28 px image (4 x 4): rows 6-7 meet cells 0 and 1.
        ((6, 14, 8, 15), 28, 4, {(0, 2), (1, 2)}),
    ],
)
def test_box_cells_hand_cases(box, image_size, grid_size, expected):
    assert synthetic.box_cells(box, image_size, grid_size) == expected


def test_box_cells_cover_the_drawn_pixels(generated):
    for image, objects in zip(generated.images[:20], generated.objects[:20]):
        for obj in objects:
            y0, x0, y1, x1 = obj["box"]
            mask = np.zeros((64, 64), bool)
            mask[y0:y1, x0:x1] = _colour_mask(
                image[y0:y1, x0:x1], obj["colour"]
            )
            pixel_cells = {(y // 8, x // 8) for y, x in zip(*np.nonzero(mask))}
            cells = synthetic.box_cells(obj["box"], 64, 8)
            assert pixel_cells <= cells
            # The box is tight, so its cell rows and columns are all used.
            assert {r for r, _ in pixel_cells} == {r for r, _ in cells}
            assert {c for _, c in pixel_cells} == {c for _, c in cells}


@pytest.mark.parametrize(
    "box, image_size, grid_size, message",
    [
        ((0, 0, 70, 8), 64, 8, "box="),
        ((5, 5, 5, 9), 64, 8, "box="),
        ((0, 0, 8, 8), 64, 0, "grid_size=0"),
        ((0, 0, 8, 8), 64, (8, 8, 8), "grid_size="),
        ((0, 0, 8, 8), "64", 8, "image_size='64'"),
    ],
)
def test_box_cells_checks_arguments(box, image_size, grid_size, message):
    with pytest.raises(ValueError, match=message):
        synthetic.box_cells(box, image_size, grid_size)


def _np_localisation(heatmaps, captions, objects, image_size):
    """A pixel-level reference of `attention_localisation` for whole-word
    tokens: the argmax cell is blown up to its pixels with `np.kron` and a
    word hits when one of them is inside the named object's box. Returns
    the rate, the words checked and `{(phrase, word): [hits]}` (phrase 0
    or 1 of a caption, word 0 for the colour, 1 for the shape)."""
    hits = checked = 0
    by_word = {(p, w): [] for p in range(2) for w in range(2)}
    for maps, words, scene in zip(heatmaps, captions, objects):
        cell = image_size // maps.shape[1]
        phrase = 0
        for at in range(len(words) - 1):
            for obj in scene:
                if [obj["colour"], obj["shape"]] != words[at : at + 2]:
                    continue
                box = np.zeros((image_size, image_size), bool)
                y0, x0, y1, x1 = obj["box"]
                box[y0:y1, x0:x1] = True
                for word, index in enumerate((at, at + 1)):
                    peak = maps[index] == maps[index].max()
                    pixels = np.kron(peak, np.ones((cell, cell), bool))
                    hit = bool((pixels & box).any())
                    hits += hit
                    checked += 1
                    by_word[phrase, word].append(hit)
                phrase += 1
    return hits / checked, checked, by_word


def test_attention_localisation_against_numpy(generated):
    rng = np.random.default_rng(0)
    heatmaps, tokens, captions = [], [], []
    for number, caption in enumerate(generated.captions[:40]):
        if number % 4 == 1:
            caption = synthetic.mirrored_caption(caption)
        words = caption.split()
        if number % 4 == 2:  # a colour of no object: that phrase is skipped
            present = {obj["colour"] for obj in generated.objects[number]}
            words[1] = sorted(set(synthetic.COLOURS) - present)[0]
        # Random peaked maps: a unique argmax per word.
        maps = rng.random((len(words) + 1, 8, 8)) ** 8
        heatmaps.append(maps / maps.sum((1, 2), keepdims=True))
        tokens.append(words + ["[END]"])
        captions.append(words)
    found = synthetic.attention_localisation(
        heatmaps, tokens, generated.objects[:40], 64
    )
    rate, checked, by_word = _np_localisation(
        heatmaps, captions, generated.objects[:40], 64
    )
    assert found["words"] == checked == 4 * 40 - 2 * 10
    assert found["rate"] == pytest.approx(rate)
    for (phrase, word), hits in by_word.items():
        name = f"{('1st', '2nd')[phrase]} {('colour', 'shape')[word]}"
        assert found["by_word"][name] == pytest.approx(np.mean(hits))
    assert 0.05 < found["chance"] < 0.5


def test_attention_localisation_by_hand():
    # A 64 px image, 8 px cells: "a red circle above a blue square".
    objects = [
        [
            {
                "colour": "red",
                "shape": "circle",
                "box": (0, 0, 16, 16),
                "words": (1, 2),
            },
            {
                "colour": "blue",
                "shape": "square",
                "box": (40, 40, 60, 60),
                "words": (5, 6),
            },
        ]
    ]
    # The mirrored caption, with "blue" in two pieces: the first piece
    # carries the word's heatmap.
    tokens = "a bl ##ue square below a red circle [END]".split()
    peaks = [(0, 0), (5, 5), (0, 0), (0, 0), (5, 5), (0, 0), (1, 1),
             (7, 7), (0, 0)]  # fmt: skip
    maps = np.zeros((len(tokens), 8, 8), "float32")
    for index, (row, col) in enumerate(peaks):
        maps[index, row, col] = 1.0
    found = synthetic.attention_localisation([maps], [tokens], objects, 64)
    # blue (5, 5): in; square (0, 0): out; red (1, 1): in; circle: out.
    assert found["words"] == 4
    assert found["rate"] == pytest.approx(0.5)
    # Boxes of 3 x 3 and 2 x 2 cells out of 64.
    assert found["chance"] == pytest.approx((9 + 9 + 4 + 4) / 4 / 64)
    # By word: "blue square" is the caption's first phrase.
    assert found["by_word"] == {
        "1st colour": 1.0,
        "1st shape": 0.0,
        "2nd colour": 1.0,
        "2nd shape": 0.0,
    }
    # A phrase naming no object ("blue circle") is not checked.
    tokens[6] = "blue"
    found = synthetic.attention_localisation([maps], [tokens], objects, 64)
    assert found["words"] == 2 and found["rate"] == pytest.approx(0.5)
    assert found["by_word"]["2nd colour"] is None
    with pytest.raises(ValueError, match="one heatmap per token"):
        synthetic.attention_localisation([maps[:3]], [tokens], objects, 64)


def test_mirrored_caption_describes_the_same_boxes(generated):
    for caption, (first, second) in zip(
        generated.captions[:30], generated.objects[:30]
    ):
        mirrored = synthetic.mirrored_caption(caption)
        words = mirrored.split()
        assert words[1:3] == [second["colour"], second["shape"]]
        assert words[-2:] == [first["colour"], first["shape"]]
        relation = " ".join(words[3:-3])
        assert _relations_that_hold(second["box"], first["box"]) == {relation}
        assert synthetic.mirrored_caption(mirrored) == caption
    with pytest.raises(ValueError, match="caption="):
        synthetic.mirrored_caption("a red circle near a blue square")


def test_fit_arguments_are_the_generated_images_and_captions():
    images, captions = synthetic.fit_arguments(5, seed=4, image_size=16)
    expected = synthetic.make_synthetic_shapes(5, image_size=16, seed=4)
    np.testing.assert_array_equal(images, expected.images)
    assert captions == expected.captions
    assert synthetic.fit_arguments(3)[0].shape == (3, 32, 32, 3)


def test_shapes_is_a_deprecated_alias_of_synthetic():
    from attention_zoo_apps.captioning import shapes

    for name in shapes.__all__:
        assert getattr(shapes, name) is getattr(synthetic, name)
