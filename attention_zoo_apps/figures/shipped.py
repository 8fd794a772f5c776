"""Figures 15.19, 15.21 and 15.22 from the shipped models (`saved_models/`,
found by name through `attention_zoo_apps.common.zoo`): seq2seq attention of
`translation-spa-eng`, the alignment of `entailment-snli` and the soft
attention of `captioning-flickr8k` beside its argmax ("hard") reading.

The applications are reached through `attention_zoo_apps.registry`, the one
place outside their folders that names them: their bundles'
`from_preset(name)` and their own drawing helpers.
"""

import os

import numpy as np

from attention_zoo_apps import registry
from attention_zoo_apps.common.plots import plot_heatmap
from attention_zoo_apps.demo.shipped import EXAMPLES_DIR
from attention_zoo_apps.figures.gallery import Figure

TRANSLATOR = "translation-spa-eng"
CLASSIFIER = "entailment-snli"
CAPTIONER = "captioning-flickr8k"
# The book's inputs, as printed there (without accents), and the same
# with the accents Spanish writes.
SENTENCES = ("hace mucho frio aqui.", "¿todavia estan en casa?")
ACCENTED = ("hace mucho frío aquí.", "¿todavía están en casa?")
PREMISE, HYPOTHESIS = "I do need sleep", "I am tired"
PHOTO = "riders-on-beach.jpg"  # CC BY 2.0, see demo/examples/LICENSE.md
WEIGHT = "attention weight"


def _strongest(tokens_in, tokens_out, weights, word):
    """`(source token, weight)` that output token `word` attends to most,
    or None when `word` was not produced."""
    if word not in tokens_out:
        return None
    row = weights[tokens_out.index(word)]
    return tokens_in[int(np.argmax(row))], float(np.max(row))


def _architecture(config):
    """The translator's model and what its pictured weights are."""
    if config.model == "transformer":
        return (
            "a Transformer; the weights are its last decoder layer's "
            "cross-attention, averaged over its heads"
        )
    return (
        f"a {config.cell.upper()} encoder-decoder with "
        f"{config.attention or 'no'} attention"
    )


def translation_heatmaps(out):
    """Figure 15.19: the translator's attention on the book's sentences."""
    application = registry.get("translation")
    plot_attention = application.module("evaluate").plot_attention
    translator = application.bundle_class().from_preset(TRANSLATOR)
    images, said = [], []
    for letter, text, accented in zip("ab", SENTENCES, ACCENTED):
        explained = translator.explain(text)
        path = os.path.join(out, f"15.19{letter}-translation.png")
        plot_attention(
            explained["source_tokens"],
            explained["target_tokens"],
            explained["attention"],
            path,
            title=f"{text} -> {explained['translation']}",
            colorbar_label=WEIGHT,
        )
        images.append(path)
        line = f'({letter}) "{text}" -> "{explained["translation"]}"'
        home = _strongest(
            explained["source_tokens"],
            explained["target_tokens"],
            explained["attention"],
            "home",
        )
        if home is not None:
            line += f'; "home" attends most to "{home[0]}" ({home[1]:.2f})'
        elif letter == "b":
            line += '; it writes no "home"'
        with_accents = translator.explain(accented)["translation"]
        said.append(f'{line} (with accents, "{accented}" -> "{with_accents}")')
    caption = (
        f"Attention of the shipped `{TRANSLATOR}` "
        f"({_architecture(translator.config)}) while it translates the "
        f"book's two sentences, subword tokens on the axes: "
        f"{'; '.join(said)}. The "
        f'book\'s model wrote "it is very cold here." and "are you still '
        f'at home?", with "home" attending to "?".'
    )
    return Figure("15.19", "Seq2seq attention heatmaps", tuple(images), caption)


