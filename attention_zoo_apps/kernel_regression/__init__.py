"""Nadaraya-Watson kernel regression as attention: the first demo.

Not an application of `attention_zoo_apps.registry`: a demo of one layer with
no bundle, export or inference command (`attention-zoo demo kernel-regression`).
"""

from attention_zoo_apps.kernel_regression.demo import fit_bandwidth
from attention_zoo_apps.kernel_regression.demo import main
from attention_zoo_apps.kernel_regression.demo import (
    make_kernel_regression_data,
)

__all__ = ["fit_bandwidth", "main", "make_kernel_regression_data"]
