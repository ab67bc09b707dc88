"""Which of the code's names stands for which of a paper's symbols, by how ML code spells them:
`\\lambda` → `lam`, `\\beta_1` → `beta1`, `\\hat{x}` → `x_hat`, `\\mathbf{W}_Q` → `w_q`; a learned
scale γ and shift β as `weight` and `bias` when nothing is named gamma and beta. No SymPy: linking
an equation to a function asks this of every candidate pair."""

from __future__ import annotations

from collections.abc import Mapping

_GREEK_SPELLINGS = {"lambda": ("lam", "lmbda", "lmb", "lambd"), "epsilon": ("eps",), "varepsilon": ("eps", "epsilon")}
# A learned scale and shift, as deep-learning libraries name them.
_ROLE_SPELLINGS = {"gamma": ("weight", "scale"), "beta": ("bias", "shift")}
# Letters papers index elements by: `\\alpha_i`, `\\delta_{k,m}` is one of many.
_INDICES = frozenset("i j k l m n".split())


def bind(paper_names: set[str], code_names: set[str], given: Mapping[str, str] | None = None) -> dict[str, str] | str:
    """Each paper symbol to one code name; or the reason it cannot be done. `given`: pairs the team
    set in the decisions file, taken first; the rest by spelling."""
    binding = _given(paper_names, code_names, given)
    candidates = _candidates(paper_names - binding.keys(), code_names - set(binding.values()))
    for name in sorted(paper_names - binding.keys()):
        if len(candidates[name]) != 1:
            return f"the paper's {name} has {'no' if not candidates[name] else 'more than one'} name in the code"
        binding[name] = candidates[name][0]
    if len(set(binding.values())) != len(binding):
        return "two of the paper's symbols bind to one name in the code"
    unbound = code_names - set(binding.values())
    if unbound:
        return f"the code uses {', '.join(sorted(unbound))}, which the equation does not name"
    return binding


def binding_template(paper_names: set[str], code_names: set[str], given: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each paper symbol to the one code name that may stand for it (the team's pair first), or to ""
    where there is none or more than one: what the team completes when `bind` gives a reason."""
    fixed = _given(paper_names, code_names, given)
    candidates = _candidates(paper_names - fixed.keys(), code_names - set(fixed.values()))
    return {name: fixed.get(name) or (candidates[name][0] if len(candidates[name]) == 1 else "") for name in sorted(paper_names)}


def linkable(paper_names: set[str], code_names: set[str], given: Mapping[str, str] | None = None) -> bool:
    """Whether a function could compute the equation: each of its names (two at least) stands for a
    different symbol of the equation; the equation may have more (a term the code leaves out)."""
    if len(code_names) < 2:
        return False
    fixed = _given(paper_names, code_names, given)
    paper_names, code_names = paper_names - fixed.keys(), code_names - set(fixed.values())
    symbols_of: dict[str, list[str]] = {name: [] for name in code_names}
    for symbol, names in _candidates(paper_names, code_names).items():
        for name in names:
            symbols_of[name].append(symbol)
    return all(len(symbols) == 1 for symbols in symbols_of.values()) and len({s[0] for s in symbols_of.values()}) == len(code_names)


def _given(paper_names: set[str], code_names: set[str], given: Mapping[str, str] | None) -> dict[str, str]:
    """The team's pairs that name a symbol and a name of this pair."""
    return {symbol: name for symbol, name in (given or {}).items() if symbol in paper_names and name in code_names}


def _candidates(paper_names: set[str], code_names: set[str]) -> dict[str, list[str]]:
    """For each paper symbol, the code names that may stand for it: its spellings, else its role."""
    by_key: dict[str, list[str]] = {}
    for name in sorted(code_names):
        by_key.setdefault(_key(name), []).append(name)
    found = {}
    for name in paper_names:
        candidates = [c for key in _spellings(name) for c in by_key.get(key, [])]
        found[name] = sorted(set(candidates or [c for role in _ROLE_SPELLINGS.get(_key(name), ()) for c in by_key.get(role, [])]))
    return found


def spells(symbol: str, code_name: str) -> bool:
    """Whether a code name spells a paper symbol (`lam` for lambda, `rho` for rho_i): by spelling
    only, not by role (a `bias` is not every β)."""
    return _key(code_name) in _spellings(symbol)


def head_spellings(name: str) -> tuple[str, ...]:
    """How code may begin to spell a symbol, lowercase: `lambda_q` → lambda, lam, lmbda, ..."""
    head = name.partition("_")[0].lower()
    return (head, *_GREEK_SPELLINGS.get(head, ()))


def _key(name: str) -> str:
    return name.replace("_", "").lower()


def _spellings(name: str) -> list[str]:
    """A paper symbol's keys as code spells it: `lambda_q` → lambdaq, lamq, lmbdaq, ...; one
    subscripted by indices only (`delta_k,m`, `alpha_i`) also as its head: code keeps one per index."""
    keys = [_key(name)]
    head, _, rest = name.partition("_")
    for spelling in _GREEK_SPELLINGS.get(head, ()):
        keys.append(_key(spelling + rest))
    if rest and all(index in _INDICES for index in rest.split(",")):
        keys += [_key(head), *(_key(spelling) for spelling in _GREEK_SPELLINGS.get(head, ()))]
    return keys
