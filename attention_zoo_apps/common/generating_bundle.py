"""`GeneratingBundle`: a bundle whose model generates tokens with a search."""

import dataclasses

from attention_zoo import decoding
from attention_zoo.export import read_metadata
from attention_zoo.export import resolve_version
from attention_zoo_apps.common.bundle import SavedBundle
from attention_zoo_apps.common.token_ids import END_ID
from attention_zoo_apps.common.token_ids import START_ID


class GeneratingBundle(SavedBundle):
    """A `SavedBundle` that decodes: the translator and the captioner.

    A subclass writes `make_adapter` (its model's
    `attention_zoo.decoding.DecodingAdapter`) and sets `search_defaults`
    (an `attention_zoo.decoding.searches.SearchDefaults`: its default
    search and how its loose decoding options read); its `decode` calls
    `search_decode`.
    """

    search_defaults = None

    @classmethod
    def from_export(cls, directory, strategy=None):
        """`SavedBundle.from_export`, decoding as the export serves: where
        its `metadata.json` records a beam search under `decoding` (e.g.
        the one `train translation --choose-search` picked on
        validation), that beam is the bundle's default search. A greedy,
        sampling or N-best export leaves the bundle's own default."""
        bundle = super().from_export(directory, strategy)
        recorded = read_metadata(resolve_version(directory)).get("decoding")
        bundle.search_defaults = exported_defaults(
            bundle.search_defaults, recorded
        )
        return bundle

    def make_adapter(self):
        """The model's `attention_zoo.decoding.DecodingAdapter`."""
        raise NotImplementedError(
            f"{type(self).__name__} must write `make_adapter`."
        )

    @property
    def adapter(self):
        """`make_adapter()`, made once per model and kept until
        `clear_compiled`: it caches the compiled searches."""
        self.require_model()
        if self._adapter is None or self._adapter.model is not self.model:
            self._adapter = self.make_adapter()
        return self._adapter

    def search_decode(
        self, inputs, max_length, jit_compile, search, seed, **options
    ):
        """The body of a generating bundle's `decode`: `decoding.decode`
        of `inputs` over `adapter`, from START to END in `max_length`
        steps, with `search` or its loose `options` (resolved by the
        bundle's `search_defaults`, an
        `attention_zoo.decoding.searches.SearchDefaults`)."""
        return decoding.decode(
            self.adapter,
            inputs,
            self.search_defaults.resolve(search, **options),
            start_id=START_ID,
            end_id=END_ID,
            max_length=max_length,
            seed=seed,
            jit_compile=jit_compile,
        )

    def export(
        self,
        path,
        beam_size=None,
        length_penalty=None,
        coverage_penalty=None,
        num_results=None,
        *,
        search=None,
        jit_compile=None,
        metrics=None,
        data_fingerprint=None,
        precision="float32",
        fold_batch_norms=False,
        **sampling,
    ):
        """`SavedBundle.export` with the search its `serving_module`
        compiles: `search` as the bundle's `decode` takes it (e.g.
        `BeamSearch(beam_size=4)`), or its loose keyword arguments
        `beam_size`, `length_penalty`, `coverage_penalty`, `num_results`
        and `sampling` (`sampling`, `temperature`, `top_k`, `top_p`), read
        by `search_defaults`. With `num_results = N > 1` the export also
        returns the `N` best with their scores; a sampling search adds the
        `seeded` signature (see `attention_zoo_apps.common.search_serving`).
        `metadata.json` records the search under `decoding`; `precision` and
        `fold_batch_norms` are `write_export`'s."""
        search = self.search_defaults.resolve(
            search,
            beam_size,
            length_penalty,
            coverage_penalty,
            num_results,
            **sampling,
        )
        return self.write_export(
            self.serving_module,
            path,
            jit_compile,
            metrics,
            data_fingerprint,
            precision=precision,
            fold_batch_norms=fold_batch_norms,
            search=search,
        )


# The recorded options of a beam search (`SearchDefaults.options`).
BEAM_OPTIONS = ("beam_size", "length_penalty", "coverage_penalty")


def exported_defaults(defaults, recorded):
    """`defaults` (a `SearchDefaults`) whose default search is the beam
    search of an export's recorded `decoding` options, or `defaults` as
    they are where `recorded` is empty, or not a beam of one result."""
    recorded = recorded or {}
    if (
        recorded.get("beam_size", 1) <= 1
        or recorded.get("sampling") is not None
        or recorded.get("num_results", 1) != 1
    ):
        return defaults
    given = {
        k: recorded[k] for k in BEAM_OPTIONS if recorded.get(k) is not None
    }
    return dataclasses.replace(defaults, search=defaults.resolve(**given))
