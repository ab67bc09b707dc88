"""Which of the code's names stands for which of a paper's symbols, by how ML code spells them:
`\\lambda` → `lam`, `\\beta_1` → `beta1`, `\\hat{x}` → `x_hat`, `\\mathbf{W}_Q` → `w_q`; a learned
scale γ and shift β as `weight` and `bias` when nothing is named gamma and beta. No SymPy: linking
an equation to a function asks this of every candidate pair."""

from __future__ import annotations

_GREEK_SPELLINGS = {"lambda": ("lam", "lmbda", "lmb", "lambd"), "epsilon": ("eps",), "varepsilon": ("eps", "epsilon")}
# A learned scale and shift, as deep-learning libraries name them.
_ROLE_SPELLINGS = {"gamma": ("weight", "scale"), "beta": ("bias", "shift")}


def bind(paper_names: set[str], code_names: set[str]) -> dict[str, str] | str:
    """Each paper symbol to one code name; or the reason it cannot be done."""
    by_key: dict[str, list[str]] = {}
    for name in code_names:
        by_key.setdefault(_key(name), []).append(name)
    binding: dict[str, str] = {}
    for name in sorted(paper_names):
        candidates = [c for key in _spellings(name) for c in by_key.get(key, [])]
        if not candidates:
            candidates = [c for role in _ROLE_SPELLINGS.get(_key(name), ()) for c in by_key.get(role, [])]
        if len(set(candidates)) != 1:
            return f"the paper's {name} has {'no' if not candidates else 'more than one'} name in the code"
        binding[name] = candidates[0]
    if len(set(binding.values())) != len(binding):
        return "two of the paper's symbols bind to one name in the code"
    unbound = code_names - set(binding.values())
    if unbound:
        return f"the code uses {', '.join(sorted(unbound))}, which the equation does not name"
    return binding


def _key(name: str) -> str:
    return name.replace("_", "").lower()


def _spellings(name: str) -> list[str]:
    """A paper symbol's keys as code spells it: `lambda_q` → lambdaq, lamq, lmbdaq, ..."""
    keys = [_key(name)]
    head, _, rest = name.partition("_")
    for spelling in _GREEK_SPELLINGS.get(head, ()):
        keys.append(_key(spelling + rest))
    return keys


def linkable(paper_names: set[str], code_names: set[str]) -> bool:
    """Whether a function could compute the equation: each of its names (two at least) stands for a
    different symbol of the equation; the equation may have more (a term the code leaves out)."""
    if len(code_names) < 2:
        return False
    matched: set[str] = set()
    for name in code_names:
        key = _key(name)
        symbols = [s for s in paper_names if key in _spellings(s)] or [s for s in paper_names if key in _ROLE_SPELLINGS.get(_key(s), ())]
        if len(symbols) != 1 or symbols[0] in matched:
            return False
        matched.add(symbols[0])
    return True
