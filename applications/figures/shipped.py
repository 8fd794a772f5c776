"""Figures 15.19, 15.21 and 15.22 from the shipped models (`saved_models/`,
found by name through `applications.common.zoo`): seq2seq attention of
`translation-spa-eng`, the alignment of `entailment-snli` and the soft
attention of `captioning-flickr8k` beside its argmax ("hard") reading.

The applications are reached through `applications.registry`, the one
place outside their folders that names them: their bundles'
`from_preset(name)` and their own drawing helpers.
"""

import os

import numpy as np

from applications import registry
from applications.common.plots import plot_heatmap
from applications.demo.shipped import EXAMPLES_DIR
from applications.figures.gallery import Figure

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
        f"Attention of the shipped `{TRANSLATOR}` (a GRU encoder-decoder "
        f"with additive attention) while it translates the book's two "
        f"sentences, subword tokens on the axes: {'; '.join(said)}. The "
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


def soft_and_hard(out):
    """Figure 15.22: soft attention, and its argmax as a hard reading."""
    application = registry.get("captioning")
    overlays = application.module("overlays")
    captioner = application.bundle_class().from_preset(CAPTIONER)
    image = application.module("images").read_image(
        os.path.join(EXAMPLES_DIR, PHOTO), captioner.config.image_size
    )
    captions, maps, tokens = captioner.caption(
        image[None], return_attention=True
    )
    words, soft = overlays.word_heatmaps(tokens[0], maps[0])
    cells = soft.reshape(len(words), -1)  # (words, H * W)
    hard = np.zeros_like(cells)
    hard[np.arange(len(words)), np.argmax(cells, axis=-1)] = 1.0
    hard = hard.reshape(soft.shape)
    paths = tuple(
        os.path.join(out, f"15.22{letter}-{kind}.png")
        for letter, kind in (("a", "soft"), ("b", "hard"))
    )
    for path, heatmaps, kind in zip(paths, (soft, hard), ("soft", "hard")):
        overlays.plot_caption_attention(
            image,
            words,
            heatmaps,
            path,
            title=f"({kind}) {captions[0]}",
            colorbar_label=f"{WEIGHT} / its word's largest",
        )
    mode = captioner.config.attention_mode
    peak = float(np.mean(np.max(cells, axis=-1)))
    grid = "x".join(str(n) for n in soft.shape[1:])
    caption = (
        f"The shipped `{CAPTIONER}` (EfficientNet-Lite features on a "
        f"{grid} grid, an LSTM decoder with `attention_mode="
        f'"{mode}"`) on `{PHOTO}`: "{captions[0]}". (a) Each word\'s '
        f"soft weights over the grid, scaled to their maximum. (b) The "
        f"hard panel is the argmax cell of the same soft weights, one cell "
        f"per word: no model trained with hard attention (REINFORCE, "
        f'`attention_mode="hard"`) is shipped, so it is this model\'s '
        f"soft attention read as hard, with the same caption, not the "
        f"book's separately trained model with its own caption. On "
        f"average the soft maps put {peak:.2f} of their weight on that "
        f"cell."
    )
    return Figure("15.22", "Soft and hard attention", paths, caption)
