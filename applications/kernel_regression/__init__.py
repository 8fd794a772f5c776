"""Nadaraya-Watson kernel regression as attention: the first demo.

Not an application of `applications.registry`: a demo of one layer with
no bundle, export or inference command (`attention-zoo demo kernel-regression`).
"""

from applications.kernel_regression.demo import fit_bandwidth
from applications.kernel_regression.demo import main
from applications.kernel_regression.demo import make_kernel_regression_data

__all__ = ["fit_bandwidth", "main", "make_kernel_regression_data"]