def entailment_alignment(out):
    """Figure 15.21: the decomposable attention's premise alignment."""
    classifier = (
        registry.get("entailment").bundle_class().from_preset(CLASSIFIER)
    )
    result = classifier.predict([PREMISE], [HYPOTHESIS])
    premise = result["premise_tokens"][0]
    hypothesis = result["hypothesis_tokens"][0]
    alignment = result["alignment"][0]  # (premise tokens, hypothesis tokens)
    path = os.path.join(out, "15.21-entailment.png")
    plot_heatmap(
        hypothesis,
        premise,
        alignment,
        path,
        title=f"{PREMISE} / {HYPOTHESIS}: {result['labels'][0]}",
        x_label="hypothesis token",
        y_label="premise token",
        colorbar_label=WEIGHT,
    )
    pairs = ", ".join(
        f"{word} -> {hypothesis[int(np.argmax(row))]} ({np.max(row):.2f})"
        for word, row in zip(premise, alignment)
    )
    probabilities = result["probabilities"][0]
    caption = (
        f"The shipped `{CLASSIFIER}` (decomposable attention, Parikh et al. "
        f'2016) on premise "{PREMISE}" and hypothesis "{HYPOTHESIS}": '
        f"each premise token's soft weights over the hypothesis tokens "
        f"(the alpha of the book's Eq. 15.47). Strongest: {pairs}. It "
        f"answers {result['labels'][0]} (entailment {probabilities[0]:.2f}, "
        f"neutral {probabilities[1]:.2f}, contradiction "
        f"{probabilities[2]:.2f}). The book draws hard 0/1 weights for "
        f"simplicity; these are the model's soft ones."
    )
    return Figure("15.21", "Entailment alignment", (path,), caption)


def hard_reader(captioner):
    """A copy of `captioner` whose decoder reads one cell per word: built
    with `attention_mode="hard"` (`hard_inference="argmax"`, the most
    likely cell) and given the soft model's weights, matched by path
    (`HardAttention` holds the same score weights in its sublayer `score`;
    the hard decoder's one more weight, its REINFORCE baseline, is not
    read at inference).

    Raises:
        ValueError: a weight of `captioner` has no place in the copy.
    """
    config = captioner.config.replace(
        attention_mode="hard", hard_inference="argmax"
    )
    hard = type(captioner)(config, tokenizer=captioner.tokenizer)
    hard.ensure_model()
    soft = {weight.path: weight for weight in captioner.model.weights}
    for weight in hard.model.weights:
        path = weight.path.replace("/attention/score/", "/attention/")
        if path in soft:
            weight.assign(soft.pop(path))
    if soft:
        raise ValueError(
            f"weights not copied to the hard decoder: {sorted(soft)}"
        )
    return hard


def soft_and_hard(out):
    """Figure 15.22: the shipped captioner with soft attention, and with
    its weights in a decoder that reads only the most likely cell."""
    application = registry.get("captioning")
    overlays = application.module("overlays")
    soft = application.bundle_class().from_preset(CAPTIONER)
    image = application.module("images").read_image(
        os.path.join(EXAMPLES_DIR, PHOTO), soft.config.image_size
    )
    paths, captions, cells = [], [], []
    for letter, kind, captioner in (
        ("a", "soft", soft),
        ("b", "hard", hard_reader(soft)),
    ):
        (caption,), (maps,), (tokens,) = captioner.caption(
            image[None], return_attention=True
        )
        words, heatmaps = overlays.word_heatmaps(tokens, maps)
        path = os.path.join(out, f"15.22{letter}-{kind}.png")
        overlays.plot_caption_attention(
            image,
            words,
            heatmaps,
            path,
            title=f"({kind}) {caption}",
            colorbar_label=f"{WEIGHT} / its word's largest",
        )
        paths.append(path)
        captions.append(caption)
        cells.append(heatmaps.reshape(len(words), -1))  # (words, H * W)
    grid = "x".join(str(n) for n in maps.shape[1:])
    peak = float(np.mean(np.max(cells[0], axis=-1)))
    read = len(set(np.argmax(cells[1], axis=-1).tolist()))
    same = (
        "the two captions differ, as the book's do"
        if captions[0] != captions[1]
        else "here the two captions are the same, unlike the book's"
    )
    caption = (
        f"The shipped `{CAPTIONER}` (EfficientNet-Lite features on a "
        f"{grid} grid, an LSTM decoder trained with `attention_mode="
        f'"{soft.config.attention_mode}"`) on '
        f'`{PHOTO}`. (a) Soft: "{captions[0]}"; each word\'s weights over '
        f"the grid, scaled to their maximum (on average {peak:.2f} of a "
        f"word's weight is on its heaviest cell). (b) Hard: "
        f'"{captions[1]}", from the same weights in a decoder built with '
        f'`attention_mode="hard"`, which at inference reads only the '
        f'most likely cell per word (`hard_inference="argmax"`; '
        f"{read} distinct cells for {len(cells[1])} words). No model "
        f"trained with hard attention (REINFORCE) is shipped, so unlike the "
        f"book's panel (b) this is the soft model read hard, not a second "
        f"model; {same}."
    )
    return Figure("15.22", "Soft and hard attention", tuple(paths), caption)
