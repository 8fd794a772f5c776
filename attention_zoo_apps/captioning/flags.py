"""The flags of `attention-zoo train captioning`: its `parser()`.

Imports no TensorFlow, so that the command checks every flag value, and
answers `--help`, before the training code is imported
(`train_flags.precheck`).
"""

from attention_zoo_apps.captioning import layout
from attention_zoo_apps.captioning.options import ATTENTION_MODES
from attention_zoo_apps.captioning.options import ATTENTIONS
from attention_zoo_apps.captioning.options import HARD_INFERENCES
from attention_zoo_apps.captioning.options import PREDICTIONS
from attention_zoo_apps.captioning.options import QUERIES
from attention_zoo_apps.commands import infer_flags
from attention_zoo_apps.commands import train_flags
from attention_zoo_apps.common.flag_checks import FlagParser

# Config field -> the flags (dests) other than its own name that set it
# (`--init-from` refuses one given with another value than the model's).
FIELD_FLAGS = {
    "attention": ("no_attention",),
    "trainable_encoder": ("fine_tune_encoder", "freeze_encoder"),
}


def train_parser():
    parser = FlagParser(
        prog="attention-zoo train captioning",
        description="Train a show-attend-tell image captioner, evaluate it "
        "and export it.",
    )
    parser.add_argument(
        "--data",
        help="COCO captions JSON or folder, Flickr8k folder or token file; "
        "default: generated images of coloured shapes",
    )
    parser.add_argument("--format", default="auto", choices=layout.FORMATS)
    parser.add_argument(
        "--images", metavar="DIR", help="image folder (default: found)"
    )
    parser.add_argument(
        "--max-images",
        type=int,
        help="read at most N images (with the official Flickr8k lists: N "
        "training images and N/8 each for dev and test)",
    )
    parser.add_argument("--synthetic-images", type=int, default=4000)
    parser.add_argument("--validation-fraction", type=float, default=0.1)
    parser.add_argument(
        "--test-fraction",
        type=float,
        default=0.1,
        help="share of the images held out for testing (not with the "
        "official Flickr8k lists)",
    )
    parser.add_argument(
        "--encoder",
        help="'small_cnn' (default, trained from scratch), "
        "'efficientnet_lite0' or a keras.applications model name, e.g. "
        "ResNet50",
    )
    parser.add_argument(
        "--encoder-weights",
        metavar="imagenet|FILE",
        help="the encoder's pretrained weights: 'imagenet' "
        "(efficientnet_lite0, from the [imagenet] extra) or a weights file "
        "(default: random weights; nothing is downloaded)",
    )
    parser.add_argument(
        "--encoder-stage",
        type=int,
        metavar="N",
        help="efficientnet_lite0: the stage whose output the decoder "
        "attends over (default: the head, 7x7x1280 at 224 px; 5: 14x14x112)",
    )
    trainable = parser.add_mutually_exclusive_group()
    trainable.add_argument(
        "--freeze-encoder",
        action="store_true",
        help="keep the encoder's weights fixed (the default with "
        "--encoder-weights; each image's features are then computed once)",
    )
    trainable.add_argument(
        "--fine-tune-encoder",
        action="store_true",
        help="train pretrained --encoder-weights with the decoder",
    )
    parser.add_argument(
        "--attention",
        default="additive",
        choices=[name for name in ATTENTIONS if name is not None],
    )
    parser.add_argument(
        "--no-attention",
        action="store_true",
        help="train the mean-feature baseline instead",
    )
    parser.add_argument("--attention-regularization", type=float)
    parser.add_argument(
        "--attention-query",
        choices=QUERIES,
        help="what the decoder looks at the image with: the LSTM state "
        "('state', the paper's; default) or the state plus the previous "
        "word ('state_and_word')",
    )
    parser.add_argument(
        "--prediction",
        choices=PREDICTIONS,
        help="how each word is predicted: from the soft context ('deep', "
        "the paper's; the default on real data) or as a mixture over the "
        "positions looked at ('latent': heatmaps that point at what each "
        "word names; the default on the generated shapes)",
    )
    parser.add_argument(
        "--attention-mode",
        choices=ATTENTION_MODES,
        help="'soft' (the weighted mean of the grid; default) or 'hard' "
        "(one cell per word, sampled in training and learned by REINFORCE, "
        "Xu et al. 2015)",
    )
    parser.add_argument(
        "--hard-inference",
        choices=HARD_INFERENCES,
        help="what hard attention reads at inference: the most likely cell "
        "('argmax', default) or the expectation",
    )
    parser.add_argument(
        "--reinforce-weight",
        type=float,
        help="hard attention: lambda_r of the REINFORCE term (default 0.1)",
    )
    parser.add_argument(
        "--entropy-weight",
        type=float,
        help="hard attention: lambda_e of the entropy bonus (default 0.002)",
    )
    parser.add_argument(
        "--semi-sampling",
        type=float,
        help="hard attention: the probability that an image reads the "
        "expectation instead of sampled cells in a training step (Xu et "
        "al.'s semi-sampling, 0.5 in the paper; default 0)",
    )
    parser.add_argument(
        "--image-size",
        type=int,
        help="the side images are resized to (default: 224 with "
        "efficientnet_lite0, 32 for the generated shapes, else 64)",
    )
    parser.add_argument("--embedding-dim", type=int)
    parser.add_argument("--units", type=int)
    parser.add_argument("--vocabulary-size", type=int)
    parser.add_argument("--max-length", type=int)
    parser.add_argument("--dropout", type=float)
    train_flags.add_training_arguments(parser)
    parser.add_argument(
        "--augment",
        action="store_true",
        help="train on random crops and mirror images of the photographs "
        "(not for the generated shapes, whose captions say left and right)",
    )
    parser.add_argument(
        "--beam-size",
        type=int,
        default=3,
        help="beam size for the test captions and the export",
    )
    parser.add_argument(
        "--export-fold-batch-norms",
        action="store_true",
        help="fold each convolution's batch normalization into it in the "
        "export: the image encoder runs faster on CPU (the shipped "
        "captioner: 1.34x at 32 images a call, 1.62x with --jit-compile "
        "on) and rounds differently; listed in metadata.json",
    )
    train_flags.add_run_arguments(
        parser, "captioning", "checkpoints, vocabulary, config, pictures"
    )
    return parser


INFER_PROG = "attention-zoo caption"


def infer_parser():
    """The parser of `attention-zoo caption` (`infer.py`)."""
    prog = INFER_PROG
    parser = infer_flags.export_parser(
        prog,
        "Caption images with a captioning export (`attention-zoo train "
        "captioning --export DIR`). One line per image: path<TAB>caption.",
        [
            f"{prog} captioning-flickr8k photo.jpg --plot attention.png",
            f"{prog} saved_models/captioning dog.jpg cat.png",
            f"{prog} saved_models/captioning dog.jpg --plot attention.png",
        ],
    )
    parser.add_argument("images", nargs="+", help="JPEG / PNG files")
    parser.add_argument(
        "--plot",
        metavar="PNG",
        help="write each image's attention figure (PNG, PNG-2, ...)",
    )
    infer_flags.add_seed_argument(parser, "image")
    return parser
