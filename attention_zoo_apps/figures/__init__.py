"""`attention-zoo figures`: the textbook's attention figures (15.15 to
15.22) and the lecture notes' multi-head pictures, remade with this
library and the shipped models (see `attention_zoo_apps.figures.run`).

Not an application of `attention_zoo_apps.registry`: a command with no bundle,
export or inference command, which reaches the applications through the
registry. One module per kind of figure: `convolution` (15.15),
`mechanics` (15.16, positions), `heads`, `regression` (15.17), `shipped`
(15.19, 15.21, 15.22), `records` (15.20); `gallery` writes `index.md`.
"""
