"""The framework under the applications: bundles (`bundle.SavedBundle`,
`generating_bundle.GeneratingBundle`), training and run folders,
tokenizers (`wordpiece.SubwordTokenizer`), distribution, precision and the
zoo's lookup by name (`zoo`). It imports `attention_zoo` and itself only.
"""
