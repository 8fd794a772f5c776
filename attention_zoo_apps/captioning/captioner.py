"""`Captioner`: image preprocessing, tokenizer, model and decoding."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from attention_zoo.decoding import searches
from attention_zoo_apps.captioning import export as captioning_export
from attention_zoo_apps.captioning.adapter import CaptionAdapter
from attention_zoo_apps.captioning.augment import random_crops
from attention_zoo_apps.captioning.config import CaptioningConfig
from attention_zoo_apps.captioning.metrics import caption_metrics
from attention_zoo_apps.captioning.model import build_captioner
from attention_zoo_apps.captioning.model import decoder_model
from attention_zoo_apps.captioning.model import encoder_is_trainable
from attention_zoo_apps.captioning.model import encoder_model
from attention_zoo_apps.common import distribute
from attention_zoo_apps.common.generating_bundle import GeneratingBundle
from attention_zoo_apps.common.hypotheses import hypothesis_arrays
from attention_zoo_apps.common.hypotheses import per_input
from attention_zoo_apps.common.hypotheses import return_value
from attention_zoo_apps.common.token_ids import END_ID
from attention_zoo_apps.common.token_ids import PAD_ID
from attention_zoo_apps.common.wordpiece import SubwordTokenizer


class Captioner(GeneratingBundle):
    """Images in; captions out, with a heatmap per word.

    Images are float arrays `(N, S, S, 3)` with values in `[0, 1]` (see
    `attention_zoo_apps.captioning.data.load_images` and `read_image`), already
    at the config's `image_size`. `fit(images, captions, validation)`
    (`validation`: `(images, captions)`) learns a WordPiece vocabulary
    from the training captions, builds `build_captioner` from the config and
    trains it with teacher forcing on `(image, caption)` pairs (with a
    frozen encoder and no augmentation, on each image's features,
    computed once: `caches_features`);
    `caption` decodes with the shared compiled greedy / beam search or
    sampling (`attention_zoo.decoding.decode` over a `CaptionAdapter`);
    `evaluate` reports corpus BLEU-1..4 and CIDEr-D; `export` writes a
    SavedModel that takes encoded image bytes and returns captions.

    Args:
        config: a `CaptioningConfig`. Defaults to `CaptioningConfig()`.
        tokenizer: optional trained `SubwordTokenizer`.
        model: optional built model matching the config and tokenizer.
        strategy: optional `tf.distribute.Strategy` to build and train
            under; `config.batch_size` is then per replica.
    """

    application = "captioning"
    noun = "captioner"
    # A beam of 3 (sampling: one draw per image), no length penalty.
    search_defaults = searches.SearchDefaults(searches.BeamSearch(beam_size=3))
    config_class = CaptioningConfig
    serving_module = captioning_export.CaptioningServingModule

    def __init__(self, config=None, tokenizer=None, model=None, strategy=None):
        super().__init__(config, model, strategy)
        self.tokenizer = tokenizer
        self._decoder_model = self._decoder_source = None

    def input_limits(self):
        """The side images are resized to, and the caption tokens made."""
        return {
            "image_size": self.config.image_size,
            "caption_tokens": self.config.max_length,
        }

    # -- training ---------------------------------------------------------

    def ensure_tokenizer(self, captions):
        if self.tokenizer is None:
            self.tokenizer = SubwordTokenizer.train(
                _flat(captions),
                vocabulary_size=self.config.vocabulary_size,
                lowercase=self.config.lowercase,
            )
        return self.tokenizer

    def make_model(self):
        """The config's model (the tokenizer must exist)."""
        config = self.config
        return build_captioner(
            self.tokenizer.vocabulary_size,
            encoder=config.encoder,
            image_size=config.image_size,
            embedding_dim=config.embedding_dim,
            units=config.units,
            attention=config.attention,
            dropout=config.dropout,
            attention_regularization=config.attention_regularization,
            attention_query=config.attention_query,
            prediction=config.prediction,
            attention_mode=config.attention_mode,
            hard_inference=config.hard_inference,
            reinforce_weight=config.reinforce_weight,
            entropy_weight=config.entropy_weight,
            semi_sampling=config.semi_sampling,
            # Restored weights replace pretrained ones: not read then.
            encoder_weights=None if self.restoring else config.encoder_weights,
            trainable_encoder=self.trainable_encoder(),
            encoder_stage=config.encoder_stage,
        )

    def trainable_encoder(self):
        """Whether the encoder trains (the config's `trainable_encoder`;
        `None`: frozen when its weights are pretrained)."""
        return encoder_is_trainable(
            self.config.trainable_encoder, self.config.encoder_weights
        )

    def caches_features(self):
        """Whether `fit` trains on features computed once per image: the
        encoder is frozen and the images are not augmented, so each
        image's feature map is the same at every epoch (as Xu et al.
        trained). The weights trained are the same; the encoder runs once
        per image rather than once per caption and epoch."""
        return not self.trainable_encoder() and not self.config.augment

    def training_model(self):
        """With `caches_features`, the model from the feature map on
        (`model.decoder_model`), compiled with the captioner's optimizer
        (the same slots); else the captioner's model."""
        if not self.caches_features():
            return self.model
        if self._decoder_source is not self.model:
            with distribute.scope(self.strategy):
                head = decoder_model(self.model)
                head.compile(
                    optimizer=self.model.optimizer, **self.compile_arguments()
                )
            self._decoder_model, self._decoder_source = head, self.model
        return self._decoder_model

    def image_features(self, images, batch_size=32):
        """The frozen encoder's feature maps `(N, H, W, C)` (float32) of
        images `(N, S, S, 3)` in `[0, 1]`, with a progress bar."""
        images = _check_images(images, self.config.image_size)
        features = encoder_model(self.model).predict(
            images, batch_size=batch_size, verbose="auto"
        )
        return np.asarray(features, "float32")

    def compile_arguments(self):
        """The loss and metrics (`build` adds the optimizer)."""
        return dict(
            loss=keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, ignore_class=PAD_ID
            ),
            metrics=[keras.metrics.SparseCategoricalAccuracy("accuracy")],
        )

    def dataset(
        self, images, captions, shuffle=False, augment=False, features=False
    ):
        """Teacher-forced batches of `(image, caption)` pairs.

        `captions[i]` is a str or a list of str for `images[i]`; every
        caption makes one pair. `caption_in` is START + tokens, the target
        tokens + END, both cut and PAD-filled to `max_length`, a fixed
        length (the decoder then unrolls its steps, which XLA needs).
        With `augment`, each pair's image is a random crop, mirrored half
        of the time (`augment.random_crops`). With `features`, the inputs
        are `{"features", "caption_in"}`, each image's encoder features
        computed once (`image_features`), for `training_model`.
        """
        if features and augment:
            raise ValueError(
                "Features computed once cannot be augmented: give "
                "`features` or `augment`, not both."
            )
        images = _check_images(images, self.config.image_size)
        index, texts = [], []
        for i, caption in enumerate(captions):
            for text in [caption] if isinstance(caption, str) else caption:
                index.append(i)
                texts.append(text)
        if len(captions) != len(images):
            raise ValueError(
                f"Got {len(images)} images and {len(captions)} caption "
                "entries: give one entry (a str or a list) per image."
            )
        length = self.config.max_length
        pixels = tf.constant(
            self.image_features(images) if features else images
        )
        pairs = tf.data.Dataset.from_tensor_slices(
            (np.asarray(index, "int32"), texts)
        )
        if shuffle:
            pairs = pairs.shuffle(len(texts), seed=self.config.seed)

        def encode(index, texts):
            tokens = self.tokenizer.tokenize(texts)[:, : length - 1]
            caption_in = self.tokenizer.tokenize(texts, add_start=True)
            caption_in = caption_in[:, :length].to_tensor(
                PAD_ID, shape=[None, length]
            )
            ends = tf.fill([tokens.nrows(), 1], END_ID)
            caption_out = tf.concat([tokens, ends], axis=1).to_tensor(
                PAD_ID, shape=[None, length]
            )
            image = tf.gather(pixels, index)
            if augment:
                image = random_crops(image, seed=self.config.seed)
            inputs = {
                "features" if features else "image": image,
                "caption_in": caption_in,
            }
            return inputs, caption_out

        return (
            pairs.batch(self.global_batch_size)
            .map(
                tf.autograph.experimental.do_not_convert(encode),
                num_parallel_calls=tf.data.AUTOTUNE,
            )
            .prefetch(tf.data.AUTOTUNE)
        )

    def fit(
        self,
        images,
        captions,
        validation=None,
        epochs=None,
        checkpoint_dir=None,
        callbacks=(),
        verbose="auto",
        initial_epoch=0,
        patience=None,
    ):
        """`SavedBundle.fit` on `(images, captions)`: its `train` given as
        two arguments; `validation` is an `(images, captions)` tuple."""
        return super().fit(
            (images, captions),
            validation,
            epochs,
            checkpoint_dir,
            callbacks,
            verbose,
            initial_epoch,
            patience,
        )

    def ensure_vocabularies(self, examples):
        """`examples`: `(images, captions)`."""
        self.ensure_tokenizer(examples[1])

    def training_dataset(self, examples):
        images, captions = examples
        return self.dataset(
            images,
            captions,
            shuffle=True,
            augment=self.config.augment,
            features=self.caches_features(),
        )

    def validation_dataset(self, examples):
        return self.dataset(*examples, features=self.caches_features())

    # -- inference --------------------------------------------------------

    def make_adapter(self):
        """The model's `CaptionAdapter`; `adapter` keeps it, with the
        compiled searches it caches."""
        return CaptionAdapter(self.model)

    def decode(
        self,
        images,
        beam_size=None,
        length_penalty=None,
        jit_compile=True,
        *,
        search=None,
        seed=None,
        **options,
    ):
        """Images `(B, S, S, 3)` -> the search's dict, by
        `attention_zoo.decoding.decode`: `tokens`
        `(B, max_length)`, `lengths`, `scores` and `attention`
        `(B, max_length, H, W)` (with `num_results = N > 1`, an `N` axis
        after `B`). `search` is a search (a beam of 3 by default; see
        `attention_zoo.decoding.searches`), or its loose keyword
        arguments `beam_size`, `length_penalty` and `options`
        (`coverage_penalty`, `num_results`, `sampling`, `temperature`,
        `top_k`, `top_p`); `seed` is the sampling seed. The search is
        compiled whole with XLA (a
        graph-mode `tf.function` with `jit_compile=False`) once per
        configuration and batch bucket (a power of two, or a multiple of
        64 past 64)."""
        return self.search_decode(
            ops.cast(images, "float32"),
            self.config.max_length,
            jit_compile,
            search,
            seed,
            beam_size=beam_size,
            length_penalty=length_penalty,
            **options,
        )

    def caption(
        self,
        images,
        beam_size=None,
        length_penalty=None,
        return_attention=False,
        batch_size=64,
        *,
        search=None,
        seed=None,
        return_scores=False,
        **options,
    ):
        """Captions images `(N, S, S, 3)` in `[0, 1]`.

        `search` is a beam search of 3 beams by default, a `BeamSearch`
        (GNMT's length and coverage penalties), a `Sampling` (see
        `attention_zoo.decoding.searches`) or a name of one (`"beam"`,
        `"top_k"`, ...): `caption(images, search=BeamSearch(beam_size=4))`.
        Or the search's loose keyword arguments, its aliases: `beam_size`
        (by default 3, or 1 when sampling), `length_penalty` and
        `options`: `coverage_penalty`, `num_results`, `sampling`
        (`"temperature"`, `"top_k"` or `"top_p"`), `temperature`,
        `top_k`, `top_p`. With sampling, `seed`: an int gives image `i`
        the seed `seed + i`, a list one seed per image; an image draws the
        same caption with the same seed in any batch. `num_results=K` (at
        most `beam_size`) gives the `K` best beams of each image, best
        first. See `attention_zoo.decoding.decode`.

        Returns:
            A list of str (with `num_results > 1`, a list of `K` str per
            image); with `return_attention=True` also, in the same
            nesting, float32 arrays `(words, H, W)`, one heatmap per
            generated token (END included), and the token lists (str);
            with `return_scores=True` also the log-probabilities (float).
            Several are returned as a tuple in that order.
        """
        search = self.search_defaults.resolve(
            search,
            beam_size=beam_size,
            length_penalty=length_penalty,
            **options,
        )
        num_results = search.num_results
        images = _check_images(images, self.config.image_size)
        texts, maps, tokens, scores = [], [], [], []
        vocabulary = self.tokenizer.vocabulary
        for start in range(0, len(images), batch_size):
            batch = images[start : start + batch_size]
            # Image `i` draws with seed `seed + i` (or `seed[i]`) in any
            # batch: the same images, the same captions.
            batch_seed = seed
            if isinstance(seed, (int, np.integer)):
                batch_seed = seed + start
            elif seed is not None:
                batch_seed = np.asarray(seed)[start : start + len(batch)]
            result = self.decode(batch, search=search, seed=batch_seed)
            found = hypothesis_arrays(result, num_results)
            ids = np.reshape(found["tokens"], (-1, self.config.max_length))
            strings = self.tokenizer.detokenize(ids).numpy()
            texts += [s.decode("utf-8") for s in strings]
            lengths = found["lengths"].reshape(-1)
            scores += [float(x) for x in found["scores"].reshape(-1)]
            if return_attention:
                attention = np.reshape(
                    found["attention"],
                    (len(ids),) + found["attention"].shape[2:],
                )
                for row, length in enumerate(lengths):
                    maps.append(attention[row, :length])
                    tokens.append([vocabulary[i] for i in ids[row, :length]])
        extras = [maps, tokens] if return_attention else []
        if return_scores:
            extras.append(scores)
        return return_value(
            *(per_input(x, num_results) for x in [texts, *extras])
        )

    def watch_examples(self, examples, count):
        """The first `count` images of `(images, captions)` as the training
        logs show them (`attention_zoo_apps.common.watching`): per image a dict
        with `text` (the greedy caption and the first reference) and, for
        attention models, `attention` `(caption tokens, H * W)`, a row per
        token over the feature map's cells (`rows`: the tokens, `columns`:
        the cells as `row,column`)."""
        images, captions = examples
        images = images[:count]
        if not len(images):
            return []
        texts, maps, tokens = self.caption(
            images, search=searches.Greedy(), return_attention=True
        )
        shown = []
        for text, heatmaps, words, references in zip(
            texts, maps, tokens, captions
        ):
            shown.append({"text": f"{text} (reference: {references[0]})"})
            if self.config.attention is None:
                continue
            _, height, width = np.shape(heatmaps)  # (tokens, H, W)
            shown[-1].update(
                attention=np.reshape(heatmaps, (len(words), -1)),
                rows=words,
                columns=[
                    f"{r},{c}" for r in range(height) for c in range(width)
                ],
                row_name="caption",
                column_name="image cell (row,column)",
            )
        return shown

    def evaluate(
        self,
        images,
        references,
        beam_size=None,
        length_penalty=None,
        *,
        search=None,
    ):
        """Corpus BLEU-1..4 and CIDEr-D of `caption` against references
        (`references[i]`: a str or a list of str for image `i`), with the
        search `caption` takes (a beam of 3 by default)."""
        hypotheses = self.caption(
            images, beam_size, length_penalty, search=search
        )
        references = [
            [r] if isinstance(r, str) else list(r) for r in references
        ]
        scores = caption_metrics(hypotheses, references)
        scores["hypotheses"] = hypotheses
        return scores

    def warmup_inputs(self):
        """One generated image; see `warmup_inputs` of
        `attention_zoo_apps.captioning.export`."""
        return captioning_export.warmup_inputs(self)


def _flat(captions):
    texts = []
    for caption in captions:
        texts += [caption] if isinstance(caption, str) else list(caption)
    return texts


def _check_images(images, image_size):
    images = np.asarray(images, "float32")
    expected = (image_size, image_size, 3)
    if images.ndim != 4 or images.shape[1:] != expected:
        raise ValueError(
            f"`images` must have shape (N, {image_size}, {image_size}, 3) "
            f"(the config's image_size). Received: shape={images.shape}"
        )
    return images
