"""The reserved tokens of every vocabulary and their fixed ids.

In a module of their own, without TensorFlow, so that the models and
their decoding adapters (which need the ids, not the tokenizer) build on
a backend without TensorFlow (`benchmarks/gpu`). `wordpiece` re-exports
them.
"""

PAD = "[PAD]"
UNK = "[UNK]"
START = "[START]"
END = "[END]"
RESERVED_TOKENS = (PAD, UNK, START, END)
PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3
