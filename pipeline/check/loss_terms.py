"""Loss terms the paper adds with no weight, and the weights code puts on them.

"L_REG = L_KL + L_MSE + L_LPIPS + L_GAN" (an equation, or inline math in the method's prose) adds
its terms unweighted: a code `kl_weight = 1e-6` or `discriminator_weight: 0.1` weights one of them,
which the objective as written does not. A term is named by its subscript (`\\mathcal{L}_{\\mathrm{KL}}`
→ kl) and, in code, by the words before `_weight`/`_coef` (or after `lambda_`/`w_`), through the
synonyms of code.yaml `loss_terms` (discriminator → gan, perceptual → lpips). A weight of 1 is the
sum as written; a term the paper gives a coefficient to (`\\lambda L_REPA`) is the symbol's business.
"""

from __future__ import annotations

import re

from ...schemas import Evidence, PaperSpec, ValueSite
from ..code.knowledge import code_vocabulary
from ..extract.parts import method_formulas

# A loss term: \mathcal{L}_{\mathrm{KL}}, \mathcal{L}_\text{GAN}, \mathcal L_{rec}, L_{KL}.
_TERM_RE = re.compile(
    r"(?:\\mathcal\s*\{?\s*L\s*\}?|(?<![\\\w])L)\s*_\s*(?:\{\s*)?(?:\\(?:mathrm|text|textrm|rm|operatorname)\s*)?\{?\s*(?P<name>[A-Za-z][A-Za-z0-9]*)"
)
# The loss terms that are distances between a prediction and its target: one is chosen for the other.
DISTANCES = frozenset({"mse", "l1", "huber"})
# A setting choosing the reconstruction's distance: `reconstruction_loss`, `rec_loss`, `loss_type`,
# `criterion` (not `perceptual_loss` or `disc_loss`: other terms).
_CHOICE_NAME_RE = re.compile(r"^(?:(?:rec|recon|reconstruction|pixel|pix)_?(?:loss|criterion)(?:_type|_fn)?|loss_?(?:type|fn)|criterion|loss)$")
# What may stand right before an unweighted term: the sum's start, a sign, an opening bracket.
_UNWEIGHTED_BEFORE_RE = re.compile(r"(?:^|[=+\-(]|\\left\s*\(|\\Big\s*\(|\\big\s*\()\s*$")
_WEIGHT_NAME_RE = re.compile(
    r"^(?:(?:lambda|lam|w|weight|coef|coeff)_(?P<after>[a-z0-9]+)|(?P<before>[a-z0-9]+?)(?:_loss)?_(?:weight|w|coef|coeff|lambda|scale))$"
)


def unweighted_terms(spec: PaperSpec) -> dict[str, Evidence]:
    """The method's loss terms a sum adds with no weight (folded name → the formula's evidence);
    none that the paper also gives a weight somewhere (`\\lambda_{KL} L_{KL}`)."""
    terms = _objective_terms(spec)
    weighted = {name for name, is_weighted, _ in terms if is_weighted}
    unweighted: dict[str, Evidence] = {}
    for name, is_weighted, evidence in terms:
        if not is_weighted and name not in weighted:
            unweighted.setdefault(name, evidence)
    return unweighted


def distance_terms(spec: PaperSpec) -> dict[str, Evidence]:
    """The distances (MSE, L1, Huber) the method's objective sums, each with its formula."""
    found: dict[str, Evidence] = {}
    for name, _, evidence in _objective_terms(spec):
        if name in DISTANCES:
            found.setdefault(name, evidence)
    return found


def _objective_terms(spec: PaperSpec) -> list[tuple[str, bool, Evidence]]:
    """Each loss term a sum of the method adds (its folded name, whether a weight stands before it,
    the formula), from its equations and the inline math of its prose."""
    terms = []
    for latex, location in method_formulas(spec):
        if "+" not in latex:
            continue
        equals = latex.find("=")
        for term in _TERM_RE.finditer(latex):
            if term.start() < equals:
                continue  # the sum's own name (L_REG = ...)
            name = code_vocabulary().loss_terms.get(term["name"].lower(), term["name"].lower())  # L_adv is L_GAN
            weighted = not _UNWEIGHTED_BEFORE_RE.search(latex[: term.start()])
            terms.append((name, weighted, Evidence(quote=" ".join(latex.split()), location=location)))
    return terms


# An expectation over the diffusion time: `\mathbb{E}_{t, x_0}`, `\mathbb{E}_{q(x_t|x)}[\|\epsilon - \epsilon_\theta(x_t, t)\|]`.
_EXPECTATION_RE = re.compile(r"\\mathbb\s*\{?\s*E\b")
_TIME_RE = re.compile(r"(?<![A-Za-z\\])t(?![A-Za-z])")


def objective_over_time(spec: PaperSpec) -> Evidence | None:
    """The method's first formula taking an expectation over the diffusion time t: the objective a
    training step estimates by drawing t from the whole schedule."""
    for latex, location in method_formulas(spec):
        if _EXPECTATION_RE.search(latex) and _TIME_RE.search(latex):
            return Evidence(quote=" ".join(latex.split()), location=location)
    return None


def chosen_distance(site: ValueSite) -> str | None:
    """The distance a loss setting chooses (`reconstruction_loss: "l1"` → l1), if it chooses one."""
    if not isinstance(site.value, str) or not _CHOICE_NAME_RE.match(site.name.rsplit(".", 1)[-1].lower()):
        return None
    word = re.sub(r"[^a-z0-9]", "", site.value.lower()).removesuffix("loss")
    name = code_vocabulary().loss_terms.get(word, word)
    return name if name in DISTANCES else None


def weighted_term(site: ValueSite) -> str | None:
    """The loss term a code weight names (`kl_weight` → kl, `discriminator_weight` → gan), if any."""
    found = _WEIGHT_NAME_RE.match(site.name.rsplit(".", 1)[-1].lstrip("-").replace("-", "_").lower())
    if found is None:
        return None
    word = found["after"] or found["before"]
    return code_vocabulary().loss_terms.get(word, word)
