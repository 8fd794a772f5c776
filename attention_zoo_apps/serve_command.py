"""`attention-zoo serve`: TF Serving's REST and gRPC APIs over exports.

    attention-zoo serve translation-spa-eng            # a shipped model
    attention-zoo serve saved_models                   # every model in it
    attention-zoo serve saved_models/my-model --enable_batching
    attention-zoo serve --model_name=m --model_base_path=/models/m --port=8500

The flags are `tensorflow_model_server`'s (`attention_zoo.serving.flags`);
a positional shipped model's name is found as the other commands find it
(`attention_zoo_apps.common.zoo.resolve`); a folder of model folders serves each
by
its folder's name. The server is `attention_zoo.serving`.
"""

from attention_zoo.serving import server
from attention_zoo_apps.common import zoo


def main(argv=None):
    return server.main(argv, resolve=zoo.resolve)
