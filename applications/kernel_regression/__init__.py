"""Nadaraya-Watson kernel regression as attention: the first demo."""

from applications.kernel_regression.demo import fit_bandwidth
from applications.kernel_regression.demo import main
from applications.kernel_regression.demo import make_kernel_regression_data

__all__ = ["fit_bandwidth", "main", "make_kernel_regression_data"]
