"""Two samplers' agreement in words (:func:`paththeory.experiments.compare.sampler_agreement`; book: the validity
chapter, "How we compare theory and samples"). Formats only."""

from __future__ import annotations

from typing import Callable, Sequence


def agreement_sentence(rows: Sequence[dict], names: tuple[str, str], label: Callable[[dict], str]) -> str:
    """:func:`sampler_agreement` in words: per point (named by ``label(row)``) whether the two samplers (``names``)
    agree: their distance not resolved (within twice the combined Monte Carlo error) and the largest entry-wise
    ``|z|`` within the Sidak threshold, a 5 % family-wise false-alarm rate over the ``k`` entries; where they differ,
    the entry ``U[i, j]`` that differs most, with its family-wise p-value; points whose chains did not both mix are
    named apart."""
    if not rows:
        return f"No point was sampled by both {names[0]} and {names[1]}."
    mixed = [r for r in rows if r["mixed"]]
    agree = [r for r in mixed if r["agree"]]
    differ = [r for r in mixed if not r["agree"]]

    def point(r):
        return (f"{label(r)} (distance {r['distance']:.3f} against {r['noise']:.3f}; max |z| {r['max_z']:.1f} at "
                f"U[{r['entry'][0]}, {r['entry'][1]}] against {r['threshold']:.1f} for {r['k']} entries, "
                f"family-wise p = {r['p_family']:.2g})")

    level = rows[0]["level"]
    text = (f"{names[0]} and {names[1]} agree within their Monte Carlo errors (distance within two errors, every "
            f"entry within the threshold of a {100 * level:g} % family-wise false-alarm rate) at {len(agree)} of the "
            f"{len(mixed)} shared points whose chains mixed"
            + (f": {', '.join(point(r) for r in agree)}" if agree else ""))
    if differ:
        text += f"; they differ at {', '.join(point(r) for r in differ)}"
    unmixed = [r for r in rows if not r["mixed"]]
    if unmixed:
        text += f"; not compared, a chain not mixed: {', '.join(label(r) for r in unmixed)}"
    return text + "."
