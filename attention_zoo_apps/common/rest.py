"""Deprecated alias of `attention_zoo.export.rest` (TF Serving's REST
bodies): import `predict_request` from `attention_zoo.export`.

Kept because README showed `from attention_zoo_apps.common.rest import
predict_request`; both names are the same function.
"""

from attention_zoo.export.rest import BYTES_SUFFIX  # noqa: F401
from attention_zoo.export.rest import DEFAULT_SIGNATURE  # noqa: F401
from attention_zoo.export.rest import predict_request  # noqa: F401
