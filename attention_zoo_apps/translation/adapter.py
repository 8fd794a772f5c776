"""What both translation models' decoding adapters share.

`TranslationAdapter` is the `attention_zoo.decoding.DecodingAdapter` base
of `RNNAdapter` and `TransformerAdapter`: source ids are padded
to a multiple of 8 tokens (the models mask PAD, so XLA compiles for a few
lengths), and a source without tokens (an empty or whitespace-only text)
has nothing to translate.
"""

from keras import ops

from attention_zoo.decoding import DecodingAdapter
from attention_zoo_apps.common.token_ids import PAD_ID


class TranslationAdapter(DecodingAdapter):
    """A translation model's adapter: `encode(source_ids)` takes int ids
    `(B, Ts)` (PAD = 0); subclasses write `encode`, `initial_state` and
    `step`."""

    length_multiple = 8

    def finalize(self, result, source_ids):
        """Empties the rows whose source ids `(B, Ts)` are all PAD: length
        0, PAD tokens (so `""`), score 0 and zero attention, in every key
        (the `beam_*` ones too)."""
        has_tokens = ops.any(ops.not_equal(source_ids, PAD_ID), axis=1)

        def blank(value):  # (B, ...): zeros (PAD) in the empty rows
            rows = ops.reshape(
                has_tokens, (-1,) + (1,) * (len(value.shape) - 1)
            )
            return ops.where(rows, value, ops.zeros((), value.dtype))

        return {key: blank(value) for key, value in result.items()}
