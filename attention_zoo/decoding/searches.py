"""A search is one object: `Greedy()`, `BeamSearch(...)` or `Sampling(...)`.

As keras-hub's samplers (one small class per strategy, `get("top_k")`)
and OpenNMT-tf's `BeamSearch` and `Sampler`, each search holds its own
options, checked when it is made (a `ValueError` naming the argument and
the value). `decode`, `Translator.translate`, `Captioner.caption` and the
exports take one as `search=` (an instance, a name of `SHORTCUTS`, or
the dict of `serialize`); their loose keyword arguments (`beam_size`,
`length_penalty`, `coverage_penalty`, `num_results`, `sampling`,
`temperature`, `top_k`, `top_p`) still work, as aliases that
`SearchDefaults.resolve` turns into the same search. The sampling seed is
not part of a search: it is data of each call (`seed=`), and a new one
compiles nothing.
"""

import dataclasses

from attention_zoo.checks import check_choice
from attention_zoo.checks import check_non_negative
from attention_zoo.checks import check_positive_int
from attention_zoo.decoding.sampling import SAMPLING
from attention_zoo.decoding.sampling import check_sampling

# The loose keyword arguments and their defaults, in `metadata.json`'s
# order (an export records its search as these, see `SearchDefaults`).
LOOSE_DEFAULTS = {
    "beam_size": 1,
    "length_penalty": 0.0,
    "coverage_penalty": 0.0,
    "num_results": 1,
    "sampling": None,
    "temperature": 1.0,
    "top_k": None,
    "top_p": None,
}
SAMPLING_OPTIONS = ("sampling", "temperature", "top_k", "top_p")


def check_beams(beam_size, length_penalty, coverage_penalty, num_results):
    """A beam search's options (a `ValueError` naming the argument)."""
    check_positive_int("beam_size", beam_size)
    check_non_negative("length_penalty", length_penalty)
    check_non_negative("coverage_penalty", coverage_penalty)
    check_positive_int("num_results", num_results)
    if num_results > beam_size:
        raise ValueError(
            "`num_results` must be at most `beam_size`: the search keeps "
            f"`beam_size` hypotheses. Received: num_results={num_results}, "
            f"beam_size={beam_size}"
        )


@dataclasses.dataclass(frozen=True)
class Greedy:
    """Greedy search: the likeliest token at every step."""

    beam_size = 1
    num_results = 1

    def options(self):
        """The loose keyword arguments this search sets."""
        return {"beam_size": 1}

    def canonical(self):
        """The search as the driver compiles it (see `BeamSearch`)."""
        return self


@dataclasses.dataclass(frozen=True)
class BeamSearch:
    """Beam search ranked by GNMT's length and coverage penalties.

    Args:
        beam_size: int >= 1 (1 is greedy search). Defaults to `4`.
        length_penalty: float >= 0, GNMT's `alpha`, or `None`: the
            caller's default (0.6 for `translate`, 0 elsewhere).
        coverage_penalty: float >= 0, GNMT's `beta`. Defaults to `0.0`.
        num_results: int in `[1, beam_size]`, the best beams returned.
    """

    beam_size: int = 4
    length_penalty: float = None
    coverage_penalty: float = 0.0
    num_results: int = 1

    def __post_init__(self):
        check_beams(
            self.beam_size,
            0.0 if self.length_penalty is None else self.length_penalty,
            self.coverage_penalty,
            self.num_results,
        )

    def options(self):
        return {
            "beam_size": self.beam_size,
            "length_penalty": self.length_penalty,
            "coverage_penalty": self.coverage_penalty,
            "num_results": self.num_results,
        }

    def canonical(self):
        """The search as the driver compiles it, the key of its cache:
        searches that compile alike are equal (a beam of 1 is `Greedy()`;
        `num_results` only picks from the beams)."""
        if self.beam_size == 1:
            return Greedy()
        return BeamSearch(
            self.beam_size,
            float(self.length_penalty or 0.0),
            float(self.coverage_penalty),
        )


@dataclasses.dataclass(frozen=True)
class Sampling:
    """Draws each token (one hypothesis per input; see `sample_search`).

    Args:
        strategy: `"temperature"` (the whole vocabulary), `"top_k"`,
            `"top_p"` or `"greedy"` (the argmax). Defaults to
            `"temperature"`.
        temperature: float >= 0, 0 is the argmax. Defaults to `1.0`.
        top_k: int >= 1, with `strategy="top_k"` only.
        top_p: float in `(0, 1]`, with `strategy="top_p"` only.
    """

    strategy: str = "temperature"
    temperature: float = 1.0
    top_k: int = None
    top_p: float = None

    beam_size = 1
    num_results = 1

    def __post_init__(self):
        check_choice("strategy", self.strategy, SAMPLING)
        check_sampling(
            self.strategy, self.temperature, self.top_k, self.top_p, "strategy"
        )

    def options(self):
        return {
            "beam_size": 1,
            "sampling": self.strategy,
            "temperature": self.temperature,
            "top_k": self.top_k,
            "top_p": self.top_p,
        }

    def canonical(self):
        """The search as the driver compiles it: `"greedy"` and
        temperature 0 are `Greedy()`."""
        if self.strategy == "greedy" or self.temperature == 0:
            return Greedy()
        return Sampling(
            self.strategy, float(self.temperature), self.top_k, self.top_p
        )


