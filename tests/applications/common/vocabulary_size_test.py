"""Every application sizes its embeddings and output layer to the
vocabulary it learned, not to the configured size (an upper bound): a
small corpus makes a small model."""

import pytest

from attention_zoo_apps import registry

CONFIGURED = 4999  # far above what 40 generated examples hold
# Each application's vocabulary size fields and the tokenizers they bound.
FIELDS = {
    "translation": {
        "source_vocabulary_size": "source_tokenizer",
        "target_vocabulary_size": "target_tokenizer",
    },
    "captioning": {"vocabulary_size": "tokenizer"},
    "entailment": {"vocabulary_size": "tokenizer"},
    "ehr": {"note_vocabulary_size": "note_tokenizer"},
}


# Translation (two vocabularies) in the quick suite, the others in the
# slow tier.
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name, marks=[] if name == "translation" else pytest.mark.slow
        )
        for name in sorted(FIELDS)
    ],
)
def test_the_model_is_sized_to_the_learned_vocabulary(name, tmp_path):
    application = registry.get(name)
    config = application.tiny_config().replace(
        **{field: CONFIGURED for field in FIELDS[name]}
    )
    bundle = application.bundle_class()(config)
    bundle.fit(*application.fit_arguments(40), epochs=1, verbose=0)
    learned = {
        getattr(bundle, tokenizer).vocabulary_size
        for tokenizer in FIELDS[name].values()
    }
    assert max(learned) < CONFIGURED
    shapes = [tuple(weight.shape) for weight in bundle.model.weights]
    assert not any(CONFIGURED in shape for shape in shapes)
    for size in learned:  # an embedding table (or output layer) each
        assert any(size in shape for shape in shapes), size

    # The saved run loads back at that size.
    bundle.save(str(tmp_path))
    loaded = application.bundle_class().load(str(tmp_path))
    assert [tuple(w.shape) for w in loaded.model.weights] == shapes
