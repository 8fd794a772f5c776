"""What the applications' commands share: the command-line level, above
the framework (`attention_zoo_apps.common`).

`train_flags` is `attention-zoo train APP`'s: the flags every application
takes, their checks, the run folder's start and `--init-from`.
`infer_flags` is that of the commands that answer from an export
(`attention-zoo translate`, `caption`, `predict`, `explain`): the export
folder argument and `load_export`, which checks the export is the
command's application's. Only these and the commands import the registry
(`attention_zoo_apps.registry`) and `argparse`; the framework raises
`UsageError`s that a command's `main` turns into usage errors.
"""
