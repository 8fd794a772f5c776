"""PPMI word vectors from the unlabeled English text in ../shared/data.

    python -m experiments.caption_text_vectors --out /tmp/caption_ppmi.txt
    python -m experiments.entailment_accuracy --datasets snli \\
        --word-vectors /tmp/caption_ppmi.txt

No pretrained word vectors can be downloaded here, so the entailment
benchmark can start its embeddings from count-based vectors
(`attention_zoo_apps.common.ppmi_vectors`) learned from text that carries no
entailment labels: the Flickr8k captions (40k, the same image-description
domain as SNLI's premises), the COCO val2017 captions (25k), the English
side of the Tatoeba pairs (119k) and the premises and hypotheses of the
SNLI training part (SNLI dev less the validation tenth the benchmark holds
out). Sentences that occur verbatim in SNLI test, SNLI dev's held-out
validation part or SICK are dropped, and the count of dropped sentences is
printed, so no evaluation sentence shapes the vectors.
"""

import argparse
import gzip
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from attention_zoo_apps.common.ppmi_vectors import save_word_vectors  # noqa: E402
from attention_zoo_apps.common.ppmi_vectors import train_ppmi_vectors  # noqa: E402
from attention_zoo_apps.entailment import data  # noqa: E402
from experiments import SHARED_DATA as SHARED  # noqa: E402


def _key(text):
    return " ".join(text.lower().split())


def unlabeled_sentences():
    """`(name, sentences)` for each source of unlabeled English text."""
    flickr = os.path.join(SHARED, "flickr8k", "text", "Flickr8k.token.txt.gz")
    with gzip.open(flickr, "rt", encoding="utf-8") as f:
        yield "flickr8k captions", [line.partition("\t")[2] for line in f]
    coco = os.path.join(
        SHARED, "coco-mini", "annotations", "captions_val2017_full5k.json.gz"
    )
    with gzip.open(coco, "rt", encoding="utf-8") as f:
        annotations = json.load(f)["annotations"]
    yield "coco captions", [a["caption"] for a in annotations]
    tatoeba = os.path.join(SHARED, "spa-eng", "spa.txt.gz")
    with gzip.open(tatoeba, "rt", encoding="utf-8") as f:
        yield "tatoeba english", [line.split("\t")[0] for line in f]
    folder = os.path.join(SHARED, "snli", "esnli_infersent_format")
    train, _ = data.split_examples(
        data.load_snli_split(folder, "dev"), 0.1, seed=0
    )
    yield "snli train part", list(train.premises) + list(train.hypotheses)


def evaluation_sentences():
    """Every sentence the benchmark validates or tests on."""
    folder = os.path.join(SHARED, "snli", "esnli_infersent_format")
    _, validation = data.split_examples(
        data.load_snli_split(folder, "dev"), 0.1, seed=0
    )
    sets = [validation, data.load_snli_split(folder, "test")]
    sick = os.path.join(SHARED, "sick", "SICK.txt.gz")
    sets += [data.load_sick(sick, split) for split in ("trial", "test")]
    keys = set()
    for examples in sets:
        keys.update(_key(t) for t in examples.premises)
        keys.update(_key(t) for t in examples.hypotheses)
    return keys


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="GloVe-format file")
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--min-count", type=int, default=3)
    args = parser.parse_args(argv)

    held_out = evaluation_sentences()
    texts = []
    for name, sentences in unlabeled_sentences():
        kept = [s for s in sentences if s.strip() and _key(s) not in held_out]
        print(
            f"{name}: {len(kept):,} sentences "
            f"({len(sentences) - len(kept):,} dropped: evaluation or empty)",
            flush=True,
        )
        texts += kept
    start = time.perf_counter()
    words, matrix = train_ppmi_vectors(
        texts, dim=args.dim, window=args.window, min_count=args.min_count
    )
    save_word_vectors(args.out, words, matrix)
    print(
        f"{len(words):,} words x {args.dim} from {len(texts):,} sentences "
        f"in {time.perf_counter() - start:.0f} s -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
