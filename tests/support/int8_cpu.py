"""`NEEDS_INT8`: the mark of a test that runs oneDNN's int8 matmul, which
TensorFlow runs only on AVX-512 CPUs (`int8.int8_available`). Elsewhere
those tests do not run; `tests/export/int8_test.py` checks there that the
probe is right and that int8 exports are refused."""

import pytest

from attention_zoo.export import int8

NEEDS_INT8 = pytest.mark.skipif(
    not int8.int8_available(),
    reason="this CPU's TensorFlow cannot run oneDNN's int8 matmul "
    "(AVX-512 VNNI or AMX): int8 exports are refused here",
)
