"""`ServedModel`: a model's versions, loaded, polled and swapped.

A model is a base path holding numbered version folders (TF Serving's
layout). `poll()` lists them and brings the loaded set to what the
version policy asks for (TF Serving's `latest` N, by default 1; `all`;
`specific` versions):

- a new version is loaded, its warm-up requests
  (`assets.extra/tf_serving_warmup_requests`) replayed, and only then
  made `AVAILABLE` and served; the version it replaces keeps answering
  until then, and requests already running on it finish (it is dropped
  only from the table new requests look in). No request is refused
  during the swap.
- a version folder that fails to load or to warm up is reported (its
  status is `END` with the error) and left out of the policy, so the
  previous version keeps serving. It is tried again once its folder
  changes (an export rewritten in place).
- `get(version=None, label=None)` is the servable a request names: the
  newest available, a version by number or by label.

`model_folders(path)` tells a folder of models (a model repository, such
as `saved_models/`) from a model's base path.
"""

import logging
import os
import threading

from attention_zoo.serving.status import ServingError

logger = logging.getLogger("attention_zoo.serving")

# TF Serving's `ModelVersionStatus.State` names.
START, LOADING, AVAILABLE, UNLOADING, END = (
    "START",
    "LOADING",
    "AVAILABLE",
    "UNLOADING",
    "END",
)


def version_folders(path):
    """The names of the numbered version folders in `path` (none when it
    does not list)."""
    try:
        names = os.listdir(path)
    except OSError:
        return []
    return [
        name
        for name in names
        if name.isdigit() and os.path.isdir(os.path.join(path, name))
    ]


def model_folders(path):
    """The subfolders of a model repository that hold numbered versions,
    sorted; none when `path` holds versions itself (a model's base path)
    or no such subfolder."""
    if version_folders(path):
        return ()
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return ()
    return tuple(
        name
        for name in names
        if not name.startswith(".")
        and version_folders(os.path.join(path, name))
    )


class VersionStatus:
    """One version's state and error (TF Serving's `ModelVersionStatus`)."""

    def __init__(self, version, state, error_code="OK", error_message=""):
        self.version = version
        self.state = state
        self.error_code = error_code
        self.error_message = error_message


class ServedModel:
    """The versions of one model that the server answers with.

    Args:
        config: a `ModelConfig` (`name`, `base_path`, `version_policy`,
            `version_labels`).
        load: callable `(name, version, path)` -> a `Servable`, loaded
            and warmed up (raises if the folder does not load).
    """

    def __init__(self, config, load):
        self.name = config.name
        self.base_path = config.base_path
        self._policy = config.version_policy
        self._labels = dict(config.version_labels)
        self._load = load
        self._servables = {}  # version -> Servable, the available ones
        self._statuses = {}  # version -> VersionStatus
        self._failed = {}  # version -> the folder's stamp when it failed
        self._lock = threading.Lock()  # guards the three dicts
        self._polling = threading.Lock()  # one poll at a time

    def poll(self):
        """Loads the versions the policy wants and unloads the others."""
        with self._polling:
            found = self._versions_on_disk()
            for version, stamp in list(self._failed.items()):
                if found.get(version) != stamp:  # rewritten or removed
                    del self._failed[version]
            wanted = self._wanted(
                sorted(v for v in found if v not in self._failed)
            )
            for version in sorted(set(wanted) - set(self._servables)):
                self._load_version(version, found[version])
            with self._lock:
                if any(v in self._servables for v in wanted):
                    gone = [v for v in self._servables if v not in wanted]
                else:  # keep serving rather than serve nothing
                    gone = []
                dropped = [self._servables.pop(v) for v in gone]
                for version in gone:
                    self._statuses[version] = VersionStatus(version, END)
            for servable in dropped:
                logger.info(
                    "Unloaded %s version %d", self.name, servable.version
                )
                servable.close()

    def _versions_on_disk(self):
        """Numbered version folders -> a stamp that changes when the
        folder is rewritten."""
        return {
            int(name): _stamp(os.path.join(self.base_path, name))
            for name in version_folders(self.base_path)
        }

    def _wanted(self, versions):
        kind = self._policy[0]
        if kind == "all":
            return versions
        if kind == "specific":
            return [v for v in versions if v in set(self._policy[1])]
        return versions[-self._policy[1] :] if versions else []

    def _load_version(self, version, stamp):
        path = os.path.join(self.base_path, str(version))
        with self._lock:
            self._statuses[version] = VersionStatus(version, LOADING)
        logger.info("Loading %s version %d from %s", self.name, version, path)
        try:
            servable = self._load(self.name, version, path)
        except Exception as error:  # any failure leaves the old version
            message = f"{type(error).__name__}: {error}".strip()
            logger.error(
                "%s version %d failed to load (%s); the versions loaded "
                "before keep serving",
                self.name,
                version,
                message,
            )
            self._failed[version] = stamp
            with self._lock:
                self._statuses[version] = VersionStatus(
                    version, END, "UNKNOWN", message
                )
            return
        with self._lock:
            self._servables[version] = servable
            self._statuses[version] = VersionStatus(version, AVAILABLE)
        logger.info("%s version %d is AVAILABLE", self.name, version)

    def get(self, version=None, label=None):
        """The servable a request names (the newest by default).

        Raises:
            ServingError: NOT_FOUND, no such version available (TF
                Serving's message).
        """
        with self._lock:
            if label is not None:
                if label not in self._labels:
                    raise ServingError(
                        "INVALID_ARGUMENT",
                        f"Unrecognized servable version label: {label}",
                    )
                version = self._labels[label]
            if version is None:
                if self._servables:
                    return self._servables[max(self._servables)]
                request = f"Latest({self.name})"
            else:
                if version in self._servables:
                    return self._servables[version]
                request = f"Specific({self.name}, {version})"
        raise ServingError(
            "NOT_FOUND", f"Servable not found for request: {request}"
        )

    def statuses(self, version=None):
        """`VersionStatus` of every version known (or of one), newest first.

        Raises:
            ServingError: NOT_FOUND, no version known (TF Serving's
                message).
        """
        with self._lock:
            statuses = dict(self._statuses)
        if version is not None:
            if version not in statuses:
                raise ServingError(
                    "NOT_FOUND",
                    f"Could not find version {version} of model {self.name}",
                )
            return [statuses[version]]
        if not statuses:
            raise ServingError(
                "NOT_FOUND",
                f"Could not find any versions of model {self.name}",
            )
        return [statuses[v] for v in sorted(statuses, reverse=True)]

    def close(self):
        with self._lock:
            servables, self._servables = list(self._servables.values()), {}
        for servable in servables:
            servable.close()


def _stamp(path):
    """When the folder, its `saved_model.pb` or its variables last changed
    (a folder copied in place, not renamed in, is tried again once the
    copy has moved on)."""
    stamps = []
    for target in (
        path,
        os.path.join(path, "saved_model.pb"),
        os.path.join(path, "variables"),
        os.path.join(path, "variables", "variables.index"),
    ):
        try:
            stamps.append(os.stat(target).st_mtime_ns)
        except OSError:
            stamps.append(None)
    return tuple(stamps)
