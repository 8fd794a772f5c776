"""What the tests share; test files import from here, never from each other.

- caption_files: the captioning loader tests' files and error patterns.
- causal_reference: input gradients, seen steps, a NumPy causal conv1d.
- data_parallel_fits: one-device and DataParallel fits (a JAX subprocess).
- decoding_reference: a fake decoder and NumPy greedy/beam/sampling searches.
- distributed_runs: tiny tf.distribute runs in a subprocess (`python -m`).
- ehr_inputs: the EHR export's serving inputs, and the risks it serves.
- fresh_process: run a script in a Python that cannot import Keras or us.
- jax_runs: the JAX-only skip; a CLI run interrupted, resumed, exported.
- layer_checks: the layer-test harness (`run_layer_test`, `jit`, ...).
- png_images: PNG bytes of float images, and the pixels an export decodes.
- resume_checks: the interrupted-and-resumed `fit` and CLI checks.
- scaling_models: tiny SavedModels `y = factor * x` (versions and faults).
- shared_bundles: bundles trained once per session, read by several files.
- shared_folders: folders built once per session for every xdist worker.
- stand_in_server: the REST and gRPC APIs in process, over a stand-in.
- tiny_bundles: tiny trained bundles per application, and example inputs.
- tiny_runs: tiny `attention-zoo train APP` runs: flags, shared finished runs.
- torch_files: `torch.save` files written without PyTorch.
- toy_adapter: the toy `DecodingAdapter` of the `decode` tests.
- toy_bundle: `ToyBundle`, the part of a bundle `save_export` uses.
- training_logs: a run folder's history.csv and TensorBoard logs, read back.
- transformer_reference: NumPy Transformer block parts, MultiHead options.
"""
