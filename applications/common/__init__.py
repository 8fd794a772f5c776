"""Text and data helpers shared by the applications."""

from applications.common.wordpiece import SubwordTokenizer

__all__ = ["SubwordTokenizer"]
