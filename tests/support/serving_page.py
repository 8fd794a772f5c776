"""What the tests run of the serving page (`docs/serving.md`).

Its `curl` examples: `curl_examples()` gives each one's application, its
shell command and the JSON the page shows it answering;
`request_of(command)` the body it sends, `jq_keys(command)` the keys it
keeps and `layout(...)` the shape of a JSON answer (keys, nesting and
value kinds), which the tests compare with the page's (the numbers of a
tiny model differ). `model_config_file()` is the page's model config
file."""

import json
import pathlib
import re

from attention_zoo_apps.captioning.synthetic import make_synthetic_shapes
from tests.support import png_images
from tests.support import tiny_bundles

SERVING_PAGE = (
    pathlib.Path(__file__).resolve().parents[2] / "docs" / "serving.md"
)
# Where the page's examples send their requests.
PAGE_URL = "http://localhost:8501"


def curl_examples():
    """`(application, command, shown)` of each `curl` example in the page's
    "Exports and TF Serving" section and those after it: a shell block
    that runs `curl`, followed by the JSON block of its answer."""
    text = SERVING_PAGE.read_text()
    section = text.split("## Exports and TF Serving", 1)[1]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
    examples = []
    for (kind, command), (next_kind, shown) in zip(blocks, blocks[1:]):
        if kind != "shell" or next_kind != "json" or "curl" not in command:
            continue
        application = re.search(r"/v1/models/(\w+):predict", command)[1]
        examples.append((application, command, json.loads(shown)))
    return examples


def request_of(command):
    """The JSON body `command` sends (the captioning example's image is
    the generated one of `tiny_bundles.png_b64(0)`)."""
    literal = re.search(r"-d '(\{.*?\})'", command, re.S)
    if literal:
        return json.loads(literal[1])
    # The body is printed with the image's base64 in `%s`.
    template = re.search(r"printf '(\{.*?\})'", command, re.S)[1]
    return json.loads(template.replace("%s", tiny_bundles.png_b64(0)))


def jq_keys(command):
    """The keys `command` keeps of each prediction (`jq '.predictions[] |
    {a, b}'`), or None when it prints the whole answer."""
    jq = re.search(r"jq (?:-c )?'\.predictions\[\] \| \{(.*?)\}'", command)
    return [k.strip() for k in jq[1].split(",")] if jq else None


def model_config_file():
    """The text of the page's model config file (`model_config_list`)."""
    text = SERVING_PAGE.read_text()
    return re.search(r"```\n(model_config_list \{.*?)```", text, re.S)[1]


def write_shapes_image(folder):
    """Writes `folder/shapes.png`, the image the captioning example sends,
    made as the page says: `make_synthetic_shapes(3, image_size=32,
    seed=1).images[2]`."""
    image = make_synthetic_shapes(3, image_size=32, seed=1).images[2]
    (pathlib.Path(folder) / "shapes.png").write_bytes(png_images.png(image))


def layout(value):
    """The shape of JSON data: keys, nesting and value kinds."""
    if isinstance(value, dict):
        return {key: layout(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return ["list", layout(value[0]) if value else None]
    if isinstance(value, str):
        return "string"
    return type(value).__name__