SEARCHES = (Greedy, BeamSearch, Sampling)
# `get`'s names.
SHORTCUTS = {
    "greedy": Greedy(),
    "beam": BeamSearch(),
    "beam_search": BeamSearch(),
    "sample": Sampling(),
    "sampling": Sampling(),
    "temperature": Sampling(),
    "top_k": Sampling("top_k", top_k=50),
    "top_p": Sampling("top_p", top_p=0.9),
}


def get(identifier):
    """The search `identifier` names: a `Greedy`, `BeamSearch` or
    `Sampling` (returned as is), a name of `SHORTCUTS` (`"beam"` is
    `BeamSearch()`, `"top_k"` samples among the 50 likeliest tokens,
    `"top_p"` from the nucleus of 0.9), a dict of `serialize`, or `None`
    (returned as is: the caller's default)."""
    if identifier is None or isinstance(identifier, SEARCHES):
        return identifier
    if isinstance(identifier, str) and identifier in SHORTCUTS:
        return SHORTCUTS[identifier]
    if isinstance(identifier, dict):
        classes = {cls.__name__: cls for cls in SEARCHES}
        cls = classes.get(identifier.get("class_name"))
        if cls is not None:
            return cls(**identifier.get("config", {}))
    raise ValueError(
        "`search` must be a Greedy, BeamSearch or Sampling, one of "
        f"{tuple(SHORTCUTS)}, or None. Received: search={identifier!r}"
    )


def serialize(search):
    """`search` as JSON data, which `get` reads back."""
    return {
        "class_name": type(search).__name__,
        "config": dataclasses.asdict(search),
    }


@dataclasses.dataclass(frozen=True)
class SearchDefaults:
    """A caller's default search, and the one place that reads the loose
    keyword arguments.

    Args:
        search: the search when none is given. Defaults to `Greedy()`.
        length_penalty: the `length_penalty` of a beam search that leaves
            it `None`, and of the loose arguments. Defaults to `0.0`.
    """

    search: object = Greedy()
    length_penalty: float = 0.0

    def resolve(
        self,
        search=None,
        beam_size=None,
        length_penalty=None,
        coverage_penalty=None,
        num_results=None,
        **sampling,
    ):
        """The search to run: `search` (anything `get` takes) or, instead,
        its loose keyword arguments (`None`: not given): `beam_size`,
        `length_penalty`, `coverage_penalty`, `num_results` (in the
        exports' positional order) and `sampling`'s (`SAMPLING_OPTIONS`);
        or the default.

        Raises:
            ValueError: both `search` and loose options are given, or an
                option is invalid (naming it).
            TypeError: an option that is not a search's.
        """
        unknown = sorted(set(sampling) - set(SAMPLING_OPTIONS))
        if unknown:
            raise TypeError(
                f"Unknown search option {unknown[0]!r}; the options are "
                f"{tuple(LOOSE_DEFAULTS)}, or `search`."
            )
        options = dict(
            beam_size=beam_size,
            length_penalty=length_penalty,
            coverage_penalty=coverage_penalty,
            num_results=num_results,
            **sampling,
        )
        given = {k: v for k, v in options.items() if v is not None}
        if search is not None and given:
            loose = ", ".join(f"{k}={v!r}" for k, v in given.items())
            raise ValueError(
                "Give the search as `search` or as its options, not both. "
                f"Received: search={search!r}, {loose}"
            )
        if given:
            search = self._from_options(given)
        search = get(search) or self.search
        if isinstance(search, BeamSearch) and search.length_penalty is None:
            search = dataclasses.replace(
                search, length_penalty=self.length_penalty
            )
        return search

    def options(self, search):
        """All the loose keyword arguments of `search` (a resolved one),
        as the exports' `metadata.json` records them."""
        return {
            **LOOSE_DEFAULTS,
            "length_penalty": self.length_penalty,
            **search.options(),
        }

    def _from_options(self, given):
        """The search the loose options `given` describe, checked in the
        order `decode` always checked them."""
        sampling = given.get("sampling")
        default_beam = 1 if sampling is not None else self.search.beam_size
        beams = {
            "beam_size": given.get("beam_size", default_beam),
            "length_penalty": given.get("length_penalty", self.length_penalty),
            "coverage_penalty": given.get("coverage_penalty", 0.0),
            "num_results": given.get("num_results", 1),
        }
        check_beams(**beams)
        drawn = [given.get(k, LOOSE_DEFAULTS[k]) for k in SAMPLING_OPTIONS]
        check_sampling(*drawn)
        if sampling is not None:
            if beams["beam_size"] > 1:
                raise ValueError(
                    "`sampling` draws one hypothesis per input: it needs "
                    f"`beam_size=1`. Received: sampling={sampling!r}, "
                    f"beam_size={beams['beam_size']}"
                )
            return Sampling(*drawn)
        if beams["beam_size"] == 1 and not given.keys() & set(beams) - {
            "beam_size"
        }:
            return Greedy()
        return BeamSearch(**beams)


# `decode`'s: greedy search, and 0 for a beam's length penalty.
DEFAULTS = SearchDefaults()
