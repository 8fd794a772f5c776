"""The WordPiece vocabularies a `Translator` learns from its training
pairs: one per side, or with `TranslationConfig.joint_vocabulary` one of
both sides' text for both. With `TranslationConfig.placeholders`, each
learned vocabulary ends with the placeholder tokens."""

from attention_zoo_apps.common.wordpiece import SubwordTokenizer
from attention_zoo_apps.translation.placeholders import with_placeholders


def learn_tokenizers(config, pairs, source=None, target=None):
    """`(source, target)` tokenizers for `config`: the ones given, else
    learned from `pairs` (`(source, target)` texts)."""
    source, target = _learn(config, pairs, source, target)
    if not config.placeholders:
        return source, target
    placed = with_placeholders(source)
    return placed, placed if target is source else with_placeholders(target)


def _learn(config, pairs, source, target):
    settings = dict(
        lowercase=config.lowercase, normalization=config.normalization
    )
    if config.joint_vocabulary and source is None:
        joint = SubwordTokenizer.train(
            [text for pair in pairs for text in pair],
            vocabulary_size=config.source_vocabulary_size,
            **settings,
        )
        return joint, joint
    if source is None:
        source = SubwordTokenizer.train(
            [text for text, _ in pairs],
            vocabulary_size=config.source_vocabulary_size,
            **settings,
        )
    if target is None:
        target = SubwordTokenizer.train(
            [text for _, text in pairs],
            vocabulary_size=config.target_vocabulary_size,
            **settings,
        )
    return source, target
