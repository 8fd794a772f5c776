"""The flags of a tiny `attention-zoo train APP` run on each
application's generated data (a few seconds to a minute on 2 cores), for
the tests that run the command itself."""

TINY_FLAGS = {
    "translation": ["--synthetic-pairs", "200", "--units", "8",
                    "--embedding-dim", "8", "--vocabulary-size", "60",
                    "--max-length", "12"],
    "entailment": ["--synthetic-examples", "200", "--embedding-dim", "8",
                   "--hidden-units", "8", "--vocabulary-size", "60"],
    "ehr": ["--synthetic-patients", "60", "--embedding-dim", "8",
            "--units", "8"],
    "captioning": ["--synthetic-images", "40", "--image-size", "32",
                   "--embedding-dim", "8", "--units", "8",
                   "--vocabulary-size", "60", "--beam-size", "1"],
}  # fmt: skip
