"""Neural machine translation: RNN and Transformer translators with attention.

Data and text handling live in `applications.translation.data` (loaders,
synthetic language pair, `make_translation_dataset`) and
`applications.common.wordpiece` (`SubwordTokenizer`).
"""

__all__ = []
