"""`AppConfig`: the JSON round trip and checks every application config
shares.

An application's config is a frozen dataclass that subclasses `AppConfig`;
it lists its fields and calls `check_positive_ints`, `check_precision`
(and its own checks) from `__post_init__`.
"""

import dataclasses
import json

from attention_zoo_apps.common import precision


class AppConfig:
    """Mixin for frozen dataclass configs: `replace`, `to_json`,
    `from_json` (unknown keys rejected; missing ones take their default,
    so configs saved before a field existed still load) and checks."""

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_json(self):
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text):
        values = json.loads(text)
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"Unknown {cls.__name__} keys: {unknown}")
        return cls(**values)

    def check_positive_ints(self, names):
        """Each named field is an int (not a bool) of at least 1."""
        for name in names:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(
                    f"`{name}` must be an integer. Received: {name}={value!r}"
                )
            if value < 1:
                raise ValueError(
                    f"`{name}` must be positive. Received: {name}={value!r}"
                )

    def check_precision(self):
        """`precision` is a policy of `attention_zoo_apps.common.precision`."""
        precision.check_precision(self.precision)
